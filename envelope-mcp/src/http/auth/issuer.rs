//! What both of this crate's verifiers are: a verifier of one issuer's tokens for one
//! audience. The issuer is checked to be a URL, names each caller (`sub` required) and is what
//! the metadata lists; the audience is what the resource server compares with its resource;
//! no token longer than any access token is looked at. How a token is checked, its signature
//! or the issuer's introspection, is each verifier's own ([`IssuerVerifier`]).

use envelope_core::{BoxFuture, Caller, Principal, Scopes};
use url::Url;

use super::fetch::checked_url;
use super::verifier::{AuthConfigError, TokenError, TokenVerifier};

/// The longest token looked at; anything longer is refused unread (and never sent to an
/// issuer).
pub(super) const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The issuer whose tokens a verifier accepts, and the audience they must name.
pub(super) struct Issuer {
    /// The issuer identifier, without a trailing slash: what `iss` is compared with and the
    /// principal names.
    id: String,
    /// The issuer identifier as given, as the metadata lists it (RFC 8414 compares exactly).
    listed: String,
    /// The issuer identifier as a URL.
    url: Url,
    audience: String,
}

impl Issuer {
    /// Tokens of `issuer` for `audience`. Fails on an issuer that is no `https` URL (`http` on
    /// loopback aside).
    pub(super) fn new(issuer: &str, audience: String) -> Result<Self, AuthConfigError> {
        Ok(Issuer {
            url: checked_url("issuer", issuer)?,
            id: issuer.trim_end_matches('/').to_owned(),
            listed: issuer.to_owned(),
            audience,
        })
    }

    /// The issuer identifier, without a trailing slash.
    pub(super) fn id(&self) -> &str {
        &self.id
    }

    /// The issuer identifier as a URL.
    pub(super) fn url(&self) -> &Url {
        &self.url
    }

    /// The audience the tokens must name.
    pub(super) fn audience(&self) -> &str {
        &self.audience
    }

    /// The caller a token of this issuer names: its `subject`, which is required (RFC 9068
    /// §2.2), with `scopes`.
    pub(super) fn caller(
        &self,
        subject: Option<String>,
        scopes: Scopes,
    ) -> Result<Caller, TokenError> {
        // `client_id` is no stand-in for `sub`: a client's id may be a user's subject, and the
        // two would share their pages.
        let subject = subject
            .filter(|subject| !subject.is_empty())
            .ok_or_else(|| TokenError::invalid("it names no subject (`sub`)"))?;
        Ok(Caller::new(
            Principal::new(self.id.as_str(), subject),
            scopes,
        ))
    }
}

/// A verifier of one [`Issuer`]'s tokens; [`TokenVerifier`] follows from it.
pub(super) trait IssuerVerifier: Send + Sync + 'static {
    /// Whose tokens, for whom.
    fn issuer(&self) -> &Issuer;

    /// Checks `token`, no longer than [`MAX_TOKEN_BYTES`], and names its caller.
    fn check_token(&self, token: &str) -> impl Future<Output = Result<Caller, TokenError>> + Send;
}

impl<T: IssuerVerifier> TokenVerifier for T {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Caller, TokenError>> {
        if token.len() > MAX_TOKEN_BYTES {
            return Box::pin(std::future::ready(Err(TokenError::invalid(
                "it is longer than any access token",
            ))));
        }
        Box::pin(self.check_token(token))
    }

    fn authorization_servers(&self) -> Vec<String> {
        vec![self.issuer().listed.clone()]
    }

    fn audience(&self) -> Option<&str> {
        Some(self.issuer().audience())
    }
}

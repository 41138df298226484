//! Opaque access tokens, checked by asking their issuer (OAuth 2.0 Token Introspection,
//! RFC 7662).

use std::time::{SystemTime, UNIX_EPOCH};

use envelope_core::{BoxFuture, Caller, Principal, Scopes};
use serde::Deserialize;
use url::Url;

use super::fetch::{self, checked_url};
use super::jwks::same_issuer;
use super::verifier::{AuthConfigError, TokenError, TokenVerifier};

/// Verifies opaque tokens at the issuer's introspection endpoint, as a client of it (HTTP Basic
/// authentication with this resource server's own client id and secret).
///
/// A token is accepted when the issuer answers `active: true`, its `iss` (if given) is the
/// issuer, its `aud` holds the audience, and its `exp` (if given) has not passed. The caller
/// is `sub` of the issuer (required), with the scopes of `scope`. Every call asks the
/// issuer: nothing is cached, so a revoked token is refused at once.
pub struct IntrospectionVerifier {
    issuer: String,
    /// The issuer as a URL, which an answer's `iss` is compared with.
    issuer_url: Url,
    listed: String,
    endpoint: Url,
    audience: String,
    client_id: String,
    client_secret: String,
    client: reqwest::Client,
}

impl IntrospectionVerifier {
    /// A verifier asking `endpoint` (the issuer's `introspection_endpoint`) about tokens
    /// `issuer` issued for `audience`, authenticating as `client_id` with `client_secret`.
    pub fn new(
        issuer: &str,
        endpoint: &str,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, AuthConfigError> {
        let issuer_url = checked_url("issuer", issuer)?;
        Ok(IntrospectionVerifier {
            issuer: issuer.trim_end_matches('/').to_owned(),
            issuer_url,
            listed: issuer.to_owned(),
            endpoint: checked_url("introspection endpoint", endpoint)?,
            audience: audience.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            client: fetch::client()?,
        })
    }

    async fn check(&self, token: &str) -> Result<Caller, TokenError> {
        // Nothing longer than any access token is sent to the issuer.
        if token.len() > super::jwt::MAX_TOKEN_BYTES {
            return Err(TokenError::invalid("it is longer than any access token"));
        }
        let request = self
            .client
            .post(self.endpoint.clone())
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        let answer: Introspection = fetch::json(&self.endpoint, request)
            .await
            .map_err(TokenError::Unverifiable)?;
        if !answer.active {
            return Err(TokenError::invalid(
                "its issuer says it is not active (expired, revoked, or never issued)",
            ));
        }
        if let Some(iss) = &answer.iss
            && !same_issuer(iss, &self.issuer_url)
        {
            return Err(TokenError::invalid(
                "it was issued by another issuer (`iss`)",
            ));
        }
        let audiences = match answer.aud {
            Some(Audience::One(aud)) => vec![aud],
            Some(Audience::Many(auds)) => auds,
            None => Vec::new(),
        };
        if !audiences.contains(&self.audience) {
            return Err(TokenError::invalid(
                "it was issued for another resource (`aud`)",
            ));
        }
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |since| since.as_secs());
        if answer.exp.is_some_and(|exp| exp <= now) {
            return Err(TokenError::invalid("it has expired"));
        }
        // `client_id` is no stand-in for `sub`: a client's id may be a user's subject.
        let subject = answer
            .sub
            .filter(|subject| !subject.is_empty())
            .ok_or_else(|| TokenError::invalid("it names no subject (`sub`)"))?;
        let scopes = answer
            .scope
            .as_deref()
            .map(Scopes::parse)
            .unwrap_or_default();
        Ok(Caller::new(
            Principal::new(self.issuer.as_str(), subject),
            scopes,
        ))
    }
}

impl TokenVerifier for IntrospectionVerifier {
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Caller, TokenError>> {
        Box::pin(self.check(token))
    }

    fn authorization_servers(&self) -> Vec<String> {
        vec![self.listed.clone()]
    }

    fn audience(&self) -> Option<&str> {
        Some(&self.audience)
    }
}

impl std::fmt::Debug for IntrospectionVerifier {
    /// The client secret is not shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("issuer", &self.issuer)
            .field("endpoint", &self.endpoint.as_str())
            .field("audience", &self.audience)
            .field("client_id", &self.client_id)
            .finish_non_exhaustive()
    }
}

/// RFC 7662 §2.2's answer, what of it is read.
#[derive(Deserialize)]
struct Introspection {
    active: bool,
    scope: Option<String>,
    sub: Option<String>,
    iss: Option<String>,
    aud: Option<Audience>,
    exp: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

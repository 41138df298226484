//! The one question a resource server asks of a token, and how it can go wrong.

use std::borrow::Cow;

use envelope_core::{BoxFuture, Caller};

/// Turns an access token into the [`Caller`] it names, or says why it cannot. Implemented by
/// [`JwtVerifier`](super::JwtVerifier) and [`IntrospectionVerifier`](super::IntrospectionVerifier);
/// implement it for any other kind of token.
///
/// A verifier never puts the token, or any part of it, into a [`TokenError`], a log line or a
/// span: the errors say what was wrong, not what was sent.
pub trait TokenVerifier: Send + Sync + 'static {
    /// Checks `token` (the bearer credential, without its `Bearer ` scheme) and names its
    /// caller: the issuer and subject, and the scopes granted.
    fn verify<'a>(&'a self, token: &'a str) -> BoxFuture<'a, Result<Caller, TokenError>>;

    /// The authorization servers whose tokens are accepted (their issuer identifiers), as the
    /// protected-resource metadata lists them for a client to find one.
    fn authorization_servers(&self) -> Vec<String>;

    /// The audience the tokens must name, when the verifier checks one:
    /// [`ResourceServer::new`](super::ResourceServer::new) refuses a verifier whose audience is
    /// not its resource (a typo would refuse every token; a shared audience would defeat
    /// RFC 8707). `None` by default: the verifier answers for it.
    fn audience(&self) -> Option<&str> {
        None
    }
}

/// Why a token was not accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The token is not good for this resource: malformed, unsigned, signed by an unknown key
    /// or for another issuer, tampered with, expired, not yet valid, issued for another audience,
    /// or inactive. Answered `401` with `error="invalid_token"`; the description is what was
    /// wrong, never the token.
    #[error("the access token is not accepted: {0}")]
    Invalid(Cow<'static, str>),
    /// The token could not be checked at all: the issuer's keys or its introspection endpoint
    /// did not answer. Answered `503` with `Retry-After`: the caller may try again.
    #[error("the access token could not be checked: {0}")]
    Unverifiable(String),
}

impl TokenError {
    /// A token refused for `why`.
    pub fn invalid(why: impl Into<Cow<'static, str>>) -> Self {
        TokenError::Invalid(why.into())
    }
}

/// A resource server or verifier that cannot be built as configured.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    /// The resource, an issuer or an endpoint is not an absolute `https` URL (`http` is
    /// accepted for loopback hosts only, for development and tests).
    #[error("`{url}` is no {what}: {why}")]
    Url {
        /// What the URL was for.
        what: &'static str,
        /// The URL as given.
        url: String,
        /// What is wrong with it.
        why: String,
    },
    /// A JWKS file could not be read or parsed.
    #[error("the JWKS file `{path}` cannot be used: {why}")]
    JwksFile {
        /// The file.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// No algorithm is allowed, or one that needs a shared secret (`HS*`): a resource server
    /// holds no issuer's secret.
    #[error("{0}")]
    Algorithms(String),
    /// No JOSE backend: the build enabled none, or two, of jsonwebtoken's crypto features.
    #[error("jsonwebtoken has no crypto provider in this build")]
    NoCryptoProvider,
    /// The verifier checks tokens for another audience than the resource it protects.
    #[error("the verifier checks tokens for `{audience}`, not for the resource `{resource}`")]
    Audience {
        /// The verifier's audience.
        audience: String,
        /// The resource.
        resource: String,
    },
    /// The HTTP client for the issuer could not be built.
    #[error("the HTTP client for the issuer cannot be built: {0}")]
    Client(String),
}

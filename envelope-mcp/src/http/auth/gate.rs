//! The door every request but health, readiness and the metadata goes through: its bearer
//! token checked before anything reads its body, the caller it names handed on, the token
//! itself taken off the request.

use std::sync::Arc;

use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use envelope_core::Caller;
use http::{HeaderValue, StatusCode, header};

use super::challenge::Challenge;
use super::resource::{METADATA_PATH, ResourceServer};
use super::verifier::TokenError;
use crate::http::{HEALTH_PATH, READY_PATH};

/// A resource server as the router holds it.
pub(crate) struct Gate {
    pub(crate) server: ResourceServer,
    pub(crate) challenge: Arc<Challenge>,
    /// The metadata document, written once, with the scopes the tools declared when the router
    /// was built (`scopes_supported` need not list every scope a tool added since declares).
    metadata: axum::body::Bytes,
}

/// Every scope a tool of `toolset` declares, sorted, each once.
pub(crate) fn declared_scopes(toolset: &envelope_core::Toolset) -> Vec<String> {
    let scopes: std::collections::BTreeSet<&str> = toolset
        .iter()
        .flat_map(|tool| tool.spec().scopes.iter().map(|scope| &**scope))
        .collect();
    scopes.into_iter().map(str::to_owned).collect()
}

/// Whether `path` is served without a token: liveness, readiness, and the metadata a client
/// reads to find out how to get one.
pub(crate) fn is_open_path(path: &str) -> bool {
    path == HEALTH_PATH
        || path == READY_PATH
        || path == METADATA_PATH
        || path
            .strip_prefix(METADATA_PATH)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// What the `Authorization` header holds.
enum Presented<'a> {
    /// No bearer token: no header, or another scheme.
    Nothing,
    Token(&'a str),
    Malformed(&'static str),
}

/// The bearer token of `headers` (RFC 6750 §2.1: `Bearer`, any case, then a token68).
fn presented(headers: &http::HeaderMap) -> Presented<'_> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Presented::Nothing;
    };
    if values.next().is_some() {
        return Presented::Malformed("the request has more than one `Authorization` header");
    }
    let Ok(value) = value.to_str() else {
        return Presented::Malformed("the `Authorization` header is not ASCII");
    };
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Presented::Nothing;
    }
    let token = rest.trim_start_matches(' ');
    let token68 = |b: u8| b.is_ascii_alphanumeric() || b"-._~+/".contains(&b);
    let body = token.trim_end_matches('=');
    if body.is_empty() || !body.bytes().all(token68) {
        return Presented::Malformed("the bearer token is empty or not a token68");
    }
    Presented::Token(token)
}

impl Gate {
    pub(crate) fn new(server: ResourceServer, scopes: &[&str]) -> Gate {
        let challenge = Arc::new(Challenge::new(server.metadata_url(), scopes));
        let metadata = server.metadata(scopes).to_string().into();
        Gate {
            server,
            challenge,
            metadata,
        }
    }

    /// The metadata's routes: at the well-known path, and under it at the resource's path.
    pub(crate) fn routes(self: &Arc<Self>) -> axum::Router {
        let document = self.metadata.clone();
        let serve = axum::routing::get(move || {
            let document = document.clone();
            async move {
                let json = HeaderValue::from_static("application/json");
                ([(header::CONTENT_TYPE, json)], document).into_response()
            }
        });
        let mut router = axum::Router::new().route(METADATA_PATH, serve.clone());
        if let Some(path) = self.server.metadata_path() {
            router = router.route(&path, serve);
        }
        router
    }

    /// Lets `request` in when its token is good, its [`Caller`] put in its extensions and its
    /// `Authorization` header taken off; says why not otherwise: `401` for no token or a bad
    /// one, `400` for a malformed header, `503` when the token could not be checked, each with
    /// the challenge that says why. A request to an open path is let in untouched.
    pub(crate) async fn admit(&self, request: &mut Request) -> Result<(), Refusal> {
        if is_open_path(request.uri().path()) {
            return Ok(());
        }
        let refused = match presented(request.headers()) {
            Presented::Token(token) => match self.server.verifier().verify(token).await {
                Ok(caller) => {
                    request.headers_mut().remove(header::AUTHORIZATION);
                    request.extensions_mut().insert::<Caller>(caller);
                    if self.server.filters_listing() {
                        request.extensions_mut().insert(crate::server::CallableOnly);
                    }
                    return Ok(());
                }
                Err(error) => Refused::Token(error),
            },
            Presented::Nothing => Refused::Missing,
            Presented::Malformed(why) => Refused::Malformed(why),
        };
        match &refused {
            Refused::Token(TokenError::Unverifiable(why)) => {
                tracing::warn!(%why, "an access token could not be checked");
            }
            // Anyone can send a bad token: refusals are not worth more than `debug`.
            Refused::Token(TokenError::Invalid(why)) => {
                tracing::debug!(%why, "an access token was refused");
            }
            Refused::Malformed(why) => tracing::debug!(%why, "an Authorization header was refused"),
            Refused::Missing => tracing::debug!("a request without an access token was refused"),
        }
        Err(self.refusal(&refused))
    }

    fn refusal(&self, refused: &Refused) -> Refusal {
        let (status, challenge, message) = match refused {
            Refused::Missing => (
                StatusCode::UNAUTHORIZED,
                Some(self.challenge.missing()),
                format!(
                    "this server needs an OAuth access token (`Authorization: Bearer …`); how to \
                     get one: {}",
                    self.server.metadata_url()
                ),
            ),
            Refused::Malformed(why) => (
                StatusCode::BAD_REQUEST,
                Some(self.challenge.invalid_request(why)),
                (*why).to_owned(),
            ),
            Refused::Token(TokenError::Invalid(why)) => (
                StatusCode::UNAUTHORIZED,
                Some(self.challenge.invalid_token(why)),
                format!("the access token is not accepted: {why}"),
            ),
            Refused::Token(TokenError::Unverifiable(_)) => (
                StatusCode::SERVICE_UNAVAILABLE,
                None,
                "the access token could not be checked: the authorization server did not \
                 answer; retry shortly"
                    .to_owned(),
            ),
        };
        Refusal {
            status,
            challenge,
            message,
        }
    }
}

/// A request the door turned away: its status, the `WWW-Authenticate` challenge (none for a
/// `503`, which carries `Retry-After` instead), and what to tell the caller.
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    pub(crate) challenge: Option<HeaderValue>,
    pub(crate) message: String,
}

impl Refusal {
    /// The answer's headers, on `response`.
    pub(crate) fn headers(&self, response: &mut Response) {
        let headers = response.headers_mut();
        if let Some(challenge) = &self.challenge {
            headers.insert(header::WWW_AUTHENTICATE, challenge.clone());
        }
        if self.status == StatusCode::SERVICE_UNAVAILABLE {
            headers.insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
    }
}

/// Why a request was turned away.
enum Refused {
    Missing,
    Malformed(&'static str),
    Token(TokenError),
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(values: &[&str]) -> http::HeaderMap {
        let mut headers = http::HeaderMap::new();
        for value in values {
            headers.append(
                header::AUTHORIZATION,
                HeaderValue::from_str(value).expect("a header value"),
            );
        }
        headers
    }

    #[test]
    fn a_bearer_token_is_read_as_rfc_6750_sends_it() {
        let token = |values: &[&str]| match presented(&with(values)) {
            Presented::Token(token) => Ok(token.to_owned()),
            Presented::Nothing => Err("nothing"),
            Presented::Malformed(_) => Err("malformed"),
        };
        assert_eq!(
            token(&["Bearer abc.def-ghi_~+/=="]),
            Ok("abc.def-ghi_~+/==".to_owned())
        );
        assert_eq!(token(&["bearer   x"]), Ok("x".to_owned()));
        assert_eq!(token(&[]), Err("nothing"));
        assert_eq!(token(&["Basic dXNlcjpwdw=="]), Err("nothing"));
        assert_eq!(token(&["Bearer"]), Err("malformed"));
        assert_eq!(token(&["Bearer a b"]), Err("malformed"));
        assert_eq!(token(&["Bearer a", "Bearer b"]), Err("malformed"));
    }

    #[test]
    fn only_health_readiness_and_metadata_are_open() {
        for path in [
            "/healthz",
            "/readyz",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ] {
            assert!(is_open_path(path), "{path}");
        }
        for path in [
            "/mcp",
            "/tools",
            "/openapi.json",
            "/.well-known/oauth-protected-resourcex",
            "/healthz/x",
        ] {
            assert!(!is_open_path(path), "{path}");
        }
    }
}

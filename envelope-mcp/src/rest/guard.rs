//! The `Host` and `Origin` checks the MCP endpoint makes (rmcp's, against DNS rebinding), made
//! for the gateway's routes from the same configuration.

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;

use super::{HOST_NOT_ALLOWED, problem, request_id};
use crate::http::HttpConfig;

/// What a request's `Host` and `Origin` are checked against.
pub(super) struct Checks {
    /// Empty: any host.
    hosts: Vec<Allowed>,
    /// Empty: any origin.
    origins: Vec<AllowedOrigin>,
}

/// An allowed host, and its port when one is named.
struct Allowed {
    host: String,
    port: Option<u16>,
}

/// An origin as compared: `null`, or a scheme, a host and the port named, if any.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Origin {
    Null,
    Tuple {
        scheme: String,
        host: String,
        port: Option<u16>,
    },
}

/// An allowed origin, and which of its ports are: `:*` any; none named any too (as rmcp
/// still reads it); else that port, the scheme's default when the origin names none.
#[derive(Debug)]
struct AllowedOrigin {
    origin: Origin,
    any_port: bool,
}

impl Checks {
    pub(super) fn new(config: &HttpConfig) -> Arc<Self> {
        let hosts = config
            .allowed_hosts
            .iter()
            .flatten()
            .map(|raw| {
                let (host, port) = split_authority(raw);
                Allowed { host, port }
            })
            .collect();
        let origins = config
            .allowed_origins
            .iter()
            .filter_map(|raw| allowed_origin(raw))
            .collect();
        Arc::new(Checks { hosts, origins })
    }

    /// Why `request` is refused, if it is.
    fn refuses(&self, request: &Request) -> Option<String> {
        if !self.hosts.is_empty() {
            let host = request
                .headers()
                .get(http::header::HOST)
                .and_then(|value| value.to_str().ok())
                .or_else(|| {
                    request
                        .uri()
                        .authority()
                        .map(|authority| authority.as_str())
                });
            let Some(host) = host else {
                return Some("the request names no `Host`".to_owned());
            };
            let (name, port) = split_authority(host);
            let allowed = self.hosts.iter().any(|allowed| {
                allowed.host == name && allowed.port.is_none_or(|only| Some(only) == port)
            });
            if !allowed {
                return Some(format!(
                    "the host `{}` is not one this server answers to",
                    host.chars().take(128).collect::<String>()
                ));
            }
        }
        if !self.origins.is_empty()
            && let Some(origin) = request.headers().get(http::header::ORIGIN)
        {
            let text = String::from_utf8_lossy(origin.as_bytes());
            let allowed = origin
                .to_str()
                .ok()
                .and_then(parse_origin)
                .is_some_and(|origin| self.origins.iter().any(|allowed| allowed.admits(&origin)));
            if !allowed {
                return Some(format!(
                    "the origin `{}` is not one this server accepts",
                    text.chars().take(128).collect::<String>()
                ));
            }
        }
        None
    }
}

impl AllowedOrigin {
    fn admits(&self, origin: &Origin) -> bool {
        match (&self.origin, origin) {
            (Origin::Null, Origin::Null) => true,
            (
                Origin::Tuple { scheme, host, port },
                Origin::Tuple {
                    scheme: their_scheme,
                    host: their_host,
                    port: their_port,
                },
            ) => {
                scheme == their_scheme
                    && host == their_host
                    && (self.any_port
                        || port.is_none()
                        || *port == their_port.or_else(|| default_port(their_scheme)))
            }
            _ => false,
        }
    }
}

/// An `Origin` value: `null`, or `scheme://host[:port]`, lowercase.
fn parse_origin(value: &str) -> Option<Origin> {
    let value = value.trim();
    if value.eq_ignore_ascii_case("null") {
        return Some(Origin::Null);
    }
    let uri = http::Uri::try_from(value).ok()?;
    let authority = uri.authority()?;
    Some(Origin::Tuple {
        scheme: uri.scheme_str()?.to_ascii_lowercase(),
        host: split_authority(authority.host()).0,
        port: authority.port_u16(),
    })
}

/// An allowed origin as configured: an origin, or `scheme://host:*`.
fn allowed_origin(raw: &str) -> Option<AllowedOrigin> {
    let raw = raw.trim();
    match raw.strip_suffix(":*") {
        Some(base) => match parse_origin(base)? {
            origin @ Origin::Tuple { port: None, .. } => Some(AllowedOrigin {
                origin,
                any_port: true,
            }),
            _ => None,
        },
        None => Some(AllowedOrigin {
            origin: parse_origin(raw)?,
            any_port: false,
        }),
    }
}

/// The port a scheme implies when an origin names none (RFC 6454).
fn default_port(scheme: &str) -> Option<u16> {
    match scheme {
        "http" => Some(80),
        "https" => Some(443),
        _ => None,
    }
}

/// Middleware: refuses a request whose `Host` or `Origin` is not allowed with `403`.
pub(super) async fn check(checks: Arc<Checks>, request: Request, next: Next) -> Response {
    match checks.refuses(&request) {
        None => next.run(request).await,
        Some(message) => problem::refusal(HOST_NOT_ALLOWED, message, None, request_id(&request)),
    }
}

/// `host[:port]` (an IPv6 host in brackets, or bare) as a lowercase host and a port.
fn split_authority(raw: &str) -> (String, Option<u16>) {
    let raw = raw.trim();
    let (host, port) = match raw.rsplit_once(':') {
        // A bare IPv6 address has colons but no port.
        Some((host, port))
            if (raw.starts_with('[') || !host.contains(':'))
                && !port.is_empty()
                && port.bytes().all(|byte| byte.is_ascii_digit()) =>
        {
            (host, port.parse().ok())
        }
        _ => (raw, None),
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    (host.to_ascii_lowercase(), port)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorities_split_into_host_and_port() {
        assert_eq!(
            split_authority("LocalHost:8080"),
            ("localhost".into(), Some(8080))
        );
        assert_eq!(split_authority("localhost"), ("localhost".into(), None));
        assert_eq!(split_authority("[::1]:80"), ("::1".into(), Some(80)));
        assert_eq!(split_authority("::1"), ("::1".into(), None));
        assert_eq!(split_authority("[::1]"), ("::1".into(), None));
    }

    #[test]
    fn origins_match_as_rmcp_matches_them() {
        let admits = |allowed: &str, origin: &str| {
            let allowed = allowed_origin(allowed).expect("an allowed origin");
            parse_origin(origin).is_some_and(|origin| allowed.admits(&origin))
        };
        assert!(admits("http://localhost:*", "http://localhost:5173"));
        assert!(admits("http://localhost:*", "http://localhost"));
        assert!(!admits("http://localhost:*", "http://localhost.evil:80"));
        assert!(admits("https://app.example", "https://app.example"));
        // No port named: any port, as rmcp still reads it.
        assert!(admits("https://app.example", "https://app.example:444"));
        // The scheme's default port is the port of an origin that names none.
        assert!(admits("https://app.example:443", "https://app.example"));
        assert!(!admits("https://app.example:443", "http://app.example"));
        assert!(!admits("https://app.example:8443", "https://app.example"));
        assert!(admits("null", "null"));
        assert!(parse_origin("not an origin").is_none());
    }
}

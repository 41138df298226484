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
    /// `None`: any host.
    hosts: Option<Vec<Allowed>>,
    /// Empty: any origin.
    origins: Vec<String>,
}

/// An allowed host, and its port when one is named.
struct Allowed {
    host: String,
    port: Option<u16>,
}

impl Checks {
    pub(super) fn new(config: &HttpConfig) -> Arc<Self> {
        let hosts = config.allowed_hosts.as_ref().map(|hosts| {
            hosts
                .iter()
                .map(|raw| {
                    let (host, port) = split_authority(raw);
                    Allowed { host, port }
                })
                .collect()
        });
        let origins = config
            .allowed_origins
            .iter()
            .map(|origin| origin.trim().trim_end_matches('/').to_ascii_lowercase())
            .collect();
        Arc::new(Checks { hosts, origins })
    }

    /// Why `request` is refused, if it is.
    fn refuses(&self, request: &Request) -> Option<String> {
        if let Some(hosts) = &self.hosts {
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
            let allowed = hosts.iter().any(|allowed| {
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
            let origin = origin.to_str().unwrap_or_default().to_ascii_lowercase();
            if !self
                .origins
                .iter()
                .any(|allowed| origin_matches(allowed, &origin))
            {
                return Some(format!(
                    "the origin `{}` is not one this server accepts",
                    origin.chars().take(128).collect::<String>()
                ));
            }
        }
        None
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

/// Whether `origin` is `allowed`: the same, or, for `scheme://host:*`, that scheme and host
/// with any port or none.
fn origin_matches(allowed: &str, origin: &str) -> bool {
    match allowed.strip_suffix(":*") {
        Some(base) => {
            origin == base
                || origin.strip_prefix(base).is_some_and(|rest| {
                    rest.strip_prefix(':').is_some_and(|port| {
                        !port.is_empty() && port.bytes().all(|byte| byte.is_ascii_digit())
                    })
                })
        }
        None => origin == allowed,
    }
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
    fn origins_match_exactly_or_by_any_port() {
        assert!(origin_matches(
            "http://localhost:*",
            "http://localhost:5173"
        ));
        assert!(origin_matches("http://localhost:*", "http://localhost"));
        assert!(!origin_matches(
            "http://localhost:*",
            "http://localhost.evil:80"
        ));
        assert!(origin_matches("https://app.example", "https://app.example"));
        assert!(!origin_matches(
            "https://app.example",
            "https://app.example:444"
        ));
    }
}

//! The one judge of a request's `Host` and `Origin`, for the MCP endpoint and the plain HTTP
//! API alike (rmcp's own checks are off): RFC 9112's rules on `Host` first (at most one, a
//! valid `host[:port]` without userinfo, required on HTTP/1.1 unless the target names the
//! authority, which is then the one judged), then the allowed hosts and origins, against DNS
//! rebinding and cross-site calls.

use std::sync::Arc;

use axum::extract::Request;

use super::HttpConfig;

/// What a request's `Host` and `Origin` are checked against.
pub(crate) struct Checks {
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

/// Why a request's `Host` or `Origin` is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HostRefusal {
    /// Against RFC 9112: no `Host` on HTTP/1.1 (nor an authority in the target), more than
    /// one, or a `Host` or target authority that is no `host[:port]` (userinfo included).
    /// Answered `400`.
    #[error("{0}")]
    Malformed(String),
    /// A `Host` or `Origin` this server does not answer to. Answered `403`.
    #[error("{0}")]
    NotAllowed(String),
}

impl HostRefusal {
    /// The status it is answered with.
    pub(crate) fn status(&self) -> http::StatusCode {
        match self {
            HostRefusal::Malformed(_) => http::StatusCode::BAD_REQUEST,
            HostRefusal::NotAllowed(_) => http::StatusCode::FORBIDDEN,
        }
    }
}

/// `text` cut to 128 characters, for a message that echoes it.
fn cut(text: &str) -> String {
    text.chars().take(128).collect()
}

/// The authority a request names, as RFC 9112 has it: the request target's when it names one
/// (the absolute form `http://host/path`, or HTTP/2's `:authority`), which §3.2.2 says to use
/// over any `Host`; else its `Host`. Either must be a valid `host[:port]` without userinfo, a
/// `Host` present must be valid even beside a target's authority, more than one `Host` is
/// refused, and HTTP/1.1 must name one or the other (an HTTP/1.0 request may name neither).
/// `Ok(None)`: none, where none is allowed.
fn authority_of(request: &Request) -> Result<Option<&str>, HostRefusal> {
    let mut hosts = request.headers().get_all(http::header::HOST).iter();
    let host = hosts.next();
    if hosts.next().is_some() {
        return Err(HostRefusal::Malformed(
            "the request names more than one `Host`".to_owned(),
        ));
    }
    let host = host
        .map(|value| host_and_port(value.as_bytes()))
        .transpose()?;
    if let Some(target) = request.uri().authority() {
        // RFC 9112 §3.2: an HTTP/1.1 client sends `Host` even with an absolute target (the
        // target's authority is then the one that counts); HTTP/2 names it in the target only.
        if host.is_none() && request.version() == http::Version::HTTP_11 {
            return Err(HostRefusal::Malformed(
                "an HTTP/1.1 request must name its `Host`".to_owned(),
            ));
        }
        let authority = host_and_port(target.as_str().as_bytes())?;
        // RFC 9113 §8.3.1: an HTTP/2 request whose `Host` names another entity than its
        // `:authority` is malformed (HTTP/1.1's absolute form instead has the target win).
        if request.version() >= http::Version::HTTP_2
            && let Some(host) = host
            && !same_entity(host, authority, request.uri().scheme_str())
        {
            return Err(HostRefusal::Malformed(format!(
                "the `Host` `{}` names another server than the `:authority` `{}`",
                cut(host),
                cut(authority)
            )));
        }
        return Ok(Some(authority));
    }
    if host.is_none() && request.version() >= http::Version::HTTP_11 {
        return Err(HostRefusal::Malformed(
            "an HTTP/1.1 request must name its `Host`".to_owned(),
        ));
    }
    Ok(host)
}

/// Whether two `host[:port]`s name one entity: the same host (as [`split_authority`] folds
/// it) and the same port, a port left out being the `scheme`'s default.
fn same_entity(one: &str, other: &str, scheme: Option<&str>) -> bool {
    let default = scheme.and_then(default_port);
    let (one_host, one_port) = split_authority(one);
    let (other_host, other_port) = split_authority(other);
    one_host == other_host && one_port.or(default) == other_port.or(default)
}

/// `raw` as text when it is a valid `host[:port]` (RFC 9112 §3.2, RFC 3986): a host, and a
/// port of digits (possibly none) up to 65535, without userinfo.
fn host_and_port(raw: &[u8]) -> Result<&str, HostRefusal> {
    let invalid = || {
        HostRefusal::Malformed(format!(
            "`{}` is no `host[:port]`",
            cut(&String::from_utf8_lossy(raw))
        ))
    };
    let text = std::str::from_utf8(raw).map_err(|_| invalid())?;
    let authority = text
        .parse::<http::uri::Authority>()
        .map_err(|_| invalid())?;
    // `Authority` takes userinfo (`user@host`), which neither a `Host` nor a target's
    // authority may carry: a client or a proxy could read the host after the `@`, another the
    // one before it.
    if text.contains('@') || authority.host().is_empty() {
        return Err(invalid());
    }
    // `Authority` also takes a port that is no number; a `Host`'s is digits (RFC 3986 allows
    // none), at most 65535.
    let port = text.get(authority.host().len()..).unwrap_or_default();
    let port_valid = match port.strip_prefix(':') {
        None => port.is_empty(),
        Some(digits) => {
            digits.is_empty()
                || (digits.bytes().all(|byte| byte.is_ascii_digit())
                    && digits.parse::<u16>().is_ok())
        }
    };
    if !port_valid {
        return Err(invalid());
    }
    Ok(text)
}

impl Checks {
    pub(crate) fn new(config: &HttpConfig) -> Arc<Self> {
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

    /// Why `request` is refused, if it is: RFC 9112's rules on `Host` always; the allowed
    /// hosts (against the authority the request names, see [`authority_of`]) and origins when
    /// `allowlisted` (every route but health and readiness, which a load balancer probes by
    /// whatever name it knows).
    pub(crate) fn judge(&self, request: &Request, allowlisted: bool) -> Result<(), HostRefusal> {
        let host = authority_of(request)?;
        if !allowlisted {
            return Ok(());
        }
        if !self.hosts.is_empty() {
            let Some(host) = host else {
                return Err(HostRefusal::NotAllowed(
                    "the request names no `Host`".to_owned(),
                ));
            };
            let (name, port) = split_authority(host);
            let allowed = self.hosts.iter().any(|allowed| {
                allowed.host == name && allowed.port.is_none_or(|only| Some(only) == port)
            });
            if !allowed {
                return Err(HostRefusal::NotAllowed(format!(
                    "the host `{}` is not one this server answers to",
                    cut(host)
                )));
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
                return Err(HostRefusal::NotAllowed(format!(
                    "the origin `{}` is not one this server accepts",
                    cut(&text)
                )));
            }
        }
        Ok(())
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

/// `host[:port]` (an IPv6 host in brackets, or bare) as a lowercase host and a port. A single
/// trailing dot is dropped: `localhost.` is `localhost` as a fully qualified name, and DNS
/// resolves both alike.
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
    let host = host.strip_suffix('.').unwrap_or(host);
    (host.to_ascii_lowercase(), port)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default checks' judgement of a request of `version` for `target` with these `Host`
    /// headers.
    fn judge_target(
        version: http::Version,
        target: &str,
        hosts: &[&str],
    ) -> Result<(), HostRefusal> {
        let mut request = Request::new(axum::body::Body::empty());
        *request.version_mut() = version;
        *request.uri_mut() = target.parse().expect("a request target");
        for host in hosts {
            request.headers_mut().append(
                http::header::HOST,
                http::HeaderValue::from_str(host).expect("a header value"),
            );
        }
        Checks::new(&HttpConfig::default()).judge(&request, true)
    }

    fn malformed(result: Result<(), HostRefusal>) -> bool {
        matches!(result, Err(HostRefusal::Malformed(_)))
    }

    fn not_allowed(result: Result<(), HostRefusal>) -> bool {
        matches!(result, Err(HostRefusal::NotAllowed(_)))
    }

    #[test]
    fn hosts_follow_rfc_9112() {
        let judge = |version: http::Version, hosts: &[&str]| {
            let mut request = Request::new(axum::body::Body::empty());
            *request.version_mut() = version;
            for host in hosts {
                request.headers_mut().append(
                    http::header::HOST,
                    http::HeaderValue::from_str(host).expect("a header value"),
                );
            }
            let checks = Checks::new(&HttpConfig::default());
            checks.judge(&request, true)
        };
        let malformed =
            |result: Result<(), HostRefusal>| matches!(result, Err(HostRefusal::Malformed(_)));
        assert_eq!(judge(http::Version::HTTP_11, &["localhost:8080"]), Ok(()));
        assert_eq!(judge(http::Version::HTTP_11, &["[::1]:8080"]), Ok(()));
        assert!(malformed(judge(http::Version::HTTP_11, &[])));
        assert!(malformed(judge(
            http::Version::HTTP_11,
            &["localhost", "localhost"]
        )));
        assert!(malformed(judge(
            http::Version::HTTP_11,
            &["evil@localhost:1"]
        )));
        assert!(malformed(judge(http::Version::HTTP_11, &["local host"])));
        assert!(malformed(judge(
            http::Version::HTTP_11,
            &["localhost:port"]
        )));
        assert!(malformed(judge(
            http::Version::HTTP_11,
            &["localhost:99999"]
        )));
        assert!(matches!(
            judge(http::Version::HTTP_11, &["evil.example"]),
            Err(HostRefusal::NotAllowed(_))
        ));
        // HTTP/1.0 may name no host; an allowlist then cannot admit it.
        assert!(matches!(
            judge(http::Version::HTTP_10, &[]),
            Err(HostRefusal::NotAllowed(_))
        ));
    }

    #[test]
    fn a_single_trailing_dot_names_the_same_host() {
        let h1 = http::Version::HTTP_11;
        assert_eq!(judge_target(h1, "/mcp", &["localhost.:8080"]), Ok(()));
        assert_eq!(judge_target(h1, "/mcp", &["localhost."]), Ok(()));
        assert_eq!(judge_target(h1, "/mcp", &["127.0.0.1.:80"]), Ok(()));
        assert!(not_allowed(judge_target(h1, "/mcp", &["localhost..:8080"])));
        assert!(not_allowed(judge_target(h1, "/mcp", &["localhost.evil."])));
        let dotted = HttpConfig::default().with_allowed_hosts(["mcp.example.com."]);
        let mut request = Request::new(axum::body::Body::empty());
        request.headers_mut().insert(
            http::header::HOST,
            http::HeaderValue::from_static("mcp.example.com:443"),
        );
        assert_eq!(Checks::new(&dotted).judge(&request, true), Ok(()));
    }

    #[test]
    fn an_absolute_target_names_the_authority_judged() {
        let h1 = http::Version::HTTP_11;
        // RFC 9112 §3.2.2: the target's authority, not the `Host`, is the one judged.
        assert_eq!(
            judge_target(h1, "http://localhost:8080/mcp", &["evil.example"]),
            Ok(())
        );
        assert!(not_allowed(judge_target(
            h1,
            "http://evil.example/mcp",
            &["localhost:8080"]
        )));
        // Without a `Host`, an HTTP/1.1 request is malformed, whatever its target names.
        assert!(malformed(judge_target(
            h1,
            "http://localhost:8080/mcp",
            &[]
        )));
        assert!(malformed(judge_target(h1, "http://evil.example/mcp", &[])));
        // Userinfo in the target is malformed, with a `Host` or without.
        for hosts in [&["localhost:8080"][..], &[]] {
            assert!(malformed(judge_target(
                h1,
                "http://evil@localhost:8080/mcp",
                hosts
            )));
            assert!(malformed(judge_target(
                h1,
                "http://localhost:8080@evil.example/mcp",
                hosts
            )));
        }
        // A `Host` beside it is still held to RFC 9112: one, and valid.
        assert!(malformed(judge_target(
            h1,
            "http://localhost:8080/mcp",
            &["localhost:8080", "localhost:8080"]
        )));
        assert!(malformed(judge_target(
            h1,
            "http://localhost:8080/mcp",
            &["evil@localhost:8080"]
        )));
    }

    #[test]
    fn http2_names_its_authority_in_the_target() {
        let h2 = http::Version::HTTP_2;
        assert_eq!(judge_target(h2, "http://localhost:8080/mcp", &[]), Ok(()));
        assert_eq!(judge_target(h2, "http://[::1]:8080/mcp", &[]), Ok(()));
        assert_eq!(judge_target(h2, "https://127.0.0.1/mcp", &[]), Ok(()));
        assert!(not_allowed(judge_target(
            h2,
            "http://evil.example/mcp",
            &[]
        )));
        assert!(malformed(judge_target(h2, "/mcp", &[])));
        assert!(malformed(judge_target(
            h2,
            "http://user@localhost:8080/mcp",
            &[]
        )));
    }

    #[test]
    fn http2_refuses_a_host_naming_another_server_than_its_authority() {
        let h2 = http::Version::HTTP_2;
        let host = |value| [value];
        assert_eq!(
            judge_target(h2, "http://localhost:8080/mcp", &host("localhost:8080")),
            Ok(())
        );
        // The same entity, spelled otherwise: case, a trailing dot, the scheme's default port.
        assert_eq!(
            judge_target(h2, "http://localhost:8080/mcp", &host("LocalHost.:8080")),
            Ok(())
        );
        assert_eq!(
            judge_target(h2, "http://localhost/mcp", &host("localhost:80")),
            Ok(())
        );
        for other in [
            "evil.example",
            "localhost:8081",
            "localhost",
            "127.0.0.1:8080",
        ] {
            assert!(
                malformed(judge_target(h2, "http://localhost:8080/mcp", &host(other))),
                "{other}"
            );
        }
        // HTTP/1.1's absolute form: the target wins over the `Host` (RFC 9112 §3.2.2).
        assert_eq!(
            judge_target(
                http::Version::HTTP_11,
                "http://localhost:8080/mcp",
                &host("localhost:9999")
            ),
            Ok(())
        );
    }

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
        assert_eq!(
            split_authority("LocalHost.:8080"),
            ("localhost".into(), Some(8080))
        );
        assert_eq!(split_authority("[::1]:8080"), ("::1".into(), Some(8080)));
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

//! Cross-origin calls from a browser: the CORS layer, on when origins are configured.

use http::HeaderValue;

use crate::REQUEST_ID_HEADER;

/// The request headers a browser caller may send: MCP's, and the REST gateway's controls.
fn allowed_headers() -> Vec<http::HeaderName> {
    let header = |name: &'static str| http::HeaderName::from_static(name);
    #[cfg_attr(not(feature = "rest"), allow(unused_mut))]
    let mut headers = vec![
        http::header::CONTENT_TYPE,
        http::header::ACCEPT,
        http::header::AUTHORIZATION,
        header("mcp-session-id"),
        header("mcp-protocol-version"),
        header("last-event-id"),
        header(REQUEST_ID_HEADER),
        header("traceparent"),
        header("tracestate"),
    ];
    #[cfg(feature = "rest")]
    headers.extend(
        super::super::rest::gateway_headers()
            .into_iter()
            .filter_map(|name| http::HeaderName::from_bytes(name.as_bytes()).ok()),
    );
    headers
}

/// The CORS layer for `origins`, or none when empty: `*` allows any origin.
pub(super) fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|origin| {
            let value = HeaderValue::from_str(origin).ok();
            if value.is_none() {
                tracing::warn!(origin, "a CORS origin that is no header value is ignored");
            }
            value
        }))
    };
    let header = |name: &'static str| http::HeaderName::from_static(name);
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([
                http::Method::GET,
                http::Method::POST,
                http::Method::DELETE,
                http::Method::OPTIONS,
            ])
            .allow_headers(allowed_headers())
            .expose_headers([
                header("mcp-session-id"),
                header(REQUEST_ID_HEADER),
                http::header::RETRY_AFTER,
                // A browser client reads where to get a token from a refusal.
                http::header::WWW_AUTHENTICATE,
            ]),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn no_origin_no_layer() {
        assert!(cors(&[]).is_none());
        assert!(cors(&["https://app.example".to_owned()]).is_some());
    }

    #[test]
    fn a_browser_may_send_mcps_headers_and_the_request_id() {
        let allowed = allowed_headers();
        for name in ["mcp-session-id", "mcp-protocol-version", "x-request-id"] {
            assert!(allowed.iter().any(|header| header == name), "{name}");
        }
    }
}

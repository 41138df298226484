//! The host judge: one rule for `Host` and `Origin` on every route, HTTP/1.1 and HTTP/2 alike
//! ([`Checks`]).

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::super::guard::Checks;
use super::super::health::{HEALTH_PATH, READY_PATH};

/// Middleware: the one judge of `Host` and `Origin` for every route. Health and readiness are
/// held only to RFC 9112's rules, not to the allowed hosts (a load balancer probes them by
/// whatever name it knows). A refusal on the plain HTTP API is a problem; anywhere else plain
/// text, as rmcp answered it.
pub(super) async fn judge_host(
    checks: Arc<Checks>,
    gateway: bool,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let allowlisted = path != HEALTH_PATH && path != READY_PATH;
    let Err(refusal) = checks.judge(&request, allowlisted) else {
        return next.run(request).await;
    };
    tracing::warn!(%refusal, "a request's Host or Origin is refused");
    #[cfg(feature = "rest")]
    if gateway && super::super::rest::is_gateway_path(path) {
        return super::super::rest::host_refusal(&refusal, &request);
    }
    #[cfg(not(feature = "rest"))]
    let _ = gateway;
    (refusal.status(), refusal.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;
    use crate::HttpConfig;

    async fn status(path: &str, host: &str) -> http::StatusCode {
        let checks = Checks::new(&HttpConfig::default());
        let router = axum::Router::new()
            .route(path, axum::routing::get(|| async { "ok" }))
            .layer(axum::middleware::from_fn(move |request, next| {
                judge_host(Arc::clone(&checks), false, request, next)
            }));
        let request = http::Request::get(path)
            .header(http::header::HOST, host)
            .body(Body::empty())
            .expect("a request");
        router.oneshot(request).await.expect("answered").status()
    }

    #[tokio::test]
    async fn a_host_not_allowed_is_refused_but_on_the_health_probes() {
        assert_eq!(status("/mcp", "localhost:8080").await, http::StatusCode::OK);
        assert_eq!(
            status("/mcp", "evil.example").await,
            http::StatusCode::FORBIDDEN
        );
        assert_eq!(
            status(HEALTH_PATH, "10.0.0.7:80").await,
            http::StatusCode::OK
        );
        assert_eq!(
            status("/mcp", "user@localhost").await,
            http::StatusCode::BAD_REQUEST
        );
    }
}

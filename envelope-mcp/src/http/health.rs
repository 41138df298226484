//! `/healthz` and `/readyz`: what a load balancer or an orchestrator probes.

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The liveness route's path: `200` while the process serves.
pub const HEALTH_PATH: &str = "/healthz";

/// The readiness route's path: `200` when the server takes calls, `503` once it drains.
pub const READY_PATH: &str = "/readyz";

/// What readiness reports.
#[derive(Clone)]
pub(crate) struct Readiness {
    /// The tools served: the toolset is built before the router exists.
    pub(crate) tools: usize,
    /// Whether a continuation key ring is loaded.
    pub(crate) continuations: bool,
    /// Cancelled once shutdown begins.
    pub(crate) shutdown: CancellationToken,
}

/// The two routes.
pub(crate) fn routes(ready: Readiness) -> axum::Router {
    axum::Router::new()
        .route(
            HEALTH_PATH,
            // wire: the health endpoint's own JSON, not an envelope
            get(|| async { answer(http::StatusCode::OK, &json!({ "status": "ok" })) }),
        )
        .route(READY_PATH, get(readyz))
        .with_state(ready)
}

async fn readyz(State(ready): State<Readiness>) -> Response {
    if ready.shutdown.is_cancelled() {
        let body = json!({ "ready": false, "reason": "shutting down" });
        return answer(http::StatusCode::SERVICE_UNAVAILABLE, &body);
    }
    let body = json!({
        "ready": true,
        "tools": ready.tools,
        "continuations": ready.continuations,
    });
    answer(http::StatusCode::OK, &body)
}

/// `body` as `application/json` with `status`. (Not axum's `Json`: its feature turns on
/// serde_json's `raw_value` for every crate in the build.)
fn answer(status: http::StatusCode, body: &Value) -> Response {
    let json = http::HeaderValue::from_static("application/json");
    (
        status,
        [(http::header::CONTENT_TYPE, json)],
        body.to_string(),
    )
        .into_response()
}

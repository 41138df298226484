//! Each HTTP concern one layer, in a file of its own with its own tests, composed here in one
//! order. A request enters each once, outermost first.
//!
//! Around every route (the MCP endpoint, the plain HTTP API, health, readiness, the OAuth
//! metadata):
//! 1. [`request_id`]: every request carries an `X-Request-ID` safe to log, echoed.
//! 2. [`cors`]: a browser's cross-origin calls, when origins are configured.
//! 3. [`host`]: `Host` and `Origin`, one rule for HTTP/1.1 and HTTP/2.
//! 4. [`authenticate`] (feature `auth`): the access token checked before anything reads the
//!    body; the caller it names handed on, the token itself taken off.
//!
//! Then around the MCP endpoint (the plain HTTP API holds itself to the same admission):
//! 5. [`session::owner`]: a session is its opener's alone; checked before the body is read,
//!    recorded once the answer names a new session.
//! 6. [`session::termination`]: a session's termination rmcp accepted answered `204`, as the
//!    official SDKs expect.
//! 7. [`admit`]: admission and the deadline: the body read whole within the size limit and
//!    the body timeout, a place under the concurrency limit held until the answer is sent, the
//!    answer within what is left of the request timeout.
//! 8. [`message`]: the body judged as one JSON-RPC message, a control named twice noted.
//! 9. [`session::cap`]: a new session past the cap refused.
//! 10. [`step_up`] (feature `auth`): a call the caller's scopes do not cover answered `403`
//!     with the challenge, decided from the token and the tool's scopes.
//! 11. [`in_flight`]: a request reusing an id in flight in its session answered at once.

mod admit;
#[cfg(feature = "auth")]
mod authenticate;
mod cors;
mod host;
mod in_flight;
mod message;
mod request_id;
mod session;
#[cfg(feature = "auth")]
mod step_up;

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::{Next, from_fn};
use axum::response::{IntoResponse, Response};
use http::HeaderValue;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use tower::ServiceBuilder;

pub use request_id::request_id_layer;

use super::admission::Admission;
use super::guard::Checks;

/// A JSON-RPC answer sent as plain JSON with `status`.
fn json_answer(status: http::StatusCode, answer: Vec<u8>) -> Response {
    let json = HeaderValue::from_static("application/json");
    (status, [(http::header::CONTENT_TYPE, json)], answer).into_response()
}

/// What the MCP endpoint's own layers hold.
pub(super) struct Endpoint {
    pub(super) admission: Admission,
    pub(super) sessions: Arc<LocalSessionManager>,
    pub(super) max_sessions: usize,
    /// With authentication on: the server whose tools' scopes a call is held to, and the
    /// challenge a call refused for its scopes is answered with.
    #[cfg(feature = "auth")]
    pub(super) step_up: Option<(crate::EnvelopeServer, Arc<super::auth::Challenge>)>,
}

/// `endpoint` (rmcp's streamable HTTP service, routed) under the MCP endpoint's layers, 5 to 11
/// above, in that order.
pub(super) fn mcp_endpoint(endpoint: axum::Router, layers: Endpoint) -> axum::Router {
    let sessions = session::Sessions::new(layers.sessions, layers.max_sessions);
    let (owners, capped) = (sessions.clone(), sessions);
    let admission = layers.admission;
    let max_request_bytes = admission.max_request_bytes;
    let ids = in_flight::Ids::default();
    #[cfg(feature = "auth")]
    let step_up = layers.step_up.map(|(server, challenge)| {
        let step_up = Arc::new(step_up::StepUp { server, challenge });
        from_fn(move |request: Request, next: Next| {
            step_up::step_up(Arc::clone(&step_up), request, next)
        })
    });
    #[cfg(not(feature = "auth"))]
    let step_up: Option<tower::layer::util::Identity> = None;
    endpoint.layer(
        ServiceBuilder::new()
            .layer(from_fn(move |request: Request, next: Next| {
                session::owner(owners.clone(), request, next)
            }))
            .layer(from_fn(session::termination))
            .layer(from_fn(move |request: Request, next: Next| {
                admit::admit(admission.clone(), request, next)
            }))
            .layer(from_fn(move |request: Request, next: Next| {
                message::judge_message(max_request_bytes, request, next)
            }))
            .layer(from_fn(move |request: Request, next: Next| {
                session::cap(capped.clone(), request, next)
            }))
            .option_layer(step_up)
            .layer(from_fn(move |request: Request, next: Next| {
                in_flight::hold_id(Arc::clone(&ids), request, next)
            })),
    )
}

/// What the layers around every route hold.
pub(super) struct Around {
    pub(super) checks: Arc<Checks>,
    pub(super) cors_origins: Vec<String>,
    /// Whether the plain HTTP API is mounted: its refusals are problems.
    pub(super) gateway: bool,
    #[cfg(feature = "auth")]
    pub(super) gate: Option<Arc<super::auth::Gate>>,
}

/// `router` under the layers around every route, 1 to 4 above, in that order.
pub(super) fn around(router: axum::Router, around: Around) -> axum::Router {
    let Around {
        checks,
        cors_origins,
        gateway,
        ..
    } = around;
    #[cfg(feature = "auth")]
    let authenticate = around.gate.map(|gate| {
        from_fn(move |request: Request, next: Next| {
            authenticate::authenticate(Arc::clone(&gate), gateway, request, next)
        })
    });
    #[cfg(not(feature = "auth"))]
    let authenticate: Option<tower::layer::util::Identity> = None;
    router.layer(
        ServiceBuilder::new()
            .layer(from_fn(request_id_layer))
            .option_layer(cors::cors(&cors_origins))
            .layer(from_fn(move |request: Request, next: Next| {
                host::judge_host(Arc::clone(&checks), gateway, request, next)
            }))
            .option_layer(authenticate),
    )
}

//! The resource server's door ([`Gate::admit`]): a request is let in by its access token
//! before anything reads its body. (Feature `auth`.)

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::super::auth::Gate;

/// Middleware: the resource server's door. A refusal on the plain HTTP API is a problem;
/// anywhere else plain text, with the challenge headers either way.
pub(super) async fn authenticate(
    gate: Arc<Gate>,
    gateway: bool,
    mut request: Request,
    next: Next,
) -> Response {
    let Err(refusal) = gate.admit(&mut request).await else {
        return next.run(request).await;
    };
    #[cfg(feature = "rest")]
    let mut response = if gateway && super::super::rest::is_gateway_path(request.uri().path()) {
        super::super::rest::auth_refusal(refusal.status, refusal.message.clone(), &request)
    } else {
        (refusal.status, refusal.message.clone()).into_response()
    };
    #[cfg(not(feature = "rest"))]
    let mut response = {
        let _ = gateway;
        (refusal.status, refusal.message.clone()).into_response()
    };
    refusal.headers(&mut response);
    response
}

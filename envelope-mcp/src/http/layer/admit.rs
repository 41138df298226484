//! Admission and the request deadline: the MCP endpoint's requests held to the router's
//! shared limits ([`Admission`]: the body size, the body timeout, the concurrency limit), and
//! answered within what is left of the request timeout.

use axum::body::{Body, Bytes};
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http::HeaderValue;

use super::super::OVERLOADED;
use super::super::admission::{Admission, Admitted, Refusal};
use super::json_answer;

/// The body a request was admitted with, whole: the layers after admission judge it without
/// reading the body again.
#[derive(Clone)]
pub(super) struct AdmittedBody(pub(super) Bytes);

/// Middleware: admits the request (its body read whole, within the limits), hands its body on
/// as [`AdmittedBody`] too, and answers within the request deadline, holding the request's
/// place until its answer is sent. A refusal is plain text, or a JSON-RPC error for an
/// overload; past the deadline, `503` with `Retry-After`.
pub(super) async fn admit(admission: Admission, request: Request, next: Next) -> Response {
    let Admitted {
        mut parts,
        bytes,
        held,
        deadline,
    } = match admission.admit(request).await {
        Ok(admitted) => admitted,
        Err(refusal) => return refused(&refusal),
    };
    parts.extensions.insert(AdmittedBody(bytes.clone()));
    let answering = next.run(Request::from_parts(parts, Body::from(bytes)));
    match deadline.bound(answering).await {
        Ok(response) => held.until_sent(response),
        Err(overran) => {
            let mut refused =
                (http::StatusCode::SERVICE_UNAVAILABLE, overran.to_string()).into_response();
            refused
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            refused
        }
    }
}

/// A refusal as the MCP endpoint answers it: plain text, or a JSON-RPC error for an overload.
fn refused(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::Overloaded => overloaded(),
        Refusal::TooLarge { .. } => {
            (http::StatusCode::PAYLOAD_TOO_LARGE, refusal.to_string()).into_response()
        }
        Refusal::Unreadable => (http::StatusCode::BAD_REQUEST, refusal.to_string()).into_response(),
        // The rest of the body may still be on its way: the connection cannot carry another
        // request.
        Refusal::BodyTimeout { .. } => (
            http::StatusCode::REQUEST_TIMEOUT,
            [(http::header::CONNECTION, HeaderValue::from_static("close"))],
            refusal.to_string(),
        )
            .into_response(),
    }
}

/// The answer to a call refused by the concurrency limit: `503`, `Retry-After`, and the
/// JSON-RPC error [`OVERLOADED`].
fn overloaded() -> Response {
    let body = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        // wire: JSON-RPC's error member, not an envelope's
        "error": {
            "code": OVERLOADED,
            "message": "the server is at its limit of concurrent requests; retry shortly",
        },
    }))
    .unwrap_or_default();
    let mut response = json_answer(http::StatusCode::SERVICE_UNAVAILABLE, body);
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::time::Duration;

    use tower::ServiceExt as _;

    use super::*;

    fn admission(max_request_bytes: usize, permits: Option<usize>) -> Admission {
        Admission {
            max_request_bytes,
            posts: Arc::default(),
            _closing: None,
            permits: permits.map(|permits| Arc::new(tokio::sync::Semaphore::new(permits))),
            body_timeout: None,
            request_timeout: Some(Duration::from_millis(200)),
        }
    }

    fn router(admission: Admission) -> axum::Router {
        axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(|request: Request| async move {
                    // The body is handed on whole, and beside it for the judges.
                    let beside = request.extensions().get::<AdmittedBody>().cloned();
                    let body = axum::body::to_bytes(request.into_body(), 1 << 20)
                        .await
                        .unwrap_or_default();
                    assert_eq!(beside.map(|beside| beside.0), Some(body.clone()));
                    if body.as_ref() == b"slow" {
                        tokio::time::sleep(Duration::from_secs(5)).await;
                    }
                    body
                }),
            )
            .layer(axum::middleware::from_fn(move |request, next| {
                admit(admission.clone(), request, next)
            }))
    }

    async fn post(router: &axum::Router, body: &'static str) -> Response {
        let request = http::Request::post("/mcp")
            .body(Body::from(body))
            .expect("a request");
        router.clone().oneshot(request).await.expect("answered")
    }

    #[tokio::test]
    async fn a_body_within_the_limit_is_handed_on_and_one_over_it_refused() {
        let router = router(admission(8, None));
        assert_eq!(
            post(&router, "12345678").await.status(),
            http::StatusCode::OK
        );
        assert_eq!(
            post(&router, "123456789").await.status(),
            http::StatusCode::PAYLOAD_TOO_LARGE
        );
    }

    #[tokio::test]
    async fn past_the_deadline_the_answer_is_503_and_past_the_limit_overloaded() {
        let full = router(admission(64, Some(0)));
        let overloaded = post(&full, "{}").await;
        assert_eq!(overloaded.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        let body = axum::body::to_bytes(overloaded.into_body(), 1024)
            .await
            .expect("a body");
        let answer: serde_json::Value = serde_json::from_slice(&body).expect("JSON-RPC");
        assert_eq!(answer["error"]["code"], OVERLOADED);

        let slow = post(&router(admission(64, None)), "slow").await;
        assert_eq!(slow.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(slow.headers()[http::header::RETRY_AFTER], "1");
    }
}

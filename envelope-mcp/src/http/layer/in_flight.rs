//! The ids in flight: a request reusing the JSON-RPC id of one still in flight in its session
//! is answered at once with [`DUPLICATE_ID`](crate::DUPLICATE_ID), carrying that id.

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use rmcp::model::JsonRpcMessage;
use serde_json::Value;

use super::json_answer;
use super::message::Judged;
use crate::in_flight::{Flight, InFlight, duplicate_answer};

/// Requests in flight, by session id and JSON-RPC id (as compact JSON, so `1` and `"1"`
/// differ).
pub(super) type Ids = Arc<InFlight<(String, String)>>;

/// The session and JSON-RPC id of a request within a session; `None` for anything else (a
/// notification, an answer, a request opening a session).
fn request_key(request: &Request) -> Option<((String, String), Value)> {
    let session = request.headers().get("mcp-session-id")?.to_str().ok()?;
    let judged = request.extensions().get::<Judged>()?;
    let JsonRpcMessage::Request(message) = &*judged.0 else {
        return None;
    };
    let id = serde_json::to_value(&message.id).ok()?;
    Some(((session.to_owned(), id.to_string()), id))
}

/// Middleware: registers the request's id in its session, or answers a duplicate at once. The
/// registration travels in the request's extensions into rmcp's handler context: the id stays
/// in flight until the handler is done with it, however early the client hangs up.
pub(super) async fn hold_id(ids: Ids, mut request: Request, next: Next) -> Response {
    if let Some((key, id)) = request_key(&request) {
        let Some(flight) = Flight::begin(&ids, key) else {
            let answer = serde_json::to_vec(&duplicate_answer(&id)).unwrap_or_default();
            return json_answer(http::StatusCode::OK, answer);
        };
        request.extensions_mut().insert(Arc::new(flight));
    }
    next.run(request).await
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;

    #[tokio::test]
    async fn an_id_in_flight_in_its_session_is_answered_as_a_duplicate() {
        let ids = Ids::default();
        // The handler keeps each request (and its flight) as rmcp's would while it runs.
        let kept: Arc<Mutex<Vec<Request>>> = Arc::default();
        let keeping = Arc::clone(&kept);
        let router = axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(move |request: Request| {
                    let keeping = Arc::clone(&keeping);
                    async move {
                        keeping.lock().expect("no poisoning").push(request);
                        "running"
                    }
                }),
            )
            .layer(axum::middleware::from_fn(move |request, next| {
                hold_id(Arc::clone(&ids), request, next)
            }));
        let ping = r#"{"jsonrpc":"2.0","id":7,"method":"ping"}"#;
        let post = |session: &'static str| {
            let message = crate::lines::judge(ping.as_bytes(), 1 << 20).expect("a message");
            let mut request = http::Request::post("/mcp")
                .header("mcp-session-id", session)
                .body(Body::empty())
                .expect("a request");
            request.extensions_mut().insert(Judged(Arc::new(message)));
            router.clone().oneshot(request)
        };
        let text = |response: Response| async move {
            let body = axum::body::to_bytes(response.into_body(), 1 << 16)
                .await
                .expect("a body");
            String::from_utf8_lossy(&body).into_owned()
        };
        assert_eq!(text(post("a").await.expect("answered")).await, "running");
        let duplicate = text(post("a").await.expect("answered")).await;
        assert!(duplicate.contains("\"id\":7"), "{duplicate}");
        assert_eq!(
            text(post("b").await.expect("answered")).await,
            "running",
            "another session's ids are its own"
        );
        // The first request done with, its id is free again.
        kept.lock().expect("no poisoning").clear();
        assert_eq!(text(post("a").await.expect("answered")).await, "running");
    }
}

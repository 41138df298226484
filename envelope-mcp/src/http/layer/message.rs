//! The message judge: a posted body is one JSON-RPC message, judged as the stdio framing
//! judges a line, before rmcp reads it.

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use rmcp::RoleServer;
use rmcp::model::{GetExtensions as _, JsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;

use super::admit::AdmittedBody;
use super::json_answer;
use crate::jsonrpc::ControlGivenTwice;
use crate::lines::judge;

/// The posted message, judged: what the layers after this one read of it (the session cap,
/// the step-up, the ids in flight).
#[derive(Clone)]
pub(super) struct Judged(pub(super) Arc<RxJsonRpcMessage<RoleServer>>);

/// Middleware: a posted body that is no JSON-RPC message is answered `400` with the JSON-RPC
/// error the stdio framing answers it with (rmcp's own answer is a `415` in plain text); one
/// that is goes on as [`Judged`], with a control its text named twice noted
/// ([`ControlGivenTwice`]) for the call's door: rmcp reads the body again, into a message of
/// its own, and hands the handler the request's parts.
pub(super) async fn judge_message(
    max_request_bytes: usize,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let bytes = match parts.extensions.get::<AdmittedBody>() {
        Some(admitted) => admitted.0.clone(),
        None => axum::body::to_bytes(body, max_request_bytes)
            .await
            .unwrap_or_default(),
    };
    let message = match judge(&bytes, max_request_bytes) {
        Ok(message) => message,
        Err(answer) => return json_answer(http::StatusCode::BAD_REQUEST, answer),
    };
    if let JsonRpcMessage::Request(request) = &message
        && let Some(twice) = request.request.extensions().get::<ControlGivenTwice>()
    {
        parts.extensions.insert(*twice);
    }
    parts.extensions.insert(Judged(Arc::new(message)));
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;

    fn router() -> axum::Router {
        axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(|request: Request| async move {
                    let judged = request.extensions().get::<Judged>().is_some();
                    let twice = request
                        .extensions()
                        .get::<ControlGivenTwice>()
                        .map(|twice| twice.0);
                    format!("{judged} {twice:?}")
                }),
            )
            .layer(axum::middleware::from_fn(|request, next| {
                judge_message(1 << 20, request, next)
            }))
    }

    async fn post(body: &'static str) -> (http::StatusCode, String) {
        let request = http::Request::post("/mcp")
            .body(Body::from(body))
            .expect("a request");
        let response = router().oneshot(request).await.expect("answered");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 16)
            .await
            .expect("a body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn no_message_is_a_json_rpc_error_and_a_control_named_twice_is_noted() {
        let (status, body) = post("{not json").await;
        assert_eq!(status, http::StatusCode::BAD_REQUEST);
        assert!(body.contains("\"jsonrpc\":\"2.0\""), "{body}");
        let call = r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"dialect":"tsa","dialect":"cos"}}}"#;
        assert_eq!(
            post(call).await,
            (http::StatusCode::OK, "true Some(\"dialect\")".to_owned())
        );
        let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        assert_eq!(
            post(ping).await,
            (http::StatusCode::OK, "true None".to_owned())
        );
    }
}

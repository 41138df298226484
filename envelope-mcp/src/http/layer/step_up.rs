//! The specification's step-up: a `tools/call` whose caller's token lacks a scope the tool
//! declares is answered `403` with a challenge naming the scopes, before rmcp sees it, so that
//! the client's OAuth layer asks for the wider scope and retries. (Feature `auth`.)

use std::sync::Arc;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use envelope_core::Caller;
use rmcp::model::{ClientRequest, JsonRpcMessage};

use super::super::INSUFFICIENT_SCOPE_ERROR;
use super::super::auth::Challenge;
use super::json_answer;
use super::message::Judged;
use crate::server::CallableOnly;
use crate::{EnvelopeServer, REQUEST_ID_HEADER};

/// The server whose tools' scopes a call is held to, and the challenge its refusal carries.
pub(super) struct StepUp {
    pub(super) server: EnvelopeServer,
    pub(super) challenge: Arc<Challenge>,
}

/// Middleware: answers a call its caller's scopes do not cover as the step-up flow has it:
/// `403` with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…",
/// resource_metadata="…"`, and in the body the JSON-RPC error [`INSUFFICIENT_SCOPE_ERROR`]
/// whose `data` is the `permission` envelope (code `insufficient_scope`, naming the scopes
/// required and missing): an error, as a client reads a non-`2xx` answer's body. Any other
/// message, an unknown tool, a caller the tool's scopes cover, or a listing filtered to what
/// the caller may call (a tool it may not call is then hidden, and the call answered as the
/// server answers an unknown tool) goes on.
pub(super) async fn step_up(step_up: Arc<StepUp>, request: Request, next: Next) -> Response {
    // The request's parts, not the request: its body is not `Sync`, and the refusal is
    // awaited.
    let refused = refusal(&step_up, request.extensions(), request.headers()).await;
    match refused {
        Some(refused) => refused,
        None => next.run(request).await,
    }
}

/// The `403` for the request of `extensions` and `headers`, when it is a call its caller may
/// not make.
async fn refusal(
    step_up: &StepUp,
    extensions: &http::Extensions,
    headers: &http::HeaderMap,
) -> Option<Response> {
    let caller = extensions.get::<Caller>()?;
    if extensions.get::<CallableOnly>().is_some() {
        return None;
    }
    let judged = extensions.get::<Judged>()?;
    let JsonRpcMessage::Request(message) = &*judged.0 else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &message.request else {
        return None;
    };
    // Decided from the token and the tool's scopes, before any pipeline runs.
    let scopes = step_up.server.tool_scopes(&call.params.name)?;
    if caller.may(&scopes) {
        return None;
    }
    let client_request_id = headers
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    let (refused, envelope) = step_up
        .server
        .refused_for_scope(
            &call.params.name,
            call.params.arguments.clone(),
            caller,
            client_request_id,
        )
        .await?;
    tracing::info!(
        tool = %call.params.name,
        "a call lacking a scope is answered 403 for the client to step up"
    );
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": message.id,
        // wire: JSON-RPC's error member, not an envelope's
        "error": { "code": INSUFFICIENT_SCOPE_ERROR, "message": refused, "data": envelope },
    });
    let mut response = json_answer(
        http::StatusCode::FORBIDDEN,
        serde_json::to_vec(&answer).unwrap_or_default(),
    );
    response.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        step_up.challenge.insufficient_scope(&scopes),
    );
    Some(response)
}

//! What an upstream on MCP 2026-07-28 asks before it answers a call: it answers
//! `InputRequiredResult`, naming requests for the client (elicitation, sampling, roots) and an
//! opaque `requestState`, and expects the call again with the answers (`inputResponses`) and
//! that state (SEP-2322).
//!
//! The proxy asks each request (an elicitation, a sampling, the client's roots) of the client
//! of the call, through the call's own
//! [`ToolContext`]: a client on an older revision is sent the request as one of the server's
//! own; a client on 2026-07-28 gets an `InputRequiredResult` of the proxy's, sealed by the
//! proxy's server, and calling again runs the call again from the start, every answer given so
//! far read back in order. Then the upstream is called again with the answers, until it
//! answers, at most [`MAX_INPUT_ROUNDS`] times.

#![allow(deprecated)] // sampling and roots, which rmcp marks deprecated (SEP-2577)

use std::future::Future;

use envelope_core::{ToolContext, ToolError};
use rmcp::model::{CallToolResult, InputRequest, InputRequiredResult, InputResponses};
use serde_json::Value;

use crate::errors::{UPSTREAM_INPUT_UNRELAYED, upstream_error};
use crate::relay::{Unrelayed, elicit_with, roots_with, sample_with};

/// What the upstream answered a call.
pub(crate) enum Answered {
    /// Its result.
    Complete(CallToolResult),
    /// On 2026-07-28: the input it needs from the client before it answers.
    InputRequired(InputRequiredResult),
}

/// A call made again with the input the upstream asked for, and the state it gave to echo.
pub(crate) struct Retry {
    pub(crate) responses: InputResponses,
    pub(crate) state: Option<String>,
}

/// The most times one call asks the upstream again with answers: an upstream that keeps asking
/// past it is answered [`UPSTREAM_INPUT_UNRELAYED`].
pub const MAX_INPUT_ROUNDS: usize = 8;

/// The upstream's answer to a call, `round` by `round` (the first with no answers): each time
/// it asks for input first, `ctx`'s client is asked, and the call made again with the answers.
pub(crate) async fn until_answered<Round, Answer>(
    ctx: &ToolContext,
    mut round: Round,
) -> Result<CallToolResult, ToolError>
where
    Round: FnMut(Option<Retry>) -> Answer,
    Answer: Future<Output = Result<Answered, ToolError>>,
{
    let mut retry = None;
    for _ in 0..=MAX_INPUT_ROUNDS {
        match round(retry.take()).await? {
            Answered::Complete(result) => return Ok(result),
            Answered::InputRequired(asked) => retry = Some(answer(ctx, asked).await?),
        }
    }
    Err(upstream_error(
        UPSTREAM_INPUT_UNRELAYED,
        format!("the upstream asked for input before answering more than {MAX_INPUT_ROUNDS} times"),
    ))
}

/// Asks `ctx`'s client what the upstream `asked`, every request at once (a client on
/// 2026-07-28 is asked them all in one round); the call to make again with the answers.
async fn answer(ctx: &ToolContext, asked: InputRequiredResult) -> Result<Retry, ToolError> {
    let requests = asked.input_requests.unwrap_or_default();
    let answers =
        futures::future::join_all(requests.into_iter().map(|(key, request)| async move {
            // Asked under the upstream's own key, where the client's protocol names asks.
            let answer = ask(&ctx.asking_as(&key), request).await;
            (key, answer)
        }))
        .await;
    let mut responses = InputResponses::new();
    for (key, answer) in answers {
        responses.insert(key, answer?);
    }
    Ok(Retry {
        responses,
        state: asked.request_state,
    })
}

/// Asks `ctx`'s client one request of the upstream's; its answer as the upstream reads it.
async fn ask(ctx: &ToolContext, request: InputRequest) -> Result<Value, ToolError> {
    match request {
        InputRequest::Elicitation(request) => {
            to_json(elicit_with(ctx, request.params).await.map_err(unrelayed)?)
        }
        InputRequest::CreateMessage(request) => {
            to_json(sample_with(ctx, request.params).await.map_err(unrelayed)?)
        }
        InputRequest::ListRoots(_) => to_json(roots_with(ctx).await.map_err(unrelayed)?),
        other => Err(upstream_error(
            UPSTREAM_INPUT_UNRELAYED,
            format!(
                "the upstream asked before answering for what the proxy does not know: {}",
                serde_json::to_string(&other).unwrap_or_default()
            ),
        )),
    }
}

/// A client's answer as the upstream reads it back.
fn to_json(answer: impl serde::Serialize) -> Result<Value, ToolError> {
    serde_json::to_value(answer).map_err(|error| {
        upstream_error(
            UPSTREAM_INPUT_UNRELAYED,
            format!("the client's answer could not be written for the upstream: {error}"),
        )
    })
}

/// Why a request was not answered, as the call's error: the client's own (it cannot ask, its
/// answer does not fit) as the envelope says it of any tool, or a request the proxy could not
/// write out for the client.
fn unrelayed(why: Unrelayed) -> ToolError {
    match why {
        Unrelayed::Client(error) => ToolError::from(error),
        Unrelayed::Refused(error) => upstream_error(
            UPSTREAM_INPUT_UNRELAYED,
            format!("the upstream asked before answering: {}", error.message),
        ),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use envelope_core::{ELICITATION_UNAVAILABLE, ROOTS_UNAVAILABLE};
    use rmcp::model::InputRequests;
    use serde_json::json;

    use super::*;

    fn asked(requests: Value) -> InputRequiredResult {
        let requests: InputRequests = serde_json::from_value(requests).expect("input requests");
        InputRequiredResult::new(Some(requests), Some("upstream-state".to_owned()))
    }

    #[tokio::test]
    async fn what_a_client_cannot_answer_is_the_envelopes_own_error() {
        let elicit = asked(json!({"name": {"method": "elicitation/create", "params": {
            "mode": "form",
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}},
        }}}));
        let error = answer(&ToolContext::new(), elicit)
            .await
            .err()
            .expect("no client to ask");
        assert_eq!(error.code(), Some(ELICITATION_UNAVAILABLE));
    }

    #[tokio::test]
    async fn the_roots_of_a_client_that_does_not_tell_them_are_its_own_error() {
        let roots = asked(json!({"roots": {"method": "roots/list"}}));
        let error = answer(&ToolContext::new(), roots)
            .await
            .err()
            .expect("no client to ask");
        assert_eq!(error.code(), Some(ROOTS_UNAVAILABLE));
    }

    #[tokio::test]
    async fn the_roots_go_back_as_the_client_told_them() {
        let told = json!({
            "roots": [
                {"uri": "file:///work", "name": "work", "_meta": {"example.com/mounted": true}},
                {"uri": "file:///tmp"},
            ],
            "_meta": {"example.com/listed-at": "2026-12-07"},
        });
        let (channel, ctx) =
            crate::relay::tests::client_answering(json!({"roots": {}}), told.clone());
        let retry = answer(&ctx, asked(json!({"roots": {"method": "roots/list"}})))
            .await
            .expect("the client tells its roots");
        assert_eq!(retry.responses.get("roots"), Some(&told));
        assert_eq!(channel.relayed.lock().expect("not poisoned").len(), 1);
    }

    #[tokio::test]
    async fn the_state_is_sent_back_and_an_upstream_that_keeps_asking_is_stopped() {
        let rounds = AtomicUsize::new(0);
        let states = std::sync::Mutex::new(Vec::new());
        let error = until_answered(&ToolContext::new(), |retry: Option<Retry>| {
            rounds.fetch_add(1, Ordering::SeqCst);
            states
                .lock()
                .expect("not poisoned")
                .push(retry.and_then(|retry| retry.state));
            async {
                Ok(Answered::InputRequired(
                    InputRequiredResult::from_request_state("upstream-state"),
                ))
            }
        })
        .await
        .expect_err("an upstream that only asks never answers");
        assert_eq!(error.code(), Some(UPSTREAM_INPUT_UNRELAYED));
        assert_eq!(rounds.load(Ordering::SeqCst), MAX_INPUT_ROUNDS + 1);
        let states = states.into_inner().expect("not poisoned");
        assert_eq!(states[0], None, "the first call has no state to echo");
        assert!(
            states[1..]
                .iter()
                .all(|state| state.as_deref() == Some("upstream-state")),
            "every call after echoes the upstream's state: {states:?}"
        );
    }
}

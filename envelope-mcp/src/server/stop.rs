//! What stops a call: the client's cancellation, or its deadline, and the envelope a call past
//! its deadline answers.

use std::sync::Arc;
use std::time::Duration;

use envelope_core::stage::{Cancellation, UntilCancelled, meta_stamp, stamp_request_id};
use envelope_core::{Envelope, RequestId, ToolError, ToolSpec};
use serde_json::Value;

/// The `code` of the envelope a call past its deadline answers.
pub const DEADLINE_EXCEEDED: &str = envelope_core::fields::code::DEADLINE_EXCEEDED;

/// What stops a call: the client cancelling it, or its deadline passing.
pub(super) struct Stop {
    pub(super) client: Option<Arc<dyn Cancellation>>,
    /// Cancelled when the deadline passes.
    pub(super) deadline_passed: tokio_util::sync::CancellationToken,
}

impl Cancellation for Stop {
    fn is_cancelled(&self) -> bool {
        self.deadline_passed.is_cancelled()
            || self
                .client
                .as_ref()
                .is_some_and(|client| client.is_cancelled())
    }

    /// Either signal; `None` when the client's cannot wake a waiter.
    fn until_cancelled(&self) -> Option<UntilCancelled> {
        let deadline = self.deadline_passed.clone().cancelled_owned();
        let Some(client) = &self.client else {
            return Some(Box::pin(deadline));
        };
        let client = client.until_cancelled()?;
        Some(Box::pin(async move {
            futures::future::select(client, std::pin::pin!(deadline)).await;
        }))
    }
}

/// The envelope of a call that ran past `limit`: retrying may help (with a narrower request).
pub(super) fn past_deadline(
    spec: &ToolSpec,
    request_id: RequestId,
    limit: Duration,
) -> Envelope<Value> {
    let error = ToolError::transient(format!(
        "`{}` did not answer within {} ms and was stopped",
        spec.name,
        limit.as_millis()
    ))
    .with_code(DEADLINE_EXCEEDED)
    .with_hint("retry later, or narrow the request so it does less work");
    let mut envelope = Envelope::err(error);
    stamp_request_id(&mut envelope, request_id);
    meta_stamp(&mut envelope)
        .tool(spec.name.clone(), spec.tier, spec.is_idempotent())
        .layer(spec.layer.clone())
        .latency(limit);
    envelope
}

/// A cancellation token (MCP's, or a dropped HTTP request's), read by the tool through
/// [`ToolContext::is_cancelled`].
pub(crate) struct TokenCancellation(pub(crate) tokio_util::sync::CancellationToken);

impl Cancellation for TokenCancellation {
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }

    fn until_cancelled(&self) -> Option<UntilCancelled> {
        Some(Box::pin(self.0.clone().cancelled_owned()))
    }
}

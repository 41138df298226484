//! The hand-offs between the stages of a call, for the crates that serve tools (the transport,
//! the budget stage) and for a tool implemented by hand.
//!
//! One call goes: the transport decodes the request and builds a [`ToolContext`]; the tool
//! runs and returns a [`ToolOutput`], the envelope around its typed payload, beside what is for
//! the budget stage only; the budget stage encodes the payload, shapes, trims and stamps it into
//! the bytes sent. The envelope
//! holds only what goes on the wire; everything here that is not on the wire travels beside it.
//!
//! ```
//! use envelope_core::Envelope;
//! use envelope_core::stage::ToolOutput;
//!
//! // A hand-written tool's answer: its envelope, and the baseline it replaces.
//! let output = ToolOutput::from(Envelope::ok(serde_json::json!({"hits": 3})))
//!     .with_baseline("grep_recursive", 2_000);
//! assert_eq!(output.baseline.as_ref().map(|b| b.tokens), Some(2_000));
//! assert_eq!(output.envelope.data().and_then(|data| data.as_json()), Some(&serde_json::json!({"hits": 3})));
//! ```
//!
//! [`ToolContext`]: crate::ToolContext

use serde_json::Value;

use crate::attachment::Attachment;

pub use crate::bounded::{to_value_capped, to_value_within};
pub use crate::canonical::canonical_json;
pub use crate::context::{
    Cancellation, Controls, OutputFormat, ProgressSink, ResponseMode, States,
};
pub use crate::deep::drop_deep;
use crate::envelope::Envelope;
pub use crate::meta::MetaStamp;
pub use crate::next_action::normalize_next_actions;
pub use crate::panic_capture::{Panicked, catch_panic, install_panic_hook};
pub use crate::payload::{Payload, ResponseSizer};
use crate::request_id::RequestId;
use crate::tool_error::ToolError;

/// What answering without this tool would have cost the agent: the method it would have used
/// (`full_file_read`, `grep_recursive`, …) and that method's size in tokens. The budget stage
/// turns it into `meta.tokens_saved`, `meta.tokens_saved_pct` and `meta.baseline_method`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Baseline {
    /// Wire value of `meta.baseline_method`.
    pub method: String,
    /// Tokens the baseline method would have put in the agent's context.
    pub tokens: u64,
}

/// What a tool call produced: the envelope, and beside it what is for the budget stage only.
///
/// `P` is the payload: typed as the tool returned it ([`Payload`]) until the budget stage
/// encodes it ([`ToolOutput::encode_payload`]), JSON after.
#[derive(Debug)]
pub struct ToolOutput<P = Payload> {
    /// The envelope, every field of which goes on the wire.
    pub envelope: Envelope<P>,
    /// The baseline the tool declared ([`Reply::baseline`](crate::Reply::baseline)), if any.
    pub baseline: Option<Baseline>,
    /// The per-call controls the call was decoded with (the defaults when decoding refused
    /// them): what the budget stage shapes the response by. Decoded once, by the tool entry.
    pub controls: Controls,
    /// How to re-seal the page's continuation when the budget stage cuts the rows
    /// `completeness` describes ([`Reply::resumable`](crate::Reply::resumable), which the
    /// [`Pager`](crate::paging::Pager) sets); without it, such a cut drops the continuation.
    pub resume: Option<crate::paging_core::Resume>,
    /// The media the tool attached ([`Reply::attach`](crate::Reply::attach)), in order: the
    /// budget stage decides which are sent and notes each in `meta.attachments`.
    pub attachments: Vec<Attachment>,
}

impl<P> ToolOutput<P> {
    /// Declares the baseline the tool replaces.
    #[must_use]
    pub fn with_baseline(mut self, method: impl Into<String>, tokens: u64) -> Self {
        self.baseline = Some(Baseline {
            method: method.into(),
            tokens,
        });
        self
    }

    /// Shaped by `controls` (what a tool's entry decodes from its arguments).
    #[must_use]
    pub fn with_controls(mut self, controls: Controls) -> Self {
        self.controls = controls;
        self
    }
}

impl ToolOutput {
    /// The output with its payload as JSON: a typed payload through `encode`, which returns
    /// what it measured on the way beside it (a JSON payload passes through, `M::default()`
    /// measured).
    ///
    /// `encode` runs under the runtime's panic capture: a panic or an error in the payload's
    /// `Serialize` answers as the tool's internal error, logged once, like a panic in its body,
    /// keeping what the runtime stamped in `meta` and the warnings.
    pub fn encode_payload<M: Default>(
        self,
        encode: impl FnOnce(&dyn erased_serde::Serialize) -> Result<(Value, M), serde_json::Error>,
    ) -> (ToolOutput<Value>, M) {
        let (payload, envelope) = self.envelope.split_data::<Value>();
        let output = ToolOutput {
            envelope,
            baseline: self.baseline,
            controls: self.controls,
            resume: self.resume,
            attachments: self.attachments,
        };
        let Some(payload) = payload else {
            return (output, M::default());
        };
        let failure = match crate::panic_capture::catch_unwind_sync(|| payload.into_json(encode)) {
            Ok(Ok((value, measured))) => {
                let envelope = output.envelope.with_data(value);
                return (ToolOutput { envelope, ..output }, measured);
            }
            Ok(Err(error)) => {
                ToolError::internal(format_args!("cannot serialize the payload: {error}"))
            }
            Err(panicked) => {
                let meta = output.envelope.meta();
                panicked.log(meta.tool().unwrap_or_default(), meta.request_id());
                ToolError::internal(panicked.message)
            }
        };
        let envelope = output.envelope.failed(failure);
        (ToolOutput { envelope, ..output }, M::default())
    }
}

impl From<Envelope<Value>> for ToolOutput {
    /// An envelope without baseline: what a hand-written tool, or a transport answering for a
    /// tool (a deadline passed, say), returns.
    fn from(envelope: Envelope<Value>) -> Self {
        ToolOutput {
            envelope: envelope.map_data(Payload::json),
            baseline: None,
            controls: Controls::default(),
            resume: None,
            attachments: Vec::new(),
        }
    }
}

/// Write access to an envelope's `meta`: the library's stamps, typed.
pub fn meta_stamp<T>(envelope: &mut Envelope<T>) -> MetaStamp<'_> {
    MetaStamp(envelope.meta_mut())
}

/// Stamps the request id, and masks an internal error so that it names only that id.
pub fn stamp_request_id<T>(envelope: &mut Envelope<T>, request_id: RequestId) {
    if let Some(error) = envelope.error_mut() {
        error.mask_with(&request_id);
    }
    MetaStamp(envelope.meta_mut()).request_id(request_id);
}

/// Keeps the next actions `keep` accepts, then normalizes the list again; returns how many
/// were dropped. The transport uses it to drop actions the served tools cannot run.
pub fn retain_next_actions<T>(
    envelope: &mut Envelope<T>,
    keep: impl FnMut(&crate::NextAction) -> bool,
) -> usize {
    envelope.retain_next_actions(keep)
}

/// Adds the argument `key: value` to every next action `to` accepts that does not set `key`
/// already: how the transport keeps a call's `dialect` control on the calls it suggests, so
/// that following one answers in the same wire.
pub fn carry_argument<T>(
    envelope: &mut Envelope<T>,
    key: &str,
    value: &Value,
    mut to: impl FnMut(&crate::NextAction) -> bool,
) {
    for action in envelope.next_actions_mut() {
        if to(action) && !action.arguments.contains_key(key) {
            action.arguments.insert(key.to_owned(), value.clone());
        }
    }
}

/// Moves the payload out: the budget stage sends it separately from the rest.
pub fn take_data<T>(envelope: &mut Envelope<T>) -> Option<T> {
    envelope.take_data()
}

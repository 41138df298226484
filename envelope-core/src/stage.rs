//! The hand-offs between the stages of a call, for the crates that serve tools (the transport,
//! the budget stage) and for a tool implemented by hand.
//!
//! One call goes: the transport decodes the request and builds a [`ToolContext`]; the tool
//! runs and returns a [`ToolOutput`], the envelope *beside* what its payload encoder measured
//! on the way; the budget stage shapes, trims and stamps it into the bytes sent. The envelope
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
//! assert!(output.precut.is_empty());
//! ```
//!
//! [`ToolContext`]: crate::ToolContext

use serde_json::Value;

pub use crate::bounded::{to_value_capped, to_value_within};
pub use crate::canonical::canonical_json;
pub use crate::context::{
    Cancellation, Controls, OutputFormat, ProgressSink, ResponseMode, States,
};
pub use crate::deep::drop_deep;
use crate::envelope::Envelope;
pub use crate::meta::MetaStamp;
pub use crate::next_action::normalize_next_actions;
pub use crate::payload::{EncodedPayload, EncoderMeasure, PayloadEncoder};
use crate::request_id::RequestId;
pub use crate::runtime::{catch_panic, install_panic_hook};

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
#[derive(Debug)]
pub struct ToolOutput {
    /// The envelope, every field of which goes on the wire.
    pub envelope: Envelope<Value>,
    /// The baseline the tool declared ([`Reply::baseline`](crate::Reply::baseline)), if any.
    pub baseline: Option<Baseline>,
    /// The full lengths of top-level lists the payload encoder cut short, by list key (`data`
    /// for a payload that is itself a list): the budget stage names these cuts with the true
    /// numbers.
    pub precut: Vec<(String, usize)>,
    /// What the payload encoder measured, so the budget stage need not measure it again.
    pub measure: EncoderMeasure,
    /// The per-call controls the call was decoded with (the defaults when decoding refused
    /// them): what the budget stage shapes the response by. Decoded once, by the tool entry.
    pub controls: Controls,
    /// How to re-seal the page's continuation when the budget stage cuts the rows
    /// `completeness` describes ([`Reply::resumable`](crate::Reply::resumable), which the
    /// [`Pager`](crate::paging::Pager) sets); without it, such a cut drops the continuation.
    pub resume: Option<crate::paging::Resume>,
}

impl ToolOutput {
    /// Declares the baseline the tool replaces.
    #[must_use]
    pub fn with_baseline(mut self, method: impl Into<String>, tokens: u64) -> Self {
        self.baseline = Some(Baseline {
            method: method.into(),
            tokens,
        });
        self
    }
}

impl From<Envelope<Value>> for ToolOutput {
    /// An envelope without encoder measurements or baseline: what a hand-written tool, or a
    /// transport answering for a tool (a deadline passed, say), returns.
    fn from(envelope: Envelope<Value>) -> Self {
        ToolOutput {
            envelope,
            baseline: None,
            precut: Vec::new(),
            measure: EncoderMeasure::default(),
            controls: Controls::default(),
            resume: None,
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

/// Moves the payload out: the budget stage sends it separately from the rest.
pub fn take_data<T>(envelope: &mut Envelope<T>) -> Option<T> {
    envelope.take_data()
}

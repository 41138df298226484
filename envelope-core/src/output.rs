//! [`ToolOutput`]: what a tool call produced, the envelope and beside it what is for the budget
//! stage only. Its own module (re-exported by [`crate::stage`]) so that the tool, its runtime
//! and its reply can name it without naming the stages.

use serde_json::Value;

use crate::attachment::Attachment;
use crate::controls::Controls;
use crate::envelope::Envelope;
use crate::payload::Payload;
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
    /// The per-call controls the call was decided with (the defaults when they were refused):
    /// what the budget stage shapes the response by. Decided once, by a server's door (or, for
    /// a tool called directly, by its entry).
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
        self.encode_payload_measuring(encode, |_| M::default())
    }

    /// [`encode_payload`](Self::encode_payload), a payload that is JSON already measured by
    /// `measure` (under the same panic capture): what an encoder that sizes what it converts
    /// learns of one it did not convert.
    pub fn encode_payload_measuring<M: Default>(
        self,
        encode: impl FnOnce(&dyn erased_serde::Serialize) -> Result<(Value, M), serde_json::Error>,
        measure: impl FnOnce(&Value) -> M,
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
        let failure =
            match crate::panic_capture::catch_unwind_sync(|| payload.into_json(encode, measure)) {
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

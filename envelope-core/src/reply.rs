//! What a tool returns when a bare payload is not enough.

use serde::Serialize;

use crate::attachment::Attachment;
use crate::completeness::Completeness;
use crate::empty_reason::EmptyReason;
use crate::envelope::Envelope;
use crate::next_action::NextAction;
use crate::notice::Notice;
use crate::request_id::RequestId;
use crate::tool_error::ToolError;
use crate::verdict::Verdict;

/// The result type of a tool: a payload (or a [`Reply`]) or a [`ToolError`].
pub type ToolResult<T> = Result<T, ToolError>;

/// A payload plus everything else a tool may say about it: verdict, summary, next step,
/// completeness, empty reason, next actions, warnings and diagnostics. `meta` is not here: the
/// library stamps it.
///
/// ```
/// use envelope_core::{Completeness, Reply, Unit, Verdict};
///
/// let reply = Reply::new(vec!["a.rs", "b.rs"])
///     .verdict(Verdict::Safe)
///     .summary_line("2 files, nothing risky")
///     .completeness(Completeness::complete(Unit::FILE, 2));
/// # let _ = reply;
/// ```
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct Reply<T> {
    data: T,
    verdict: Option<Verdict>,
    summary_line: Option<String>,
    next_step: Option<String>,
    completeness: Option<Completeness>,
    empty: Option<(EmptyReason, String)>,
    next_actions: Vec<NextAction>,
    warnings: Vec<Notice>,
    diagnostics: Vec<Notice>,
    baseline: Option<(String, u64)>,
    resume: Option<crate::paging_core::Resume>,
    attachments: Vec<Attachment>,
}

impl<T> Reply<T> {
    /// A reply carrying `data`, with verdict `INFO` unless set.
    pub fn new(data: T) -> Self {
        Reply {
            data,
            verdict: None,
            summary_line: None,
            next_step: None,
            completeness: None,
            empty: None,
            next_actions: Vec::new(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            baseline: None,
            resume: None,
            attachments: Vec::new(),
        }
    }

    /// Hands back media beside the payload: an image, audio, a link to a resource or a
    /// resource embedded whole, sent as content blocks after the envelope's text mirror, in the
    /// order attached. `meta.attachments` says what each is and whether it was sent: a response
    /// over its budget links a resource instead of embedding it, and drops media it cannot
    /// link, saying so.
    pub fn attach(mut self, attachment: Attachment) -> Self {
        self.attachments.push(attachment);
        self
    }

    /// The media attached so far.
    pub fn attachments(&self) -> &[Attachment] {
        &self.attachments
    }

    /// Declares what answering without this tool would have cost, for `meta.tokens_saved`:
    /// the method (`full_file_read`, `grep_recursive`, …) and its size in tokens.
    pub fn baseline(mut self, method: impl Into<String>, tokens: u64) -> Self {
        self.baseline = Some((method.into(), tokens));
        self
    }

    /// Sets the verdict. `ERROR` is for failures; on a reply it reads as `WARN`.
    pub fn verdict(mut self, verdict: Verdict) -> Self {
        self.verdict = Some(verdict);
        self
    }

    /// Sets the one-line triage.
    pub fn summary_line(mut self, line: impl Into<String>) -> Self {
        self.summary_line = Some(line.into());
        self
    }

    /// Sets the one concrete next step.
    pub fn next_step(mut self, step: impl Into<String>) -> Self {
        self.next_step = Some(step.into());
        self
    }

    /// Sets the completeness of the payload's collection.
    pub fn completeness(mut self, completeness: Completeness) -> Self {
        self.completeness = Some(completeness);
        self
    }

    /// Says why the result is empty, with the diagnosis that always goes with it.
    pub fn empty(mut self, reason: EmptyReason, diagnosis: impl Into<String>) -> Self {
        self.empty = Some((reason, diagnosis.into()));
        self
    }

    /// Adds next actions; the envelope normalizes them.
    pub fn next_actions(mut self, actions: impl IntoIterator<Item = NextAction>) -> Self {
        self.next_actions.extend(actions);
        self
    }

    /// Adds a warning.
    pub fn warning(mut self, warning: Notice) -> Self {
        self.warnings.push(warning);
        self
    }

    /// Adds a diagnostic.
    pub fn diagnostic(mut self, diagnostic: Notice) -> Self {
        self.diagnostics.push(diagnostic);
        self
    }

    /// The envelope this reply becomes, before the library stamps `meta`.
    pub fn into_envelope(self) -> Envelope<T> {
        self.into_envelope_for(RequestId::new())
    }

    /// The envelope for the call named `request_id`.
    pub(crate) fn into_envelope_for(self, request_id: RequestId) -> Envelope<T> {
        self.into_envelope_around(request_id, |data| data)
    }

    /// The envelope for the call named `request_id`, around the payload as `wrap` makes it
    /// (the runtime keeps it typed: [`Payload`](crate::stage::Payload)).
    pub(crate) fn into_envelope_around<U>(
        self,
        request_id: RequestId,
        wrap: impl FnOnce(T) -> U,
    ) -> Envelope<U> {
        let Reply {
            data,
            verdict,
            summary_line,
            next_step,
            completeness,
            empty,
            next_actions,
            warnings,
            diagnostics,
            // Not on the wire: the runtime takes it out first and hands it on beside the
            // envelope (see `stage::ToolOutput`).
            baseline: _,
            resume: _,
            attachments: _,
        } = self;
        let mut envelope = Envelope::ok_for(wrap(data), request_id);
        if let Some(verdict) = verdict {
            envelope = envelope.with_verdict(verdict);
        }
        if let Some(line) = summary_line {
            envelope = envelope.with_summary_line(line);
        }
        if let Some(step) = next_step {
            envelope = envelope.with_next_step(step);
        }
        if let Some(completeness) = completeness {
            envelope = envelope.with_completeness(completeness);
        }
        if let Some((reason, diagnosis)) = empty {
            envelope = envelope.with_empty_reason(reason, diagnosis);
        }
        if !next_actions.is_empty() {
            envelope = envelope.with_next_actions(next_actions);
        }
        for warning in warnings {
            envelope = envelope.with_warning(warning);
        }
        for diagnostic in diagnostics {
            envelope = envelope.with_diagnostic(diagnostic);
        }
        envelope
    }

    /// How the budget stage re-seals this page's continuation if it cuts the page's rows; the
    /// [`Pager`](crate::paging::Pager) sets it.
    pub fn resumable(mut self, resume: crate::paging_core::Resume) -> Self {
        self.resume = Some(resume);
        self
    }

    /// Takes out how to re-seal the page, which travels beside the envelope.
    pub(crate) fn take_resume(&mut self) -> Option<crate::paging_core::Resume> {
        self.resume.take()
    }

    /// Takes out the attachments, which travel beside the envelope.
    pub(crate) fn take_attachments(&mut self) -> Vec<Attachment> {
        std::mem::take(&mut self.attachments)
    }

    /// Takes out the declared baseline, which travels beside the envelope.
    pub(crate) fn take_baseline(&mut self) -> Option<crate::output::Baseline> {
        self.baseline
            .take()
            .map(|(method, tokens)| crate::output::Baseline { method, tokens })
    }
}

/// A tool's `Ok` value: a bare serializable payload, or a [`Reply`] around one.
///
/// The payload is `Send + 'static`: it travels typed from the tool to the budget stage, which
/// encodes it where it trims it (rows that could never be sent are never converted).
pub trait IntoReply {
    /// The payload type.
    type Data: Serialize + Send + 'static;

    /// The reply, with a bare payload wrapped as is.
    fn into_reply(self) -> Reply<Self::Data>;
}

impl<T: Serialize + Send + 'static> IntoReply for T {
    type Data = T;

    fn into_reply(self) -> Reply<T> {
        Reply::new(self)
    }
}

impl<T: Serialize + Send + 'static> IntoReply for Reply<T> {
    type Data = T;

    fn into_reply(self) -> Reply<T> {
        self
    }
}

//! The envelope: what `structuredContent` holds for every call.

use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Deserializer, Serialize};

use crate::completeness::Completeness;
use crate::empty_reason::EmptyReason;
use crate::error::CoreError;
use crate::meta::Meta;
use crate::next_action::{NextAction, normalize_next_actions};
use crate::notice::Notice;
use crate::request_id::RequestId;
use crate::tool_error::ToolError;
use crate::verdict::Verdict;

/// One tool response, the way an agent loop reads it.
///
/// Wire shape (absent means "not applicable", never zero or empty):
/// `{ok, verdict, summary_line?, next_step?, data?, error?, completeness?, empty_reason?,
/// diagnosis?, next_actions?, warnings?, diagnostics?, meta}`.
///
/// Invariants: `ok` is true iff `data` is present and false iff `error` is; a failed envelope's
/// verdict is `ERROR` and a successful one's never is; `next_actions` is normalized (at most 8);
/// `meta` is written only by the library.
///
/// ```
/// use envelope_core::{Envelope, Verdict};
///
/// let envelope = Envelope::ok(serde_json::json!({"hits": 3})).with_summary_line("3 hits");
/// let wire = serde_json::to_value(&envelope)?;
/// assert_eq!(wire["ok"], true);
/// assert_eq!(wire["verdict"], "INFO");
/// assert_eq!(wire["data"]["hits"], 3);
/// assert!(wire.get("error").is_none());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
#[schemars(transform = ok_xor_error)]
pub struct Envelope<T> {
    /// Whether the call worked; true iff `data` is present.
    ok: bool,
    /// The verdict alphabet; `ERROR` iff `ok` is false.
    verdict: Verdict,
    /// One-line triage.
    #[serde(skip_serializing_if = "Option::is_none")]
    summary_line: Option<String>,
    /// One concrete, imperative next action; on truncation it states the real numbers.
    #[serde(skip_serializing_if = "Option::is_none")]
    next_step: Option<String>,
    /// The tool's payload, iff `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    data: Option<T>,
    /// The failure, iff not `ok`.
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ToolError>,
    /// Completeness of the payload's bounded collection.
    #[serde(skip_serializing_if = "Option::is_none")]
    completeness: Option<Completeness>,
    /// Why the result is empty; travels with `diagnosis`.
    #[serde(skip_serializing_if = "Option::is_none")]
    empty_reason: Option<EmptyReason>,
    /// Prose explaining an empty or surprising result.
    #[serde(skip_serializing_if = "Option::is_none")]
    diagnosis: Option<String>,
    /// Executable follow-up calls, normalized.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    next_actions: Vec<NextAction>,
    /// Things to flag about this response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    warnings: Vec<Notice>,
    /// What went wrong, specifically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    diagnostics: Vec<Notice>,
    /// Library-stamped facts about the call.
    meta: Meta,
}

/// Adds the rules that tie `ok`, `data`, `error` and `verdict` together.
fn ok_xor_error(schema: &mut Schema) {
    use crate::fields::envelope::{DATA, ERROR, OK, VERDICT};
    schema.insert(
        "oneOf".into(),
        serde_json::json!([
            {
                "properties": {
                    (OK): { "const": true },
                    (VERDICT): { "not": { "const": "ERROR" } }
                },
                "required": [DATA],
                "not": { "required": [ERROR] }
            },
            {
                "properties": {
                    (OK): { "const": false },
                    (VERDICT): { "const": "ERROR" }
                },
                "required": [ERROR],
                "not": { "required": [DATA] }
            }
        ]),
    );
}

impl<T> Envelope<T> {
    fn with_outcome(
        ok: bool,
        verdict: Verdict,
        data: Option<T>,
        error: Option<ToolError>,
        request_id: RequestId,
    ) -> Self {
        Envelope {
            ok,
            verdict,
            summary_line: None,
            next_step: None,
            data,
            error,
            completeness: None,
            empty_reason: None,
            diagnosis: None,
            next_actions: Vec::new(),
            warnings: Vec::new(),
            diagnostics: Vec::new(),
            meta: Meta::new(request_id),
        }
    }

    /// A successful envelope with verdict `INFO`.
    pub fn ok(data: T) -> Self {
        Self::ok_for(data, RequestId::new())
    }

    /// A failed envelope with verdict `ERROR`.
    pub fn err(error: ToolError) -> Self {
        Self::err_for(error, RequestId::new())
    }

    pub(crate) fn ok_for(data: T, request_id: RequestId) -> Self {
        Self::with_outcome(true, Verdict::Info, Some(data), None, request_id)
    }

    /// A failed envelope for the call named `request_id`, its internal message masked.
    pub(crate) fn err_for(mut error: ToolError, request_id: RequestId) -> Self {
        error.mask_with(&request_id);
        let recovery = error.take_recovery();
        Self::with_outcome(false, Verdict::Error, None, Some(error), request_id)
            .with_next_actions(recovery)
    }

    /// `Ok` becomes [`Envelope::ok`], `Err` becomes [`Envelope::err`].
    pub fn from_result(result: Result<T, ToolError>) -> Self {
        match result {
            Ok(data) => Self::ok(data),
            Err(error) => Self::err(error),
        }
    }

    /// Sets the verdict of a successful envelope. A failed envelope's verdict stays `ERROR`,
    /// and `ERROR` on a successful one reads as `WARN`: `ERROR` means the call failed.
    #[must_use]
    pub fn with_verdict(mut self, verdict: Verdict) -> Self {
        if self.ok {
            self.verdict = if verdict == Verdict::Error {
                Verdict::Warn
            } else {
                verdict
            };
        }
        self
    }

    /// Sets the one-line triage.
    #[must_use]
    pub fn with_summary_line(mut self, line: impl Into<String>) -> Self {
        self.summary_line = Some(line.into());
        self
    }

    /// Sets the one concrete next step.
    #[must_use]
    pub fn with_next_step(mut self, step: impl Into<String>) -> Self {
        self.next_step = Some(step.into());
        self
    }

    /// Sets the completeness. When the result is not complete and no `next_step` is set yet,
    /// the honest one is derived from it (see [`Completeness::next_step`]).
    #[must_use]
    pub fn with_completeness(mut self, completeness: Completeness) -> Self {
        if self.next_step.is_none() {
            let advice = if completeness.continuation().is_some() {
                "repeat the call with `continuation` for the next page"
            } else {
                "raise the limit or narrow the query"
            };
            self.next_step = completeness.next_step(advice);
        }
        self.completeness = Some(completeness);
        self
    }

    /// Says why the result is empty, with the prose diagnosis that always goes with it.
    #[must_use]
    pub fn with_empty_reason(mut self, reason: EmptyReason, diagnosis: impl Into<String>) -> Self {
        self.empty_reason = Some(reason);
        self.diagnosis = Some(diagnosis.into());
        self
    }

    pub(crate) fn next_actions_mut(&mut self) -> &mut [NextAction] {
        &mut self.next_actions
    }

    pub(crate) fn retain_next_actions(
        &mut self,
        mut keep: impl FnMut(&NextAction) -> bool,
    ) -> usize {
        let before = self.next_actions.len();
        self.next_actions.retain(|action| keep(action));
        let dropped = before - self.next_actions.len();
        if dropped > 0 {
            // Dropping an action can orphan another's dependency: normalize again.
            self.next_actions = normalize_next_actions(std::mem::take(&mut self.next_actions));
        }
        dropped
    }

    /// Adds next actions and normalizes the whole list.
    #[must_use]
    pub fn with_next_actions(mut self, actions: impl IntoIterator<Item = NextAction>) -> Self {
        let all = std::mem::take(&mut self.next_actions)
            .into_iter()
            .chain(actions);
        self.next_actions = normalize_next_actions(all);
        self
    }

    /// Adds a warning.
    #[must_use]
    pub fn with_warning(mut self, warning: Notice) -> Self {
        self.warnings.push(warning);
        self
    }

    /// Adds a diagnostic.
    #[must_use]
    pub fn with_diagnostic(mut self, diagnostic: Notice) -> Self {
        self.diagnostics.push(diagnostic);
        self
    }

    /// `ok`: whether the call did what was asked; branch on this first.
    pub fn is_ok(&self) -> bool {
        self.ok
    }

    /// `verdict`: what the agent should make of the answer (`INFO`, `NOT_FOUND`, `ERROR`, …).
    pub fn verdict(&self) -> Verdict {
        self.verdict
    }

    /// `summary_line`: one line a human or a log can read instead of the payload.
    pub fn summary_line(&self) -> Option<&str> {
        self.summary_line.as_deref()
    }

    /// `next_step`: what to do next, in prose, when the answer is partial or empty.
    pub fn next_step(&self) -> Option<&str> {
        self.next_step.as_deref()
    }

    /// `data`: the payload, present exactly when `ok`.
    pub fn data(&self) -> Option<&T> {
        self.data.as_ref()
    }

    /// `error`: what failed and whether a retry helps, present exactly when not `ok`.
    pub fn error(&self) -> Option<&ToolError> {
        self.error.as_ref()
    }

    /// `completeness`: how many rows were returned out of how many, and what cut the rest.
    pub fn completeness(&self) -> Option<&Completeness> {
        self.completeness.as_ref()
    }

    /// `empty_reason`: why an empty result is empty, so the agent can fix the query.
    pub fn empty_reason(&self) -> Option<&EmptyReason> {
        self.empty_reason.as_ref()
    }

    /// `diagnosis`: the empty reason, said for this call (which filter excluded what).
    pub fn diagnosis(&self) -> Option<&str> {
        self.diagnosis.as_deref()
    }

    /// `next_actions`: calls the agent can make next, ranked and deduplicated.
    pub fn next_actions(&self) -> &[NextAction] {
        &self.next_actions
    }

    /// `warnings`: what the caller should know about this answer (an unknown argument, say).
    pub fn warnings(&self) -> &[Notice] {
        &self.warnings
    }

    /// `diagnostics`: notes for whoever debugs the server, not for the agent's next move.
    pub fn diagnostics(&self) -> &[Notice] {
        &self.diagnostics
    }

    /// `meta`: what the library stamped (request id, tier, token count, cuts).
    pub fn meta(&self) -> &Meta {
        &self.meta
    }

    /// The payload or the error, dropping everything else.
    pub fn into_result(self) -> Result<T, ToolError> {
        match (self.data, self.error) {
            (Some(data), _) => Ok(data),
            (None, Some(error)) => Err(error),
            // Unreachable by the type's invariant; kept total rather than panicking.
            (None, None) => Err(ToolError::internal("envelope without data or error")),
        }
    }

    /// The payload, and the envelope without it, to carry a payload of another type.
    pub(crate) fn split_data<U>(self) -> (Option<T>, Envelope<U>) {
        let Envelope {
            ok,
            verdict,
            summary_line,
            next_step,
            data,
            error,
            completeness,
            empty_reason,
            diagnosis,
            next_actions,
            warnings,
            diagnostics,
            meta,
        } = self;
        let envelope = Envelope {
            ok,
            verdict,
            summary_line,
            next_step,
            data: None,
            error,
            completeness,
            empty_reason,
            diagnosis,
            next_actions,
            warnings,
            diagnostics,
            meta,
        };
        (data, envelope)
    }

    /// The same envelope around `data`, split off by [`Envelope::split_data`].
    pub(crate) fn with_data(mut self, data: T) -> Self {
        self.data = Some(data);
        self
    }

    /// The same call failed with `error` after all: what the runtime stamped in `meta` and the
    /// warnings stay; the rest of the answer goes with the payload it described.
    pub(crate) fn failed(self, error: ToolError) -> Self {
        let mut failed = Envelope::err_for(error, *self.meta.request_id());
        failed.meta = self.meta;
        failed.warnings = self.warnings;
        failed
    }

    /// The same envelope with its payload converted by `convert`.
    pub(crate) fn map_data<U>(self, convert: impl FnOnce(T) -> U) -> Envelope<U> {
        let (data, envelope) = self.split_data();
        match data {
            Some(data) => envelope.with_data(convert(data)),
            None => envelope,
        }
    }

    pub(crate) fn take_data(&mut self) -> Option<T> {
        self.data.take()
    }

    pub(crate) fn meta_mut(&mut self) -> &mut Meta {
        &mut self.meta
    }

    pub(crate) fn error_mut(&mut self) -> Option<&mut ToolError> {
        self.error.as_mut()
    }
}

/// The wire form as read, before the shape rules are checked.
#[derive(Deserialize)]
#[serde(bound(deserialize = "T: Deserialize<'de>"))]
struct RawEnvelope<T> {
    ok: bool,
    verdict: Verdict,
    #[serde(default)]
    summary_line: Option<String>,
    #[serde(default)]
    next_step: Option<String>,
    // Present-but-null must read as present (a unit payload is `null`), so wrap explicitly.
    #[serde(default, deserialize_with = "present")]
    data: Option<T>,
    #[serde(default)]
    error: Option<ToolError>,
    #[serde(default)]
    completeness: Option<Completeness>,
    #[serde(default)]
    empty_reason: Option<EmptyReason>,
    #[serde(default)]
    diagnosis: Option<String>,
    #[serde(default)]
    next_actions: Vec<NextAction>,
    #[serde(default)]
    warnings: Vec<Notice>,
    #[serde(default)]
    diagnostics: Vec<Notice>,
    meta: Meta,
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

impl<T> TryFrom<RawEnvelope<T>> for Envelope<T> {
    type Error = CoreError;

    fn try_from(raw: RawEnvelope<T>) -> Result<Self, CoreError> {
        let shape = match (raw.ok, raw.data.is_some(), raw.error.is_some()) {
            (true, true, false) | (false, false, true) => None,
            (true, _, true) => Some("`ok: true` envelope carries an `error`"),
            (true, false, false) => Some("`ok: true` envelope has no `data`"),
            (false, true, _) => Some("`ok: false` envelope carries `data`"),
            (false, false, false) => Some("`ok: false` envelope has no `error`"),
        };
        if let Some(problem) = shape {
            return Err(CoreError::EnvelopeShape(problem));
        }
        if raw.ok == (raw.verdict == Verdict::Error) {
            return Err(CoreError::EnvelopeShape(
                "the verdict is `ERROR` exactly when `ok` is false",
            ));
        }
        if raw.next_actions.len() > crate::next_action::MAX_NEXT_ACTIONS {
            return Err(CoreError::EnvelopeShape("more than 8 `next_actions`"));
        }
        Ok(Envelope {
            ok: raw.ok,
            verdict: raw.verdict,
            summary_line: raw.summary_line,
            next_step: raw.next_step,
            data: raw.data,
            error: raw.error,
            completeness: raw.completeness,
            empty_reason: raw.empty_reason,
            diagnosis: raw.diagnosis,
            next_actions: raw.next_actions,
            warnings: raw.warnings,
            diagnostics: raw.diagnostics,
            meta: raw.meta,
        })
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Envelope<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = RawEnvelope::<T>::deserialize(deserializer)?;
        Envelope::try_from(raw).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    #[test]
    fn ok_and_error_round_trip() {
        let ok = Envelope::ok(json!({"n": 1}));
        let back: Envelope<Value> =
            serde_json::from_value(serde_json::to_value(&ok).expect("ser")).expect("de");
        assert_eq!(back, ok);
        let err: Envelope<Value> = Envelope::err(ToolError::validation("bad"));
        let back: Envelope<Value> =
            serde_json::from_value(serde_json::to_value(&err).expect("ser")).expect("de");
        assert_eq!(back, err);
    }

    #[test]
    fn unit_payload_round_trips_as_null() {
        let ok = Envelope::ok(());
        let wire = serde_json::to_value(&ok).expect("ser");
        assert_eq!(wire["data"], Value::Null);
        let back: Envelope<()> = serde_json::from_value(wire).expect("de");
        assert!(back.is_ok());
    }

    #[test]
    fn contradictory_shapes_are_rejected() {
        let meta = serde_json::to_value(Meta::new(RequestId::new())).expect("ser");
        let error = json!({"category": "internal", "message": "x", "retryable": false});
        for (wire, expected) in [
            (
                json!({"ok": true, "verdict": "INFO", "data": 1, "error": error, "meta": meta}),
                "carries an `error`",
            ),
            (
                json!({"ok": true, "verdict": "INFO", "meta": meta}),
                "has no `data`",
            ),
            (
                json!({"ok": false, "verdict": "ERROR", "data": 1, "error": error, "meta": meta}),
                "carries `data`",
            ),
            (
                json!({"ok": false, "verdict": "ERROR", "meta": meta}),
                "has no `error`",
            ),
            (
                json!({"ok": false, "verdict": "INFO", "error": error, "meta": meta}),
                "verdict is `ERROR`",
            ),
            (
                json!({"ok": true, "verdict": "ERROR", "data": 1, "meta": meta}),
                "verdict is `ERROR`",
            ),
        ] {
            let problem = serde_json::from_value::<Envelope<Value>>(wire)
                .expect_err(expected)
                .to_string();
            assert!(problem.contains(expected), "{problem}");
        }
    }

    #[test]
    fn absent_fields_are_omitted_not_null() {
        let wire = serde_json::to_value(Envelope::ok(1)).expect("ser");
        let keys: Vec<&str> = wire
            .as_object()
            .expect("object")
            .keys()
            .map(String::as_str)
            .collect();
        assert_eq!(keys.len(), 4, "{keys:?}");
        for key in ["ok", "verdict", "data", "meta"] {
            assert!(keys.contains(&key), "{keys:?}");
        }
    }

    #[test]
    fn failed_envelopes_keep_the_error_verdict() {
        let err: Envelope<()> =
            Envelope::err(ToolError::validation("bad")).with_verdict(Verdict::Safe);
        assert_eq!(err.verdict(), Verdict::Error);
        assert_eq!(
            Envelope::ok(()).with_verdict(Verdict::Error).verdict(),
            Verdict::Warn
        );
    }
}

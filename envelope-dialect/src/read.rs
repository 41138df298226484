//! [`Wire`]: an envelope as the budget stage wrote it, read through the field table.

use envelope_core::TruncationReason;
use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::{envelope as field, meta as meta_field, next_action as action};
use envelope_core::paging::NEXT_PAGE;
use envelope_core::stage::ControlNames;
use serde_json::{Map, Value};

/// An envelope's JSON (what `structuredContent` holds in the envelope's own dialect), read
/// field by field. Every accessor names its field through `envelope_core::fields`, so a
/// renamed envelope field is a compile error here, not a dialect that silently lost it.
///
/// Absent fields read as `None` (absent means "not applicable", never zero or empty).
#[derive(Debug, Clone, Copy)]
pub struct Wire<'a> {
    envelope: &'a Value,
}

impl<'a> Wire<'a> {
    /// Reads `envelope`.
    pub fn new(envelope: &'a Value) -> Self {
        Wire { envelope }
    }

    /// The whole envelope.
    pub fn envelope(&self) -> &'a Value {
        self.envelope
    }

    fn get(&self, key: &str) -> Option<&'a Value> {
        self.envelope.get(key)
    }

    /// `ok`: whether the call worked (false when absent: only an error lacks it).
    pub fn ok(&self) -> bool {
        self.get(field::OK)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// `verdict`, one of the alphabet.
    pub fn verdict(&self) -> Option<&'a str> {
        self.get(field::VERDICT).and_then(Value::as_str)
    }

    /// `summary_line`.
    pub fn summary_line(&self) -> Option<&'a str> {
        self.get(field::SUMMARY_LINE).and_then(Value::as_str)
    }

    /// `next_step`.
    pub fn next_step(&self) -> Option<&'a str> {
        self.get(field::NEXT_STEP).and_then(Value::as_str)
    }

    /// `data`: the payload, on success.
    pub fn data(&self) -> Option<&'a Value> {
        self.get(field::DATA)
    }

    /// `error`: the failure's object.
    pub fn error(&self) -> Option<&'a Map<String, Value>> {
        self.get(field::ERROR).and_then(Value::as_object)
    }

    /// A member of `error` (`category`, `code`, `message`, `retryable`, `hint`,
    /// `retry_after_ms`, `data`; see `envelope_core::fields::error`).
    pub fn error_field(&self, key: &str) -> Option<&'a Value> {
        self.error().and_then(|error| error.get(key))
    }

    /// `completeness`.
    pub fn completeness(&self) -> Option<&'a Map<String, Value>> {
        self.get(field::COMPLETENESS).and_then(Value::as_object)
    }

    /// A member of `completeness` (see `envelope_core::fields::completeness`).
    pub fn completeness_field(&self, key: &str) -> Option<&'a Value> {
        self.completeness()
            .and_then(|completeness| completeness.get(key))
    }

    /// `empty_reason`.
    pub fn empty_reason(&self) -> Option<&'a str> {
        self.get(field::EMPTY_REASON).and_then(Value::as_str)
    }

    /// `diagnosis`.
    pub fn diagnosis(&self) -> Option<&'a str> {
        self.get(field::DIAGNOSIS).and_then(Value::as_str)
    }

    /// `next_actions`, in order (empty when absent).
    pub fn next_actions(&self) -> &'a [Value] {
        self.get(field::NEXT_ACTIONS)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// `warnings`: `{code, severity, message, data?}` each (empty when absent).
    pub fn warnings(&self) -> &'a [Value] {
        self.get(field::WARNINGS)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// `diagnostics`: `{code, severity, message, data?}` each (empty when absent).
    pub fn diagnostics(&self) -> &'a [Value] {
        self.get(field::DIAGNOSTICS)
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// `meta`.
    pub fn meta(&self) -> Option<&'a Map<String, Value>> {
        self.get(field::META).and_then(Value::as_object)
    }

    /// A member of `meta` (see `envelope_core::fields::meta`).
    pub fn meta_field(&self, key: &str) -> Option<&'a Value> {
        self.meta().and_then(|meta| meta.get(key))
    }

    /// The budget trimmer's markers in `meta`: every `truncated_*` member but `truncated`
    /// itself, in `meta`'s order.
    pub fn trim_markers(&self) -> impl Iterator<Item = (&'a String, &'a Value)> {
        self.meta().into_iter().flatten().filter(|(key, _)| {
            key.starts_with(meta_field::MARKER_PREFIX) && key.as_str() != meta_field::TRUNCATED
        })
    }

    /// Whether the budget trimmer cut anything: `meta.truncated`.
    pub fn budget_cut(&self) -> bool {
        self.meta_field(meta_field::TRUNCATED)
            .and_then(Value::as_bool)
            .unwrap_or(false)
    }

    /// Whether the response budget ended the page `completeness` describes: `budget_limit`
    /// among its truncation reasons (the tool stopped early to fit, or the trimmer cut it).
    pub fn budget_ended_page(&self) -> bool {
        self.completeness_field(completeness_field::TRUNCATION_REASONS)
            .and_then(Value::as_array)
            .is_some_and(|reasons| {
                reasons
                    .iter()
                    .any(|reason| reason.as_str() == Some(TruncationReason::BudgetLimit.as_str()))
            })
    }

    /// The `next-page` action, when the page continues.
    pub fn next_page(&self) -> Option<&'a Value> {
        self.next_actions()
            .iter()
            .find(|next| next.get(action::ID).and_then(Value::as_str) == Some(NEXT_PAGE))
    }

    /// The next page's continuation token: the one the `next-page` action carries in its
    /// arguments under `continuation` (or its renamed name, where the tool takes a
    /// `continuation` of its own: the longer name is the control's), else the one
    /// `completeness.continuation` holds (where the budget stage puts a token no action
    /// carries).
    pub fn continuation(&self) -> Option<&'a str> {
        self.next_page()
            .and_then(|next| next.get(action::ARGUMENTS))
            .and_then(Value::as_object)
            .and_then(|arguments| {
                arguments
                    .iter()
                    .filter(|(name, _)| {
                        ControlNames::may_name(
                            envelope_core::paging::DEFAULT_CONTINUATION_FIELD,
                            name,
                        )
                    })
                    .max_by_key(|(name, _)| name.len())
                    .map(|(_, token)| token)
            })
            .or_else(|| self.completeness_field(completeness_field::CONTINUATION))
            .and_then(Value::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_continuation_is_read_under_its_own_name_or_the_renamed_one() {
        let page = |arguments: Value| json!({ "ok": true, "next_actions": [{ "id": NEXT_PAGE, "tool": "read", "arguments": arguments }] });
        let standard = page(json!({ "path": "a", "continuation": "tok" }));
        assert_eq!(Wire::new(&standard).continuation(), Some("tok"));
        // A tool that takes a `continuation` of its own: the control is the renamed one.
        let renamed = page(json!({ "continuation": "its own", "envelope_continuation": "tok" }));
        assert_eq!(Wire::new(&renamed).continuation(), Some("tok"));
        assert_eq!(
            Wire::new(&page(json!({ "path": "a" }))).continuation(),
            None
        );
    }
}

//! `warnings`: the contract's one list of `"<code>: <message>"` strings (like
//! `"stale_cache: most edges have …"`), which carries every condition an envelope flags in its
//! own places: why the result is empty, its warnings and diagnostics, why its coverage is not
//! exhaustive, which row fields were shortened and an index written by another binary.

use envelope_core::fields::completeness as field;
use envelope_core::{BinaryDrift, IncompleteReason, Notice, meta_keys};
use serde_json::Value;

use crate::Wire;

/// The code of the line that lists the row fields shown in part: the envelope's own name for
/// them (`completeness.shortened`).
const SHORTENED: &str = field::SHORTENED;

/// What a shortened field means and how to get it whole, after the field names.
const SHORTENED_MEANING: &str = "shown in part in every row; the same call without \
                                 compact_only or output_format toon sends them whole";

/// Every warning line of the envelope read by `wire`, in this order: the empty reason with its
/// diagnosis, `warnings`, `diagnostics`, `completeness.incomplete_reasons` (with what each
/// means), `completeness.shortened`, `meta.binary_drift_warning`, and
/// `meta.envelope_unshrinkable` when set: the contract has no field for an answer the budget
/// could not bring under, and `warnings` is where it flags what an agent must not ignore.
pub(super) fn lines(wire: &Wire<'_>) -> Vec<String> {
    let mut lines = Vec::new();
    lines.extend(empty_line(wire));
    lines.extend(
        wire.warnings()
            .iter()
            .chain(wire.diagnostics())
            .filter_map(notice_line),
    );
    lines.extend(incomplete_lines(wire));
    lines.extend(shortened_line(wire));
    lines.extend(drift_line(wire));
    lines.extend(unshrinkable_line(wire));
    lines
}

/// What an answer over the response budget says after every cut: how to get one that fits.
const UNSHRINKABLE_MEANING: &str = "the answer is over the response budget and could not be cut \
                                    further; narrow the request or lower the page size";

/// `"envelope_unshrinkable: …"` when the budget trimmer could not bring the answer under.
fn unshrinkable_line(wire: &Wire<'_>) -> Option<String> {
    let stuck = wire
        .meta_field(meta_keys::ENVELOPE_UNSHRINKABLE)
        .and_then(Value::as_bool)?;
    stuck.then(|| line(meta_keys::ENVELOPE_UNSHRINKABLE, Some(UNSHRINKABLE_MEANING)))
}

/// `"<code>: <message>"`, or the one of them there is.
fn line(code: &str, message: Option<&str>) -> String {
    match message {
        Some(message) if !message.is_empty() => format!("{code}: {message}"),
        _ => code.to_owned(),
    }
}

/// `"<empty_reason>: <diagnosis>"`; a diagnosis without a reason travels alone.
fn empty_line(wire: &Wire<'_>) -> Option<String> {
    match (wire.empty_reason(), wire.diagnosis()) {
        (Some(reason), diagnosis) => Some(line(reason, diagnosis)),
        (None, diagnosis) => diagnosis.map(str::to_owned),
    }
}

/// One warning or diagnostic. An entry that is not a notice is kept in a readable form rather
/// than lost: a string as it is, anything else as its JSON.
fn notice_line(entry: &Value) -> Option<String> {
    if let Ok(notice) = serde_json::from_value::<Notice>(entry.clone()) {
        return Some(line(&notice.code, Some(&notice.message)));
    }
    match entry {
        Value::Null => None,
        Value::String(text) => Some(text.clone()),
        other => Some(other.to_string()),
    }
}

/// `"<reason>: <what it means>"` for each reason coverage is not exhaustive.
fn incomplete_lines(wire: &Wire<'_>) -> Vec<String> {
    let Some(reasons) = wire
        .completeness_field(field::INCOMPLETE_REASONS)
        .and_then(Value::as_array)
    else {
        return Vec::new();
    };
    reasons
        .iter()
        .filter_map(|reason| {
            let name = reason.as_str()?;
            let meaning = serde_json::from_value::<IncompleteReason>(reason.clone())
                .ok()
                .map(IncompleteReason::meaning);
            Some(line(name, meaning))
        })
        .collect()
}

/// `"shortened: text, body — …"` when rows carry some fields in part.
fn shortened_line(wire: &Wire<'_>) -> Option<String> {
    let fields: Vec<&str> = wire
        .completeness_field(field::SHORTENED)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .collect();
    if fields.is_empty() {
        return None;
    }
    Some(format!(
        "{SHORTENED}: {} — {SHORTENED_MEANING}",
        fields.join(", ")
    ))
}

/// `"binary_drift_warning: index written by schema version 4, this server reads 3; …"`.
fn drift_line(wire: &Wire<'_>) -> Option<String> {
    let drift: BinaryDrift =
        serde_json::from_value(wire.meta_field(meta_keys::BINARY_DRIFT_WARNING)?.clone()).ok()?;
    let versions = format!(
        "index written by schema version {}, this server reads {}",
        drift.stored_version, drift.running_version
    );
    let message = match drift.remediation {
        Some(remediation) => format!("{versions}; {remediation}"),
        None => versions,
    };
    Some(line(meta_keys::BINARY_DRIFT_WARNING, Some(&message)))
}

//! Recovery: Frigg's flattened grammar. A failure is `error_code`, `message`,
//! `correction_hint`, `retryable`, `related_tools` (and the error's structured `data`); an
//! empty result is `zero_hit_reason` with `message` and `correction_hint`.

use envelope_core::fields::{envelope, error as field, next_action as action};
use envelope_core::paging::{CONTINUATION_CODES, TARGET_CODES};
use envelope_core::{Category, EmptyReason};
use serde_json::{Map, Value};

use crate::Wire;

/// The `error_code` of a failure that names neither a code nor a category (no envelope writes
/// one; an odd input still reads as a failure).
const UNNAMED_FAILURE: &str = "ERROR";

/// Whether the envelope reports a failure: it has an `error`, or says `ok: false` with no
/// payload to show.
pub(super) fn failed(wire: &Wire<'_>) -> bool {
    wire.error().is_some() || (!wire.ok() && wire.data().is_none())
}

/// Writes the recovery fields of a failure or of an empty result.
pub(super) fn write(wire: &Wire<'_>, out: &mut Map<String, Value>) {
    if failed(wire) {
        write_failure(wire, out);
    }
    if let Some(reason) = wire.empty_reason() {
        write_zero_hit(wire, reason, out);
    }
    if out.contains_key("error_code") || out.contains_key("zero_hit_reason") {
        write_related_tools(wire, out);
    }
}

/// `error_code` (the error's code, else its category, in upper snake case), `message`,
/// `correction_hint`, `retryable` and the error's `data`.
fn write_failure(wire: &Wire<'_>, out: &mut Map<String, Value>) {
    let category = wire
        .error_field(field::CATEGORY)
        .and_then(Value::as_str)
        .and_then(category);
    let code = wire.error_field(field::CODE).and_then(Value::as_str);
    // Frigg's codes are upper snake case: the envelope's lower-case ones are written so.
    let error_code = match (code, category) {
        (Some(code), _) => code.to_ascii_uppercase(),
        (None, Some(category)) => category.as_str().to_ascii_uppercase(),
        (None, None) => UNNAMED_FAILURE.to_owned(),
    };
    out.insert("error_code".to_owned(), Value::String(error_code));
    if let Some(message) = wire.error_field(field::MESSAGE).filter(|m| m.is_string()) {
        out.insert("message".to_owned(), message.clone());
    }
    let hint = wire
        .error_field(field::HINT)
        .and_then(Value::as_str)
        .or_else(|| code.and_then(table_recovery));
    if let Some(hint) = hint {
        out.insert("correction_hint".to_owned(), Value::String(hint.to_owned()));
    }
    // An error always says it; an odd one falls back on its category's default, then on "no".
    let retryable = wire
        .error_field(field::RETRYABLE)
        .and_then(Value::as_bool)
        .or_else(|| category.map(Category::retryable_default))
        .unwrap_or(false);
    out.insert("retryable".to_owned(), Value::Bool(retryable));
    // Frigg's structured failure detail travels in `data`, as its transport errors' does.
    if let Some(data) = wire.error_field(field::DATA) {
        out.insert(envelope::DATA.to_owned(), data.clone());
    }
}

/// The category named `name`, if it is one.
fn category(name: &str) -> Option<Category> {
    Category::ALL
        .iter()
        .copied()
        .find(|category| category.as_str() == name)
}

/// What the paging and target-ref tables say the agent does after `code`, for an error that
/// brought no hint of its own.
fn table_recovery(code: &str) -> Option<&'static str> {
    CONTINUATION_CODES
        .iter()
        .find(|(known, _, _)| *known == code)
        .map(|(_, _, recovery)| *recovery)
        .or_else(|| {
            TARGET_CODES
                .iter()
                .find(|(known, _, _, _)| *known == code)
                .map(|(_, _, _, recovery)| *recovery)
        })
}

/// `zero_hit_reason` (the envelope's empty reason in Frigg's words, see [`zero_hit_reason`]),
/// `message` (the diagnosis) and `correction_hint` (the reason's documented agent response),
/// where a failure has not written them already.
fn write_zero_hit(wire: &Wire<'_>, reason: &str, out: &mut Map<String, Value>) {
    let known = EmptyReason::ALL
        .iter()
        .find(|known| known.as_str() == reason);
    let frigg = known.map_or(reason, zero_hit_reason);
    out.insert(
        "zero_hit_reason".to_owned(),
        Value::String(frigg.to_owned()),
    );
    if let Some(diagnosis) = wire.diagnosis() {
        out.entry("message")
            .or_insert_with(|| Value::String(diagnosis.to_owned()));
    }
    if let Some(known) = known {
        out.entry("correction_hint")
            .or_insert_with(|| Value::String(known.agent_response().to_owned()));
    }
}

/// Frigg's zero-hit reason for an envelope empty reason. Frigg's list is open ("zero-hit reasons
/// include …"), so a reason it has no word for keeps the envelope's own wire name.
pub(super) fn zero_hit_reason(reason: &EmptyReason) -> &str {
    match reason {
        EmptyReason::NotIndexed => "no_index_coverage",
        EmptyReason::StaleIndex => "index_stale_possible",
        EmptyReason::CapabilityUnavailable => "tool_unavailable",
        EmptyReason::FiltersExcludedAll => "scope_excluded_all_candidates",
        EmptyReason::QueryLooksLikeRegex => "query_looks_like_regex",
        EmptyReason::NoMatch => "query_miss",
        EmptyReason::AllFilesBlocked => "path_class_not_indexed",
        EmptyReason::WrongRepositoryPossible => "wrong_repository_possible",
        other => other.as_str(),
    }
}

/// `related_tools`: the distinct tools the next actions call, in their order. Written only
/// beside a failure or a zero-hit reason, where Frigg's recovery grammar has it, and only when
/// an action names a tool (nothing is guessed).
fn write_related_tools(wire: &Wire<'_>, out: &mut Map<String, Value>) {
    let mut tools: Vec<Value> = Vec::new();
    for tool in wire
        .next_actions()
        .iter()
        .filter_map(|next| next.get(action::TOOL))
        .filter(|tool| tool.is_string())
    {
        if !tools.contains(tool) {
            tools.push(tool.clone());
        }
    }
    if !tools.is_empty() {
        out.insert("related_tools".to_owned(), Value::Array(tools));
    }
}

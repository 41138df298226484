//! Recovery: Frigg's flattened grammar. A failure is `error_code`, `message`,
//! `correction_hint`, `retryable`, `related_tools` (and the error's structured `data`); an
//! empty result is `zero_hit_reason` with `message` and `correction_hint`.

use envelope_core::fields::{error as field, next_action as action};
use envelope_core::paging::{CONTINUATION_CODES, TARGET_CODES};
use envelope_core::{Category, EmptyReason};
use serde_json::Value;

use super::wire::Answer;
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
pub(super) fn write(wire: &Wire<'_>, answer: &mut Answer) {
    if failed(wire) {
        write_failure(wire, answer);
    }
    if let Some(reason) = wire.empty_reason() {
        write_zero_hit(wire, reason, answer);
    }
    if answer.error_code.is_some() || answer.zero_hit_reason.is_some() {
        answer.related_tools = related_tools(wire);
    }
}

/// `error_code` (the error's code, else its category, in upper snake case), `message`,
/// `correction_hint`, `retryable` and the error's `data`.
fn write_failure(wire: &Wire<'_>, answer: &mut Answer) {
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
    answer.error_code = Some(error_code);
    answer.message = wire
        .error_field(field::MESSAGE)
        .and_then(Value::as_str)
        .map(str::to_owned);
    answer.correction_hint = wire
        .error_field(field::HINT)
        .and_then(Value::as_str)
        .or_else(|| code.and_then(table_recovery))
        .map(str::to_owned);
    // An error always says it; an odd one falls back on its category's default, then on "no".
    let retryable = wire
        .error_field(field::RETRYABLE)
        .and_then(Value::as_bool)
        .or_else(|| category.map(Category::retryable_default))
        .unwrap_or(false);
    answer.retryable = Some(retryable);
    // Frigg's structured failure detail travels in `data`, as its transport errors' does.
    answer.data = wire.error_field(field::DATA).cloned();
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
fn write_zero_hit(wire: &Wire<'_>, reason: &str, answer: &mut Answer) {
    let known = EmptyReason::ALL
        .iter()
        .find(|known| known.as_str() == reason);
    let frigg = known.map_or(reason, zero_hit_reason);
    answer.zero_hit_reason = Some(frigg.to_owned());
    if answer.message.is_none() {
        answer.message = wire.diagnosis().map(str::to_owned);
    }
    if answer.correction_hint.is_none() {
        answer.correction_hint = known.map(|known| known.agent_response().to_owned());
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
fn related_tools(wire: &Wire<'_>) -> Vec<String> {
    let mut tools: Vec<String> = Vec::new();
    for tool in wire
        .next_actions()
        .iter()
        .filter_map(|next| next.get(action::TOOL))
        .filter_map(Value::as_str)
    {
        if !tools.iter().any(|known| known == tool) {
            tools.push(tool.to_owned());
        }
    }
    tools
}

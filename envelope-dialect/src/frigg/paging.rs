//! Size and paging: `completeness` in Frigg's shape, carrying the next page's token, and
//! `next_actions` in Frigg's explicit action shape.

use envelope_core::fields::{completeness as field, envelope};
use envelope_core::limits::MAX_NEXT_ACTIONS;
use envelope_core::{NextAction, TruncationReason};
use serde_json::{Map, Value};

use super::wire::Action;
use crate::{Wire, copy};

/// Writes `completeness` and `next_actions`.
pub(super) fn write(wire: &Wire<'_>, out: &mut Map<String, Value>) {
    if let Some(completeness) = completeness(wire) {
        out.insert(envelope::COMPLETENESS.to_owned(), completeness);
    }
    let actions = actions(wire);
    if !actions.is_empty() {
        out.insert(envelope::NEXT_ACTIONS.to_owned(), Value::Array(actions));
    }
}

/// Frigg's `completeness`: `{unit, returned, total?, complete, truncated, truncation_reasons,
/// incomplete_reasons, continuation?}`, the reason arrays always written (Frigg asks a client to
/// read both), plus the envelope's `offset` (where a later page starts, so the rows still to
/// come are `total - offset - returned`) and `shortened` when it has them.
fn completeness(wire: &Wire<'_>) -> Option<Value> {
    let source = wire.completeness()?;
    let mut out = Map::new();
    copy::present(
        &mut out,
        &[
            field::UNIT,
            field::RETURNED,
            field::OFFSET,
            field::TOTAL,
            field::COMPLETE,
            field::TRUNCATED,
        ],
        |key| source.get(key),
    );
    for key in [field::TRUNCATION_REASONS, field::INCOMPLETE_REASONS] {
        let reasons = source
            .get(key)
            .and_then(Value::as_array)
            .map_or_else(Vec::new, |reasons| closed(key, reasons));
        out.insert(key.to_owned(), Value::Array(reasons));
    }
    if let Some(shortened) = source.get(field::SHORTENED) {
        out.insert(field::SHORTENED.to_owned(), shortened.clone());
    }
    // Frigg's clients store only this token; it is the one the `next-page` action carries.
    if let Some(token) = wire.continuation() {
        out.insert(
            field::CONTINUATION.to_owned(),
            Value::String(token.to_owned()),
        );
    }
    Some(Value::Object(out))
}

/// A reason list as Frigg's closed alphabet has it. Frigg's truncation reasons are six; the
/// envelope's seventh, `budget_limit` (the response budget ended the page), is the bound on
/// this page Frigg calls `page_limit`, and the `response_budget` diagnostic says it was the
/// budget (with the envelope's own list, which a reader restores). Incomplete reasons are an
/// open list in Frigg ("include"), kept as they are.
fn closed(key: &str, reasons: &[Value]) -> Vec<Value> {
    if key != field::TRUNCATION_REASONS {
        return reasons.to_vec();
    }
    let mut out: Vec<Value> = Vec::with_capacity(reasons.len());
    for reason in reasons {
        let reason = if reason.as_str() == Some(TruncationReason::BudgetLimit.as_str()) {
            Value::from(TruncationReason::PageLimit.as_str())
        } else {
            reason.clone()
        };
        if !out.contains(&reason) {
            out.push(reason);
        }
    }
    out
}

/// The envelope's truncation reasons Frigg's closed list has, in its order.
pub(super) const FRIGG_TRUNCATION_REASONS: [TruncationReason; 6] = [
    TruncationReason::PageLimit,
    TruncationReason::PerFileLimit,
    TruncationReason::TopKLimit,
    TruncationReason::ChildLimit,
    TruncationReason::MergePageLimit,
    TruncationReason::AncestorLimit,
];

/// The envelope's next actions, at most eight, each in Frigg's closed shape ([`Action`]):
/// `order` and `dependencies` written even at their defaults, `arguments` exactly as given. An
/// entry that is no next action (an odd envelope's) is left out rather than sent malformed.
fn actions(wire: &Wire<'_>) -> Vec<Value> {
    wire.next_actions()
        .iter()
        .filter_map(|action| serde_json::from_value::<NextAction>(action.clone()).ok())
        .take(MAX_NEXT_ACTIONS)
        .filter_map(|action| serde_json::to_value(Action::from(action)).ok())
        .collect()
}

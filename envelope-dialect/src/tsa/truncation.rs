//! Honest truncation in the contract's four parts: the `truncated` flag, the exact pre-cap total
//! `<unit>_count`, the listed count `<unit plural>_listed` with its `listed_cap`, and a
//! `next_step` with the real numbers. The budget trimmer's markers travel beside them.

use envelope_core::fields::{completeness as field, meta as meta_field};
use envelope_core::paging::NEXT_PAGE;
use envelope_core::{Completeness, TruncationReason, Unit};
use serde_json::{Map, Value};

use super::keys;
use crate::Wire;

/// The truncation fields of the envelope read by `wire`, as top-level members.
///
/// - `truncated`: the tool's cut (`completeness.truncated`) or the budget trimmer's
///   (`meta.truncated`); written when the answer has a collection or the trimmer cut something,
///   absent otherwise (the budget stage writes `meta.truncated: false` on every answer, and the
///   contract's examples of uncut answers have no `truncated`).
/// - `<unit>_count`: `completeness.total`, only when known (unknown is never a zero).
/// - `<unit plural>_listed`: `completeness.returned`.
/// - `<unit plural>_offset`: `completeness.offset`, on a page after the first only (rows the
///   earlier pages listed: not omitted, so not `truncated`, but not in this response either).
/// - `listed_cap`: only when the one reason rows were left out is the page size, which a full
///   page equals; any other cap's size is not in the envelope and is not guessed.
/// - every trimmer marker (`truncated_<key>_from`/`_to`, `truncated_string_fields`, …) as is:
///   how much the budget cut from collections no completeness describes.
pub(super) fn fields(wire: &Wire<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    let cut_by_tool = flag(wire.completeness_field(field::TRUNCATED));
    if wire.completeness().is_some() || wire.budget_cut() {
        out.insert(
            keys::TRUNCATED.to_owned(),
            Value::Bool(cut_by_tool || wire.budget_cut()),
        );
    }
    if let Some(unit) = unit(wire) {
        count_fields(wire, &unit, &mut out);
    }
    if let Some(cap) = listed_cap(wire, cut_by_tool) {
        out.insert(keys::LISTED_CAP.to_owned(), cap.clone());
    }
    for (marker, value) in wire.trim_markers() {
        out.insert(marker.clone(), value.clone());
    }
    out
}

/// `<unit>_count` and `<unit plural>_listed`, from a completeness whose counts are numbers.
fn count_fields(wire: &Wire<'_>, unit: &Unit, out: &mut Map<String, Value>) {
    if let Some(total) = wire.completeness_field(field::TOTAL).filter(|v| v.is_u64()) {
        out.insert(count_key(unit), total.clone());
    }
    if let Some(returned) = wire
        .completeness_field(field::RETURNED)
        .filter(|v| v.is_u64())
    {
        out.insert(listed_key(unit), returned.clone());
    }
    if let Some(offset) = wire
        .completeness_field(field::OFFSET)
        .filter(|v| v.as_u64().is_some_and(|offset| offset > 0))
    {
        out.insert(offset_key(unit), offset.clone());
    }
}

/// `<unit>_count`: `caller_count`, `occurrence_count`.
fn count_key(unit: &Unit) -> String {
    format!("{}{}", unit.as_str(), keys::COUNT_SUFFIX)
}

/// `<unit plural>_listed`: `callers_listed`, `incoming_calls_listed`.
fn listed_key(unit: &Unit) -> String {
    format!("{}{}", plural(unit), keys::LISTED_SUFFIX)
}

/// `<unit plural>_offset`: `callers_offset`.
fn offset_key(unit: &Unit) -> String {
    format!("{}{}", plural(unit), keys::OFFSET_SUFFIX)
}

/// The unit's plural as a key: the one `next_step` prose uses, with its spaces as underscores.
fn plural(unit: &Unit) -> String {
    unit.noun(2).replace(' ', "_")
}

/// The completeness's unit, when it reads as one (a unit that is not snake case names no key,
/// so its counts are left out rather than written under a made-up name).
fn unit(wire: &Wire<'_>) -> Option<Unit> {
    let name = wire.completeness_field(field::UNIT)?;
    serde_json::from_value(name.clone()).ok()
}

/// `listed_cap`: the returned count, when the page size is the only truncation reason.
fn listed_cap<'a>(wire: &Wire<'a>, cut_by_tool: bool) -> Option<&'a Value> {
    let reasons = wire
        .completeness_field(field::TRUNCATION_REASONS)?
        .as_array()?;
    let only_page_limit = matches!(reasons.as_slice(),
        [reason] if reason.as_str() == Some(TruncationReason::PageLimit.as_str()));
    let returned = wire
        .completeness_field(field::RETURNED)
        .filter(|v| v.is_u64())?;
    (cut_by_tool && only_page_limit).then_some(returned)
}

/// A `next_step` for an answer that is cut or not exhaustive but came without one: the
/// completeness's own honest line ("showing 3 of 39 callers"), pointing at the `next-page`
/// action when there is one. `None` when the envelope has a `next_step` (it already carries
/// the real numbers) or nothing is missing.
pub(super) fn next_step(wire: &Wire<'_>) -> Option<String> {
    if wire.next_step().is_some() {
        return None;
    }
    let completeness: Completeness =
        serde_json::from_value(Value::Object(wire.completeness()?.clone())).ok()?;
    let advice = if wire.next_page().is_some() {
        format!("follow the `{NEXT_PAGE}` action in {}", keys::NEXT_ACTIONS)
    } else {
        String::new()
    };
    completeness.next_step(&advice)
}

fn flag(value: Option<&Value>) -> bool {
    value.and_then(Value::as_bool).unwrap_or(false)
}

/// Whether `name` is a key this module may write for some answer: `<unit>_count`,
/// `<unit plural>_listed`, `<unit plural>_offset` or a trimmer marker.
pub(super) fn is_count_key(name: &str) -> bool {
    name.ends_with(keys::COUNT_SUFFIX)
        || name.ends_with(keys::LISTED_SUFFIX)
        || name.ends_with(keys::OFFSET_SUFFIX)
        || name.starts_with(meta_field::MARKER_PREFIX)
}

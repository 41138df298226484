//! Honest truncation in the contract's four parts: the `truncated` flag, the exact pre-cap total
//! `<unit>_count`, the listed count `<unit plural>_listed` with its `listed_cap`, and a
//! `next_step` with the real numbers. The budget trimmer's markers travel beside them.

use envelope_core::fields::{completeness as field, meta as meta_field};
use envelope_core::paging::NEXT_PAGE;
use envelope_core::{Completeness, TruncationReason, Unit};
use serde_json::{Map, Value};

use super::keys;
use super::wire::Answer;
use crate::Wire;

/// Writes the truncation fields of the envelope read by `wire` on `answer`: the flag and the
/// cap in their typed fields, the counts and markers (whose names depend on the answer) beside
/// them.
///
/// - `truncated`: `true` iff anything was omitted from this response: the tool's cut
///   (`completeness.truncated`), the budget trimmer's (`meta.truncated`), rows earlier pages
///   listed (`offset` past zero), or fewer rows than the known total; written when the answer
///   has a collection or the trimmer cut something, absent otherwise (the budget stage writes
///   `meta.truncated: false` on every answer, and the contract's examples of uncut answers have
///   no `truncated`).
/// - `<unit>_count`: `completeness.total`, only when known (unknown is never a zero).
/// - `<unit plural>_listed`: `completeness.returned`.
/// - `<unit plural>_offset`: `completeness.offset`, on a page after the first only (rows the
///   earlier pages listed, which this response omits).
/// - `listed_cap`: the cap that was applied, when the bound that cut is on the listed count (the
///   page size, the response budget, a top-K or merge cap), which the listed count equals; a
///   per-file, child or ancestor cap bounds something else and its size is not guessed, and a
///   last page's cap (the page size earlier pages used) is not in the envelope.
/// - every trimmer marker (`truncated_<key>_from`/`_to`, `truncated_string_fields`, …) as is:
///   how much the budget cut from collections no completeness describes.
pub(super) fn fill(wire: &Wire<'_>, answer: &mut Answer) {
    let cut_by_tool = flag(wire.completeness_field(field::TRUNCATED));
    if wire.completeness().is_some() || wire.budget_cut() {
        answer.truncated = Some(cut_by_tool || wire.budget_cut() || omits_rows(wire));
    }
    if let Some(unit) = unit(wire) {
        count_fields(wire, &unit, &mut answer.beside);
    }
    answer.listed_cap = listed_cap(wire, cut_by_tool).and_then(Value::as_u64);
    for (marker, value) in wire.trim_markers() {
        answer.beside.insert(marker.clone(), value.clone());
    }
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

/// Whether the rows listed are fewer than the collection's: a page after the first, or fewer
/// than the known total ("never assume `len(list) == total`").
fn omits_rows(wire: &Wire<'_>) -> bool {
    let count = |key| wire.completeness_field(key).and_then(Value::as_u64);
    let offset = count(field::OFFSET).unwrap_or(0);
    let returned = count(field::RETURNED).unwrap_or(0);
    offset > 0 || count(field::TOTAL).is_some_and(|total| returned < total)
}

/// The truncation reasons whose cap bounds the listed count itself, which a cut list equals.
const LISTED_COUNT_CAPS: [TruncationReason; 4] = [
    TruncationReason::PageLimit,
    TruncationReason::BudgetLimit,
    TruncationReason::TopKLimit,
    TruncationReason::MergePageLimit,
];

/// `listed_cap`: the returned count, when the list was cut and every reason is a cap on the
/// listed count.
fn listed_cap<'a>(wire: &Wire<'a>, cut_by_tool: bool) -> Option<&'a Value> {
    let reasons = wire
        .completeness_field(field::TRUNCATION_REASONS)?
        .as_array()?;
    let on_listed = !reasons.is_empty()
        && reasons.iter().all(|reason| {
            LISTED_COUNT_CAPS
                .iter()
                .any(|cap| reason.as_str() == Some(cap.as_str()))
        });
    let returned = wire
        .completeness_field(field::RETURNED)
        .filter(|v| v.is_u64())?;
    (cut_by_tool && on_listed).then_some(returned)
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

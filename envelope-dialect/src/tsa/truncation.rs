//! Honest truncation in the contract's four parts: the `truncated` flag, the exact pre-cap total
//! `<unit>_count`, the listed count `<unit plural>_listed` with its `listed_cap`, and a
//! `next_step` with the real numbers. The budget trimmer's markers travel beside them.

use envelope_budget::states_number;
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

/// The contract's `next_step`: "one concrete, imperative action" that, on truncation, "MUST
/// state the real shown/total numbers" and says how to get the rest.
///
/// - The envelope's own, when it has one: led by the real numbers of the cut `completeness`
///   describes ("showing 3 of 39 callers; …") when it does not state them already.
/// - Else, for a cut or non-exhaustive collection, the completeness's own honest line, with how
///   to get the rest: the `next-page` action when there is one, else raising the limit or
///   narrowing the query.
/// - Else, for a list the budget trimmer cut (a payload no completeness describes), what was
///   sent of it and how to get the rest.
/// - `None` when nothing is missing.
pub(super) fn next_step(wire: &Wire<'_>) -> Option<String> {
    let completeness: Option<Completeness> = wire
        .completeness()
        .and_then(|completeness| serde_json::from_value(Value::Object(completeness.clone())).ok());
    if let Some(step) = wire.next_step() {
        return Some(match completeness.as_ref().and_then(cut_numbers) {
            Some((numbers, shown, total))
                if !(states_number(step, shown) && states_number(step, total)) =>
            {
                format!("{numbers}; {step}")
            }
            _ => step.to_owned(),
        });
    }
    if let Some(completeness) = &completeness {
        let advice = if wire.next_page().is_some() {
            format!("follow the `{NEXT_PAGE}` action in {}", keys::NEXT_ACTIONS)
        } else {
            RAISE_OR_NARROW.to_owned()
        };
        return completeness.next_step(&advice);
    }
    budget_cut_list(wire).map(|(key, from, to)| {
        format!(
            "showing {to} of {from} `{key}` (the response budget cut the rest) — {RAISE_OR_NARROW}"
        )
    })
}

/// How to get the rest of a collection no page continues.
const RAISE_OR_NARROW: &str = "raise the limit or narrow the query for the rest";

/// "showing 3 of 39 callers": the real numbers of a cut collection whose total is known, with
/// the last row shown and the total.
fn cut_numbers(completeness: &Completeness) -> Option<(String, usize, usize)> {
    let parts = completeness.to_parts();
    let total = parts.total?;
    if !parts.truncated {
        return None;
    }
    let numbers = completeness.next_step("")?;
    Some((numbers, parts.offset + parts.returned, total))
}

/// The list the budget trimmer cut, as its markers say: its key (`data` for a list payload),
/// the rows it had and the rows sent. The first one, when several were cut.
fn budget_cut_list(wire: &Wire<'_>) -> Option<(String, u64, u64)> {
    wire.trim_markers().find_map(|(name, from)| {
        let key = name
            .strip_prefix(meta_field::MARKER_PREFIX)?
            .strip_suffix(meta_field::LIST_CUT_FROM_SUFFIX)?;
        let to = wire.meta_field(&meta_field::list_cut_to(key))?.as_u64()?;
        Some((key.to_owned(), from.as_u64()?, to))
    })
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

//! `warnings_v2` and `diagnosis_v2`: pincher's typed `{code, severity, message, data}` entries.
//!
//! Besides the envelope's own `warnings` and `diagnostics`, these lists carry what pincher has
//! no field for and an agent must not lose: the error of a failed call (`diagnosis_v2`), a cut
//! or incomplete collection and an obliging verdict (`warnings_v2`). Their codes are open in
//! pincher's contract, and their `data` is per-code.

use envelope_core::fields::{completeness as counted, error as failure};
use envelope_core::{Notice, Severity, Unit, Verdict, meta_keys};
use serde::Deserialize;
use serde_json::{Map, Value};

use super::wire::Entry;
use crate::{Wire, copy};

/// The `warnings_v2` code of a collection that was cut (by a page limit, the response budget,
/// or any other limit), or of a payload the budget trimmer shortened.
pub(super) const TRUNCATED: &str = "truncated";
/// The `warnings_v2` code of a collection that is incomplete without having been cut (a walk
/// that failed part-way, a timeout): paging will not bring the rest.
pub(super) const INCOMPLETE: &str = "incomplete";
/// The `warnings_v2` code of a verdict the agent must act on.
pub(super) const VERDICT: &str = "verdict";

/// The code of a failed call's entry that names neither a code nor a category.
const UNNAMED_FAILURE: &str = "error";

/// One `{code, severity, message, data?}` entry; `data` only when there is something in it.
fn entry(code: &str, severity: Severity, message: &str, data: Option<Value>) -> Entry {
    Entry {
        code: code.to_owned(),
        severity,
        message: message.to_owned(),
        data,
    }
}

/// The envelope's own notices, each read as the typed [`Notice`] it was written from; an entry
/// that is not one (an odd envelope) is left out rather than passed on malformed.
fn copied(notices: &[Value]) -> impl Iterator<Item = Entry> + '_ {
    notices
        .iter()
        .filter_map(|notice| Notice::deserialize(notice).ok())
        .map(|notice| Entry {
            code: notice.code,
            severity: notice.severity,
            message: notice.message,
            data: notice.data,
        })
}

/// The envelope's warning codes that pincher files under `diagnosis_v2`, "what went wrong
/// specifically" with the query rather than something to flag about the response: its own
/// example is `unknown_arg` ("typo'd parameter — `data.accepted` lists the valid keys"), which
/// the envelope's warning carries with that `data`.
pub(super) const DIAGNOSIS_CODES: [&str; 1] = [envelope_core::fields::code::UNKNOWN_ARG];

/// Whether a notice is one pincher files as a diagnosis.
pub(super) fn is_diagnosis(notice: &Entry) -> bool {
    DIAGNOSIS_CODES.contains(&notice.code.as_str())
}

/// `warnings_v2`: the obliging verdict first, then the cut, then the envelope's `warnings`
/// (but those pincher calls diagnoses).
pub(super) fn warnings_v2(wire: &Wire<'_>) -> Vec<Entry> {
    let mut list: Vec<Entry> = verdict(wire).into_iter().collect();
    list.extend(cut(wire));
    list.extend(copied(wire.warnings()).filter(|notice| !is_diagnosis(notice)));
    list
}

/// `diagnosis_v2`: on failure the error first, then the envelope's `diagnostics`.
pub(super) fn diagnosis_v2(wire: &Wire<'_>) -> Vec<Entry> {
    let failed = (!wire.ok()).then(|| error(wire));
    let mut list: Vec<Entry> = failed.into_iter().collect();
    list.extend(copied(wire.warnings()).filter(is_diagnosis));
    list.extend(copied(wire.diagnostics()));
    list
}

/// The failed call's message, when its error has one.
pub(super) fn error_message<'a>(wire: &Wire<'a>) -> Option<&'a str> {
    wire.error_field(failure::MESSAGE).and_then(Value::as_str)
}

/// The error of a failed call as a `diagnosis_v2` entry: code the error's code (its category
/// when it has none), severity `error`, the error's message, and in `data` what pincher has no
/// field for: `category`, `retryable`, `hint`, `retry_after_ms` and the error's own `data`.
fn error(wire: &Wire<'_>) -> Entry {
    let text = |key: &str| wire.error_field(key).and_then(Value::as_str);
    let code = text(failure::CODE)
        .or_else(|| text(failure::CATEGORY))
        .unwrap_or(UNNAMED_FAILURE);
    let message = error_message(wire).unwrap_or("the call failed");
    let mut data = Map::new();
    copy::present(
        &mut data,
        &[
            failure::CATEGORY,
            failure::RETRYABLE,
            failure::HINT,
            failure::RETRY_AFTER_MS,
            failure::DATA,
        ],
        |key| wire.error_field(key),
    );
    let data = (!data.is_empty()).then_some(Value::Object(data));
    entry(code, Severity::Error, message, data)
}

/// What an obliging verdict becomes: `(severity, whether it obliges at all)`.
///
/// `CAUTION`, `REVIEW` and `WARN` ask the agent to look before acting (warning), `UNSAFE` is a
/// blocker (error). `NOT_FOUND` is carried by `empty_reason` when the envelope gives one, and
/// otherwise as an info entry, so that a payload is not read as a find. `INFO` and `SAFE`
/// oblige nothing beyond reading `result`, and `ERROR` is the failed call itself.
fn verdict_severity(verdict: Verdict, has_empty_reason: bool) -> Option<Severity> {
    match verdict {
        Verdict::Caution | Verdict::Review | Verdict::Warn => Some(Severity::Warning),
        Verdict::Unsafe => Some(Severity::Error),
        Verdict::NotFound if !has_empty_reason => Some(Severity::Info),
        Verdict::NotFound | Verdict::Info | Verdict::Safe | Verdict::Error => None,
    }
}

/// The `verdict` entry: message the verdict and what it obliges, data `{verdict,
/// summary_line?, next_step?}`.
fn verdict(wire: &Wire<'_>) -> Option<Entry> {
    let verdict = Verdict::canonicalize(wire.verdict()?);
    let severity = verdict_severity(verdict, wire.empty_reason().is_some())?;
    let mut data = Map::new();
    data.insert("verdict".to_owned(), Value::from(verdict.as_str()));
    if let Some(line) = wire.summary_line() {
        data.insert("summary_line".to_owned(), Value::from(line));
    }
    if let Some(step) = wire.next_step() {
        data.insert("next_step".to_owned(), Value::from(step));
    }
    let message = format!("{}: {}", verdict.as_str(), verdict.obligation());
    Some(entry(
        VERDICT,
        severity,
        &message,
        Some(Value::Object(data)),
    ))
}

/// How the envelope says its answer is partial.
struct Cut<'a> {
    completeness: Option<&'a Map<String, Value>>,
    /// A limit cut the collection (`completeness.truncated`).
    truncated: bool,
    /// The collection is not whole (`completeness.complete: false`).
    incomplete: bool,
    /// A compact form showed row fields in part (`completeness.shortened`).
    shortened: bool,
    /// The budget trimmer cut something (`meta.truncated`, its markers, or an
    /// `envelope_unshrinkable` response).
    budget: bool,
}

impl<'a> Cut<'a> {
    fn read(wire: &Wire<'a>) -> Self {
        let flag = |value: Option<&Value>| value.and_then(Value::as_bool);
        let shortened = wire
            .completeness_field(counted::SHORTENED)
            .and_then(Value::as_array)
            .is_some_and(|fields| !fields.is_empty());
        Cut {
            completeness: wire.completeness(),
            truncated: flag(wire.completeness_field(counted::TRUNCATED)) == Some(true),
            incomplete: flag(wire.completeness_field(counted::COMPLETE)) == Some(false),
            shortened,
            budget: wire.budget_cut()
                || wire.trim_markers().next().is_some()
                || flag(wire.meta_field(meta_keys::ENVELOPE_UNSHRINKABLE)) == Some(true),
        }
    }

    /// The code, and its severity: a cut is informational (paging or a larger budget brings
    /// the rest), an incompleteness a warning (it will not).
    fn code(&self) -> Option<(&'static str, Severity)> {
        if self.truncated || self.shortened || self.budget {
            Some((TRUNCATED, Severity::Info))
        } else if self.incomplete {
            Some((INCOMPLETE, Severity::Warning))
        } else {
            None
        }
    }

    /// A plain statement of what was returned, when the envelope gives no `next_step`.
    fn statement(&self, code: &str) -> String {
        let number = |key: &str| {
            self.completeness
                .and_then(|completeness| completeness.get(key))
                .and_then(Value::as_u64)
        };
        let partial = if code == TRUNCATED {
            "cut"
        } else {
            "incomplete"
        };
        match (number(counted::RETURNED), number(counted::TOTAL)) {
            (Some(returned), Some(total)) => format!(
                "returned {returned} of {total} {}; the result was {partial}",
                self.noun(total)
            ),
            (Some(returned), None) => format!(
                "returned {returned} {}; the result was {partial}",
                self.noun(returned)
            ),
            _ => "the response budget cut part of the payload".to_owned(),
        }
    }

    /// The collection's unit for `count` rows ("1 file", "3 files"), as the envelope's own
    /// prose names it; `items` when the unit is unreadable.
    fn noun(&self, count: u64) -> String {
        let unit = self
            .completeness
            .and_then(|completeness| completeness.get(counted::UNIT))
            .and_then(|unit| serde_json::from_value::<Unit>(unit.clone()).ok())
            .unwrap_or(Unit::ITEM);
        unit.noun(usize::try_from(count).unwrap_or(usize::MAX))
    }
}

/// The `truncated` (or `incomplete`) entry: message the envelope's `next_step` (which states
/// the real numbers on a cut) or a plain statement, data the `completeness` object, `meta`'s
/// `truncated` and every trimmer marker, and `envelope_unshrinkable` when set.
fn cut(wire: &Wire<'_>) -> Option<Entry> {
    let cut = Cut::read(wire);
    let (code, severity) = cut.code()?;
    let message = wire
        .next_step()
        .map_or_else(|| cut.statement(code), str::to_owned);
    let mut data = Map::new();
    if let Some(completeness) = cut.completeness {
        data.insert(
            envelope_core::fields::envelope::COMPLETENESS.to_owned(),
            Value::Object(completeness.clone()),
        );
    }
    copy::present(
        &mut data,
        &[meta_keys::TRUNCATED, meta_keys::ENVELOPE_UNSHRINKABLE],
        |key| wire.meta_field(key),
    );
    for (marker, value) in wire.trim_markers() {
        data.insert(marker.clone(), value.clone());
    }
    Some(entry(code, severity, &message, Some(Value::Object(data))))
}

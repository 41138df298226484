//! The `tsa` dialect: tree-sitter-analyzer's agent envelope.
//!
//! Every response is one flat JSON object, written in this order of concerns:
//!
//! - `success` (the envelope's `ok`) and `verdict`, always: the alphabet is the envelope's, a
//!   success without a verdict gets `INFO` (the contract's safety net) and a failure is
//!   `ERROR`, except one of category `not_found`, which the contract calls `NOT_FOUND`: "the
//!   tool ran fine", `success: true`, its message the `summary_line`, its hint the `next_step`,
//!   its code the `error_type`, and no `error` (present iff `success` is false).
//! - the triage fields: `summary_line` and `next_step` at the top level, and `agent_summary`
//!   `{summary_line, verdict, next_step}` when there is a summary line (as the contract's
//!   examples have it: a truncated listing with only a `next_step` has no `agent_summary`).
//! - on failure, `error` (the message), `error_type` (the code, else the category), `hint`, and
//!   the retry advice as the open keys `retryable` / `retry_after_ms`.
//! - `warnings`: `"<code>: <message>"` lines for everything the envelope flags.
//! - honest truncation: `truncated`, `<unit>_count`, `<unit plural>_listed`, `listed_cap` when
//!   the page size was the cap, `<unit plural>_offset` on later pages, the budget trimmer's
//!   `truncated_*` markers as they are, and a `next_step` with the real numbers.
//! - `next_actions`, unchanged (an open key): the `next-page` action's `tool` and `arguments`
//!   fetch the next page as given.
//! - the payload: an object's members at the top level; anything else, or an object with a
//!   member that would overwrite or pass for a dialect field, whole under `data`.
//!
//! With `output_format: toon` (or `compact_only`, whose control surface is defined over TOON
//! responses) the whole response goes TOON-encoded into `toon_content`, marked `format: "toon"`
//! and echoing `output_format`; `compact_only` then keeps only the control surface.

mod clauses;
mod failure;
mod gaps;
mod keys;
mod notices;
mod payload;
mod schema;
mod toon;
mod truncation;
mod view;
mod wire;

use envelope_core::Dialect;
use envelope_core::Verdict;
use serde::Deserialize;
use serde_json::Value;

use crate::{Rendering, Wire};
use wire::{Action, AgentSummary, Answer};

pub(crate) use gaps::{DROPPED, UNEXPRESSED};
pub(crate) use view::view;

/// The envelope read by `wire`, written in this dialect.
pub(crate) fn render(wire: &Wire<'_>, how: &Rendering) -> Value {
    let mut full = answer(wire).into_object();
    let placed = if wire.ok() {
        payload::place(wire.data(), &full)
    } else {
        // A failed call's payload is never valid results (and an envelope has none).
        payload::Placed::default()
    };
    full.extend(placed.members);
    if toon::wanted(&how.controls) {
        toon::form(full, &placed.keys, &how.controls)
    } else {
        Value::Object(full)
    }
}

/// The schema of this dialect's responses, with `data` the payload's schema.
pub(crate) fn schema(data: &Value) -> Value {
    schema::schema(data)
}

/// Every field the dialect writes itself, before the payload is placed beside them.
fn answer(wire: &Wire<'_>) -> Answer {
    let verdict = verdict(wire);
    let missing = not_found(wire);
    let mut answer = Answer::new(wire.ok() || missing, verdict);
    if missing {
        failure::fill_not_found(wire, &mut answer);
    } else {
        triage(wire, verdict, &mut answer);
    }
    if !wire.ok() && !missing {
        failure::fill(wire, &mut answer);
    }
    answer.warnings = notices::lines(wire);
    truncation::fill(wire, &mut answer);
    // Each action carried is the envelope's, unchanged; an entry that names no call (an id, a
    // tool and an object of arguments) is left out.
    answer.next_actions = wire
        .next_actions()
        .iter()
        .filter_map(|action| Action::deserialize(action).ok())
        .collect();
    answer
}

/// Whether the envelope's failure is the contract's `NOT_FOUND`: "the tool ran fine but the
/// requested symbol/file/path does not exist", which an agent treats "as an empty result, not
/// a failure". Written `success: true` with that verdict, never `ERROR`.
fn not_found(wire: &Wire<'_>) -> bool {
    !wire.ok()
        && wire
            .error_field(envelope_core::fields::error::CATEGORY)
            .and_then(Value::as_str)
            == Some(envelope_core::Category::NotFound.as_str())
}

/// The verdict, read leniently (legacy spellings canonicalize, anything else is `INFO`) and
/// kept consistent with `success`: `ERROR` exactly when the call failed, `NOT_FOUND` when what
/// it asked for does not exist.
fn verdict(wire: &Wire<'_>) -> Verdict {
    let read = wire.verdict().map(Verdict::canonicalize);
    match (wire.ok(), read) {
        (false, _) if not_found(wire) => Verdict::NotFound,
        (false, _) => Verdict::Error,
        (true, None | Some(Verdict::Error)) => Verdict::Info,
        (true, Some(verdict)) => verdict,
    }
}

/// `summary_line`, `next_step` and, when there is a summary line, `agent_summary`.
fn triage(wire: &Wire<'_>, verdict: Verdict, answer: &mut Answer) {
    let next_step = truncation::next_step(wire);
    if let Some(line) = wire.summary_line() {
        answer.agent_summary = Some(AgentSummary {
            summary_line: Some(line.to_owned()),
            verdict,
            next_step: next_step.clone(),
            more: serde_json::Map::new(),
        });
        answer.summary_line = Some(line.to_owned());
    }
    answer.next_step = next_step;
}

/// tree-sitter-analyzer's agent envelope, as a [`Contract`]: see the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Tsa;

/// `output_format: toon` (TOON in `toon_content`) and `compact_only: true` (its control
/// surface); TSA stamps the same fields on every call (no `full`).
const EXPRESSES: &[envelope_core::Expressed] = &[
    envelope_core::Expressed {
        control: "output_format",
        values: "toon",
    },
    envelope_core::Expressed {
        control: "compact_only",
        values: "true",
    },
];

contract!(
    Tsa,
    Dialect::Tsa,
    placement: "One flat object: `success` and `verdict` always (a failure is `ERROR`, a missing \
             target `NOT_FOUND` with `success: true`, its message the `summary_line`); \
             `summary_line`, `next_step` and `agent_summary` `{summary_line, verdict, next_step}`; \
             on failure `error` (the message), `error_type` (the code, else the category), \
             `hint`; `warnings` as `\"<code>: <message>\"` lines; honest truncation as \
             `truncated`, `<unit>_count`, `<units>_listed`, `listed_cap` (when the page size was \
             the cap) and a `next_step` with the real numbers; `next_actions` unchanged; the \
             payload's members at the top level (whole under `data` when one would collide). With \
             `output_format: toon` the whole response is TOON in `toon_content` (`format: \
             \"toon\"`), and `compact_only` keeps only the contract's control surface.",
    succeeded: |answer| answer.get(keys::SUCCESS).and_then(Value::as_bool) == Some(true),
);

//! A failure's top-level fields: `error` (the message), `error_type` (its machine-stable kind),
//! `hint`, and the retry advice the contract has no key for.

use envelope_core::fields::{envelope as envelope_field, error as field};
use envelope_core::{INTERNAL_MESSAGE, Verdict};
use serde_json::{Map, Value};

use super::wire::{AgentSummary, Answer};
use crate::Wire;

/// Writes the failure fields of the envelope read by `wire` (a failed call's) on `answer`.
///
/// - `error`: `error.message`. The contract has `error` present iff `success` is false, so a
///   failure whose error has no message still gets one: its code, else its category, else the
///   library's fixed message for a failure it cannot describe.
/// - `error_type`: `error.code` when the error has one (the most specific stable name an agent
///   branches on, `STALE_CONTINUATION` rather than `validation`), else `error.category`.
/// - `hint`: `error.hint`.
/// - `retryable`, `retry_after_ms`: as the envelope has them. The contract has no retry field,
///   and whether the same call may succeed unchanged is what an agent must not guess.
pub(super) fn fill(wire: &Wire<'_>, answer: &mut Answer) {
    let kind = text(wire, field::CODE).or_else(|| text(wire, field::CATEGORY));
    let message = text(wire, field::MESSAGE)
        .or_else(|| bare_message(wire))
        .or(kind)
        .unwrap_or(INTERNAL_MESSAGE);
    answer.error = Some(message.to_owned());
    answer.error_type = kind.map(str::to_owned);
    answer.hint = text(wire, field::HINT).map(str::to_owned);
    answer.retryable = wire.error_field(field::RETRYABLE).and_then(Value::as_bool);
    answer.retry_after_ms = wire
        .error_field(field::RETRY_AFTER_MS)
        .and_then(Value::as_u64);
}

/// Writes the fields of a missing target (`NOT_FOUND`, a success in this contract): `summary_line`
/// the error's message, `next_step` its hint (else what the verdict obliges), `agent_summary`
/// with both, `error_type` its code (else its category) so that a reader can tell it from an
/// empty result and read it back, and the retry advice as a failure has it. No `error`.
pub(super) fn fill_not_found(wire: &Wire<'_>, answer: &mut Answer) {
    let verdict = Verdict::NotFound;
    let line = text(wire, field::MESSAGE).unwrap_or(verdict.obligation());
    let step = text(wire, field::HINT).unwrap_or(verdict.obligation());
    answer.agent_summary = Some(AgentSummary {
        summary_line: Some(line.to_owned()),
        verdict,
        next_step: Some(step.to_owned()),
        more: Map::new(),
    });
    answer.summary_line = Some(line.to_owned());
    answer.next_step = Some(step.to_owned());
    answer.error_type = text(wire, field::CODE)
        .or_else(|| text(wire, field::CATEGORY))
        .map(str::to_owned);
    answer.retryable = wire.error_field(field::RETRYABLE).and_then(Value::as_bool);
}

/// A non-empty string member of the error object.
fn text<'a>(wire: &Wire<'a>, key: &str) -> Option<&'a str> {
    wire.error_field(key)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

/// An error written as a bare string (not the envelope's shape, but what it says is kept).
fn bare_message<'a>(wire: &Wire<'a>) -> Option<&'a str> {
    wire.envelope()
        .get(envelope_field::ERROR)
        .and_then(Value::as_str)
        .filter(|text| !text.is_empty())
}

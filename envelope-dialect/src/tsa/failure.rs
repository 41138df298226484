//! A failure's top-level fields: `error` (the message), `error_type` (its machine-stable kind),
//! `hint`, and the retry advice the contract has no key for.

use envelope_core::fields::{envelope as envelope_field, error as field};
use envelope_core::{INTERNAL_MESSAGE, Verdict};
use serde_json::{Map, Value};

use super::keys;
use crate::Wire;

/// The failure fields of the envelope read by `wire` (a failed call's).
///
/// - `error`: `error.message`. The contract has `error` present iff `success` is false, so a
///   failure whose error has no message still gets one: its code, else its category, else the
///   library's fixed message for a failure it cannot describe.
/// - `error_type`: `error.code` when the error has one (the most specific stable name an agent
///   branches on, `STALE_CONTINUATION` rather than `validation`), else `error.category`.
/// - `hint`: `error.hint`.
/// - `retryable`, `retry_after_ms`: as the envelope has them. The contract has no retry field,
///   and whether the same call may succeed unchanged is what an agent must not guess.
pub(super) fn fields(wire: &Wire<'_>) -> Map<String, Value> {
    let mut out = Map::new();
    let kind = text(wire, field::CODE).or_else(|| text(wire, field::CATEGORY));
    let message = text(wire, field::MESSAGE)
        .or_else(|| bare_message(wire))
        .or(kind)
        .unwrap_or(INTERNAL_MESSAGE);
    out.insert(keys::ERROR.to_owned(), Value::from(message));
    if let Some(kind) = kind {
        out.insert(keys::ERROR_TYPE.to_owned(), Value::from(kind));
    }
    if let Some(hint) = text(wire, field::HINT) {
        out.insert(keys::HINT.to_owned(), Value::from(hint));
    }
    if let Some(retryable) = wire
        .error_field(field::RETRYABLE)
        .filter(|v| v.is_boolean())
    {
        out.insert(keys::RETRYABLE.to_owned(), retryable.clone());
    }
    if let Some(wait) = wire
        .error_field(field::RETRY_AFTER_MS)
        .filter(|v| v.is_u64())
    {
        out.insert(keys::RETRY_AFTER_MS.to_owned(), wait.clone());
    }
    out
}

/// The fields of a missing target (`NOT_FOUND`, a success in this contract): `summary_line`
/// the error's message, `next_step` its hint (else what the verdict obliges), `agent_summary`
/// with both, `error_type` its code (else its category) so that a reader can tell it from an
/// empty result and read it back, and the retry advice as a failure has it. No `error`.
pub(super) fn not_found_fields(wire: &Wire<'_>) -> Map<String, Value> {
    let verdict = Verdict::NotFound;
    let mut out = Map::new();
    let kind = text(wire, field::CODE).or_else(|| text(wire, field::CATEGORY));
    let line = text(wire, field::MESSAGE).unwrap_or(verdict.obligation());
    let step = text(wire, field::HINT).unwrap_or(verdict.obligation());
    let mut summary = Map::new();
    summary.insert(keys::SUMMARY_LINE.to_owned(), Value::from(line));
    summary.insert(keys::VERDICT.to_owned(), Value::from(verdict.as_str()));
    summary.insert(keys::NEXT_STEP.to_owned(), Value::from(step));
    out.insert(keys::AGENT_SUMMARY.to_owned(), Value::Object(summary));
    out.insert(keys::SUMMARY_LINE.to_owned(), Value::from(line));
    out.insert(keys::NEXT_STEP.to_owned(), Value::from(step));
    if let Some(kind) = kind {
        out.insert(keys::ERROR_TYPE.to_owned(), Value::from(kind));
    }
    if let Some(retryable) = wire
        .error_field(field::RETRYABLE)
        .filter(|v| v.is_boolean())
    {
        out.insert(keys::RETRYABLE.to_owned(), retryable.clone());
    }
    out
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

//! A Frigg answer read back as the envelope it carries.

use envelope_core::fields::{code, completeness as counted, envelope as field, error};
use envelope_core::{Category, EmptyReason};
use serde_json::{Map, Value};

use super::RESERVED;
use super::diagnostics::RESPONSE_BUDGET;
use super::recovery::zero_hit_reason;
use crate::copy;

/// Frigg's flat fields as an envelope: a failure (`error_code` present) as the envelope's
/// `error` (an upper-snake category back to its category, any other code as the code); rows
/// (`data`, else the members no Frigg field claims) as `data`; `completeness` without the
/// token, which the `next-page` action carries; `next_actions` as they are; `zero_hit_reason`
/// back to the empty reason it was mapped from, with `message` as its diagnosis;
/// `diagnostics` as they are; `runtime` (full mode) as `meta`, with a budget cut's markers
/// (its `response_budget` entry) in it.
pub(crate) fn view(answer: &Value) -> Value {
    let empty = Map::new();
    let top = answer.as_object().unwrap_or(&empty);
    let failed = top.contains_key("error_code");
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(!failed));
    if failed {
        out.insert(field::ERROR.to_owned(), failure(top));
    } else if let Some(payload) = payload(top) {
        out.insert(field::DATA.to_owned(), payload);
    }
    if let Some(Value::Object(completeness)) = top.get("completeness") {
        let mut completeness = completeness.clone();
        completeness.remove(counted::CONTINUATION);
        out.insert(field::COMPLETENESS.to_owned(), Value::Object(completeness));
    }
    copy::renamed(
        &mut out,
        [
            ("next_actions", field::NEXT_ACTIONS),
            ("diagnostics", field::DIAGNOSTICS),
            ("runtime", field::META),
        ],
        |key| top.get(key),
    );
    // A budget cut's `response_budget` entry holds `meta`'s cut markers, which compact leaves
    // nowhere else.
    let cut = top
        .get("diagnostics")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|entry| entry.get("code").and_then(Value::as_str) == Some(RESPONSE_BUDGET))
        .find_map(|entry| entry.get("data").and_then(Value::as_object));
    if let Some(markers) = cut {
        // The envelope's own truncation reasons, where the budget ended the page: Frigg's
        // closed list wrote `budget_limit` as `page_limit`.
        if let (Some(reasons), Some(Value::Object(completeness))) = (
            markers.get(counted::TRUNCATION_REASONS),
            out.get_mut(field::COMPLETENESS),
        ) {
            completeness.insert(counted::TRUNCATION_REASONS.to_owned(), reasons.clone());
        }
        let meta = out
            .entry(field::META.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            for (name, value) in markers {
                if name != counted::TRUNCATION_REASONS {
                    meta.entry(name.clone()).or_insert_with(|| value.clone());
                }
            }
        }
    }
    if let Some(reason) = top.get("zero_hit_reason").and_then(Value::as_str) {
        out.insert(
            field::EMPTY_REASON.to_owned(),
            Value::from(empty_reason(reason)),
        );
        if let Some(message) = top.get("message") {
            out.insert(field::DIAGNOSIS.to_owned(), message.clone());
        }
    }
    Value::Object(out)
}

/// The envelope's `error` from the recovery grammar.
fn failure(top: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    if let Some(code) = top.get("error_code").and_then(Value::as_str) {
        let category = Category::ALL
            .iter()
            .find(|category| category.as_str().to_ascii_uppercase() == code);
        match category {
            Some(category) => {
                out.insert(error::CATEGORY.to_owned(), Value::from(category.as_str()))
            }
            None => out.insert(error::CODE.to_owned(), Value::from(envelope_code(code))),
        };
    }
    copy::renamed(
        &mut out,
        [
            ("message", error::MESSAGE),
            ("correction_hint", error::HINT),
            ("retryable", error::RETRYABLE),
            ("data", error::DATA),
        ],
        |key| top.get(key),
    );
    Value::Object(out)
}

/// The envelope's code an `error_code` was written from: Frigg's codes are upper snake case,
/// so the envelope's own lower-case codes were written upper-case, and read back lower-case. A
/// tool's own lower-case code reads back upper-case (said in the gap table).
fn envelope_code(code: &str) -> String {
    let lower = code.to_ascii_lowercase();
    if LOWER_CASE_CODES.contains(&lower.as_str()) {
        lower
    } else {
        code.to_owned()
    }
}

/// The envelope's codes that are lower snake case.
const LOWER_CASE_CODES: &[&str] = &[
    code::ARGUMENTS_NOT_OBJECT,
    code::UNKNOWN_ARG,
    code::INVALID_ARGUMENTS,
    code::INVALID_ARGUMENT,
    code::INVALID_CONTROL,
    code::CONTINUATION_IGNORED,
    code::INSUFFICIENT_SCOPE,
    code::NOT_CONFIGURED,
    code::DEADLINE_EXCEEDED,
];

/// The rows: `data` when the dialect put the payload there, else the members no Frigg field
/// claims (none: no payload).
fn payload(top: &Map<String, Value>) -> Option<Value> {
    if let Some(data) = top.get("data") {
        return Some(data.clone());
    }
    let rows: Map<String, Value> = top
        .iter()
        .filter(|(name, _)| !RESERVED.contains(&name.as_str()))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    (!rows.is_empty()).then_some(Value::Object(rows))
}

/// The envelope's empty reason a zero-hit reason was written from (an unmapped one kept its
/// own name).
fn empty_reason(reason: &str) -> String {
    EmptyReason::ALL
        .iter()
        .find(|known| zero_hit_reason(known) == reason)
        .map_or_else(|| reason.to_owned(), |known| known.as_str().to_owned())
}

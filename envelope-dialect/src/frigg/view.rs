//! A Frigg answer read back as the envelope it carries.

use envelope_core::fields::{code, completeness as counted, envelope as field, error};
use envelope_core::{Category, EmptyReason};
use serde_json::{Map, Value};

use serde::Deserialize;

use super::diagnostics::RESPONSE_BUDGET;
use super::recovery::zero_hit_reason;
use super::wire::Answer;
use crate::copy;
use crate::typed::unreadable;

/// Frigg's flat fields as an envelope: a failure (`error_code` present) as the envelope's
/// `error` (an upper-snake category back to its category, any other code as the code); rows
/// (`data`, else the members no Frigg field claims) as `data`; `completeness` without the
/// token, which the `next-page` action carries; `next_actions` as they are; `zero_hit_reason`
/// back to the empty reason it was mapped from, with `message` as its diagnosis;
/// `diagnostics` as they are; `runtime` (full mode) as `meta`, with a budget cut's markers
/// (its `response_budget` entry) in it.
pub(crate) fn view(answer: &Value) -> Value {
    // Read through the type it is written from; an answer of another shape is not this
    // dialect's, and reads as a failure that says so.
    let answer = match Answer::deserialize(answer) {
        Ok(answer) => answer,
        Err(error) => return unreadable("a Frigg answer", &error),
    };
    let failed = answer.error_code.is_some();
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(!failed));
    if failed {
        out.insert(field::ERROR.to_owned(), failure(&answer));
    } else if let Some(payload) = payload(&answer) {
        out.insert(field::DATA.to_owned(), payload);
    }
    if let Some(completeness) = &answer.completeness {
        let mut completeness = completeness.clone();
        completeness.continuation = None;
        copy::put(&mut out, field::COMPLETENESS, Some(completeness));
    }
    copy::put_list(&mut out, field::NEXT_ACTIONS, &answer.next_actions);
    copy::put_list(&mut out, field::DIAGNOSTICS, &answer.diagnostics);
    copy::put(&mut out, field::META, answer.runtime.as_ref());
    // A budget cut's `response_budget` entry holds `meta`'s cut markers, which compact leaves
    // nowhere else.
    let cut = answer
        .diagnostics
        .iter()
        .filter(|entry| entry.code == RESPONSE_BUDGET)
        .find_map(|entry| entry.data.as_ref().and_then(Value::as_object));
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
    if let Some(reason) = &answer.zero_hit_reason {
        out.insert(
            field::EMPTY_REASON.to_owned(),
            Value::from(empty_reason(reason)),
        );
        if let Some(message) = &answer.message {
            out.insert(field::DIAGNOSIS.to_owned(), Value::from(message.as_str()));
        }
    }
    Value::Object(out)
}

/// The envelope's `error` from the recovery grammar.
fn failure(answer: &Answer) -> Value {
    let mut out = Map::new();
    if let Some(code) = &answer.error_code {
        let category = Category::ALL
            .iter()
            .find(|category| category.as_str().to_ascii_uppercase() == *code);
        match category {
            Some(category) => {
                out.insert(error::CATEGORY.to_owned(), Value::from(category.as_str()))
            }
            None => out.insert(error::CODE.to_owned(), Value::from(envelope_code(code))),
        };
    }
    copy::put(&mut out, error::MESSAGE, answer.message.as_ref());
    copy::put(&mut out, error::HINT, answer.correction_hint.as_ref());
    copy::put(&mut out, error::RETRYABLE, answer.retryable);
    copy::put(&mut out, error::DATA, answer.data.as_ref());
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
fn payload(answer: &Answer) -> Option<Value> {
    if let Some(data) = &answer.data {
        return Some(data.clone());
    }
    (!answer.rows.is_empty()).then(|| Value::Object(answer.rows.clone()))
}

/// The envelope's empty reason a zero-hit reason was written from (an unmapped one kept its
/// own name).
fn empty_reason(reason: &str) -> String {
    EmptyReason::ALL
        .iter()
        .find(|known| zero_hit_reason(known) == reason)
        .map_or_else(|| reason.to_owned(), |known| known.as_str().to_owned())
}

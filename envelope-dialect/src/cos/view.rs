//! A cos answer read back as the envelope it carries.

use envelope_core::fields::{envelope as field, meta as meta_field};
use serde_json::{Map, Value};

use serde::Deserialize;

use super::key;
use super::wire::{Failure, FailureError};

/// The `data.meta` members that are the envelope's top-level fields, carried under their names.
const TOP_LEVEL: [&str; 9] = [
    field::COMPLETENESS,
    field::NEXT_ACTIONS,
    field::NEXT_STEP,
    field::SUMMARY_LINE,
    field::VERDICT,
    field::EMPTY_REASON,
    field::DIAGNOSIS,
    field::WARNINGS,
    field::DIAGNOSTICS,
];

/// `{ok, data: {…, meta}}` or `{ok, error}` as an envelope: the payload without the block (a
/// wrapped list or scalar unwrapped), the block's carried fields at the top level, its stamps
/// and markers in `meta` (a wrapped list's `truncated_results_*` read back as the payload's
/// own `truncated_data_*`).
pub(crate) fn view(answer: &Value) -> Value {
    let mut out = Map::new();
    let ok = answer
        .get(key::OK)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    out.insert(field::OK.to_owned(), Value::Bool(ok));
    if !ok {
        // Read through the type it is written from; an answer of another shape (not this
        // library's) keeps whatever `error` it has.
        let error = match Failure::deserialize(answer) {
            Ok(failure) => error_of(failure.error),
            Err(_) => answer.get(key::ERROR).cloned(),
        };
        if let Some(error) = error {
            out.insert(field::ERROR.to_owned(), error);
        }
        return Value::Object(out);
    }
    let Some(data) = answer.get(key::DATA) else {
        return Value::Object(out);
    };
    let mut data = data.clone();
    let block = data.as_object_mut().and_then(|data| data.remove(key::META));
    let (payload, wrapped) = unwrap(data);
    out.insert(field::DATA.to_owned(), payload);
    let Some(Value::Object(block)) = block else {
        return Value::Object(out);
    };
    let mut meta = Map::new();
    for (name, value) in block {
        if TOP_LEVEL.contains(&name.as_str()) {
            out.insert(name, value);
        } else if wrapped
            && name.starts_with(&format!("{}{}_", meta_field::MARKER_PREFIX, key::RESULTS))
        {
            let rest = &name[meta_field::MARKER_PREFIX.len() + key::RESULTS.len()..];
            meta.insert(
                format!("{}{}{rest}", meta_field::MARKER_PREFIX, field::DATA),
                value,
            );
        } else {
            meta.insert(name, value);
        }
    }
    out.insert(field::META.to_owned(), Value::Object(meta));
    Value::Object(out)
}

/// The envelope's `error` from the contract's: the same three members, under the envelope's
/// own names.
fn error_of(error: FailureError) -> Option<Value> {
    let mut out = Map::new();
    out.insert(
        envelope_core::fields::error::CATEGORY.to_owned(),
        Value::from(error.category.as_str()),
    );
    out.insert(
        envelope_core::fields::error::RETRYABLE.to_owned(),
        Value::Bool(error.retryable),
    );
    out.insert(
        envelope_core::fields::error::MESSAGE.to_owned(),
        Value::String(error.message),
    );
    Some(Value::Object(out))
}

/// The payload as the tool returned it: a list under `results` or a scalar under `value`,
/// when that is all the object holds, is unwrapped; whether it was a list is the second half.
fn unwrap(data: Value) -> (Value, bool) {
    match data {
        Value::Object(mut object) if object.len() == 1 => {
            if let Some(list @ Value::Array(_)) = object.remove(key::RESULTS) {
                return (list, true);
            }
            match object.remove(key::VALUE) {
                Some(value) => (value, false),
                None => (Value::Object(object), false),
            }
        }
        other => (other, false),
    }
}

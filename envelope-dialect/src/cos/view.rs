//! A cos answer read back as the envelope it carries.

use envelope_core::fields::{envelope as field, meta as meta_field};
use serde_json::{Map, Value};

use serde::Deserialize;

use super::key;
use super::wire::{Block, Failure, FailureError};

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
    let Some(block) = block else {
        return Value::Object(out);
    };
    let mut meta = Map::new();
    // Read through the type it is written from; a block of another shape (a tool's payload
    // sent as it is, with its own `meta`) keeps its members in `meta` as they are.
    let more = match Block::deserialize(&block) {
        Ok(block) => carried(block, &mut out, &mut meta),
        Err(_) => match block {
            Value::Object(members) => members,
            _ => Map::new(),
        },
    };
    for (name, value) in more {
        if wrapped && name.starts_with(&format!("{}{}_", meta_field::MARKER_PREFIX, key::RESULTS)) {
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

/// The block's typed members where the envelope has them: the carried signals at the top
/// level of `out`, the stamps in `meta`; what is left (markers and a tool's own keys) is
/// returned for `meta`.
fn carried(
    block: Block,
    out: &mut Map<String, Value>,
    meta: &mut Map<String, Value>,
) -> Map<String, Value> {
    use crate::copy::{put, put_list};
    put(out, field::VERDICT, block.verdict);
    put(out, field::SUMMARY_LINE, block.summary_line);
    put(out, field::NEXT_STEP, block.next_step);
    put(out, field::COMPLETENESS, block.completeness);
    put(out, field::EMPTY_REASON, block.empty_reason);
    put(out, field::DIAGNOSIS, block.diagnosis);
    put_list(out, field::NEXT_ACTIONS, &block.next_actions);
    put_list(out, field::WARNINGS, &block.warnings);
    put_list(out, field::DIAGNOSTICS, &block.diagnostics);
    put(meta, key::LAYER, block.layer);
    put(meta, key::TOKENS_ESTIMATED, Some(block.tokens_estimated));
    put(meta, key::TRUNCATED, Some(block.truncated));
    put(
        meta,
        meta_field::TRUNCATED_STRING_FIELDS,
        block.truncated_string_fields,
    );
    put(
        meta,
        meta_field::TRUNCATED_SUBGRAPH,
        block.truncated_subgraph,
    );
    put(
        meta,
        meta_field::ENVELOPE_UNSHRINKABLE,
        block.envelope_unshrinkable,
    );
    put(
        meta,
        meta_field::BINARY_DRIFT_WARNING,
        block.binary_drift_warning,
    );
    put_list(meta, meta_field::ATTACHMENTS, &block.attachments);
    block.more
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

//! The JSON Schema of the contract's responses: the success shape with its `data.meta`
//! diagnostics block, and the exact error shape.

use serde_json::{Value, json};

use super::key;

/// The name the diagnostics block's schema is defined under, once for the three places a
/// success may hold it.
const BLOCK: &str = "cos_meta";

/// The schema of this dialect's responses, with `data` the payload's schema.
pub(crate) fn schema(data: &Value) -> Value {
    json!({
        "$defs": { BLOCK: block() },
        "title": "cos_* tool response",
        "description": "The cos_* error envelope: `ok` says success or failure; a success carries \
                        the payload in `data` with the diagnostics block `data.meta`, a failure \
                        only `error` with its category, retryable flag and message.",
        "oneOf": [success(data), failure()],
    })
}

/// `{"ok": true, "data": …}`.
fn success(data: &Value) -> Value {
    json!({
        "type": "object",
        "required": [key::OK, key::DATA],
        "properties": {
            (key::OK): {"const": true},
            (key::DATA): placed(data),
        },
        "additionalProperties": false,
    })
}

/// `data`: an object payload with `meta` as a member, or any other payload under `results`
/// (a list) or `value` (a scalar or null) beside `meta`, as this dialect writes it; or, as the
/// contract allows ("a dict, a list, a scalar, or even null"), a payload that is no object sent
/// as it is, with no block.
fn placed(data: &Value) -> Value {
    let block = json!({ "$ref": format!("#/$defs/{BLOCK}") });
    let wrapped = |under: &str| {
        json!({
            "type": "object",
            "required": [under, key::META],
            "properties": {(under): data, (key::META): block},
            "additionalProperties": false,
        })
    };
    json!({
        "anyOf": [
            {"allOf": [
                data,
                {"type": "object", "required": [key::META], "properties": {(key::META): block}},
            ]},
            wrapped(key::RESULTS),
            wrapped(key::VALUE),
            {"allOf": [data, {"not": {"type": "object"}}]},
        ]
    })
}

/// `data.meta`: the contract's stamps and the trimmer's markers, the envelope's carried
/// signals, and any key a tool adds: the schema of the type the block is written and read back
/// through.
fn block() -> Value {
    crate::typed::inline_schema::<super::wire::Block>()
}

/// `{"ok": false, "error": {category, retryable, message}}`, nothing more: the schema of the
/// type the failure is written and read back through.
fn failure() -> Value {
    crate::typed::inline_schema::<super::wire::Failure>()
}

//! The JSON Schema of pincher's responses: the contract's anatomy, field by field.
//!
//! It describes every response the contract allows, not only what this dialect writes: the
//! fields an envelope cannot fill (`project_id`, the legacy `warnings` strings, …) are typed
//! too, so that a pincher server's own answers validate. `_meta` stays open, since the contract
//! makes new fields pure additions.

use serde_json::{Value, json};

/// The schema of this dialect's responses, with `data` the payload's schema (`result`).
pub(crate) fn schema(data: &Value) -> Value {
    json!({
        "title": "pincher `_meta` envelope",
        "description": "A tool response in pincher's `_meta` envelope: the payload under `result` (null when the call failed), everything else under `_meta`. A missing field means \"not applicable to this call\".",
        "type": "object",
        "properties": {
            // Null on a failure (and on a success with nothing to return).
            "result": {"anyOf": [data, {"type": "null"}]},
            "_meta": meta(),
        },
        // `result` is in every answer the contract shows, and the host loop reads it from each.
        "required": ["result", "_meta"],
        "additionalProperties": false,
    })
}

/// `_meta`: the schema of the type it is written from.
fn meta() -> Value {
    crate::typed::inline_schema::<super::wire::Meta>()
}

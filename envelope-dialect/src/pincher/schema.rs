//! The JSON Schema of pincher's responses: the contract's anatomy, field by field.
//!
//! It describes every response the contract allows, not only what this dialect writes: the
//! fields an envelope cannot fill (`project_id`, the legacy `warnings` strings, …) are typed
//! too, so that a pincher server's own answers validate. `_meta` stays open, since the contract
//! makes new fields pure additions.

use serde_json::{Value, json};

/// The schema of this dialect's responses, with `data` the payload's schema (`result`): the
/// schema of the type answers are written from, `result` typed by `data` (or null).
pub(crate) fn schema(data: &Value) -> Value {
    let mut schema = crate::typed::inline_schema::<super::wire::Response>();
    if let Value::Object(schema) = &mut schema {
        schema.insert("title".to_owned(), Value::from("pincher `_meta` envelope"));
        schema.insert(
            "description".to_owned(),
            Value::from(
                "A tool response in pincher's `_meta` envelope: the payload under `result` \
                 (null when the call failed), everything else under `_meta`. A missing field \
                 means \"not applicable to this call\".",
            ),
        );
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            // Null on a failure (and on a success with nothing to return).
            properties.insert(
                "result".to_owned(),
                json!({ "anyOf": [data, { "type": "null" }] }),
            );
        }
        // `result` is in every answer the contract shows, and the host loop reads it from
        // each.
        schema.insert("required".to_owned(), json!(["result", "_meta"]));
    }
    schema
}

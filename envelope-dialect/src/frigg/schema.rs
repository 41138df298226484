//! The JSON Schema (draft 2020-12) of a Frigg response: Frigg's own fields closed and typed,
//! the payload's members open beside them (typed where the payload's schema lists them inline).

use envelope_core::fields::envelope;
use serde_json::{Map, Value, json};

use super::RESERVED;
use super::wire::Answer;

/// The schema of this dialect's responses, with `data` the payload's schema: the schema of
/// the type answers are written from, the payload's members typed beside Frigg's fields where
/// its schema lists them inline.
pub(crate) fn schema(data: &Value) -> Value {
    let mut schema = crate::typed::inline_schema::<Answer>();
    if let Value::Object(schema) = &mut schema {
        schema.insert(
            "title".to_owned(),
            Value::from("Frigg result and recovery response"),
        );
        schema.insert(
            "description".to_owned(),
            Value::from(
                "An object payload's members sit at the top level beside Frigg's fields; a \
                 payload that is not an object, or has a member named like one of Frigg's \
                 fields, is under `data`. A failure is `error_code` with `retryable`, its \
                 structured detail under `data`.",
            ),
        );
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            for (name, member) in payload_members(data) {
                properties.entry(name).or_insert(member);
            }
        }
        // On success `data` is the payload; on a failure it is the error's own detail.
        schema.insert("if".to_owned(), json!({ "required": ["error_code"] }));
        schema.insert("then".to_owned(), json!({}));
        schema.insert(
            "else".to_owned(),
            json!({ "properties": { envelope::DATA: data } }),
        );
    }
    schema
}

/// The payload's members a flattened payload puts at the top level, typed by the payload's
/// schema when it lists them inline (reserved names never are: such a payload is under `data`).
fn payload_members(data: &Value) -> Map<String, Value> {
    data.get("properties")
        .and_then(Value::as_object)
        .map(|members| {
            members
                .iter()
                .filter(|(key, _)| !RESERVED.contains(&key.as_str()))
                .map(|(key, schema)| (key.clone(), schema.clone()))
                .collect()
        })
        .unwrap_or_default()
}

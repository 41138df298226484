//! The published JSON Schema of the envelope, as `docs/envelope.schema.json` holds it.

use schemars::Schema;
use schemars::generate::SchemaSettings;
use serde_json::Value;

use crate::envelope::Envelope;

/// The JSON Schema (draft 2020-12) of an envelope with any JSON payload.
///
/// Optional fields are described without a `null` alternative: absent fields are omitted on
/// the wire, never written as `null`.
pub fn envelope_schema() -> Schema {
    let generator = SchemaSettings::draft2020_12().into_generator();
    let schema = generator.into_root_schema_for::<Envelope<Value>>();
    let mut value = schema.to_value();
    forbid_null_for_optional_properties(&mut value);
    Schema::try_from(value).expect("a root schema stays a JSON object")
}

/// schemars describes every `Option<T>` as "T or null"; on our wire an absent field is omitted,
/// so the `null` alternative is removed from each property that is not required.
fn forbid_null_for_optional_properties(node: &mut Value) {
    match node {
        Value::Object(map) => {
            let required: Vec<String> = map
                .get("required")
                .and_then(Value::as_array)
                .map(|names| {
                    names
                        .iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        strip_null(property);
                    }
                }
            }
            for child in map.values_mut() {
                forbid_null_for_optional_properties(child);
            }
        }
        Value::Array(items) => items
            .iter_mut()
            .for_each(forbid_null_for_optional_properties),
        _ => {}
    }
}

fn strip_null(property: &mut Value) {
    let Value::Object(map) = property else { return };
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        let replacement = match kept.as_slice() {
            [single] => single.clone(),
            _ => Value::Array(kept),
        };
        map.insert("type".into(), replacement);
    }
    if let Some(Value::Array(alternatives)) = map.get("anyOf") {
        let is_null = |alt: &Value| alt.get("type").is_some_and(|t| t == "null");
        let kept: Vec<Value> = alternatives
            .iter()
            .filter(|alt| !is_null(alt))
            .cloned()
            .collect();
        if let [single] = kept.as_slice() {
            let single = single.clone();
            map.remove("anyOf");
            if let Value::Object(inner) = single {
                for (key, value) in inner {
                    map.entry(key).or_insert(value);
                }
            }
        } else {
            map.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

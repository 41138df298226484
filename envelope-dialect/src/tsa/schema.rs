//! The JSON Schema (draft 2020-12) of this dialect's responses.
//!
//! The top level is open, as the contract's is: payload members sit there beside the dialect's
//! fields, and so do `<unit>_count`, `<unit plural>_listed` and the trimmer's markers, whose
//! names depend on the answer. What the schema pins is the contract's own fields and its
//! invariants: `success` always; `error` iff `success` is false; verdict `ERROR` iff it failed;
//! `format` and `toon_content` together.

use serde_json::{Map, Value};

use super::keys;
use super::truncation::is_count_key;
use super::wire::Answer;

/// The schema, with `data` the payload's schema (`true` for any payload): the schema of the
/// type answers are written from, its payload members typed where `data` lists them inline.
pub(super) fn schema(data: &Value) -> Value {
    let mut schema = crate::typed::inline_schema::<Answer>();
    if let Value::Object(schema) = &mut schema {
        schema.insert(
            "title".to_owned(),
            Value::from("tree-sitter-analyzer agent envelope"),
        );
        schema.insert(
            "description".to_owned(),
            Value::from(
                "A tool's answer in tree-sitter-analyzer's agent envelope: `success`, \
                 `verdict`, the triage fields, honest truncation (`truncated`, `<unit>_count`, \
                 `<unit plural>_listed`, `listed_cap`), an object payload's members at the top \
                 level (else the payload whole under `data`), and the TOON form in \
                 `toon_content`.",
            ),
        );
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            properties.insert(keys::DATA.to_owned(), data.clone());
            for (name, member) in payload_properties(data) {
                properties.entry(name).or_insert(member);
            }
        }
    }
    schema
}

/// The payload's own member schemas, when `data` lists them inline: they type the flattened
/// members. Names the dialect may write itself are left out (a member of such a name may be
/// moved under `data`, and the dialect's value must not be checked against its schema).
fn payload_properties(data: &Value) -> Map<String, Value> {
    let Some(members) = data.get("properties").and_then(Value::as_object) else {
        return Map::new();
    };
    members
        .iter()
        .filter(|(name, _)| !keys::OWNED.contains(&name.as_str()) && !is_count_key(name))
        .map(|(name, schema)| (name.clone(), schema.clone()))
        .collect()
}

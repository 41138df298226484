//! The JSON Schema (draft 2020-12) of this dialect's responses.
//!
//! The top level is open, as the contract's is: payload members sit there beside the dialect's
//! fields, and so do `<unit>_count`, `<unit plural>_listed` and the trimmer's markers, whose
//! names depend on the answer. What the schema pins is the contract's own fields and its
//! invariants: `success` always; `error` iff `success` is false; verdict `ERROR` iff it failed;
//! `format` and `toon_content` together.

use envelope_core::Verdict;
use envelope_core::stage::OutputFormat;
use serde_json::{Map, Value, json};

use super::keys;
use super::truncation::is_count_key;

/// The schema, with `data` the payload's schema (`true` for any payload).
pub(super) fn schema(data: &Value) -> Value {
    let mut properties = payload_properties(data);
    properties.extend(own_properties(data));
    json!({
        "title": "tree-sitter-analyzer agent envelope",
        "description": "A tool's answer in tree-sitter-analyzer's agent envelope: `success`, \
            `verdict`, the triage fields, honest truncation (`truncated`, `<unit>_count`, \
            `<unit plural>_listed`, `listed_cap`), an object payload's members at the top \
            level (else the payload whole under `data`), and the TOON form in `toon_content`.",
        "type": "object",
        "required": [keys::SUCCESS],
        "properties": properties,
        "dependentRequired": {
            keys::FORMAT: [keys::TOON_CONTENT],
            keys::TOON_CONTENT: [keys::FORMAT],
        },
        "allOf": [failure_invariants()],
    })
}

/// `error` is present iff `success` is false, and verdict `ERROR` means exactly that.
fn failure_invariants() -> Value {
    let error_verdict = json!({ "const": Verdict::Error.as_str() });
    json!({
        "if": { "properties": { keys::SUCCESS: { "const": false } } },
        "then": {
            "required": [keys::ERROR],
            "properties": { keys::VERDICT: error_verdict },
        },
        "else": {
            "not": { "required": [keys::ERROR] },
            "properties": { keys::VERDICT: { "not": error_verdict } },
        },
    })
}

/// The contract's own fields, and `data` (the payload whole, when it is not flattened).
fn own_properties(data: &Value) -> Map<String, Value> {
    let string = json!({ "type": "string" });
    let count = json!({ "type": "integer", "minimum": 0 });
    let mut properties = Map::new();
    let mut put = |key: &str, schema: Value| {
        properties.insert(key.to_owned(), schema);
    };
    put(keys::SUCCESS, json!({ "type": "boolean" }));
    put(keys::VERDICT, verdict());
    put(keys::SUMMARY_LINE, string.clone());
    put(keys::NEXT_STEP, string.clone());
    put(keys::AGENT_SUMMARY, agent_summary());
    put(keys::ERROR, string.clone());
    put(keys::ERROR_TYPE, string.clone());
    put(keys::HINT, string.clone());
    put(keys::RETRYABLE, json!({ "type": "boolean" }));
    put(keys::RETRY_AFTER_MS, count.clone());
    put(
        keys::WARNINGS,
        json!({ "type": "array", "items": string.clone() }),
    );
    put(keys::TRUNCATED, json!({ "type": "boolean" }));
    put(keys::LISTED_CAP, count);
    put(keys::NEXT_ACTIONS, next_actions());
    put(keys::FORMAT, json!({ "const": keys::TOON }));
    put(keys::TOON_CONTENT, string);
    put(keys::OUTPUT_FORMAT, output_format());
    put(keys::DATA, data.clone());
    properties
}

/// The verdict alphabet, exactly.
fn verdict() -> Value {
    let names: Vec<&str> = Verdict::ALL
        .iter()
        .map(|verdict| verdict.as_str())
        .collect();
    json!({ "enum": names })
}

/// `output_format`'s values.
fn output_format() -> Value {
    let names: Vec<Value> = OutputFormat::ALL
        .iter()
        .filter_map(|format| serde_json::to_value(format).ok())
        .collect();
    json!({ "enum": names })
}

/// `agent_summary`: the triage block; tools add members of their own.
fn agent_summary() -> Value {
    json!({
        "type": "object",
        "required": [keys::VERDICT],
        "properties": {
            keys::SUMMARY_LINE: { "type": "string" },
            keys::VERDICT: verdict(),
            keys::NEXT_STEP: { "type": "string" },
        },
    })
}

/// `next_actions`: each followable as given, `tool` with `arguments`.
fn next_actions() -> Value {
    use envelope_core::fields::next_action as field;
    json!({
        "type": "array",
        "items": {
            "type": "object",
            "required": [field::ID, field::TOOL, field::ARGUMENTS],
            "properties": {
                field::ID: { "type": "string" },
                field::TOOL: { "type": "string" },
                field::ARGUMENTS: { "type": "object" },
                field::REASON: { "type": "string" },
            },
        },
    })
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

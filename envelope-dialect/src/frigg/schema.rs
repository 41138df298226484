//! The JSON Schema (draft 2020-12) of a Frigg response: Frigg's own fields closed and typed,
//! the payload's members open beside them (typed where the payload's schema lists them inline).

use envelope_core::Severity;
use envelope_core::fields::envelope;
use envelope_core::limits::MAX_NEXT_ACTIONS;
use serde_json::{Map, Value, json};

use super::RESERVED;

/// Frigg's zero-hit reasons as its contract lists them (the list is open).
pub(super) const ZERO_HIT_REASONS: [&str; 11] = [
    "indexed_search_complete",
    "wrong_repository_possible",
    "path_class_not_indexed",
    "scope_excluded_all_candidates",
    "index_stale_possible",
    "query_looks_like_regex",
    "tool_unavailable",
    "precise_graph_unavailable",
    "no_index_coverage",
    "index_not_ready",
    "query_miss",
];

/// The schema of this dialect's responses, with `data` the payload's schema.
pub(crate) fn schema(data: &Value) -> Value {
    let mut properties = payload_members(data);
    for (key, schema) in own_fields() {
        properties.insert(key.to_owned(), schema);
    }
    json!({
        "title": "Frigg result and recovery response",
        "description": "An object payload's members sit at the top level beside Frigg's fields; \
                        a payload that is not an object, or has a member named like one of \
                        Frigg's fields, is under `data`. A failure is `error_code` with \
                        `retryable`, its structured detail under `data`.",
        "type": "object",
        "properties": properties,
        // The compact recovery grammar has no `retryable`: a failure may leave it out.
        "dependentRequired": { "retryable": ["error_code"] },
        // On success `data` is the payload; on a failure it is the error's own detail.
        "if": { "required": ["error_code"] },
        "then": {},
        "else": { "properties": { "data": data } },
    })
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

/// Every field this dialect writes, with its schema.
fn own_fields() -> [(&'static str, Value); 12] {
    let text = json!({ "type": "string", "minLength": 1 });
    [
        (envelope::COMPLETENESS, completeness()),
        (
            envelope::NEXT_ACTIONS,
            json!({ "type": "array", "maxItems": MAX_NEXT_ACTIONS, "items": next_action() }),
        ),
        ("error_code", text.clone()),
        ("message", json!({ "type": "string" })),
        ("correction_hint", text.clone()),
        ("retryable", json!({ "type": "boolean" })),
        (
            "related_tools",
            json!({ "type": "array", "uniqueItems": true, "items": text.clone() }),
        ),
        (
            "zero_hit_reason",
            json!({ "type": "string", "minLength": 1, "examples": ZERO_HIT_REASONS }),
        ),
        (
            "diagnostics",
            json!({ "type": "array", "items": diagnostic() }),
        ),
        (
            "notes",
            json!({ "type": "array", "items": { "type": "string" } }),
        ),
        ("runtime", json!({ "type": "object" })),
        (envelope::DATA, Value::Bool(true)),
    ]
}

/// `completeness`, with Frigg's invariants: the schema of the type it is written from.
fn completeness() -> Value {
    crate::typed::inline_schema::<super::wire::Completeness>()
}

/// One of `next_actions`, in Frigg's closed shape: the schema of the type it is written from.
fn next_action() -> Value {
    crate::typed::inline_schema::<super::wire::Action>()
}

/// One entry of `diagnostics`: `{code, severity, message, data?}`.
fn diagnostic() -> Value {
    let severities: Vec<&str> = Severity::ALL.iter().map(|s| s.as_str()).collect();
    json!({
        "type": "object",
        "required": ["code", "severity", "message"],
        "properties": {
            "code": { "type": "string", "minLength": 1 },
            "severity": { "enum": severities },
            "message": { "type": "string" },
            "data": true,
        },
    })
}

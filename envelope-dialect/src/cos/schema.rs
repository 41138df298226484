//! The JSON Schema of the contract's responses: the success shape with its `data.meta`
//! diagnostics block, and the exact error shape.

use envelope_core::fields::{completeness, envelope as field, next_action};
use envelope_core::{Severity, Verdict, meta_keys};
use serde_json::{Map, Value, json};

use super::key;

/// The layers the contract names for `data.meta.layer` (an envelope's layer is any declared
/// name, so they are examples, not an enumeration).
pub(super) const LAYERS: [&str; 9] = [
    "memory", "docs", "tasks", "metrics", "routing", "graph", "health", "learning", "audit",
];

/// The schema of this dialect's responses, with `data` the payload's schema.
pub(crate) fn schema(data: &Value) -> Value {
    json!({
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
    let block = block();
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
/// signals, and any key a tool adds.
fn block() -> Value {
    let count = json!({"type": "integer", "minimum": 0});
    let text = json!({"type": "string"});
    let flag = json!({"type": "boolean"});
    let mut properties = Map::new();
    let mut put = |name: &str, schema: Value| {
        properties.insert(name.to_owned(), schema);
    };
    put(key::LAYER, json!({"type": "string", "examples": LAYERS}));
    put(key::TOKENS_ESTIMATED, count.clone());
    put(key::TRUNCATED, flag.clone());
    put(
        meta_keys::TRUNCATED_STRING_FIELDS,
        json!({"type": "array", "items": text}),
    );
    put(
        &meta_keys::buckets("edges_by_type"),
        json!({"type": "object", "additionalProperties": from_to(&count)}),
    );
    put(meta_keys::TRUNCATED_SUBGRAPH, flag.clone());
    put(meta_keys::ENVELOPE_UNSHRINKABLE, flag);
    put(
        field::VERDICT,
        json!({"enum": names(Verdict::ALL, |v| v.as_str())}),
    );
    put(field::SUMMARY_LINE, text.clone());
    put(field::NEXT_STEP, text.clone());
    put(field::COMPLETENESS, completeness_schema(&count));
    put(field::EMPTY_REASON, text.clone());
    put(field::DIAGNOSIS, text);
    put(field::NEXT_ACTIONS, list(next_action_schema()));
    put(field::WARNINGS, list(notice()));
    put(field::DIAGNOSTICS, list(notice()));
    put(
        meta_keys::BINARY_DRIFT_WARNING,
        json!({"type": "object", "required": ["stored_version", "running_version"]}),
    );
    put(meta_keys::ATTACHMENTS, list(json!({"type": "object"})));
    json!({
        "type": "object",
        "required": [key::TOKENS_ESTIMATED, key::TRUNCATED],
        "properties": properties,
        "patternProperties": {"^truncated_.+_(from|to)$": count},
    })
}

/// `{from, to}` counts of one cut.
fn from_to(count: &Value) -> Value {
    json!({
        "type": "object",
        "required": ["from", "to"],
        "properties": {"from": count, "to": count},
    })
}

/// A non-empty list of `items`.
fn list(items: Value) -> Value {
    json!({"type": "array", "minItems": 1, "items": items})
}

/// The envelope's `completeness`, carried as it is.
fn completeness_schema(count: &Value) -> Value {
    let names = json!({"type": "array", "items": {"type": "string"}});
    json!({
        "type": "object",
        "required": [completeness::UNIT, completeness::RETURNED, completeness::COMPLETE, completeness::TRUNCATED],
        "properties": {
            (completeness::UNIT): {"type": "string"},
            (completeness::RETURNED): count,
            (completeness::OFFSET): count,
            (completeness::TOTAL): count,
            (completeness::COMPLETE): {"type": "boolean"},
            (completeness::TRUNCATED): {"type": "boolean"},
            (completeness::TRUNCATION_REASONS): names,
            (completeness::INCOMPLETE_REASONS): names,
            (completeness::SHORTENED): names,
        },
    })
}

/// One of the envelope's next actions: called with `tool` and `arguments` exactly as given.
fn next_action_schema() -> Value {
    json!({
        "type": "object",
        "required": [next_action::TOOL, next_action::ARGUMENTS],
        "properties": {
            (next_action::ID): {"type": "string"},
            (next_action::ROLE): {"type": "string"},
            (next_action::ORDER): {"type": "integer", "minimum": 0},
            (next_action::TOOL): {"type": "string"},
            (next_action::ARGUMENTS): {"type": "object"},
            (next_action::REASON): {"type": "string"},
        },
    })
}

/// One of the envelope's warnings or diagnostics.
fn notice() -> Value {
    json!({
        "type": "object",
        "properties": {
            "code": {"type": "string"},
            "severity": {"enum": names(Severity::ALL, |s| s.as_str())},
            "message": {"type": "string"},
        },
    })
}

/// `{"ok": false, "error": {category, retryable, message}}`, nothing more: the schema of the
/// type the failure is written and read back through.
fn failure() -> Value {
    crate::typed::inline_schema::<super::wire::Failure>()
}

/// The wire names of a vocabulary.
fn names<T: Copy>(all: &[T], name: impl Fn(T) -> &'static str) -> Vec<&'static str> {
    all.iter().map(|item| name(*item)).collect()
}

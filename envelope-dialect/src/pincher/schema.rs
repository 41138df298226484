//! The JSON Schema of pincher's responses: the contract's anatomy, field by field.
//!
//! It describes every response the contract allows, not only what this dialect writes: the
//! fields an envelope cannot fill (`project_id`, the legacy `warnings` strings, …) are typed
//! too, so that a pincher server's own answers validate. `_meta` stays open, since the contract
//! makes new fields pure additions.

use serde_json::{Value, json};

/// A ULID: 26 characters of Crockford's base32.
const ULID_PATTERN: &str = "^[0-9A-HJKMNP-TV-Z]{26}$";

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

/// `_meta`.
fn meta() -> Value {
    json!({
        "type": "object",
        "properties": {
            "request_id": {
                "description": "The response's ULID; the join key between host logs, server logs and traces.",
                "type": "string",
                "pattern": ULID_PATTERN,
            },
            "tokens_used": {
                "description": "The response payload (`result`) in tokens.",
                "type": "integer",
                "minimum": 0,
            },
            "tokens_saved": {
                "description": "The baseline's tokens minus `tokens_used`; negative when the call cost more than the baseline.",
                "type": "integer",
            },
            "tokens_saved_pct": {
                "description": "`tokens_saved` as a percentage of the baseline.",
                "type": "number",
            },
            "baseline_method": {
                "description": "What the agent would have done without this tool, such as `full_file_read` or `grep_recursive`.",
                "type": "string",
            },
            "complexity_tier": {
                "description": "The tool's declared tier.",
                "enum": ["lite", "standard", "heavy"],
            },
            "latency_ms": {
                "description": "Server-measured time, network excluded.",
                "type": "integer",
                "minimum": 0,
            },
            "empty_reason": {
                "description": "Why the result is empty. Open enum: default-branch on a value you do not know.",
                "type": "string",
            },
            "diagnosis": {
                "description": "Prose about an empty, partial or failed result.",
                "type": "string",
            },
            "diagnosis_v2": notices("What went wrong specifically; on a failed call the first entry, severity `error`, is the error."),
            "next_steps": next_steps(),
            "warnings": {
                "description": "Legacy warnings as strings (one release cycle beside `warnings_v2`).",
                "type": "array",
                "items": {"type": "string"},
            },
            "warnings_v2": notices("Something to flag about this response: codes `truncated`, `incomplete` and `verdict` among them."),
            "capabilities": {
                "description": "Stable tags of what the running server supports; read the list and branch.",
                "type": "array",
                "items": {"type": "string"},
            },
            "binary_drift_warning": drift(),
            "schema_version": {
                "description": "The index schema version the running server understands.",
                "type": "integer",
            },
            "schema_version_at_index": {
                "description": "The schema version active when the project was last indexed.",
                "type": "integer",
            },
            "project_id": {"type": "string"},
            "project_name": {"type": "string"},
            "session_id": {"type": "string"},
        },
        "additionalProperties": true,
    })
}

/// `warnings_v2` / `diagnosis_v2`: the frozen `{code, severity, message, data}` entries.
fn notices(description: &str) -> Value {
    json!({
        "description": description,
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "code": {"type": "string", "minLength": 1},
                "severity": {"enum": ["info", "warning", "error"]},
                "message": {"type": "string"},
                "data": {"description": "Per-code payload."},
            },
            "required": ["code", "severity", "message"],
        },
    })
}

/// `next_steps`: calls to make, `args` passed through as given.
fn next_steps() -> Value {
    json!({
        "description": "Concrete next calls, in order: call `tool` with `args` exactly as given.",
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "tool": {"type": "string", "minLength": 1},
                "args": {"type": "object"},
                "why": {"type": "string"},
            },
            "required": ["tool", "args"],
        },
    })
}

/// `binary_drift_warning`: null, or the versions that drifted.
fn drift() -> Value {
    json!({
        "description": "Non-null when the stored data is newer than the running binary understands.",
        "oneOf": [
            {"type": "null"},
            {
                "type": "object",
                "properties": {
                    "stored_version": {"type": "integer"},
                    "running_version": {"type": "integer"},
                    "remediation": {"type": "string"},
                },
                "required": ["stored_version", "running_version"],
            },
        ],
    })
}

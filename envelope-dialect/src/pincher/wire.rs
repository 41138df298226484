//! pincher's response as types: `{result, _meta}` and every `_meta` field the contract names,
//! written ([`meta`](super::meta)) and described ([`schema`](super::schema)) from this one
//! definition. `_meta` stays open: the contract makes new fields pure additions.

use envelope_core::{BinaryDrift, Severity, Tier};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// A ULID: 26 characters of Crockford's base32.
pub(super) const ULID_PATTERN: &str = "^[0-9A-HJKMNP-TV-Z]{26}$";

/// One answer: the payload under `result` (null when the call failed, or had nothing to
/// return), everything else under `_meta`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Response {
    /// The payload; null on a failure. In every answer the contract shows (its host loop reads
    /// it from each); an older answer without it reads as null.
    #[serde(default)]
    pub(super) result: Value,
    /// Everything else.
    #[serde(rename = "_meta")]
    pub(super) meta: Meta,
}

impl Response {
    /// The error of a failed answer: its `result` null and its first `diagnosis_v2` entry the
    /// error (severity `error`, with `data.category`), as a failure is written. `None` for a
    /// success.
    pub(super) fn failure(&self) -> Option<&Entry> {
        if !self.result.is_null() {
            return None;
        }
        self.meta
            .diagnosis_v2
            .first()
            .filter(|entry| entry.is_error())
    }
}

/// The `_meta` block. A missing field means "not applicable to this call", never 0, false or
/// empty: every field is left out when the call has nothing to say in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Meta {
    /// The response's ULID; the join key between host logs, server logs and traces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", regex(pattern = ULID_PATTERN))]
    pub(super) request_id: Option<String>,
    /// The response payload (`result`) in tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub(super) tokens_used: Option<u64>,
    /// The baseline's tokens minus `tokens_used`; negative when the call cost more than the
    /// baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i64")]
    pub(super) tokens_saved: Option<i64>,
    /// `tokens_saved` as a percentage of the baseline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "f64")]
    pub(super) tokens_saved_pct: Option<f64>,
    /// What the agent would have done without this tool, such as `full_file_read` or
    /// `grep_recursive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) baseline_method: Option<String>,
    /// The tool's declared tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Tier")]
    pub(super) complexity_tier: Option<Tier>,
    /// Server-measured time, network excluded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub(super) latency_ms: Option<u64>,
    /// Why the result is empty. Open enum: default-branch on a value you do not know.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) empty_reason: Option<String>,
    /// Prose about an empty, partial or failed result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) diagnosis: Option<String>,
    /// What went wrong specifically; on a failed call the first entry, severity `error`, is
    /// the error.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) diagnosis_v2: Vec<Entry>,
    /// Concrete next calls, in order: call `tool` with `args` exactly as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) next_steps: Vec<Step>,
    /// Legacy warnings as strings (one release cycle beside `warnings_v2`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) warnings: Vec<String>,
    /// Something to flag about this response: codes `truncated`, `incomplete` and `verdict`
    /// among them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) warnings_v2: Vec<Entry>,
    /// Stable tags of what the running server supports; read the list and branch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub(super) capabilities: Option<Vec<String>>,
    /// Non-null when the stored data is newer than the running binary understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<BinaryDrift>")]
    pub(super) binary_drift_warning: Option<BinaryDrift>,
    /// The index schema version the running server understands.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i64")]
    pub(super) schema_version: Option<i64>,
    /// The schema version active when the project was last indexed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "i64")]
    pub(super) schema_version_at_index: Option<i64>,
    /// The project's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) project_id: Option<String>,
    /// The project's name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) project_name: Option<String>,
    /// The session's id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) session_id: Option<String>,
    /// Fields a newer contract adds: pure additions, kept as they are.
    #[serde(flatten)]
    pub(super) added: Map<String, Value>,
}

/// One `warnings_v2` or `diagnosis_v2` entry: the frozen `{code, severity, message, data}`
/// shape (sibling keys may be added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Entry {
    /// Stable, machine-actionable.
    #[schemars(length(min = 1))]
    pub(super) code: String,
    /// Aligned with MCP's `notifications/message` levels.
    pub(super) severity: Severity,
    /// Human-readable text.
    pub(super) message: String,
    /// Per-code payload, left out when the code has none (as the contract's own anatomy
    /// writes such an entry).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) data: Option<Value>,
}

impl Entry {
    /// Whether the entry is a failed call's error: severity `error`, its data naming a
    /// category.
    pub(super) fn is_error(&self) -> bool {
        self.severity == Severity::Error
            && self
                .data
                .as_ref()
                .and_then(|data| data.get(envelope_core::fields::error::CATEGORY))
                .is_some_and(Value::is_string)
    }
}

/// One `next_steps` entry: a call to make, `args` passed through as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Step {
    /// A tool the server serves.
    #[schemars(length(min = 1))]
    pub(super) tool: String,
    /// The arguments, exactly as given.
    pub(super) args: Map<String, Value>,
    /// Why, for logs and debugging.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) why: Option<String>,
}

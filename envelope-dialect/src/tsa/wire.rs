//! The contract's answer as a type: the fields tree-sitter-analyzer's agent envelope defines,
//! typed, and everything an answer writes beside them (the honest-truncation counts whose names
//! depend on the unit, the trimmer's markers, an object payload's members) in one open map.
//! Written ([`render`](super::render)), read back ([`view`](super::view)) and described
//! ([`schema`](super::schema)) from this one definition.

use envelope_core::Verdict;
use envelope_core::stage::OutputFormat;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One answer. The top level is open, as the contract's is; what the type pins is the
/// contract's own fields and its invariants: `success` always (and `verdict`, which readers
/// take when present); `error` iff
/// `success` is false; verdict `ERROR` iff it failed; `format` and `toon_content` together.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend(
    "allOf" = [{
        "if": { "properties": { "success": { "const": false } } },
        "then": {
            "required": ["error"],
            "properties": { "verdict": { "const": "ERROR" } }
        },
        "else": {
            "not": { "required": ["error"] },
            "properties": { "verdict": { "not": { "const": "ERROR" } } }
        }
    }],
    "dependentRequired" = { "format": ["toon_content"], "toon_content": ["format"] }
))]
pub(super) struct Answer {
    /// Whether the tool ran end to end (a missing target included: `NOT_FOUND`).
    pub(super) success: bool,
    /// One of the eight canonical verdicts: `ERROR` exactly when `success` is false. Always
    /// written; the contract's readers take it "when present".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Verdict")]
    pub(super) verdict: Option<Verdict>,
    /// The one-line triage signal, mirrored from `agent_summary`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) summary_line: Option<String>,
    /// One concrete recommended next action, with the real numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) next_step: Option<String>,
    /// The triage block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "AgentSummary")]
    pub(super) agent_summary: Option<AgentSummary>,
    /// The failure's message: present iff `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) error: Option<String>,
    /// The failure's (or missing target's) machine-stable kind: its code, else its category.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) error_type: Option<String>,
    /// How to recover from the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) hint: Option<String>,
    /// Whether the same call may succeed as it is (an open key: the contract has no retry
    /// field, and an agent must not lose it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub(super) retryable: Option<bool>,
    /// How long to wait before retrying (an open key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub(super) retry_after_ms: Option<u64>,
    /// `"<code>: <message>"` lines for everything the answer flags.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) warnings: Vec<String>,
    /// True iff anything was omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub(super) truncated: Option<bool>,
    /// The cap that was applied to the listed rows, which the listed count equals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "u64")]
    pub(super) listed_cap: Option<u64>,
    /// The envelope's followable actions, unchanged (an open key).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) next_actions: Vec<Action>,
    /// `toon` when the answer is in `toon_content`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Format")]
    pub(super) format: Option<Format>,
    /// The whole answer, TOON-encoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) toon_content: Option<String>,
    /// The echo of the format the call asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "OutputFormat")]
    pub(super) output_format: Option<OutputFormat>,
    /// The payload whole, when it is not an object or cannot be flattened (`null` included).
    #[serde(
        default,
        deserialize_with = "crate::typed::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Value")]
    pub(super) data: Option<Value>,
    /// `<unit>_count`, `<unit plural>_listed`, `<unit plural>_offset`, the trimmer's
    /// `truncated_*` markers, and an object payload's members.
    #[serde(flatten)]
    pub(super) beside: Map<String, Value>,
}

impl Answer {
    /// An answer with only its two constant fields.
    pub(super) fn new(success: bool, verdict: Verdict) -> Self {
        Answer {
            success,
            verdict: Some(verdict),
            summary_line: None,
            next_step: None,
            agent_summary: None,
            error: None,
            error_type: None,
            hint: None,
            retryable: None,
            retry_after_ms: None,
            warnings: Vec::new(),
            truncated: None,
            listed_cap: None,
            next_actions: Vec::new(),
            format: None,
            toon_content: None,
            output_format: None,
            data: None,
            beside: Map::new(),
        }
    }

    /// The answer as its JSON object.
    pub(super) fn into_object(self) -> Map<String, Value> {
        match serde_json::to_value(self) {
            Ok(Value::Object(object)) => object,
            // A struct of strings, numbers and JSON values always serializes to an object.
            _ => Map::new(),
        }
    }
}

/// `agent_summary`: the triage block (tools add members of their own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct AgentSummary {
    /// The one-line triage signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) summary_line: Option<String>,
    /// The answer's verdict.
    pub(super) verdict: Verdict,
    /// The recommended next action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) next_step: Option<String>,
    /// A tool's own members.
    #[serde(flatten)]
    pub(super) more: Map<String, Value>,
}

/// One of `next_actions`: followable as given, `tool` with `arguments` (the envelope's other
/// members, `reason` among them, as they are).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Action {
    /// The action's id.
    pub(super) id: String,
    /// The tool to call.
    pub(super) tool: String,
    /// Its arguments, to pass exactly as given.
    pub(super) arguments: Map<String, Value>,
    /// Why, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) reason: Option<String>,
    /// The envelope's other members.
    #[serde(flatten)]
    pub(super) more: Map<String, Value>,
}

/// `format`: the one value it has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(super) enum Format {
    /// The answer is TOON, in `toon_content`.
    #[serde(rename = "toon")]
    Toon,
}

//! The contract's shapes as types: the failure `{"ok": false, "error": {category, retryable,
//! message}}` and a success's diagnostics block `data.meta`, each written, read back
//! ([`view`](super::view)) and described ([`schema`](super::schema)) from one definition.

use std::collections::BTreeMap;

use envelope_core::{BinaryDrift, Category, Completeness, Notice, Verdict};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::typed::Flag;

/// The layers the contract names for `data.meta.layer` (an envelope's layer is any declared
/// name, so they are examples, not an enumeration).
const LAYERS: [&str; 9] = [
    "memory", "docs", "tasks", "metrics", "routing", "graph", "health", "learning", "audit",
];

/// A failed call, exactly: `ok: false` and the error, nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Failure {
    /// `false`: the call failed.
    pub(super) ok: Flag<false>,
    /// What failed, for the agent to pick retry, escalate or surface.
    pub(super) error: FailureError,
}

/// `error`: exactly the category, whether a retry can help, and the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FailureError {
    /// What kind of failure: the recovery an agent picks.
    pub(super) category: Category,
    /// Whether a retry can help: the category's default unless the tool said otherwise.
    pub(super) retryable: bool,
    /// What went wrong, in operator English.
    pub(super) message: String,
}

/// The diagnostics block `data.meta` of a success: the contract's stamps, the trimmer's
/// markers, the envelope's agent-facing signals the contract has no field for (under the
/// envelope's names), and any key a tool adds. Written ([`block`](super::block)), read back
/// ([`view`](super::view)) and described ([`schema`](super::schema)) from this one definition.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(extend("patternProperties" = {
    "^truncated_.+_(from|to)$": { "type": "integer", "minimum": 0 }
}))]
pub(super) struct Block {
    /// Which retrieval layer answered (the contract's layers are examples: an envelope's layer
    /// is any declared name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", extend("examples" = LAYERS))]
    pub(super) layer: Option<String>,
    /// The token count of the whole response, itself included.
    pub(super) tokens_estimated: u64,
    /// Whether the budget shrank the body: the trimmer cut, or the budget ended the page.
    pub(super) truncated: bool,
    /// JSON pointers of the strings the trimmer shortened.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Vec<String>")]
    pub(super) truncated_string_fields: Option<Vec<String>>,
    /// The `edges_by_type` buckets the trimmer capped, kind by kind.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BTreeMap<String, FromTo>")]
    pub(super) truncated_edges_by_type: Option<BTreeMap<String, FromTo>>,
    /// Whether the trimmer cut a subgraph.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub(super) truncated_subgraph: Option<bool>,
    /// The answer is over the budget and could not be cut further.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub(super) envelope_unshrinkable: Option<bool>,
    /// A verdict that says more than `ok: true` (any but `INFO`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Verdict")]
    pub(super) verdict: Option<Verdict>,
    /// The one-line triage signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) summary_line: Option<String>,
    /// What to do next, with the real numbers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) next_step: Option<String>,
    /// How complete the answer is: the envelope's, as it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Completeness")]
    pub(super) completeness: Option<Completeness>,
    /// Why the result is empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) empty_reason: Option<String>,
    /// What the empty result means, in a sentence.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) diagnosis: Option<String>,
    /// What to call next, each followable verbatim.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub(super) next_actions: Vec<Action>,
    /// What to flag about this response.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub(super) warnings: Vec<Notice>,
    /// What went wrong, specifically.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub(super) diagnostics: Vec<Notice>,
    /// The stored data was written by a newer version than the one running.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "BinaryDrift")]
    pub(super) binary_drift_warning: Option<BinaryDrift>,
    /// The media attached beside the answer, and whether each was sent.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(min = 1))]
    pub(super) attachments: Vec<Map<String, Value>>,
    /// The trimmer's other markers (`truncated_<key>_from`/`_to`, nested lists and buckets),
    /// and the keys a tool adds.
    #[serde(flatten)]
    pub(super) more: Map<String, Value>,
}

/// One cut's counts: the length before and after.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub(super) struct FromTo {
    /// The length before the cut.
    pub(super) from: u64,
    /// The length after it.
    pub(super) to: u64,
}

/// One of `next_actions`: `tool` with `arguments`, to call exactly as given, the envelope's
/// other members (`id`, `role`, `reason`…) as they are.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub(super) struct Action {
    /// The tool to call.
    pub(super) tool: String,
    /// Its arguments, exactly as given.
    pub(super) arguments: Map<String, Value>,
    /// The envelope's other members.
    #[serde(flatten)]
    pub(super) more: Map<String, Value>,
}

//! A Frigg answer as a type: its own fields typed (the executable next action and
//! `completeness` in their closed shapes, the recovery grammar, `diagnostics`, the full mode's
//! `notes` and `runtime`), the rows beside them. Written ([`render`](super::render)), read back
//! ([`view`](super::view)) and described ([`schema`](super::schema)) from this one definition.

use envelope_core::limits::MAX_NEXT_ACTIONS;
use envelope_core::{
    DependencyMode, IncompleteReason, NextAction, Notice, Role, TruncationReason, Unit,
};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Frigg's zero-hit reasons as its contract lists them (the list is open).
const ZERO_HIT_REASONS: [&str; 11] = [
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

/// One answer: size, coverage, trust, identity and recovery in separate fields, an object
/// payload's members (the rows) beside them. A failure is `error_code` (with `message`,
/// `correction_hint`, `retryable`, `related_tools`), its structured detail under `data`; on a
/// success `data` is the payload, when it is not flattened.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
// The compact recovery grammar has no `retryable`: a failure may leave it out, a success has
// none.
#[schemars(extend("dependentRequired" = { "retryable": ["error_code"] }))]
pub(super) struct Answer {
    /// Size and coverage, Frigg's shape.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Completeness")]
    pub(super) completeness: Option<Completeness>,
    /// What to call next, each executable as given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = MAX_NEXT_ACTIONS))]
    pub(super) next_actions: Vec<Action>,
    /// A failure's code, upper snake case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub(super) error_code: Option<String>,
    /// A failure's message, or an empty result's diagnosis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String")]
    pub(super) message: Option<String>,
    /// How to correct the call, or what to do about an empty result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub(super) correction_hint: Option<String>,
    /// Whether the same call may succeed as it is (failures only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "bool")]
    pub(super) retryable: Option<bool>,
    /// The tools the next actions call, beside a failure or a zero-hit reason.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(extend("uniqueItems" = true, "items" = { "type": "string", "minLength": 1 }))]
    pub(super) related_tools: Vec<String>,
    /// Why a search found nothing (an open list).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1), extend("examples" = ZERO_HIT_REASONS))]
    pub(super) zero_hit_reason: Option<String>,
    /// Index and freshness diagnostics, and every signal without a field of its own.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) diagnostics: Vec<Notice>,
    /// The envelope's prose (`response_mode: full`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) notes: Vec<String>,
    /// `meta`'s observability (`response_mode: full`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Map<String, Value>")]
    pub(super) runtime: Option<Map<String, Value>>,
    /// The payload whole when it is not flattened; a failure's structured detail.
    #[serde(
        default,
        deserialize_with = "crate::typed::present",
        skip_serializing_if = "Option::is_none"
    )]
    #[schemars(with = "Value")]
    pub(super) data: Option<Value>,
    /// The rows: an object payload's members, none named like a field above.
    #[serde(flatten)]
    pub(super) rows: Map<String, Value>,
}

impl Answer {
    /// The answer as its JSON value.
    pub(super) fn to_value(&self) -> Value {
        // A struct of strings, numbers and JSON values always serializes.
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

/// One of `next_actions`: every member written, the envelope's omitted defaults spelt out
/// (`order` 0, no `dependencies`). The client invokes it through normal MCP authorization;
/// nothing executes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Action {
    /// Unique among the response's actions.
    #[schemars(length(min = 1))]
    pub(super) id: String,
    /// What the action is for.
    pub(super) role: Role,
    /// Its stage: an action depends only on actions of a lower order.
    pub(super) order: u16,
    /// Groups of earlier actions that must run first.
    pub(super) dependencies: Vec<Group>,
    /// A public tool of the live surface.
    #[schemars(length(min = 1))]
    pub(super) tool: String,
    /// Schema-valid arguments, to pass exactly as given.
    pub(super) arguments: Map<String, Value>,
    /// Why, in a sentence.
    #[schemars(length(min = 1))]
    pub(super) reason: String,
}

/// A dependency group: `all` or `any` of earlier action ids.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Group {
    /// Whether every action of the group, or any one, must run first.
    pub(super) mode: DependencyMode,
    /// The earlier actions' ids, at least one, none twice.
    #[schemars(length(min = 1), extend("uniqueItems" = true))]
    pub(super) action_ids: Vec<String>,
}

impl From<NextAction> for Action {
    fn from(action: NextAction) -> Self {
        Action {
            id: action.id,
            role: action.role,
            order: action.order,
            dependencies: action
                .dependencies
                .into_iter()
                .map(|dependency| Group {
                    mode: dependency.mode,
                    action_ids: dependency.action_ids,
                })
                .collect(),
            tool: action.tool,
            arguments: action.arguments,
            reason: action.reason,
        }
    }
}

/// Why a deliberate bound left rows out: Frigg's closed list of six. The envelope's seventh,
/// `budget_limit` (the response budget ended the page), is the bound on this page Frigg calls
/// `page_limit`; the `response_budget` diagnostic says it was the budget.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
// The variants are the wire names, which all end in `_limit`.
#[allow(clippy::enum_variant_names)]
pub(super) enum Reason {
    /// The page size was reached (or the response budget ended the page).
    PageLimit,
    /// A per-file cap was reached.
    PerFileLimit,
    /// Only the top K ranked rows were kept.
    TopKLimit,
    /// A cap on one node's children was reached.
    ChildLimit,
    /// A cap applied while merging pages was reached.
    MergePageLimit,
    /// A cap on one node's ancestors was reached.
    AncestorLimit,
}

impl From<TruncationReason> for Reason {
    fn from(reason: TruncationReason) -> Self {
        match reason {
            // Frigg knows one size cap of its own: the page's.
            TruncationReason::PageLimit
            | TruncationReason::BudgetLimit
            | TruncationReason::StoreLimit => Reason::PageLimit,
            TruncationReason::PerFileLimit => Reason::PerFileLimit,
            TruncationReason::TopKLimit => Reason::TopKLimit,
            TruncationReason::ChildLimit => Reason::ChildLimit,
            TruncationReason::MergePageLimit => Reason::MergePageLimit,
            TruncationReason::AncestorLimit => Reason::AncestorLimit,
        }
    }
}

/// `completeness` in Frigg's shape: size and coverage kept apart, both reason lists always
/// written (a client reads both), the next page's token in `continuation`. Frigg's invariants
/// hold: a complete result is neither truncated nor continued (its `total` may still be
/// unknown: "missing means unknown"); a truncated one says why; an untruncated one has no
/// reason and no continuation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("allOf" = [
    {
        "if": { "properties": { "complete": { "const": true } } },
        "then": {
            "properties": { "truncated": { "const": false } },
            "not": { "required": ["continuation"] }
        }
    },
    {
        "if": { "properties": { "truncated": { "const": true } } },
        "then": { "properties": { "truncation_reasons": { "minItems": 1 } } },
        "else": {
            "properties": { "truncation_reasons": { "maxItems": 0 } },
            "not": { "required": ["continuation"] }
        }
    }
]))]
pub(super) struct Completeness {
    /// What one row is.
    pub(super) unit: Unit,
    /// Rows in this page, not a cumulative count.
    pub(super) returned: usize,
    /// Where this page starts: rows earlier pages listed.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub(super) offset: usize,
    /// The exact count, only when proven; missing means unknown, never a lower bound.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "usize")]
    pub(super) total: Option<usize>,
    /// The normalized request is proven exhausted.
    pub(super) complete: bool,
    /// A deliberate bound left out rows that otherwise qualified.
    pub(super) truncated: bool,
    /// Why rows were left out.
    #[schemars(extend("uniqueItems" = true))]
    pub(super) truncation_reasons: Vec<Reason>,
    /// Why coverage cannot be exhaustive (an open list).
    #[schemars(with = "Vec<String>", extend("uniqueItems" = true))]
    pub(super) incomplete_reasons: Vec<IncompleteReason>,
    /// Row fields shown in part.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(super) shortened: Vec<String>,
    /// The opaque next-page token: replay the original request with only this set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "String", length(min = 1))]
    pub(super) continuation: Option<String>,
}

fn is_zero(n: &usize) -> bool {
    *n == 0
}

impl Completeness {
    /// The envelope's completeness in Frigg's shape, with the token the `next-page` action
    /// carries.
    pub(super) fn of(envelope: &envelope_core::Completeness, continuation: Option<&str>) -> Self {
        let parts = envelope.to_parts();
        let mut reasons: Vec<Reason> = parts
            .truncation_reasons
            .into_iter()
            .map(Reason::from)
            .collect();
        // `budget_limit` joins `page_limit`: one bound, written once.
        reasons.sort_unstable();
        reasons.dedup();
        Completeness {
            unit: parts.unit,
            returned: parts.returned,
            offset: parts.offset,
            total: parts.total,
            complete: parts.complete,
            truncated: parts.truncated,
            truncation_reasons: reasons,
            incomplete_reasons: parts.incomplete_reasons,
            shortened: parts.shortened,
            continuation: continuation.map(str::to_owned),
        }
    }
}

//! Frigg's executable next action as a type, in its closed shape: written
//! ([`paging`](super::paging)) and described ([`schema`](super::schema)) from this one
//! definition.

use envelope_core::{DependencyMode, NextAction, Role};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

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

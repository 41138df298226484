//! Executable next actions: concrete calls an agent can schedule, with roles,
//! stages and dependencies, normalized so that what reaches the agent is a closed, small graph.

use std::collections::{HashMap, HashSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::canonical::canonical_json;
use crate::error::CoreError;

/// Whether `order` is the first stage, which the wire leaves out.
fn is_first_stage(order: &u16) -> bool {
    *order == 0
}

/// At most this many actions reach the agent.
pub const MAX_NEXT_ACTIONS: usize = 8;

crate::wire::vocabulary! {
    /// What an action of this role is for.
    fn meaning;
    /// What an action is for. Ties within one `order` stage break by [`Role::priority`].
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Role {
        /// `proof_read`: read the source that proves a result.
        ProofRead = "proof_read": "Read the source that proves a result.",
        /// `verify_exact`: confirm a discovered result with an exact search.
        VerifyExact = "verify_exact": "Confirm a discovered result with an exact search.",
        /// `retry`: repeat a call, possibly corrected.
        Retry = "retry": "Repeat a call, possibly with corrected arguments.",
        /// `resolve_target`: turn a name into an exact identity first.
        ResolveTarget = "resolve_target": "Resolve a name into an exact identity before acting on it.",
        /// `inspect`: look closer at one result.
        Inspect = "inspect": "Look closer at one result.",
        /// `broaden_scope`: widen the query or scope.
        BroadenScope = "broaden_scope": "Widen the query or the scope.",
        /// `diagnose`: find out why the call went wrong.
        Diagnose = "diagnose": "Find out why the call went wrong.",
    }
}

impl Role {
    /// Sort key within one `order` stage; lower comes first: the order of [`Role::ALL`].
    pub const fn priority(self) -> u8 {
        self as u8
    }
}

/// How a dependency group is satisfied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DependencyMode {
    /// `all`: every listed action first.
    All,
    /// `any`: at least one listed action first.
    Any,
}

/// A group of earlier actions (strictly lower `order`) that must run first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Dependency {
    /// `all` or `any`.
    pub mode: DependencyMode,
    /// Ids of earlier actions; non-empty and without repeats.
    pub action_ids: Vec<String>,
}

/// One executable follow-up call.
///
/// Wire shape: `{id, role, order?, dependencies?, tool, arguments, reason}`; `order` 0 is
/// omitted. The agent still invokes it through normal MCP authorization; nothing here executes
/// anything.
///
/// Invariant: an action is followable verbatim. Calling `tool` with `arguments` exactly as
/// given does what `reason` says: a next-page action's arguments carry the page's continuation
/// token, a read action's the target ref it reads. A model copies a call whole; nothing is to
/// be assembled from other fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct NextAction {
    /// Response-local id, unique within the list.
    #[schemars(length(min = 1))]
    pub id: String,
    /// What the action is for.
    pub role: Role,
    /// Stage: actions run in ascending order; dependencies point to lower stages only. 0, the
    /// first stage, is omitted on the wire.
    #[serde(default, skip_serializing_if = "is_first_stage")]
    pub order: u16,
    /// Groups of earlier actions that must run first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<Dependency>,
    /// The tool to call.
    #[schemars(length(min = 1))]
    pub tool: String,
    /// The arguments to call it with, complete: a continuation or a target ref the call needs
    /// is among them.
    pub arguments: Map<String, Value>,
    /// Why, in one sentence.
    #[schemars(length(min = 1))]
    pub reason: String,
}

impl NextAction {
    /// An action calling `tool` with `arguments`, which must serialize to a JSON object.
    pub fn new(
        id: impl Into<String>,
        role: Role,
        order: u16,
        tool: impl Into<String>,
        arguments: impl Serialize,
        reason: impl Into<String>,
    ) -> Result<NextAction, CoreError> {
        NextAction::from_value(
            id.into(),
            role,
            order,
            tool.into(),
            serde_json::to_value(arguments),
            reason.into(),
        )
    }

    /// The action, once its arguments are JSON: they must be an object.
    fn from_value(
        id: String,
        role: Role,
        order: u16,
        tool: String,
        arguments: serde_json::Result<Value>,
        reason: String,
    ) -> Result<NextAction, CoreError> {
        let Ok(Value::Object(arguments)) = arguments else {
            return Err(CoreError::ActionArgumentsNotObject { id });
        };
        Ok(NextAction {
            id,
            role,
            order,
            dependencies: Vec::new(),
            tool,
            arguments,
            reason,
        })
    }

    /// An action calling the tool `T` with arguments of its own type: naming a tool that does
    /// not exist, or passing arguments of another type, fails to compile. `T` is the type
    /// `#[tool]` generates, named like the tool's function.
    ///
    /// ```
    /// use envelope_core::{NextAction, Role, ToolResult, tool};
    ///
    /// #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    /// struct SearchArgs {
    ///     query: String,
    ///     regex: bool,
    /// }
    ///
    /// /// Searches.
    /// #[tool(tier = lite, read_only)]
    /// fn search(args: SearchArgs) -> ToolResult<Vec<String>> {
    ///     Ok(vec![args.query])
    /// }
    ///
    /// let retry = NextAction::call::<search>(
    ///     "retry-regex",
    ///     Role::Retry,
    ///     0,
    ///     SearchArgs { query: "fo+".into(), regex: true },
    ///     "the query looks like a regular expression",
    /// )?;
    /// assert_eq!(retry.tool, "search");
    /// assert_eq!(retry.arguments["regex"], true);
    /// # Ok::<(), envelope_core::CoreError>(())
    /// ```
    pub fn call<T: TypedTool>(
        id: impl Into<String>,
        role: Role,
        order: u16,
        arguments: T::Args,
        reason: impl Into<String>,
    ) -> Result<NextAction, CoreError>
    where
        T::Args: Serialize,
    {
        let arguments = match serde_json::to_value(arguments) {
            // A tool without arguments takes `()`, which is `null`: an empty argument object.
            Ok(Value::Null) => Ok(Value::Object(Map::new())),
            other => other,
        };
        NextAction::from_value(
            id.into(),
            role,
            order,
            T::NAME.into(),
            arguments,
            reason.into(),
        )
    }

    /// Adds a dependency group over earlier actions.
    #[must_use]
    pub fn after<I, S>(mut self, mode: DependencyMode, action_ids: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.dependencies.push(Dependency {
            mode,
            action_ids: action_ids.into_iter().map(Into::into).collect(),
        });
        self
    }

    fn target_key(&self) -> (String, String) {
        (
            self.tool.clone(),
            canonical_json(&Value::Object(self.arguments.clone())),
        )
    }

    /// Whether the action is well-formed against the ids it may depend on (id → order) and
    /// how often each id occurs.
    fn is_valid(&self, orders: &HashMap<&str, u16>, counts: &HashMap<&str, usize>) -> bool {
        let filled = |text: &str| !text.trim().is_empty();
        filled(&self.id)
            && filled(&self.tool)
            && filled(&self.reason)
            && counts.get(self.id.as_str()) == Some(&1)
            && self.dependencies.iter().all(|group| {
                let distinct: HashSet<&String> = group.action_ids.iter().collect();
                !group.action_ids.is_empty()
                    && distinct.len() == group.action_ids.len()
                    && group.action_ids.iter().all(|id| {
                        *id != self.id
                            && orders
                                .get(id.as_str())
                                .is_some_and(|order| *order < self.order)
                    })
            })
    }
}

fn id_tables(actions: &[NextAction]) -> (HashMap<&str, u16>, HashMap<&str, usize>) {
    let mut orders = HashMap::new();
    let mut counts = HashMap::new();
    for action in actions {
        orders.insert(action.id.as_str(), action.order);
        *counts.entry(action.id.as_str()).or_insert(0) += 1;
    }
    (orders, counts)
}

/// Normalizes a list of actions the way the contract requires.
///
/// 1. Sort by `order`, then role priority, then id.
/// 2. Drop every action whose id is empty or occurs more than once (all copies: an ambiguous id
///    cannot be depended on), whose tool or reason is empty, or whose dependency groups are
///    empty, repeat an id, name itself, or name an id that is missing or not at a strictly
///    lower order.
/// 3. Drop an action whose `{tool, arguments}` target equals an earlier one's.
/// 4. Keep the first [`MAX_NEXT_ACTIONS`].
/// 5. Steps 3–4 can remove a prerequisite, so re-check dependencies against what is left,
///    repeating until nothing changes.
///
/// The result is a fixed point: normalizing it again returns it unchanged.
pub fn normalize_next_actions(actions: impl IntoIterator<Item = NextAction>) -> Vec<NextAction> {
    let mut actions: Vec<NextAction> = actions.into_iter().collect();
    actions.sort_by(|a, b| {
        (a.order, a.role.priority(), &a.id).cmp(&(b.order, b.role.priority(), &b.id))
    });

    let valid: Vec<bool> = {
        let (orders, counts) = id_tables(&actions);
        actions
            .iter()
            .map(|action| action.is_valid(&orders, &counts))
            .collect()
    };
    let mut seen_targets = HashSet::new();
    let mut kept: Vec<NextAction> = actions
        .into_iter()
        .zip(valid)
        .filter(|(_, valid)| *valid)
        .map(|(action, _)| action)
        .filter(|action| seen_targets.insert(action.target_key()))
        .take(MAX_NEXT_ACTIONS)
        .collect();

    loop {
        let keep: Vec<bool> = {
            let (orders, counts) = id_tables(&kept);
            kept.iter()
                .map(|action| action.is_valid(&orders, &counts))
                .collect()
        };
        if keep.iter().all(|keep| *keep) {
            return kept;
        }
        let mut flags = keep.into_iter();
        kept.retain(|_| flags.next().unwrap_or(false));
    }
}

/// A tool with a Rust arguments type; `#[tool]` implements it on the descriptor it generates
/// (the type named like the function).
///
/// It lets a response suggest a call to another tool that the compiler checks: with
/// [`NextAction::call`], naming a tool that does not exist, or passing
/// arguments of another type, does not compile.
pub trait TypedTool {
    /// The tool's MCP name: the one place a `#[tool]` says it (its [`ToolSpec::name`](crate::ToolSpec::name) and
    /// [`toolset!`](crate::toolset)'s duplicate check read it here).
    const NAME: &'static str;
    /// What the tool takes: its arguments struct, or `()` for a tool without arguments.
    type Args;
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn action(id: &str, order: u16, query: &str) -> NextAction {
        NextAction::new(
            id,
            Role::VerifyExact,
            order,
            "search_text",
            json!({ "query": query }),
            "verify it",
        )
        .expect("object arguments")
    }

    fn ids(actions: &[NextAction]) -> Vec<&str> {
        actions.iter().map(|a| a.id.as_str()).collect()
    }

    #[test]
    fn sorts_by_order_then_role_priority_then_id() {
        let mut diagnose = action("a", 1, "x");
        diagnose.role = Role::Diagnose;
        let mut proof = action("z", 1, "y");
        proof.role = Role::ProofRead;
        let normalized =
            normalize_next_actions([diagnose, action("b", 0, "w"), proof, action("c", 1, "v")]);
        assert_eq!(ids(&normalized), ["b", "z", "c", "a"]);
    }

    #[test]
    fn an_id_seen_twice_is_invalid_everywhere() {
        let normalized = normalize_next_actions([
            action("dup", 0, "a"),
            action("dup", 1, "b"),
            action("ok", 2, "c"),
        ]);
        assert_eq!(ids(&normalized), ["ok"]);
    }

    #[test]
    fn duplicate_targets_keep_the_first() {
        let normalized =
            normalize_next_actions([action("late", 3, "same"), action("early", 1, "same")]);
        assert_eq!(ids(&normalized), ["early"]);
    }

    #[test]
    fn over_cap_keeps_eight() {
        let normalized =
            normalize_next_actions((0..12).map(|n| action(&format!("a{n:02}"), n, &n.to_string())));
        assert_eq!(normalized.len(), MAX_NEXT_ACTIONS);
        assert_eq!(normalized[7].id, "a07");
    }

    #[test]
    fn invalid_dependencies_are_dropped() {
        let missing = action("missing-dep", 2, "a").after(DependencyMode::All, ["ghost"]);
        let same_stage = action("same-stage", 1, "b").after(DependencyMode::Any, ["root"]);
        let empty_group =
            action("empty-group", 2, "c").after(DependencyMode::All, Vec::<String>::new());
        let repeated = action("repeated", 2, "d").after(DependencyMode::All, ["root", "root"]);
        let itself = action("itself", 2, "e").after(DependencyMode::Any, ["itself"]);
        let good = action("good", 2, "f").after(DependencyMode::All, ["root"]);
        let normalized = normalize_next_actions([
            action("root", 1, "r"),
            missing,
            same_stage,
            empty_group,
            repeated,
            itself,
            good,
        ]);
        assert_eq!(ids(&normalized), ["root", "good"]);
    }

    #[test]
    fn dependents_of_removed_actions_are_removed_to_a_fixed_point() {
        // `root` loses to an earlier duplicate target, so `child` and then `grandchild` must go.
        let normalized = normalize_next_actions([
            action("first", 0, "same"),
            action("root", 1, "same"),
            action("child", 2, "c").after(DependencyMode::All, ["root"]),
            action("grandchild", 3, "g").after(DependencyMode::Any, ["child"]),
            action("other", 4, "o").after(DependencyMode::Any, ["first"]),
        ]);
        assert_eq!(ids(&normalized), ["first", "other"]);
        assert_eq!(normalize_next_actions(normalized.clone()), normalized);
    }

    #[test]
    fn the_cap_can_cut_a_prerequisite() {
        let mut actions: Vec<NextAction> = (0..8)
            .map(|n| action(&format!("a{n}"), 0, &n.to_string()))
            .collect();
        actions.push(action("late-root", 1, "lr"));
        actions.push(action("late-child", 2, "lc").after(DependencyMode::All, ["late-root"]));
        let normalized = normalize_next_actions(actions);
        assert_eq!(normalized.len(), 8);
        assert!(normalized.iter().all(|a| !a.id.starts_with("late")));
    }

    #[test]
    fn normalization_is_a_fixed_point() {
        let input = vec![
            action("b", 2, "b").after(DependencyMode::Any, ["a"]),
            action("a", 1, "a"),
            action("a", 1, "dup"),
            action("c", 3, "c").after(DependencyMode::All, ["b"]),
        ];
        let once = normalize_next_actions(input);
        assert_eq!(normalize_next_actions(once.clone()), once);
    }

    #[test]
    fn blank_fields_are_invalid() {
        let mut blank_reason = action("r", 0, "x");
        blank_reason.reason = "  ".into();
        let mut blank_tool = action("t", 0, "y");
        blank_tool.tool = String::new();
        assert!(normalize_next_actions([blank_reason, blank_tool, action(" ", 0, "z")]).is_empty());
    }

    #[test]
    fn arguments_must_be_an_object() {
        assert_eq!(
            NextAction::new("x", Role::Retry, 0, "t", json!([1, 2]), "why"),
            Err(CoreError::ActionArgumentsNotObject { id: "x".into() })
        );
    }

    #[test]
    fn wire_shape_is_flat() {
        let wire = serde_json::to_value(action("verify-exact-1", 20, "FriggMcpServer"))
            .expect("serializes");
        assert_eq!(
            wire,
            json!({
                "id": "verify-exact-1", "role": "verify_exact", "order": 20, "tool": "search_text",
                "arguments": {"query": "FriggMcpServer"}, "reason": "verify it"
            })
        );
    }
}

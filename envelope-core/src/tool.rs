//! The `Tool` trait that `#[tool]` implements, and the `Toolset` a transport serves.

use std::collections::BTreeMap;

use schemars::Schema;
use serde_json::Value;

use crate::context::ToolContext;
use crate::error::CoreError;
use crate::output::ToolOutput;
use crate::tier::Tier;

use crate::future::BoxFuture;

/// What a tool declares about itself; `#[tool(...)]` fills it from its arguments.
///
/// Invariants (checked by `#[tool]` at compile time): `name` fits MCP's rules, `description`
/// is non-empty, `read_only` excludes `destructive` and implies `idempotent`, `scopes` are
/// distinct valid scope names.
///
/// The four behaviour hints are `None` unless the author declared them, and a transport lists
/// only the declared ones. MCP's defaults for an undeclared hint are the cautious ones
/// (`destructiveHint: true`, `openWorldHint: true`), so an undeclared hint never advertises more
/// safety than the author claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolSpec {
    /// The registered name: 1–128 of `A–Z a–z 0–9 _ - .`.
    pub name: &'static str,
    /// The doc comment.
    pub description: &'static str,
    /// A human-readable title.
    pub title: Option<&'static str>,
    /// The declared complexity tier.
    pub tier: Tier,
    /// Does not change its environment (MCP `readOnlyHint`); `None` when undeclared.
    pub read_only: Option<bool>,
    /// Repeating the call with the same arguments has no further effect (MCP `idempotentHint`);
    /// `Some(true)` for a `read_only` tool, `None` when undeclared.
    pub idempotent: Option<bool>,
    /// May destroy data (MCP `destructiveHint`); `None` when undeclared.
    pub destructive: Option<bool>,
    /// Talks to an open world of external entities (MCP `openWorldHint`); `None` when
    /// undeclared.
    pub open_world: Option<bool>,
    /// The layer that answers, stamped as `meta.layer`.
    pub layer: Option<&'static str>,
    /// The module that gates the tool; a disabled module answers `module_disabled`.
    pub module: Option<&'static str>,
    /// The tool's own response budget in characters, overriding the server's.
    pub budget: Option<usize>,
    /// Unknown arguments are a `validation` error instead of an `unknown_arg` warning.
    pub strict_args: bool,
    /// The OAuth scopes a caller's access token must grant, all of them, for the call to run
    /// (RFC 6749 scope-tokens: printable ASCII without spaces, quotes or backslashes); empty
    /// for a tool anyone may call. Listed with the tool; enforced when the transport
    /// authenticated the caller (see [`Caller`](crate::Caller)).
    pub scopes: &'static [&'static str],
}

impl ToolSpec {
    /// Whether repeating the call is known to be safe: declared `idempotent` or `read_only`.
    /// Stamped as `meta.idempotent`; an undeclared tool is not known to be, so `false`.
    pub fn is_idempotent(&self) -> bool {
        self.idempotent.unwrap_or(self.read_only == Some(true))
    }
}

/// A callable tool: its declaration, its input schema, and an entry that always answers with
/// an envelope. `#[tool]` implements it; so can a hand-written type.
pub trait Tool: Send + Sync {
    /// The declaration.
    fn spec(&self) -> &'static ToolSpec;

    /// The JSON Schema of the arguments, per-call controls included.
    fn input_schema(&self) -> Schema;

    /// The JSON Schema of what the tool answers: the envelope, ok and error shapes alike, with
    /// `data` typed where the tool knows its payload (see
    /// [`output_schema_for`](crate::schema::output_schema_for)). By default, any JSON payload.
    fn output_schema(&self) -> Schema {
        crate::schema::output_schema_for::<Value>()
    }

    /// The names of the arguments the tool declares itself, the per-call controls aside: a
    /// server's door splits a call's controls from its arguments by them, once per call, and
    /// reads them once per server. `None` (the default) when they cannot be listed: every key
    /// is then the tool's, but the controls, which the door takes off.
    fn declared_arguments(&self) -> Option<Vec<String>> {
        None
    }

    /// Runs the tool. Never panics and never fails: every outcome, a panic included, is an
    /// envelope, returned beside what the budget stage needs to know of it (a hand-written
    /// tool returns `ToolOutput::from(envelope)`).
    fn call(&self, arguments: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// The tools one server serves, by name. Names are unique.
///
/// Build it with [`toolset!`](crate::toolset), which refuses two tools of one name at compile
/// time, or with [`Toolset::new`], which refuses them at run time.
pub struct Toolset {
    tools: BTreeMap<&'static str, Box<dyn Tool>>,
}

impl Toolset {
    /// A toolset of `tools`; two tools with one name are an error.
    pub fn new(tools: Vec<Box<dyn Tool>>) -> Result<Toolset, CoreError> {
        let mut by_name = BTreeMap::new();
        for tool in tools {
            let name = tool.spec().name;
            if by_name.insert(name, tool).is_some() {
                return Err(CoreError::DuplicateTool(name.to_owned()));
            }
        }
        Ok(Toolset { tools: by_name })
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.get(name).map(|tool| &**tool)
    }

    /// Every tool, by name.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Tool> {
        self.tools.values().map(|tool| &**tool)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.tools.keys().copied()
    }

    /// How many tools there are.
    pub fn len(&self) -> usize {
        self.tools.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.tools.is_empty()
    }
}

impl std::fmt::Debug for Toolset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.tools.keys()).finish()
    }
}

/// Builds a [`Toolset`] from `#[tool]` functions, failing to compile when two share a name.
///
/// ```
/// use envelope_core::{tool, toolset, ToolResult};
///
/// /// Say hello.
/// #[tool(tier = lite, read_only)]
/// fn hello() -> ToolResult<&'static str> {
///     Ok("hello")
/// }
///
/// /// Say goodbye.
/// #[tool(tier = lite, read_only)]
/// fn goodbye() -> ToolResult<&'static str> {
///     Ok("goodbye")
/// }
///
/// let tools = toolset![hello, goodbye];
/// assert_eq!(tools.names().collect::<Vec<_>>(), ["goodbye", "hello"]);
/// ```
#[macro_export]
macro_rules! toolset {
    ($($tool:path),* $(,)?) => {{
        const _: () = if let ::core::option::Option::Some(message) =
            $crate::__private::name_clash(&[
                $(<$tool as $crate::TypedTool>::NAME),*
            ])
            .message()
        {
            ::core::panic!("{}", message)
        };
        $crate::__private::toolset_of(::std::vec![
            $(::std::boxed::Box::new(<$tool as ::core::default::Default>::default())
                as ::std::boxed::Box<dyn $crate::Tool>),*
        ])
    }};
}

//! The `Tool` trait that `#[tool]` implements, and the `Toolset` a transport serves.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use schemars::Schema;
use serde_json::Value;

use crate::context::ToolContext;
use crate::control_names::ControlNames;
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
///
/// Its text is [`SpecText`]: written into the program (what `#[tool]` declares, borrowed), or
/// learned at run time (owned), as a tool a server fronts for another one is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolSpec {
    /// The registered name: 1–128 of `A–Z a–z 0–9 _ - .`.
    pub name: SpecText,
    /// The doc comment.
    pub description: SpecText,
    /// A human-readable title.
    pub title: Option<SpecText>,
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
    pub layer: Option<SpecText>,
    /// The module that gates the tool; a disabled module answers `module_disabled`.
    pub module: Option<SpecText>,
    /// The tool's own response budget in characters, overriding the server's.
    pub budget: Option<usize>,
    /// Unknown arguments are a `validation` error instead of an `unknown_arg` warning.
    pub strict_args: bool,
    /// The body runs on tokio's blocking pool (`#[tool(blocking)]`): it holds a thread while it
    /// works, so a server bounds how many calls of it run at once (the rest wait their turn).
    pub blocking: bool,
    /// The OAuth scopes a caller's access token must grant, all of them, for the call to run
    /// (RFC 6749 scope-tokens: printable ASCII without spaces, quotes or backslashes); empty
    /// for a tool anyone may call. Listed with the tool; enforced when the transport
    /// authenticated the caller (see [`Caller`](crate::Caller)).
    pub scopes: Cow<'static, [SpecText]>,
    /// The names its per-call controls are read and offered under: their own
    /// ([`ControlNames::STANDARD`]), unless its arguments use one (a tool built at run time for
    /// another server may), where that control is renamed ([`ControlNames::avoiding`]).
    pub controls: ControlNames,
}

/// Text in a [`ToolSpec`]: `'static` when written into the program, owned when learned at run
/// time.
pub type SpecText = Cow<'static, str>;

impl ToolSpec {
    /// The spec of a tool named `name`, described by `description`, of `tier`, declaring
    /// nothing else: no hints, layer, module, budget or scopes, unknown arguments warned of.
    /// For a tool built at run time; [`validate`](Self::validate) checks what it was given.
    ///
    /// ```
    /// use envelope_core::{Tier, ToolSpec};
    ///
    /// let mut spec = ToolSpec::new(String::from("upstream.fetch"), "Fetches a URL.", Tier::Standard);
    /// spec.read_only = Some(true);
    /// assert!(spec.validate().is_ok());
    /// assert!(ToolSpec::new("has space", "x", Tier::Lite).validate().is_err());
    /// ```
    pub fn new(
        name: impl Into<SpecText>,
        description: impl Into<SpecText>,
        tier: Tier,
    ) -> ToolSpec {
        ToolSpec {
            name: name.into(),
            description: description.into(),
            title: None,
            tier,
            read_only: None,
            idempotent: None,
            destructive: None,
            open_world: None,
            layer: None,
            module: None,
            budget: None,
            strict_args: false,
            blocking: false,
            scopes: Cow::Borrowed(&[]),
            controls: ControlNames::STANDARD,
        }
    }

    /// Checks the invariants `#[tool]` proves at compile time, for a spec made at run time:
    /// the name fits MCP's rules, the description says something, `read_only` excludes
    /// `destructive`, and each scope is a distinct RFC 6749 scope-token.
    pub fn validate(&self) -> Result<(), CoreError> {
        let refuse = |reason: &str| {
            Err(CoreError::InvalidToolSpec {
                tool: self.name.chars().take(128).collect(),
                reason: reason.to_owned(),
            })
        };
        let name_char = |c: char| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.');
        if self.name.is_empty() || self.name.len() > 128 || !self.name.chars().all(name_char) {
            return refuse("a name is 1 to 128 of `A-Z a-z 0-9 _ - .`");
        }
        if self.description.trim().is_empty() {
            return refuse("the description is empty");
        }
        if self.read_only == Some(true) && self.destructive == Some(true) {
            return refuse("a read-only tool cannot be destructive");
        }
        // RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
        let scope_char = |c: char| c == '!' || ('#'..='[').contains(&c) || (']'..='~').contains(&c);
        for (index, scope) in self.scopes.iter().enumerate() {
            if scope.is_empty() || !scope.chars().all(scope_char) {
                return refuse("a scope is printable ASCII without spaces, quotes or backslashes");
            }
            if self.scopes[..index].contains(scope) {
                return refuse("a scope is named twice");
            }
        }
        Ok(())
    }

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
    fn spec(&self) -> &ToolSpec;

    /// The JSON Schema of the arguments, per-call controls included.
    fn input_schema(&self) -> Schema;

    /// The JSON Schema of what the tool answers: the envelope, ok and error shapes alike, with
    /// `data` typed where the tool knows its payload (see
    /// [`output_schema_for`](crate::schema::output_schema_for)). By default, any JSON payload.
    fn output_schema(&self) -> Schema {
        // Generated once: every tool of any payload shares it, and a server fronting many
        // tools works its listing out again each time they change.
        static ANY_PAYLOAD: OnceLock<Schema> = OnceLock::new();
        ANY_PAYLOAD
            .get_or_init(crate::schema::output_schema_for::<Value>)
            .clone()
    }

    /// The names of the arguments the tool declares itself, the per-call controls aside: a
    /// server's door splits a call's controls from its arguments by them, once per call, and
    /// reads them once per change of its tools. `None` (the default) when they cannot be listed: every key
    /// is then the tool's, but the controls, which the door takes off.
    fn declared_arguments(&self) -> Option<Vec<String>> {
        None
    }

    /// The title listed in the tool's MCP `annotations`: by default its
    /// [`title`](ToolSpec::title). A tool fronting another server's lists exactly what that
    /// server declared there, which may differ from (or lack) the tool's own title.
    fn annotations_title(&self) -> Option<&str> {
        self.spec().title.as_deref()
    }

    /// Runs the tool. Never panics and never fails: every outcome, a panic included, is an
    /// envelope, returned beside what the budget stage needs to know of it (a hand-written
    /// tool returns `ToolOutput::from(envelope)`).
    fn call(&self, arguments: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput>;
}

/// The tools one server serves, by name. Names are unique.
///
/// Build it with [`toolset!`](crate::toolset), which refuses two tools of one name at compile
/// time, or with [`Toolset::new`], which refuses them at run time. A tool learned at run time
/// joins with [`insert`](Toolset::insert) and leaves with [`remove`](Toolset::remove). Cloning
/// shares the tools.
#[derive(Clone, Default)]
pub struct Toolset {
    tools: BTreeMap<SpecText, Arc<dyn Tool>>,
}

impl Toolset {
    /// A toolset of `tools`; two tools with one name are an error.
    pub fn new(tools: Vec<Box<dyn Tool>>) -> Result<Toolset, CoreError> {
        let mut by_name = BTreeMap::new();
        for tool in tools {
            let name = tool.spec().name.clone();
            if by_name.insert(name.clone(), Arc::from(tool)).is_some() {
                return Err(CoreError::DuplicateTool(name.into_owned()));
            }
        }
        Ok(Toolset { tools: by_name })
    }

    /// Adds `tool`, after checking its spec ([`ToolSpec::validate`]), in place of the tool of
    /// its name if there is one, which it returns.
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
    /// let mut tools = toolset![];
    /// assert!(tools.insert(std::sync::Arc::new(hello {}))?.is_none());
    /// assert_eq!(tools.names().collect::<Vec<_>>(), ["hello"]);
    /// assert!(tools.remove("hello").is_some());
    /// assert!(tools.is_empty());
    /// # Ok::<(), envelope_core::CoreError>(())
    /// ```
    pub fn insert(&mut self, tool: Arc<dyn Tool>) -> Result<Option<Arc<dyn Tool>>, CoreError> {
        tool.spec().validate()?;
        Ok(self.tools.insert(tool.spec().name.clone(), tool))
    }

    /// Takes the tool named `name` out, returning it.
    pub fn remove(&mut self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.remove(name)
    }

    /// The tool named `name`.
    pub fn get(&self, name: &str) -> Option<&dyn Tool> {
        self.tools.get(name).map(|tool| &**tool)
    }

    /// The tool named `name`, shared: for a caller that keeps it past a change of the set.
    pub fn shared(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.tools.get(name).cloned()
    }

    /// Every tool, by name.
    pub fn iter(&self) -> impl Iterator<Item = &dyn Tool> {
        self.tools.values().map(|tool| &**tool)
    }

    /// The names, sorted.
    pub fn names(&self) -> impl Iterator<Item = &str> + '_ {
        self.tools.keys().map(|name| &**name)
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

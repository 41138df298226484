//! How a server presents itself and shapes its answers: [`EnvelopeConfig`], its defaults, the
//! check of a `_meta` prefix, and the capability tags advertised.

use std::any::Any;
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use envelope_budget::BudgetPolicy;
use envelope_core::paging::Continuations;
use envelope_core::schema::controls_instructions;
use envelope_core::stage::States;
use envelope_core::{Capability, Dialect, DialectSet, IndexStatus};
use serde_json::{Value, json};

use super::listing::Listing;
use crate::McpError;

/// The default `_meta` key prefix, on results, tool listings and the `initialize` result: a
/// reverse-DNS name this project owns, as MCP asks of `_meta` keys since 2025-11-25. Change it
/// with [`EnvelopeConfig::with_meta_prefix`].
pub const META_PREFIX: &str = "rs.envelope/";

/// The largest request, in bytes, a server reads unless configured otherwise: 4 MiB.
pub const DEFAULT_MAX_REQUEST_BYTES: usize = 4 << 20;

/// How long a call may run, unless configured otherwise: then it answers a `transient`,
/// retryable `deadline_exceeded` envelope and its work is told to stop.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(120);

/// How many streamable HTTP sessions a server holds at once unless configured otherwise. Each
/// costs some 50 KB while it lives; an idle one closes after five minutes.
pub const DEFAULT_MAX_SESSIONS: usize = 1_000;

/// How long a streamable HTTP session may stay idle, no request and no open stream, before
/// the server closes it and frees its slot: five minutes (rmcp's own default).
pub const DEFAULT_SESSION_IDLE_TIMEOUT: Duration = Duration::from_secs(300);

/// The capability tags a server advertises, with their wire form, written once.
pub(super) struct Advertised {
    pub(super) tags: Vec<Capability>,
    pub(super) wire: Value,
}

impl Advertised {
    pub(super) fn new(tags: Vec<Capability>) -> Arc<Self> {
        let wire = json!(tags);
        Arc::new(Advertised { tags, wire })
    }
}

/// Checks a `_meta` prefix: dot-separated labels, each starting with a letter and ending with a
/// letter or digit (hyphens allowed inside), then `/`, as MCP's rules say. A prefix with a
/// `modelcontextprotocol` or `mcp` label, in any case, is reserved for MCP itself (MCP reserves
/// such a label followed by another; refusing it anywhere covers every reading). This crate also
/// asks for at least two labels, a reverse-DNS name, where MCP would allow one.
fn check_meta_prefix(prefix: &str) -> Result<(), McpError> {
    let invalid = |reason: &str| McpError::MetaPrefix {
        prefix: prefix.chars().take(64).collect(),
        reason: reason.to_owned(),
    };
    let Some(name) = prefix.strip_suffix('/') else {
        return Err(invalid("it must end with `/`"));
    };
    let labels: Vec<&str> = name.split('.').collect();
    if labels.len() < 2 {
        return Err(invalid(
            "it must be a reverse-DNS name of at least two labels, like `com.example/`",
        ));
    }
    for label in &labels {
        let bytes = label.as_bytes();
        let well_formed = bytes.first().is_some_and(u8::is_ascii_alphabetic)
            && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
            && bytes
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || *b == b'-');
        if !well_formed {
            return Err(invalid(
                "each label must start with a letter, end with a letter or digit, and hold only letters, digits and `-`",
            ));
        }
    }
    if labels.iter().any(|label| {
        label.eq_ignore_ascii_case("modelcontextprotocol") || label.eq_ignore_ascii_case("mcp")
    }) {
        return Err(invalid(
            "`modelcontextprotocol` and `mcp` prefixes are reserved for MCP",
        ));
    }
    Ok(())
}

/// Reads the state of the index a server answers from, once per call.
type IndexProbe = Arc<dyn Fn() -> Option<IndexStatus> + Send + Sync>;

/// How an [`EnvelopeServer`](crate::EnvelopeServer) presents itself and shapes its answers.
#[derive(Clone)]
pub struct EnvelopeConfig {
    pub(super) name: String,
    pub(super) version: String,
    pub(super) instructions: Option<String>,
    pub(super) listing: Listing,
    pub(super) dialect: Dialect,
    pub(super) call_dialects: DialectSet,
    pub(super) budget: BudgetPolicy,
    pub(super) disabled_modules: BTreeSet<String>,
    pub(super) capabilities: Capabilities,
    pub(super) states: Arc<States>,
    pub(super) meta_prefix: String,
    pub(super) index: Option<IndexProbe>,
    pub(super) call_timeout: Option<Duration>,
    pub(super) blocking_calls_per_tool: Option<usize>,
    pub(super) max_request_bytes: usize,
    pub(super) max_sessions: usize,
    pub(super) session_idle_timeout: Duration,
    /// What seals the `requestState` of a call that asks its client across rounds (MCP
    /// 2026-07-28); a key drawn at start-up when `None`.
    pub(super) round_key: Option<zeroize::Zeroizing<[u8; 32]>>,
}

/// Which capability tags a server advertises.
#[derive(Debug, Clone)]
pub(super) enum Capabilities {
    /// What this server's configuration supports (see [`EnvelopeConfig::capabilities`]).
    Derived,
    /// The author's own list.
    Listed(Vec<Capability>),
    /// None at all.
    Off,
}

impl std::fmt::Debug for EnvelopeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvelopeConfig")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("listing", &self.listing)
            .field("dialect", &self.dialect)
            .field("call_dialects", &self.call_dialects)
            .field("budget", &self.budget)
            .field("disabled_modules", &self.disabled_modules)
            // wire: a field of this Debug output, not of an envelope
            .field("capabilities", &self.capabilities)
            .field("states", &self.states)
            .field("meta_prefix", &self.meta_prefix)
            .field("reports_index", &self.index.is_some())
            .field("call_timeout", &self.call_timeout)
            .field("blocking_calls_per_tool", &self.blocking_calls_per_tool)
            .field("max_request_bytes", &self.max_request_bytes)
            .field("max_sessions", &self.max_sessions)
            .field("session_idle_timeout", &self.session_idle_timeout)
            .finish_non_exhaustive()
    }
}

impl EnvelopeConfig {
    /// A server called `name` at `version`, with the default budget, every module on, the
    /// capability tags its configuration supports, and `_meta` keys under [`META_PREFIX`].
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        EnvelopeConfig {
            name: name.into(),
            version: version.into(),
            instructions: None,
            listing: Listing::Lean,
            dialect: Dialect::Envelope,
            call_dialects: DialectSet::from_iter([]),
            budget: BudgetPolicy::default(),
            disabled_modules: BTreeSet::new(),
            capabilities: Capabilities::Derived,
            states: Arc::default(),
            meta_prefix: META_PREFIX.to_owned(),
            index: None,
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            blocking_calls_per_tool: Some(default_blocking_calls_per_tool()),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
            round_key: None,
        }
    }

    /// How many streamable HTTP sessions the server holds at once ([`DEFAULT_MAX_SESSIONS`]
    /// unless set); past it, a new session is refused with `503` and `Retry-After`.
    #[must_use]
    pub fn with_max_sessions(mut self, sessions: usize) -> Self {
        self.max_sessions = sessions;
        self
    }

    /// How long a streamable HTTP session may stay idle before the server closes it and frees
    /// its slot under the session cap ([`DEFAULT_SESSION_IDLE_TIMEOUT`] unless set). A client
    /// using a closed session gets `404` and opens a new one, as MCP prescribes.
    ///
    /// rmcp counts a session idle while a call runs without sending anything, so the timeout
    /// applied is never shorter than the call timeout plus a second: a slow call keeps its
    /// session and its answer. Without a call timeout, a call that runs longer than this
    /// without a progress report loses its session.
    #[must_use]
    pub fn with_session_idle_timeout(mut self, idle: Duration) -> Self {
        self.session_idle_timeout = idle;
        self
    }

    /// The largest request the server reads, in bytes
    /// ([`DEFAULT_MAX_REQUEST_BYTES`] unless set). Over stdio,
    /// a longer line is skipped as it streams by and answered `-32600`, id `null`; it is never
    /// held whole in memory.
    #[must_use]
    pub fn with_max_request_bytes(mut self, bytes: usize) -> Self {
        self.max_request_bytes = bytes;
        self
    }

    /// How long a call may run ([`DEFAULT_CALL_TIMEOUT`] unless set; `None` for no limit).
    /// Past it, the call answers a `transient`, retryable envelope with the code
    /// [`DEADLINE_EXCEEDED`](crate::DEADLINE_EXCEEDED), its future is dropped, and [`ToolContext::is_cancelled`](envelope_core::ToolContext::is_cancelled) turns
    /// true for work it left running (on the blocking pool, say). Needs the tokio runtime's time
    /// driver, as rmcp does.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// How many calls of one blocking tool (`#[tool(blocking)]`, whose body holds a thread of
    /// tokio's blocking pool while it works) run at once; the rest wait their turn, in order,
    /// their wait counted against the call timeout. `None` for no limit.
    ///
    /// The default, [`default_blocking_calls_per_tool`] (twice the cores this process may run
    /// on), keeps a flood of heavy calls from starving everything else: without it, a few dozen
    /// concurrent searches each hold a thread, and another caller's small call waits for a
    /// share of the cores behind all of them. Each tool has its own turns, so the flood queues
    /// behind itself while other tools' calls run at once. A tool whose recent calls typically
    /// took under 2 ms takes no turns (they hold a thread too briefly to starve anyone, and
    /// waiting would cost them more than it saves); it takes them again once its calls are
    /// slow, and before its first call has finished. Tools that are not blocking (async bodies,
    /// which yield while they wait) are not limited.
    ///
    /// ```
    /// use envelope_mcp::EnvelopeConfig;
    ///
    /// // Searches that mostly wait on a network disk can run more at once.
    /// let config = EnvelopeConfig::new("search", "1.0.0").with_blocking_calls_per_tool(Some(32));
    /// ```
    #[must_use]
    pub fn with_blocking_calls_per_tool(mut self, calls: Option<usize>) -> Self {
        self.blocking_calls_per_tool = calls.map(|calls| calls.max(1));
        self
    }

    /// Puts this server's `_meta` keys under `prefix`, a reverse-DNS name ending in `/` (say
    /// `com.example.search/`). Refuses a malformed prefix and MCP's reserved ones.
    ///
    /// ```
    /// use envelope_mcp::EnvelopeConfig;
    ///
    /// let config = EnvelopeConfig::new("search", "1.0.0").with_meta_prefix("com.example/")?;
    /// assert!(EnvelopeConfig::new("search", "1.0.0").with_meta_prefix("envelope/").is_err());
    /// for reserved in ["io.modelcontextprotocol/", "modelcontextprotocol.io/", "mcp.dev/", "tools.MCP.com/"] {
    ///     assert!(EnvelopeConfig::new("search", "1.0.0").with_meta_prefix(reserved).is_err());
    /// }
    /// # Ok::<(), envelope_mcp::McpError>(())
    /// ```
    pub fn with_meta_prefix(mut self, prefix: impl Into<String>) -> Result<Self, McpError> {
        let prefix = prefix.into();
        check_meta_prefix(&prefix)?;
        self.meta_prefix = prefix;
        Ok(self)
    }

    /// Reports the index this server answers from, read once per call: every response then
    /// stamps `meta.schema_version_at_index` (and `meta.binary_drift_warning` when the data is
    /// newer than the binary), and tools read it with [`ToolContext::index_status`](envelope_core::ToolContext::index_status). `probe`
    /// runs on the async runtime before every call: keep it cheap and never let it block (read
    /// a value the indexer updates, not the index itself).
    #[must_use]
    pub fn with_index_status(
        mut self,
        probe: impl Fn() -> Option<IndexStatus> + Send + Sync + 'static,
    ) -> Self {
        self.index = Some(Arc::new(probe));
        self
    }

    /// The capability tags this server advertises: in the `initialize` result's `_meta`, in
    /// every tool result's `_meta`, and in `meta.capabilities` under `response_mode: full`.
    ///
    /// By default, what the configuration supports: the contract's tags, plus
    /// `budget_trimming` when a budget applies and `continuations` when the server seals
    /// them. [`EnvelopeServer::http_router`](crate::EnvelopeServer::http_router) adds `streamable_http` to what it serves.
    pub fn capabilities(&self) -> Vec<Capability> {
        match &self.capabilities {
            Capabilities::Listed(listed) => listed.clone(),
            Capabilities::Off => Vec::new(),
            Capabilities::Derived => Capability::KNOWN
                .iter()
                .filter(|tag| self.supports(tag))
                .cloned()
                .collect(),
        }
    }

    /// Whether this configuration provides what `tag` promises. `streamable_http` is the
    /// transport's to add ([`EnvelopeServer::http_router`](crate::EnvelopeServer::http_router)); every other tag of the contract
    /// holds for every server but the two that depend on a setting.
    fn supports(&self, tag: &Capability) -> bool {
        if *tag == Capability::BUDGET_TRIMMING {
            self.budget.agent_chars.is_some()
        } else if *tag == Capability::CONTINUATIONS {
            self.states.get::<Continuations>().is_some()
        } else {
            *tag != Capability::STREAMABLE_HTTP
        }
    }

    /// Instructions the client shows its model.
    #[must_use]
    pub fn with_instructions(mut self, instructions: impl Into<String>) -> Self {
        self.instructions = Some(instructions.into());
        self
    }

    /// How much of each tool `tools/list` spells out: [`Listing::Lean`] (the default) or
    /// [`Listing::Full`].
    #[must_use]
    pub fn with_listing(mut self, listing: Listing) -> Self {
        self.listing = listing;
        self
    }

    /// The wire every answer is written in unless a call's `dialect` control asks for another:
    /// [`Dialect::Envelope`] (the default), or one of the source contracts' (pincher's `_meta`
    /// envelope, the `cos_*` error envelope, tree-sitter-analyzer's, Frigg's). The listing's
    /// output schemas follow it. See `docs/DIALECTS.md` for what each carries.
    ///
    /// ```
    /// use envelope_core::Dialect;
    /// use envelope_mcp::EnvelopeConfig;
    ///
    /// let config = EnvelopeConfig::new("search", "1.0.0").with_dialect(Dialect::Frigg);
    /// assert_eq!(config.dialect(), Dialect::Frigg);
    /// ```
    #[must_use]
    pub fn with_dialect(mut self, dialect: Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The server's dialect (see [`with_dialect`](Self::with_dialect)).
    pub fn dialect(&self) -> Dialect {
        self.dialect
    }

    /// The dialects a call may ask for with its `dialect` argument besides the server's own.
    /// None by default: MCP clients check an answer against the tool's listed output schema
    /// (the official SDKs refuse one that does not match), so every dialect offered is added
    /// to each output schema as an alternative, which every model pays for on every turn.
    ///
    /// ```
    /// use envelope_core::Dialect;
    /// use envelope_mcp::EnvelopeConfig;
    ///
    /// let config = EnvelopeConfig::new("search", "1.0.0").with_call_dialects(Dialect::ALL);
    /// assert!(config.offered_dialects().contains(Dialect::Tsa));
    /// let plain = EnvelopeConfig::new("search", "1.0.0");
    /// assert_eq!(plain.offered_dialects().iter().collect::<Vec<_>>(), [Dialect::Envelope]);
    /// ```
    #[must_use]
    pub fn with_call_dialects(mut self, dialects: impl IntoIterator<Item = Dialect>) -> Self {
        self.call_dialects = dialects.into_iter().collect();
        self
    }

    /// The dialects a call may ask for: the server's own and those
    /// [`with_call_dialects`](Self::with_call_dialects) offers.
    pub fn offered_dialects(&self) -> DialectSet {
        self.call_dialects.with(self.dialect)
    }

    /// The instructions `initialize` gives: the author's (else `composed`, a composed
    /// handler's), followed under [`Listing::Lean`] by the shaping controls the listing leaves
    /// out of every tool.
    pub(super) fn listed_instructions(&self, composed: Option<String>) -> Option<String> {
        let own = self.instructions.clone().or(composed);
        match (self.listing, own) {
            (Listing::Full, own) => own,
            (Listing::Lean, None) => Some(controls_instructions()),
            (Listing::Lean, Some(own)) => Some(format!("{own}\n\n{}", controls_instructions())),
        }
    }

    /// The budget policy (per-server budget, graph ceiling, estimator, or opt-out).
    #[must_use]
    pub fn with_budget(mut self, budget: BudgetPolicy) -> Self {
        self.budget = budget;
        self
    }

    /// Switches a module off: its tools answer `module_disabled`.
    #[must_use]
    pub fn disable_module(mut self, module: impl Into<String>) -> Self {
        self.disabled_modules.insert(module.into());
        self
    }

    /// Advertises exactly these capability tags instead of the derived ones. Every tag
    /// advertised is a promise: have a test that probes the behaviour behind each.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Vec<Capability>) -> Self {
        self.capabilities = Capabilities::Listed(capabilities);
        self
    }

    /// Advertises no capability tags at all.
    #[must_use]
    pub fn without_capabilities(mut self) -> Self {
        self.capabilities = Capabilities::Off;
        self
    }

    /// The keys tools seal and open continuation tokens with, which a tool reads as
    /// `ctx.state::<Continuations>()`. Servers that share the keys accept each other's tokens.
    #[must_use]
    pub fn with_continuations(self, continuations: Continuations) -> Self {
        self.with_state(Arc::new(continuations))
    }

    /// Seals with `key` the `requestState` of a call whose tool asks its client across rounds
    /// (MCP 2026-07-28 has no server-to-client requests: the call answers an
    /// `InputRequiredResult`, and the client calls again with the answers and the state). The
    /// state carries the answers of the rounds before, bound to the tool and its arguments;
    /// one this key did not seal is refused. Without a key, one is drawn at start-up: set the
    /// same key on every replica behind a load balancer, so that any of them opens the state
    /// another sealed.
    #[must_use]
    pub fn with_round_key(mut self, key: [u8; 32]) -> Self {
        self.round_key = Some(zeroize::Zeroizing::new(key));
        self
    }

    /// State every tool can read with [`ToolContext::state`](envelope_core::ToolContext::state), one value per type; a tool of a
    /// server without it answers the standard `not_configured` error.
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, state: Arc<T>) -> Self {
        Arc::make_mut(&mut self.states).insert(state);
        self
    }
}

/// The default of [`EnvelopeConfig::with_blocking_calls_per_tool`]: twice the cores this
/// process may run on (its CPU affinity, as `std::thread::available_parallelism` reads it),
/// so that a call that waits on a disk does not idle a core.
pub fn default_blocking_calls_per_tool() -> usize {
    2 * std::thread::available_parallelism().map_or(1, usize::from)
}

//! The MCP server: tool listing and calls, mapped onto the envelope.

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use envelope_budget::{BudgetPolicy, CallBudget, Prepared, prepare};
use envelope_core::meta_keys;
use envelope_core::paging::Continuations;
use envelope_core::schema::Portable;
use envelope_core::stage::{Cancellation, Controls, ProgressSink, States};
use envelope_core::stage::{ToolOutput, meta_stamp, retain_next_actions, stamp_request_id};
use envelope_core::{
    Capability, Envelope, IndexStatus, RequestId, Tier, Tool, ToolContext, ToolError, ToolSpec,
    Toolset,
};
use schemars::Schema;
use schemars::transform::Transform;

use crate::{McpError, REQUEST_ID_HEADER};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use tracing::Instrument;

/// The default `_meta` key prefix, on results, tool listings and the `initialize` result: a
/// reverse-DNS name this project owns, as MCP asks of `_meta` keys since 2025-11-25. Change it
/// with [`EnvelopeConfig::with_meta_prefix`].
pub const META_PREFIX: &str = "rs.envelope/";

/// The `_meta` keys a server writes, each its prefix and a name, built once per server.
struct MetaKeys {
    tier: String,
    layer: String,
    request_id: String,
    client_request_id: String,
    capabilities: String,
}

impl MetaKeys {
    fn new(prefix: &str) -> Self {
        let key = |name: &str| format!("{prefix}{name}");
        MetaKeys {
            tier: key("tier"),
            layer: key(meta_keys::LAYER),
            request_id: key(meta_keys::REQUEST_ID),
            client_request_id: key(meta_keys::CLIENT_REQUEST_ID),
            capabilities: key(meta_keys::CAPABILITIES),
        }
    }
}

/// The capability tags a server advertises, with their wire form, written once.
struct Advertised {
    tags: Vec<Capability>,
    wire: Value,
}

impl Advertised {
    fn new(tags: Vec<Capability>) -> Arc<Self> {
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

/// The `code` of the envelope a call past its deadline answers.
pub const DEADLINE_EXCEEDED: &str = "deadline_exceeded";

/// Reads the state of the index a server answers from, once per call.
type IndexProbe = Arc<dyn Fn() -> Option<IndexStatus> + Send + Sync>;

/// How an [`EnvelopeServer`] presents itself and shapes its answers.
#[derive(Clone)]
pub struct EnvelopeConfig {
    name: String,
    version: String,
    instructions: Option<String>,
    budget: BudgetPolicy,
    disabled_modules: BTreeSet<String>,
    capabilities: Capabilities,
    states: Arc<States>,
    meta_prefix: String,
    index: Option<IndexProbe>,
    call_timeout: Option<Duration>,
    max_request_bytes: usize,
    max_sessions: usize,
    session_idle_timeout: Duration,
}

/// Which capability tags a server advertises.
#[derive(Debug, Clone)]
enum Capabilities {
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
            .field("budget", &self.budget)
            .field("disabled_modules", &self.disabled_modules)
            .field("capabilities", &self.capabilities)
            .field("states", &self.states)
            .field("meta_prefix", &self.meta_prefix)
            .field("reports_index", &self.index.is_some())
            .field("call_timeout", &self.call_timeout)
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
            budget: BudgetPolicy::default(),
            disabled_modules: BTreeSet::new(),
            capabilities: Capabilities::Derived,
            states: Arc::default(),
            meta_prefix: META_PREFIX.to_owned(),
            index: None,
            call_timeout: Some(DEFAULT_CALL_TIMEOUT),
            max_request_bytes: DEFAULT_MAX_REQUEST_BYTES,
            max_sessions: DEFAULT_MAX_SESSIONS,
            session_idle_timeout: DEFAULT_SESSION_IDLE_TIMEOUT,
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
    /// [`DEADLINE_EXCEEDED`], its future is dropped, and [`ToolContext::is_cancelled`] turns
    /// true for work it left running (on the blocking pool, say). Needs the tokio runtime's time
    /// driver, as rmcp does.
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.call_timeout = timeout;
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
    /// newer than the binary), and tools read it with [`ToolContext::index_status`]. `probe`
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
    /// them. [`EnvelopeServer::http_router`] adds `streamable_http` to what it serves.
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
    /// transport's to add ([`EnvelopeServer::http_router`]); every other tag of the contract
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

    /// State every tool can read with [`ToolContext::state`], one value per type; a tool of a
    /// server without it answers the standard `not_configured` error.
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, state: Arc<T>) -> Self {
        Arc::make_mut(&mut self.states).insert(state);
        self
    }
}

struct Inner {
    tools: Toolset,
    config: EnvelopeConfig,
    disabled: Arc<BTreeSet<String>>,
    listing: Vec<rmcp::model::Tool>,
    /// Each served tool's input schema, compiled: a suggested next action must pass it.
    inputs: BTreeMap<&'static str, jsonschema::Validator>,
    keys: MetaKeys,
    /// Calls running now: a server shutting down waits for them.
    calls: Arc<crate::drain::Calls>,
}

/// Serves a [`Toolset`] over MCP. Cheap to clone; clones share the tools.
#[derive(Clone)]
pub struct EnvelopeServer {
    inner: Arc<Inner>,
    /// The capability tags advertised: per server value, since a transport may add its own.
    capabilities: Arc<Advertised>,
}

impl std::fmt::Debug for EnvelopeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvelopeServer")
            .field("tools", &self.inner.tools)
            .field("config", &self.inner.config)
            .finish()
    }
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        // Schemas are objects; a boolean schema becomes its object form.
        Value::Bool(true) => Map::new(),
        other => Map::from_iter([("const".to_owned(), other)]),
    }
}

/// A schema as listed: made [`Portable`] (a no-op for the schemas `#[tool]` writes, which
/// already are), so a hand-written tool's schemas are as portable.
fn listed_schema(mut schema: Schema) -> Map<String, Value> {
    Portable.transform(&mut schema);
    object(schema.to_value())
}

fn listing(tool: &dyn Tool, keys: &MetaKeys) -> rmcp::model::Tool {
    let spec = tool.spec();
    let input = listed_schema(tool.input_schema());
    let output = listed_schema(tool.output_schema());
    let mut meta = MetaObject::new();
    meta.insert(keys.tier.clone(), json!(spec.tier));
    if let Some(layer) = spec.layer {
        meta.insert(keys.layer.clone(), json!(layer));
    }
    // Only the hints the author declared: an absent hint takes MCP's cautious default.
    let annotations = ToolAnnotations::from_raw(
        spec.title.map(str::to_owned),
        spec.read_only,
        spec.destructive,
        spec.idempotent,
        spec.open_world,
    );
    let mut listed = rmcp::model::Tool::new(spec.name, spec.description, Arc::new(input))
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations)
        .with_meta(meta);
    if let Some(title) = spec.title {
        listed = listed.with_title(title);
    }
    listed
}

/// The longest progress token, in bytes of its JSON, a call's progress is reported under.
/// Every notification repeats the token: a call whose token is longer gets no progress
/// notifications at all (it still answers as usual), so that what a call sends stays within
/// its budget and a fixed allowance however large a token the client chose.
pub const MAX_PROGRESS_TOKEN_BYTES: usize = 256;

/// How many characters of an unknown tool's name an error echoes.
const ECHOED_NAME_CHARS: usize = 128;

/// Whether progress is reported under `token` ([`MAX_PROGRESS_TOKEN_BYTES`]).
fn reportable(token: &ProgressToken) -> bool {
    serde_json::to_vec(token).is_ok_and(|json| json.len() <= MAX_PROGRESS_TOKEN_BYTES)
}

/// Forwards a tool's progress reports to the client as `notifications/progress`, one at a time
/// in the order they were made (MCP wants progress to increase).
///
/// The sending task starts at the first report: most calls report nothing, and a task per call
/// would cost two cross-thread wake-ups on every round trip (rmcp's client attaches a progress
/// token to every request).
struct PeerProgress {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    forwarding: std::sync::Mutex<Forwarding>,
}

enum Forwarding {
    /// Nothing reported yet: no task.
    Idle,
    /// Reports go to `queue`; `task` sends them in order.
    Running {
        queue: tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>,
        task: tokio::task::JoinHandle<()>,
    },
    /// The result is on its way: later reports (from a task the tool left running) are
    /// dropped, since a client ignores progress for a request that is over.
    Finished,
}

impl ProgressSink for PeerProgress {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut params = ProgressNotificationParam::new(self.token.clone(), progress);
        if let Some(total) = total {
            params = params.with_total(total);
        }
        if let Some(message) = message {
            params = params.with_message(message);
        }
        // A poisoned lock only means another report panicked mid-send; the queue is still sound.
        let mut forwarding = self
            .forwarding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Forwarding::Idle = *forwarding {
            let (queue, mut reports) = tokio::sync::mpsc::unbounded_channel();
            let peer = self.peer.clone();
            let task = self.runtime.spawn(async move {
                while let Some(params) = reports.recv().await {
                    let _ = peer.notify_progress(params).await;
                }
            });
            *forwarding = Forwarding::Running { queue, task };
        }
        if let Forwarding::Running { queue, .. } = &*forwarding {
            // Queued, never awaited: a client that stopped listening must not stall the tool.
            let _ = queue.send(params);
        }
    }
}

impl PeerProgress {
    fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Arc<Self> {
        Arc::new(PeerProgress {
            token,
            peer,
            runtime: tokio::runtime::Handle::current(),
            forwarding: std::sync::Mutex::new(Forwarding::Idle),
        })
    }

    /// Sends what is still queued. Awaited before the result goes out, so no report arrives
    /// after the result (a client drops those: the request it names is over).
    async fn finish(&self) {
        let forwarding = std::mem::replace(
            &mut *self
                .forwarding
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Forwarding::Finished,
        );
        if let Forwarding::Running { queue, task } = forwarding {
            // Closing the queue ends the task once it has sent everything before the close.
            drop(queue);
            let _ = task.await;
        }
    }
}

/// What stops a call: the client cancelling it, or its deadline passing.
struct Stop {
    client: Option<Arc<dyn Cancellation>>,
    deadline_passed: AtomicBool,
}

impl Cancellation for Stop {
    fn is_cancelled(&self) -> bool {
        self.deadline_passed.load(Ordering::Relaxed)
            || self
                .client
                .as_ref()
                .is_some_and(|client| client.is_cancelled())
    }
}

/// The envelope of a call that ran past `limit`: retrying may help (with a narrower request).
fn past_deadline(spec: &ToolSpec, request_id: RequestId, limit: Duration) -> Envelope<Value> {
    let error = ToolError::transient(format!(
        "`{}` did not answer within {} ms and was stopped",
        spec.name,
        limit.as_millis()
    ))
    .with_code(DEADLINE_EXCEEDED)
    .with_hint("retry later, or narrow the request so it does less work");
    let mut envelope = Envelope::err(error);
    stamp_request_id(&mut envelope, request_id);
    meta_stamp(&mut envelope)
        .tool(spec.name, spec.tier, spec.is_idempotent())
        .layer(spec.layer)
        .latency(limit);
    envelope
}

/// A cancellation token (MCP's, or a dropped HTTP request's), read by the tool through
/// [`ToolContext::is_cancelled`].
pub(crate) struct TokenCancellation(pub(crate) tokio_util::sync::CancellationToken);

impl Cancellation for TokenCancellation {
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// What one call needs from the transport around it.
#[derive(Default)]
pub(crate) struct CallExtras {
    pub(crate) client_request_id: Option<String>,
    /// The transport's session (HTTP's `Mcp-Session-Id`).
    pub(crate) session: Option<String>,
    /// A digest of the client's credentials (HTTP's `Authorization`), which continuations are
    /// bound to.
    pub(crate) principal: Option<String>,
    pub(crate) progress: Option<Arc<dyn ProgressSink>>,
    pub(crate) cancelled: Option<Arc<dyn Cancellation>>,
    /// The caller's W3C trace context, which the call's span joins.
    #[cfg(feature = "otel")]
    pub(crate) trace: crate::otel::TraceContext,
    /// A call opted out of trimming (the REST gateway's `apply_budget=false`): its response is
    /// cut only to this ceiling.
    pub(crate) unbudgeted_ceiling: Option<usize>,
}

/// A call's response, with what the result's `_meta` carries besides it.
pub(crate) struct Answer {
    pub(crate) prepared: Prepared,
    pub(crate) tier: Tier,
    pub(crate) client_request_id: Option<String>,
}

/// What a tool may read of a caller's credentials (HTTP's `Authorization`): their SHA-256, in
/// hex. Continuations are bound to it; the credentials themselves never reach tool code.
pub(crate) fn principal_of(credentials: &str) -> String {
    let digest = Sha256::digest(credentials.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

impl EnvelopeServer {
    /// A server for `tools`, configured by `config`.
    pub fn new(tools: Toolset, config: EnvelopeConfig) -> Self {
        let keys = MetaKeys::new(&config.meta_prefix);
        let listing = tools.iter().map(|tool| listing(tool, &keys)).collect();
        let capabilities = Advertised::new(config.capabilities());
        let disabled = Arc::new(config.disabled_modules.clone());
        let inputs = tools
            .iter()
            // A switched-off tool answers every call with `module_disabled`: not runnable.
            .filter(|tool| {
                tool.spec()
                    .module
                    .is_none_or(|module| !config.disabled_modules.contains(module))
            })
            .filter_map(|tool| {
                let mut schema = tool.input_schema().to_value();
                // A strict tool refuses unknown arguments, which its schema alone allows. Not
                // `additionalProperties`: it sees only the top-level `properties`, and the
                // arguments of an enum live in the `allOf` the input schema wraps them in.
                if tool.spec().strict_args
                    && let Some(object) = schema.as_object_mut()
                {
                    object.insert("unevaluatedProperties".to_owned(), Value::Bool(false));
                }
                match jsonschema::validator_for(&schema) {
                    Ok(validator) => Some((tool.spec().name, validator)),
                    Err(error) => {
                        // Then no action can target the tool; say why once, at start-up.
                        tracing::error!(tool = tool.spec().name, %error, "input schema does not compile");
                        None
                    }
                }
            })
            .collect();
        EnvelopeServer {
            inner: Arc::new(Inner {
                tools,
                config,
                disabled,
                listing,
                inputs,
                keys,
                calls: Arc::default(),
            }),
            capabilities,
        }
    }

    /// The largest request this server reads, in bytes.
    pub fn max_request_bytes(&self) -> usize {
        self.inner.config.max_request_bytes
    }

    /// How many streamable HTTP sessions this server holds at once.
    pub fn max_sessions(&self) -> usize {
        self.inner.config.max_sessions
    }

    /// How long a streamable HTTP session may stay idle before it is closed.
    pub fn session_idle_timeout(&self) -> Duration {
        self.inner.config.session_idle_timeout
    }

    /// How long a call may run before it answers `deadline_exceeded`; `None` without a limit.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.inner.config.call_timeout
    }

    /// How many tool calls this server (and its clones) is running now.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.calls.running()
    }

    /// The tools this server serves.
    #[cfg(feature = "rest")]
    pub(crate) fn toolset(&self) -> &Toolset {
        &self.inner.tools
    }

    /// The server's name, version and instructions, as `initialize` gives them.
    #[cfg(feature = "rest")]
    pub(crate) fn identity(&self) -> (&str, &str, Option<&str>) {
        let config = &self.inner.config;
        (
            &config.name,
            &config.version,
            config.instructions.as_deref(),
        )
    }

    /// How many tools this server serves.
    #[cfg(feature = "http")]
    pub(crate) fn tool_count(&self) -> usize {
        self.inner.listing.len()
    }

    /// Whether this server seals continuations (its key ring is loaded).
    #[cfg(feature = "http")]
    pub(crate) fn seals_continuations(&self) -> bool {
        self.inner.config.states.get::<Continuations>().is_some()
    }

    /// The capability tags this server advertises.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities.tags
    }

    /// This server, advertising `tag` too when its tags are derived from its configuration
    /// (a transport adds what it provides; an author's own list stays as written).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn with_transport_capability(mut self, tag: Capability) -> Self {
        if matches!(self.inner.config.capabilities, Capabilities::Derived)
            && !self.capabilities.tags.contains(&tag)
        {
            // In the contract's order, as the derived list is.
            let tags = Capability::KNOWN
                .iter()
                .filter(|known| **known == tag || self.capabilities.tags.contains(known))
                .cloned()
                .collect();
            self.capabilities = Advertised::new(tags);
        }
        self
    }

    /// The tools as MCP lists them: sorted by name.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.inner.listing
    }

    /// Calls a tool outside any MCP session, as the `call` command of a server binary does.
    /// `None` when no tool has that name.
    pub async fn call(&self, name: &str, arguments: Value) -> Option<Prepared> {
        let tool = self.inner.tools.get(name)?;
        let answer = self.call_with(tool, arguments, CallExtras::default()).await;
        Some(answer.prepared)
    }

    /// One call of `tool`, stage by stage: the call's budget, asked of the budget stage once;
    /// the context the tool runs in, sized by it; the tool under its deadline (its entry
    /// decodes the arguments and the per-call controls, once); then the response encoded,
    /// shaped, trimmed and stamped by the budget stage under the same budget.
    pub(crate) async fn call_with(
        &self,
        tool: &dyn Tool,
        arguments: Value,
        extras: CallExtras,
    ) -> Answer {
        let _running = self.inner.calls.begin();
        let spec = tool.spec();
        #[cfg(feature = "otel")]
        let trace = extras.trace.clone();
        let mut budget = self.inner.config.budget.for_call(spec.budget);
        if let Some(ceiling) = extras.unbudgeted_ceiling {
            budget = budget.raised_to(ceiling);
        }
        let (ctx, stop) = self.context_for(extras, &budget);
        // The correlation id as the envelope keeps it (`meta.client_request_id`): a header the
        // HTTP layer replaced with a ULID is the request id, not a client's id.
        let span = crate::observe::call_span(spec, ctx.request_id(), ctx.client_request_id());
        #[cfg(feature = "otel")]
        trace.adopt(&span);
        let output = self
            .run(tool, arguments, ctx, &stop)
            .instrument(span.clone())
            .await;
        let latency_ms = output.envelope.meta().latency_ms();
        let answer = span.in_scope(|| self.answer(spec, output, &budget));
        crate::observe::record_outcome(
            &span,
            &answer.prepared.structured,
            answer.prepared.tokens_estimated,
            latency_ms,
        );
        answer
    }

    /// The context a call runs in under `budget`, and the signal that stops its work.
    fn context_for(&self, extras: CallExtras, budget: &CallBudget) -> (ToolContext, Arc<Stop>) {
        let config = &self.inner.config;
        let mut ctx = ToolContext::new()
            .with_client_request_id(extras.client_request_id.as_deref())
            .with_disabled_modules(Arc::clone(&self.inner.disabled))
            .with_states(Arc::clone(&config.states));
        if let Some(session) = extras.session {
            ctx = ctx.with_session(session);
        }
        if let Some(principal) = extras.principal {
            ctx = ctx.with_principal(principal);
        }
        if let Some(progress) = extras.progress {
            ctx = ctx.with_progress(progress);
        }
        // The client's cancellation, or the deadline's: either stops the work.
        let stop = Arc::new(Stop {
            client: extras.cancelled,
            deadline_passed: AtomicBool::new(false),
        });
        ctx = ctx.with_cancellation(Arc::clone(&stop) as Arc<dyn Cancellation>);
        if let Some(probe) = &config.index {
            ctx = ctx.with_index_status(probe());
        }
        // A tool that builds rows up to what fits sizes them as the budget stage will.
        if let Some(sizer) = budget.sizer() {
            ctx = ctx.with_sizer(sizer);
        }
        (ctx, stop)
    }

    /// Runs `tool` under the call deadline; past it, the tool's work is told to stop and the
    /// call answers `deadline_exceeded`, shaped by the controls read leniently from the
    /// arguments (the tool's entry, which decodes them, did not finish).
    async fn run(
        &self,
        tool: &dyn Tool,
        arguments: Value,
        ctx: ToolContext,
        stop: &Stop,
    ) -> ToolOutput {
        let request_id = *ctx.request_id();
        let Some(limit) = self.inner.config.call_timeout else {
            return tool.call(arguments, ctx).await;
        };
        let controls = Controls::from_arguments(&arguments);
        match tokio::time::timeout(limit, tool.call(arguments, ctx)).await {
            Ok(output) => output,
            Err(_) => {
                stop.deadline_passed.store(true, Ordering::Relaxed);
                ToolOutput::from(past_deadline(tool.spec(), request_id, limit))
                    .with_controls(controls)
            }
        }
    }

    /// The response to `output`: actions this server cannot run dropped, the capability tags
    /// stamped when the controls keep them, then the budget stage.
    fn answer(&self, spec: &ToolSpec, mut output: ToolOutput, budget: &CallBudget) -> Answer {
        self.drop_unrunnable_actions(&mut output.envelope, spec.name);
        // Only `response_mode: full` keeps them in `meta`; `_meta` always carries them.
        if output.controls.keeps_full_meta() {
            meta_stamp(&mut output.envelope).capabilities(self.capabilities.tags.clone());
        }
        // Read before shaping: `compact_only` leaves it out of `meta`, not out of `_meta`.
        let client_request_id = output
            .envelope
            .meta()
            .client_request_id()
            .map(str::to_owned);
        Answer {
            prepared: prepare(output, budget),
            tier: spec.tier,
            client_request_id,
        }
    }

    /// Drops suggested calls this server cannot run: to a tool it does not serve, or with
    /// arguments that fail that tool's input schema. Logs how many, never what: arguments can
    /// carry user data.
    fn drop_unrunnable_actions<P>(&self, envelope: &mut Envelope<P>, tool: &str) {
        if envelope.next_actions().is_empty() {
            return;
        }
        let inputs = &self.inner.inputs;
        let dropped = retain_next_actions(envelope, |action| {
            inputs
                .get(action.tool.as_str())
                .is_some_and(|input| input.is_valid(&Value::Object(action.arguments.clone())))
        });
        if dropped > 0 {
            tracing::warn!(
                tool,
                dropped,
                "dropped next actions the served tools cannot run"
            );
        }
    }

    /// The MCP result: the envelope as `structuredContent`, its mirror as text, `isError`, and
    /// in `_meta` the request id, the tier (whatever `compact_only` left in `meta`), the
    /// client's correlation id and the capability tags.
    fn result(&self, answer: Answer) -> CallToolResult {
        let Answer {
            prepared,
            tier,
            client_request_id,
        } = answer;
        let keys = &self.inner.keys;
        let mut meta = MetaObject::new();
        meta.insert(
            keys.request_id.clone(),
            Value::String(prepared.request_id.to_string()),
        );
        meta.insert(keys.tier.clone(), json!(tier));
        if let Some(id) = client_request_id {
            meta.insert(keys.client_request_id.clone(), Value::String(id));
        }
        if !self.capabilities.tags.is_empty() {
            meta.insert(keys.capabilities.clone(), self.capabilities.wire.clone());
        }
        let Prepared {
            ok,
            structured,
            json,
            toon,
            leftovers,
            ..
        } = prepared;
        // The mirror moves into the result: a page of rows is not copied again.
        let mut result = CallToolResult::success(vec![ContentBlock::text(toon.unwrap_or(json))]);
        result.structured_content = Some(structured);
        result.is_error = Some(!ok);
        // Freeing the rows the trimmer cut can be slow; do it off the response path.
        if !leftovers.is_empty() {
            tokio::task::spawn_blocking(move || drop(leftovers));
        }
        result.with_meta(Some(meta))
    }
}

impl ServerHandler for EnvelopeServer {
    fn get_info(&self) -> ServerConfig {
        let config = &self.inner.config;
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                config.name.clone(),
                config.version.clone(),
            ));
        if let Some(instructions) = &config.instructions {
            info = info.with_instructions(instructions.clone());
        }
        // Where an agent looks first: the tags it may gate on, before any call.
        if !self.capabilities.tags.is_empty() {
            let mut meta = MetaObject::new();
            meta.insert(
                self.inner.keys.capabilities.clone(),
                self.capabilities.wire.clone(),
            );
            info.meta = Some(meta);
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.listing.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.inner.tools.get(&request.name) else {
            let available: Vec<&str> = self.inner.tools.names().collect();
            // The name is the client's, of any length: only its start is echoed.
            let echoed: String = request.name.chars().take(ECHOED_NAME_CHARS).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{echoed}`"),
                // wire: an MCP error's data, not an envelope
                Some(json!({ "tool": echoed, "available": available })),
            ));
        };
        let parts = context.extensions.get::<http::request::Parts>();
        let header = |name: &str| {
            parts
                .and_then(|parts| parts.headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let client_request_id = header(REQUEST_ID_HEADER);
        let session = header("mcp-session-id");
        // Never the credentials themselves: tool code can read the principal.
        let principal = header("authorization").map(|credentials| principal_of(&credentials));
        let progress = context
            .meta
            .get_progress_token()
            .filter(reportable)
            .map(|token| PeerProgress::new(context.peer.clone(), token));
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let extras = CallExtras {
            client_request_id,
            session,
            principal,
            progress: progress
                .clone()
                .map(|progress| progress as Arc<dyn ProgressSink>),
            cancelled: Some(Arc::new(TokenCancellation(context.ct.clone()))),
            #[cfg(feature = "otel")]
            trace: crate::otel::TraceContext::of(parts.map(|parts| &parts.headers), &context.meta),
            unbudgeted_ceiling: None,
        };
        let answer = self.call_with(tool, arguments, extras).await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        Ok(self.result(answer).into())
    }
}

#[cfg(feature = "stdio")]
impl EnvelopeServer {
    /// Serves over standard input and output until the client disconnects. Every line gets an
    /// answer (see [`EnvelopeServer::serve_lines`]).
    pub async fn serve_stdio(self) -> Result<(), crate::McpError> {
        self.serve_lines(tokio::io::stdin(), tokio::io::stdout())
            .await
    }
}

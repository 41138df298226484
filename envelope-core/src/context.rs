//! What a tool knows about the call it is serving: the request id, the per-call controls (see
//! [`crate::controls`]), and which modules the server has switched off.

use std::any::{Any, TypeId, type_name};
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use schemars::JsonSchema;

use serde::Serialize;

use crate::caller::{Caller, Principal};
use crate::client::{
    ClientChannel, ClientError, ClientFeature, Elicited, LogLevel, Sampled, SamplingRequest,
};
use crate::controls::Controls;
use crate::meta::IndexStatus;
use crate::paging_core::Binding;
use crate::payload::ResponseSizer;
use crate::request_id::RequestId;
use crate::tool_error::ToolError;

/// The `code` of the error [`ToolContext::state`] answers when the server was not configured
/// with the state a tool asks for: `unavailable`, not retryable (the server's configuration
/// will not change between retries).
pub const NOT_CONFIGURED: &str = crate::fields::code::NOT_CONFIGURED;

/// What a server shares with its tools, one value per type: a workspace, a database pool, the
/// continuation keys. Cheap to clone (the values are behind `Arc`s); a server builds it once
/// and hands it to every call with [`ToolContext::with_states`].
#[derive(Clone, Default)]
pub struct States {
    by_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
}

impl States {
    /// No state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds `value`, replacing any earlier value of the same type.
    pub fn insert<T: Any + Send + Sync>(&mut self, value: Arc<T>) {
        self.by_type.insert(TypeId::of::<T>(), value);
    }

    /// The shared value of type `T`, if there is one.
    pub(crate) fn get_shared<T: Any + Send + Sync>(&self) -> Option<Arc<T>> {
        let value = Arc::clone(self.by_type.get(&TypeId::of::<T>())?);
        value.downcast().ok()
    }

    /// The value of type `T`, if there is one.
    pub fn get<T: Any + Send + Sync>(&self) -> Option<&T> {
        self.by_type
            .get(&TypeId::of::<T>())
            .and_then(|value| value.downcast_ref())
    }

    /// How many values there are.
    pub fn len(&self) -> usize {
        self.by_type.len()
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }
}

impl fmt::Debug for States {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("States").field("len", &self.len()).finish()
    }
}

/// A future that resolves once a call is cancelled (see [`Cancellation::until_cancelled`]).
pub type UntilCancelled = Pin<Box<dyn Future<Output = ()> + Send + 'static>>;

/// Tells a tool whether its caller gave up. The transport implements it over its own signal
/// (MCP's cancellation token); an `AtomicBool` works too.
pub trait Cancellation: Send + Sync {
    /// Whether the call was cancelled.
    fn is_cancelled(&self) -> bool;

    /// A future that resolves once the call is cancelled, for a signal that can wake whoever
    /// waits on it (a cancellation token); `None`, the default, for one that can only be
    /// looked at (an `AtomicBool`), which a waiter then checks with
    /// [`Cancellation::is_cancelled`] as it goes.
    fn until_cancelled(&self) -> Option<UntilCancelled> {
        None
    }
}

impl Cancellation for AtomicBool {
    fn is_cancelled(&self) -> bool {
        self.load(Ordering::Relaxed)
    }
}

/// Where a tool's progress reports go. The transport implements it (MCP sends
/// `notifications/progress` when the request carried a progress token); core only calls it.
pub trait ProgressSink: Send + Sync {
    /// Reports `progress` out of `total` (when known), with an optional message.
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>);
}

/// The call a tool is serving. Cheap to clone; the server builds one per call.
#[derive(Clone, Default)]
pub struct ToolContext {
    request_id: RequestId,
    client_request_id: Option<Arc<str>>,
    index: Option<IndexStatus>,
    session: Option<Arc<str>>,
    caller: Option<Arc<Caller>>,
    // `None` (every module on) costs no allocation on the per-call path.
    disabled_modules: Option<Arc<BTreeSet<String>>>,
    controls: Controls,
    // `Some` once a server's door split the controls off the arguments (with what the answer
    // warns of): the tool's entry then reads neither the controls nor the module gate again.
    decided: Option<Vec<crate::notice::Notice>>,
    // The server's dialect; a call's `dialect` control overrides it, naming one of `offered`.
    dialect: crate::dialect::Dialect,
    offered: crate::dialect::DialectSet,
    // What each dialect can write of the controls: the server's dialect stage installs it.
    expressible: crate::expressible::Expressible,
    states: Arc<States>,
    progress: Option<Arc<dyn ProgressSink>>,
    cancelled: Option<Arc<dyn Cancellation>>,
    sizer: Option<Arc<dyn ResponseSizer>>,
    client: Option<Arc<dyn ClientChannel>>,
    tool: Option<std::borrow::Cow<'static, str>>,
}

impl fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolContext")
            .field(crate::fields::meta::REQUEST_ID, &self.request_id)
            .field(
                crate::fields::meta::CLIENT_REQUEST_ID,
                &self.client_request_id,
            )
            .field("index", &self.index)
            .field("session", &self.session)
            .field("caller", &self.caller)
            .field("disabled_modules", &self.disabled_modules)
            .field("controls", &self.controls)
            .field("dialect", &self.dialect)
            .field("offered", &self.offered)
            .field("expressible", &self.expressible)
            .field("states", &self.states.len())
            .field("reports_progress", &self.progress.is_some())
            .field("cancelled", &self.is_cancelled())
            .field("has_sizer", &self.sizer.is_some())
            .field("has_client", &self.client.is_some())
            .field(crate::fields::meta::TOOL, &self.tool)
            .finish()
    }
}

impl ToolContext {
    /// A context with a fresh request id, every module enabled and default controls.
    pub fn new() -> Self {
        Self::default()
    }

    /// Uses the client's request id when it is a valid ULID, a fresh one otherwise. Any other
    /// id that is safe to log (see [`RequestId::client_correlation`]) is kept beside it and
    /// stamped as `meta.client_request_id`.
    #[must_use]
    pub fn with_client_request_id(mut self, raw: Option<&str>) -> Self {
        // The context already has a fresh id: keep it unless the client's replaces it.
        if let Some(id) = raw.and_then(|raw| RequestId::parse(raw).ok()) {
            self.request_id = id;
        }
        self.client_request_id = RequestId::client_correlation(raw).map(Arc::from);
        self
    }

    /// The state of the index the server answers from, stamped as
    /// `meta.schema_version_at_index` and `meta.binary_drift_warning`. A tool reads it back with
    /// [`ToolContext::index_status`] to say `stale_index` when an empty result may be the
    /// index's fault.
    #[must_use]
    pub fn with_index_status(mut self, status: Option<IndexStatus>) -> Self {
        self.index = status;
        self
    }

    /// The client's own correlation id, when it sent one that is not a ULID and is safe to log.
    pub fn client_request_id(&self) -> Option<&str> {
        self.client_request_id.as_deref()
    }

    /// The state of the index the server answers from, when the server reports one.
    pub fn index_status(&self) -> Option<&IndexStatus> {
        self.index.as_ref()
    }

    /// Names the session the call belongs to (over streamable HTTP, its `Mcp-Session-Id`).
    #[must_use]
    pub fn with_session(mut self, session: impl Into<Arc<str>>) -> Self {
        self.session = Some(session.into());
        self
    }

    /// Names who is calling, as the transport authenticated them: the principal its access
    /// token names and the scopes it grants. The server then refuses a call to a tool whose
    /// scopes the caller lacks ([`insufficient_scope`](crate::insufficient_scope)), and
    /// continuations and target refs are bound to the principal, not to the session or the
    /// token, so a page outlives a session, a restart, a replica and a refreshed token, yet no
    /// other principal can resume it.
    #[must_use]
    pub fn with_caller(mut self, caller: Caller) -> Self {
        self.caller = Some(Arc::new(caller));
        self
    }

    /// Who is calling and what they may do, when the transport authenticated them: see
    /// [`ToolContext::with_caller`].
    pub fn caller(&self) -> Option<&Caller> {
        self.caller.as_deref()
    }

    /// Who is calling, when the transport authenticated them.
    pub fn principal(&self) -> Option<&Principal> {
        self.caller().map(Caller::principal)
    }

    /// The caller as continuations and target refs bind it: its principal's
    /// [`binding`](Principal::binding), empty without one (a token is then a bearer capability).
    pub fn caller_binding(&self) -> &str {
        self.principal().map(Principal::binding).unwrap_or_default()
    }

    /// Switches modules off: their tools answer `module_disabled`.
    #[must_use]
    pub fn with_disabled_modules(mut self, modules: Arc<BTreeSet<String>>) -> Self {
        self.disabled_modules = (!modules.is_empty()).then_some(modules);
        self
    }

    /// Adds a value of the server's state, one per type; a tool reads it back with
    /// [`ToolContext::state`].
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, state: Arc<T>) -> Self {
        Arc::make_mut(&mut self.states).insert(state);
        self
    }

    /// Shares the server's whole state, as a server holding it for every call does.
    #[must_use]
    pub fn with_states(mut self, states: Arc<States>) -> Self {
        self.states = states;
        self
    }

    /// Sends progress reports somewhere.
    #[must_use]
    pub fn with_progress(mut self, sink: Arc<dyn ProgressSink>) -> Self {
        self.progress = Some(sink);
        self
    }

    /// Lets the transport signal cancellation.
    #[must_use]
    pub fn with_cancellation(mut self, signal: Arc<dyn Cancellation>) -> Self {
        self.cancelled = Some(signal);
        self
    }

    /// Sizes what the tool builds against the call's response budget with `sizer`: what
    /// [`ToolContext::response_budget`] and [`ToolContext::response_size`] answer. A transport
    /// that trims installs the budget stage's.
    #[must_use]
    pub fn with_sizer(mut self, sizer: Arc<dyn ResponseSizer>) -> Self {
        self.sizer = Some(sizer);
        self
    }

    /// Lets the tool make requests of its client (elicitation, sampling, logging) through
    /// `channel`; the transport sets it.
    #[must_use]
    pub fn with_client(mut self, channel: Arc<dyn ClientChannel>) -> Self {
        self.client = Some(channel);
        self
    }

    /// Asks the user `message`, for a `T`: its JSON Schema (from `schemars`, subschemas
    /// inlined) is what the client shows, and the accepted content is decoded into a `T`.
    ///
    /// Accepted, declined and cancelled are each an [`Elicited`] outcome; a client that cannot
    /// ask answers [`ClientError::Unavailable`], which `?` turns into an `unavailable` error
    /// with code [`ELICITATION_UNAVAILABLE`](crate::ELICITATION_UNAVAILABLE).
    ///
    /// ```
    /// use std::future::Future as _;
    ///
    /// use envelope_core::{ToolContext, ToolError};
    ///
    /// #[derive(serde::Deserialize, schemars::JsonSchema)]
    /// struct Confirm {
    ///     /// Delete the 3 files?
    ///     confirm: bool,
    /// }
    ///
    /// // No client is connected here, so asking is unavailable, at once: one poll answers.
    /// let ctx = ToolContext::new();
    /// let asking = std::pin::pin!(ctx.elicit::<Confirm>("Delete the 3 files?"));
    /// let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    /// let std::task::Poll::Ready(asked) = asking.poll(&mut cx) else {
    ///     panic!("nothing to wait for without a client");
    /// };
    /// let error = ToolError::from(asked.err().expect("no client"));
    /// assert_eq!(error.code(), Some(envelope_core::ELICITATION_UNAVAILABLE));
    /// ```
    pub async fn elicit<T: JsonSchema + serde::de::DeserializeOwned>(
        &self,
        message: impl Into<String>,
    ) -> Result<Elicited<T>, ClientError> {
        let schema = crate::client::elicitation_schema::<T>();
        let answer = self.elicit_with_schema(message, schema).await?;
        match answer {
            Elicited::Accepted(content) => serde_json::from_value(content)
                .map(Elicited::Accepted)
                .map_err(|error| ClientError::InvalidResponse(error.to_string())),
            Elicited::Declined => Ok(Elicited::Declined),
            Elicited::Cancelled => Ok(Elicited::Cancelled),
        }
    }

    /// Asks the user `message`, for content matching `schema` as written (MCP's flat form: an
    /// object of string, number, integer, boolean and enum fields, with defaults); the accepted
    /// content is returned as the client sent it, once checked against `schema`: content that
    /// does not fit is [`ClientError::InvalidResponse`].
    pub async fn elicit_with_schema(
        &self,
        message: impl Into<String>,
        schema: serde_json::Value,
    ) -> Result<Elicited<serde_json::Value>, ClientError> {
        match &self.client {
            Some(client) => client.elicit(message.into(), schema).await,
            None => Err(ClientError::Unavailable(ClientFeature::Elicitation)),
        }
    }

    /// Asks the client's model for a completion; a client that does not offer sampling
    /// answers [`ClientError::Unavailable`].
    pub async fn sample(&self, request: SamplingRequest) -> Result<Sampled, ClientError> {
        match &self.client {
            Some(client) => client.sample(request).await,
            None => Err(ClientError::Unavailable(ClientFeature::Sampling)),
        }
    }

    /// Sends the client a request another server made, as it made it, and returns the
    /// client's result unread ([`ClientChannel::relay`]): for a tool that passes on what its own
    /// upstream asks (a proxy), whatever content the request carries. A tool that asks for
    /// itself uses [`ToolContext::elicit`], [`ToolContext::sample`] or [`ToolContext::roots`],
    /// which write the request and read the answer. Without a client,
    /// [`ClientError::Unavailable`].
    pub async fn relay(
        &self,
        feature: ClientFeature,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, ClientError> {
        match &self.client {
            Some(client) => client.relay(feature, params).await,
            None => Err(ClientError::Unavailable(feature)),
        }
    }

    /// Whether the call's client declared `feature` (so asking for it is not refused
    /// [`ClientError::Unavailable`]); `false` without a client.
    pub fn offers(&self, feature: ClientFeature) -> bool {
        self.client
            .as_ref()
            .is_some_and(|client| client.offers(feature))
    }

    /// What the call's client declared of `feature`, as it declared it (MCP's capability
    /// object, sub-capabilities included: which modes of elicitation, whether a sampling
    /// may use tools); `None` when it did not, or without a client. A server that passes
    /// a request on to another (a proxy) tells that one what the client can answer from
    /// this.
    pub fn declared(&self, feature: ClientFeature) -> Option<serde_json::Value> {
        self.client
            .as_ref()
            .and_then(|client| client.declared(feature))
    }

    /// Asks the client for its roots (the directories or files it works in); a client that
    /// does not tell them answers [`ClientError::Unavailable`], which `?` turns into an
    /// `unavailable` error with code [`ROOTS_UNAVAILABLE`](crate::ROOTS_UNAVAILABLE).
    pub async fn roots(&self) -> Result<Vec<crate::client::Root>, ClientError> {
        match &self.client {
            Some(client) => client.roots().await,
            None => Err(ClientError::Unavailable(ClientFeature::Roots)),
        }
    }

    /// Logs `data` to the client at `level`, from the tool (the logger is its name): sent only
    /// when the client asked for messages at that level or above (`logging/setLevel`), a no-op
    /// without a client. A value that does not serialize is sent as its error.
    pub fn log(&self, level: LogLevel, data: impl Serialize) {
        if let Some(client) = &self.client {
            let data = serde_json::to_value(data)
                .unwrap_or_else(|error| serde_json::Value::String(error.to_string()));
            client.log(level, self.tool.as_deref().unwrap_or_default(), data);
        }
    }

    /// The least severe level the client wants log messages at (what [`ToolContext::log`]
    /// sends); `None` when it wants none, or there is no client. A tool that relays another
    /// server's messages asks that server for this much.
    pub fn log_level(&self) -> Option<LogLevel> {
        self.client.as_ref().and_then(|client| client.log_level())
    }

    /// This call's context, asking its client under `key` where the protocol names what a
    /// call asks: on MCP 2026-07-28 every elicitation, sampling or roots request made through
    /// the returned context ([`ToolContext::elicit`], [`ToolContext::sample`],
    /// [`ToolContext::roots`], a relayed one) is the `inputRequests` entry `key`, made unique
    /// within the call by a suffix (`-2`, `-3`, …) when an earlier ask took it, instead of
    /// `elicit-1`, `sample-1`, …. Elsewhere, the same
    /// context. For a tool that relays another server's asks under the names it gave them.
    ///
    /// ```
    /// # async fn run(ctx: envelope_core::ToolContext) {
    /// let answer = ctx
    ///     .asking_as("user_name")
    ///     .elicit_with_schema("Your name?", serde_json::json!({"type": "object"}))
    ///     .await;
    /// # }
    /// ```
    pub fn asking_as(&self, key: &str) -> ToolContext {
        let mut ctx = self.clone();
        if let Some(keyed) = self.client.as_ref().and_then(|client| client.keyed(key)) {
            ctx.client = Some(keyed);
        }
        ctx
    }

    /// The name of the tool being called, once the call has started.
    pub fn tool_name(&self) -> Option<&str> {
        self.tool.as_deref()
    }

    /// What a continuation of this call is bound to: the tool, the caller's principal (empty
    /// without one; never the transport session, which a restart or a replica changes) and
    /// `request`, the call's arguments. Add the scope and the snapshot of what is paged with
    /// [`Binding::with_scope`] and [`Binding::with_snapshot`].
    ///
    /// Without a principal a token is a bearer capability for that one query: whoever holds
    /// it can fetch the next page of exactly that request, nothing else.
    pub fn binding<'a>(&'a self, request: &'a serde_json::Value) -> Binding<'a> {
        Binding::new(
            self.tool.as_deref().unwrap_or_default(),
            self.caller_binding(),
            request,
        )
        .with_dialect(self.dialect())
        .with_continuation_field(
            self.controls
                .names
                .wire(crate::paging_core::DEFAULT_CONTINUATION_FIELD),
        )
    }

    /// This context for a call of the tool named `name`: what [`tool_name`](Self::tool_name)
    /// answers, and what a continuation it seals is bound to. A server's door names every
    /// tool it runs; a `#[tool]` names itself.
    #[must_use]
    pub fn with_tool_name(mut self, name: std::borrow::Cow<'static, str>) -> Self {
        self.set_tool(name);
        self
    }

    pub(crate) fn set_tool(&mut self, tool: std::borrow::Cow<'static, str>) {
        self.tool = Some(tool);
    }

    /// The budget this call's payload will be trimmed to, in token-normalized characters
    /// (about four per token); `None` when the server does not trim.
    ///
    /// A tool that builds rows can stop building them once what it built is well past this:
    /// the trimmer would cut the rest anyway. Say so in the answer (a page cut by
    /// `budget_limit`, with a continuation), so the caller can fetch what was not built.
    pub fn response_budget(&self) -> Option<usize> {
        self.sizer.as_deref().map(ResponseSizer::budget_chars)
    }

    /// What `value` will take of [`ToolContext::response_budget`] once sent, measured as the
    /// budget stage measures (escapes and the token estimate included); `None` when the
    /// server does not trim. A tool that stops building rows at the budget sums these.
    pub fn response_size<T: serde::Serialize>(&self, value: &T) -> Option<usize> {
        self.sizer.as_deref()?.size_of(value)
    }

    /// The server's state of type `T`: a workspace, a pool, the
    /// [`Continuations`](crate::paging::Continuations) a paged tool seals its tokens with.
    ///
    /// A server not configured with a `T` gets the one standard answer, which `?` passes on:
    /// an `unavailable` error with code [`NOT_CONFIGURED`], not retryable, naming the type.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use envelope_core::{Category, ToolContext};
    ///
    /// struct Workspace { root: String }
    ///
    /// let ctx = ToolContext::new().with_state(Arc::new(Workspace { root: "/srv".into() }));
    /// assert_eq!(ctx.state::<Workspace>().map(|w| w.root.as_str()).ok(), Some("/srv"));
    ///
    /// let missing = ToolContext::new().state::<Workspace>().err().expect("not configured");
    /// assert_eq!(missing.category(), Category::Unavailable);
    /// assert_eq!(missing.code(), Some(envelope_core::NOT_CONFIGURED));
    /// ```
    pub fn state<T: Any + Send + Sync>(&self) -> Result<&T, ToolError> {
        self.states.get::<T>().ok_or_else(not_configured::<T>)
    }

    /// The server's state of type `T`, shared: for what outlives the call's borrow.
    pub(crate) fn shared_state<T: Any + Send + Sync>(&self) -> Result<Arc<T>, ToolError> {
        self.states
            .get_shared::<T>()
            .ok_or_else(not_configured::<T>)
    }

    /// Whether anybody listens to this call's progress (its client sent a progress token): a
    /// tool that relays another's progress asks for it only then.
    pub fn reports_progress(&self) -> bool {
        self.progress.is_some()
    }

    /// Reports progress; a no-op when nobody listens.
    pub fn report_progress(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        if let Some(sink) = &self.progress {
            sink.report(progress, total, message);
        }
    }

    /// Whether the caller cancelled the call; long tools check it between steps.
    pub fn is_cancelled(&self) -> bool {
        self.cancelled
            .as_ref()
            .is_some_and(|signal| signal.is_cancelled())
    }

    /// A future that resolves once the call is cancelled, for a tool that waits on something
    /// else meanwhile (`select!` it against the work); `None` when the transport's signal can
    /// only be looked at, and [`ToolContext::is_cancelled`] is the way to know. A call nothing
    /// can cancel gets a future that never resolves.
    ///
    /// ```
    /// # async fn run(ctx: envelope_core::ToolContext) {
    /// if let Some(cancelled) = ctx.until_cancelled() {
    ///     cancelled.await; // the caller gave up: stop what the tool started
    /// }
    /// # }
    /// ```
    pub fn until_cancelled(&self) -> Option<UntilCancelled> {
        match &self.cancelled {
            Some(signal) => signal.until_cancelled(),
            None => Some(Box::pin(std::future::pending())),
        }
    }

    /// The call's request id, stamped as `meta.request_id`: quote it in logs to correlate.
    pub fn request_id(&self) -> &RequestId {
        &self.request_id
    }

    /// The session, if the transport has one.
    pub fn session(&self) -> Option<&str> {
        self.session.as_deref()
    }

    /// The per-call controls the caller passed.
    pub fn controls(&self) -> &Controls {
        &self.controls
    }

    /// Whether the server switched `module` off.
    pub fn is_module_disabled(&self, module: &str) -> bool {
        self.disabled_modules
            .as_ref()
            .is_some_and(|modules| modules.contains(module))
    }

    /// Answers in `dialect` unless the call's `dialect` control asks for another: what a
    /// server sets from its configuration.
    #[must_use]
    pub fn with_dialect(mut self, dialect: crate::dialect::Dialect) -> Self {
        self.dialect = dialect;
        self
    }

    /// The dialects a call may ask for with its `dialect` control (every one unless set): a
    /// server offers its own and those its listing describes.
    #[must_use]
    pub fn with_offered_dialects(mut self, offered: crate::dialect::DialectSet) -> Self {
        self.offered = offered;
        self
    }

    /// What each dialect can write of the per-call controls, as the server's dialect stage
    /// says (`envelope_dialect::EXPRESSIBLE`); without one, only the envelope's own wire writes
    /// a control's other values ([`Expressible::ENVELOPE_ONLY`](crate::Expressible::ENVELOPE_ONLY)).
    #[must_use]
    pub fn with_expressible(mut self, expressible: crate::expressible::Expressible) -> Self {
        self.expressible = expressible;
        self
    }

    /// What each dialect can write of the per-call controls.
    pub fn expressible(&self) -> crate::expressible::Expressible {
        self.expressible
    }

    /// The server's dialect, those a call may ask for and what each can write: what the
    /// controls are split against.
    pub fn dialects(&self) -> crate::expressible::Dialects {
        crate::expressible::Dialects {
            dialect: self.dialect,
            offered: self.offered,
            expressible: self.expressible,
        }
    }

    /// The dialects a call may ask for.
    pub fn offered_dialects(&self) -> crate::dialect::DialectSet {
        self.offered
    }

    /// The dialect this call answers in: its `dialect` control, else the server's. A
    /// continuation is bound to it, so that a page resumes in the dialect it started in.
    pub fn dialect(&self) -> crate::dialect::Dialect {
        self.controls.dialect.unwrap_or(self.dialect)
    }

    pub(crate) fn set_controls(&mut self, controls: Controls) {
        self.controls = controls;
    }

    /// The controls a server's door split off this call's arguments and checked (with
    /// [`split_controls`](crate::stage::split_controls)), its module gate passed, and what the
    /// answer warns of: the tool's entry takes the arguments it is given as its own, and
    /// neither splits nor gates again.
    #[must_use]
    pub fn with_decided_controls(
        mut self,
        controls: Controls,
        notices: Vec<crate::notice::Notice>,
    ) -> Self {
        self.controls = controls;
        self.decided = Some(notices);
        self
    }

    /// Whether a server's door decided this call's controls.
    pub(crate) fn controls_decided(&self) -> bool {
        self.decided.is_some()
    }

    /// What the door found to warn of, once; `None` when no door decided the controls.
    pub(crate) fn take_decided(&mut self) -> Option<Vec<crate::notice::Notice>> {
        self.decided.take()
    }
}

/// The one answer when a tool needs state the server was not configured with.
fn not_configured<T>() -> ToolError {
    ToolError::unavailable(format!(
        "this server is not configured with the `{}` this tool needs",
        type_name::<T>()
    ))
    .with_code(NOT_CONFIGURED)
    .with_retryable(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_progress_and_cancellation_reach_the_tool() {
        struct Counter(std::sync::Mutex<Vec<f64>>);
        impl ProgressSink for Counter {
            fn report(&self, progress: f64, _: Option<f64>, _: Option<&str>) {
                self.0.lock().expect("no poisoning").push(progress);
            }
        }
        let sink = Arc::new(Counter(std::sync::Mutex::new(Vec::new())));
        let flag = Arc::new(AtomicBool::new(false));
        let ctx = ToolContext::new()
            .with_state(Arc::new(String::from("root")))
            .with_progress(sink.clone())
            .with_cancellation(flag.clone() as Arc<dyn Cancellation>);
        assert_eq!(ctx.state::<String>().map(String::as_str).ok(), Some("root"));
        let missing = ctx.state::<u32>().expect_err("no u32 was configured");
        assert_eq!(missing.code(), Some(NOT_CONFIGURED));
        assert!(!missing.retryable());
        // One value per type: a second type joins the first.
        let ctx = ctx.with_state(Arc::new(7u32));
        assert_eq!(ctx.state::<u32>().ok(), Some(&7));
        assert_eq!(ctx.state::<String>().map(String::as_str).ok(), Some("root"));
        ctx.report_progress(1.0, Some(2.0), None);
        assert_eq!(*sink.0.lock().expect("no poisoning"), [1.0]);
        assert!(!ctx.is_cancelled());
        flag.store(true, Ordering::Relaxed);
        assert!(ctx.is_cancelled());
    }
}

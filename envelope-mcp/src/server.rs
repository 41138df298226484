//! The MCP server: tool listing and calls, mapped onto the envelope (DESIGN §12).

use std::any::Any;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use envelope_budget::{BudgetEncoder, BudgetPolicy, Prepared, prepare};
use envelope_core::__private::{meta_stamp, retain_next_actions};
use envelope_core::{
    Cancellation, Capability, Continuations, Controls, Envelope, ProgressSink, Tool, ToolContext,
    Toolset,
};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ProgressNotificationParam, ProgressToken,
    ServerCapabilities, ServerConfig, ToolAnnotations,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Map, Value, json};

/// The `_meta` prefix this project owns, on results and tool listings.
pub const META_PREFIX: &str = "envelope/";

/// How an [`EnvelopeServer`] presents itself and shapes its answers.
#[derive(Clone)]
pub struct EnvelopeConfig {
    name: String,
    version: String,
    instructions: Option<String>,
    budget: BudgetPolicy,
    disabled_modules: BTreeSet<String>,
    capabilities: Option<Vec<Capability>>,
    state: Option<Arc<dyn Any + Send + Sync>>,
    continuations: Option<Arc<Continuations>>,
}

impl std::fmt::Debug for EnvelopeConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvelopeConfig")
            .field("name", &self.name)
            .field("version", &self.version)
            .field("budget", &self.budget)
            .field("disabled_modules", &self.disabled_modules)
            .field("capabilities", &self.capabilities)
            .field("continuations", &self.continuations)
            .finish_non_exhaustive()
    }
}

impl EnvelopeConfig {
    /// A server called `name` at `version`, with the default budget, every module on, and no
    /// capability stamp.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        EnvelopeConfig {
            name: name.into(),
            version: version.into(),
            instructions: None,
            budget: BudgetPolicy::default(),
            disabled_modules: BTreeSet::new(),
            capabilities: None,
            state: None,
            continuations: None,
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

    /// Stamps these capability tags on every response's `meta.capabilities`.
    #[must_use]
    pub fn with_capabilities(mut self, capabilities: Vec<Capability>) -> Self {
        self.capabilities = Some(capabilities);
        self
    }

    /// The keys tools seal and open continuation tokens with ([`ToolContext::continuations`]).
    /// Servers that share the keys accept each other's tokens.
    #[must_use]
    pub fn with_continuations(mut self, continuations: Continuations) -> Self {
        self.continuations = Some(Arc::new(continuations));
        self
    }

    /// State every tool can read with [`ToolContext::state`].
    #[must_use]
    pub fn with_state<T: Any + Send + Sync>(mut self, state: Arc<T>) -> Self {
        self.state = Some(state);
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
}

/// Serves a [`Toolset`] over MCP. Cheap to clone; clones share the tools.
#[derive(Clone)]
pub struct EnvelopeServer {
    inner: Arc<Inner>,
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

fn listing(tool: &dyn Tool) -> rmcp::model::Tool {
    let spec = tool.spec();
    let input = object(tool.input_schema().to_value());
    let output = object(tool.output_schema().to_value());
    let mut meta = MetaObject::new();
    meta.insert(format!("{META_PREFIX}tier"), json!(spec.tier));
    if let Some(layer) = spec.layer {
        meta.insert(format!("{META_PREFIX}layer"), json!(layer));
    }
    let annotations = ToolAnnotations::new()
        .read_only(spec.read_only)
        .destructive(spec.destructive)
        .idempotent(spec.idempotent)
        .open_world(spec.open_world);
    let mut listed = rmcp::model::Tool::new(spec.name, spec.description, Arc::new(input))
        .with_raw_output_schema(Arc::new(output))
        .with_annotations(annotations)
        .with_meta(meta);
    if let Some(title) = spec.title {
        listed = listed.with_title(title);
    }
    listed
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

/// MCP's cancellation token, read by the tool through [`ToolContext::is_cancelled`].
struct TokenCancellation(tokio_util::sync::CancellationToken);

impl Cancellation for TokenCancellation {
    fn is_cancelled(&self) -> bool {
        self.0.is_cancelled()
    }
}

/// What one call needs from the transport around it.
#[derive(Default)]
pub(crate) struct CallExtras {
    pub(crate) client_request_id: Option<String>,
    /// The transport's session (HTTP's `Mcp-Session-Id`), which continuations are bound to.
    pub(crate) session: Option<String>,
    pub(crate) progress: Option<Arc<dyn ProgressSink>>,
    pub(crate) cancelled: Option<Arc<dyn Cancellation>>,
}

impl EnvelopeServer {
    /// A server for `tools`, configured by `config`.
    pub fn new(tools: Toolset, config: EnvelopeConfig) -> Self {
        let listing = tools.iter().map(listing).collect();
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
            }),
        }
    }

    /// The tools as MCP lists them: sorted by name.
    pub fn tools(&self) -> &[rmcp::model::Tool] {
        &self.inner.listing
    }

    /// Calls a tool outside any MCP session, as the `call` command of a server binary does.
    /// `None` when no tool has that name.
    pub async fn call(&self, name: &str, arguments: Value) -> Option<Prepared> {
        self.call_with(name, arguments, CallExtras::default()).await
    }

    pub(crate) async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        extras: CallExtras,
    ) -> Option<Prepared> {
        let tool = self.inner.tools.get(name)?;
        let spec = tool.spec();
        let config = &self.inner.config;
        let controls = Controls::from_arguments(&arguments);
        let mut ctx = ToolContext::new()
            .with_client_request_id(extras.client_request_id.as_deref())
            .with_disabled_modules(Arc::clone(&self.inner.disabled));
        if let Some(state) = &config.state {
            ctx = ctx.with_shared_state(Arc::clone(state));
        }
        if let Some(continuations) = &config.continuations {
            ctx = ctx.with_continuations(Arc::clone(continuations));
        }
        if let Some(session) = extras.session {
            ctx = ctx.with_session(session);
        }
        if let Some(progress) = extras.progress {
            ctx = ctx.with_progress(progress);
        }
        if let Some(cancelled) = extras.cancelled {
            ctx = ctx.with_cancellation(cancelled);
        }
        if let Some(budget) = config.budget.budget_for(spec.budget, &Value::Null) {
            // Rows that could never be sent are not even converted.
            ctx = ctx.with_encoder(Arc::new(BudgetEncoder::new(
                budget,
                config.budget.estimator,
            )));
        }
        let mut envelope: Envelope<Value> = tool.call(arguments, ctx).await;
        self.drop_unrunnable_actions(&mut envelope, spec.name);
        if let Some(capabilities) = &config.capabilities {
            meta_stamp(&mut envelope).capabilities(capabilities.clone());
        }
        Some(prepare(envelope, &controls, spec.budget, &config.budget))
    }

    /// Drops suggested calls this server cannot run: to a tool it does not serve, or with
    /// arguments that fail that tool's input schema. Logs how many, never what: arguments can
    /// carry user data.
    fn drop_unrunnable_actions(&self, envelope: &mut Envelope<Value>, tool: &str) {
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

    fn result(prepared: Prepared) -> CallToolResult {
        let ok = prepared.structured["ok"] == true;
        let mut meta = MetaObject::new();
        let stamped = &prepared.structured["meta"];
        meta.insert(
            format!("{META_PREFIX}request_id"),
            stamped["request_id"].clone(),
        );
        if let Some(tier) = stamped.get("complexity_tier") {
            meta.insert(format!("{META_PREFIX}tier"), tier.clone());
        }
        let Prepared {
            structured,
            json,
            toon,
            leftovers,
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
        let name = request.name.to_string();
        if self.inner.tools.get(&name).is_none() {
            let available: Vec<&str> = self.inner.tools.names().collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                Some(json!({ "tool": name, "available": available })),
            ));
        }
        let parts = context.extensions.get::<http::request::Parts>();
        let header = |name: &str| {
            parts
                .and_then(|parts| parts.headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let client_request_id = header(crate_request_id_header());
        let session = header("mcp-session-id");
        let progress = context
            .meta
            .get_progress_token()
            .map(|token| PeerProgress::new(context.peer.clone(), token));
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let extras = CallExtras {
            client_request_id,
            session,
            progress: progress
                .clone()
                .map(|progress| progress as Arc<dyn ProgressSink>),
            cancelled: Some(Arc::new(TokenCancellation(context.ct.clone()))),
        };
        let prepared = self.call_with(&name, arguments, extras).await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        match prepared {
            Some(prepared) => Ok(Self::result(prepared).into()),
            // Checked above; a toolset does not change while serving.
            None => Err(ErrorData::invalid_params(
                format!("unknown tool `{name}`"),
                None,
            )),
        }
    }
}

fn crate_request_id_header() -> &'static str {
    "x-request-id"
}

#[cfg(feature = "stdio")]
impl EnvelopeServer {
    /// Serves over standard input and output until the client disconnects.
    pub async fn serve_stdio(self) -> Result<(), crate::McpError> {
        use rmcp::ServiceExt;
        let running = self
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| crate::McpError::Session(error.to_string()))?;
        running
            .waiting()
            .await
            .map_err(|error| crate::McpError::Session(error.to_string()))?;
        Ok(())
    }
}

//! The MCP mapping: a call's answer as an MCP result, with its `_meta` keys, and the
//! [`ServerHandler`] rmcp drives: `initialize`, `tools/list`, `tools/call` and
//! `logging/setLevel` here; everything else handed to the composed rmcp handler, if any.
//!
//! rmcp marks logging deprecated by SEP-2577, for the revisions after 2025-11-25; the revisions
//! this server speaks still have `logging/setLevel`.
#![allow(deprecated)]

use std::sync::Arc;

use envelope_budget::Prepared;
use envelope_core::meta_keys;
use envelope_core::stage::ProgressSink;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CompleteRequestMethod,
    CompleteRequestParams, CompleteResult, ContentBlock, CustomNotification, CustomRequest,
    CustomResult, GetPromptRequestMethod, GetPromptRequestParams, GetPromptResponse,
    Implementation, InitializeRequestParams, InitializeResult, JsonObject,
    ListPromptsRequestMethod, ListPromptsResult, ListResourceTemplatesRequestMethod,
    ListResourceTemplatesResult, ListResourcesRequestMethod, ListResourcesResult, ListToolsResult,
    MetaObject, PaginatedRequestParams, ReadResourceRequestMethod, ReadResourceRequestParams,
    ReadResourceResponse, ServerCapabilities, ServerConfig, SetLevelRequestParams,
    SubscribeRequestMethod, SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestMethod,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::EnvelopeServer;
use super::call::Answer;
use super::client::{PeerClient, Wanted, log_level_of};
use super::door::CallExtras;
use super::forward::Forwarder;
use super::progress::{PeerProgress, reportable};
use super::rounds::{Round, RoundOf};
use super::scopes::{Shown, prose_shown};
use super::served::Chosen;
use super::stop::TokenCancellation;
use crate::REQUEST_ID_HEADER;
use crate::jsonrpc::ControlGivenTwice;
use envelope_core::ClientChannel;
use rmcp::model::ProtocolVersion;

/// The `_meta` keys a server writes, each its prefix and a name, built once per server.
pub(crate) struct MetaKeys {
    pub(super) tier: String,
    pub(super) layer: String,
    pub(super) request_id: String,
    pub(super) client_request_id: String,
    pub(super) capabilities: String,
    pub(super) scopes: String,
}

impl MetaKeys {
    pub(super) fn new(prefix: &str) -> Self {
        let key = |name: &str| format!("{prefix}{name}");
        MetaKeys {
            tier: key("tier"),
            layer: key(meta_keys::LAYER),
            request_id: key(meta_keys::REQUEST_ID),
            client_request_id: key(meta_keys::CLIENT_REQUEST_ID),
            capabilities: key(meta_keys::CAPABILITIES),
            scopes: key("scopes"),
        }
    }
}

/// How many characters of an unknown tool's name an error echoes.
const ECHOED_NAME_CHARS: usize = 128;

impl EnvelopeServer {
    /// The MCP result: the envelope as `structuredContent`, its mirror as text, `isError`, and
    /// in `_meta` the request id, the tier (whatever `compact_only` left in `meta`), the
    /// client's correlation id and the capability tags.
    pub(super) fn result(&self, answer: Answer) -> CallToolResult {
        let Answer {
            prepared,
            tier,
            client_request_id,
            missing: _,
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
            attachments,
            ..
        } = prepared;
        // The mirror moves into the result: a page of rows is not copied again. The media
        // follow it, as the budget stage placed them.
        let mut content = Vec::with_capacity(1 + attachments.len());
        content.push(ContentBlock::text(toon.unwrap_or(json)));
        content.extend(
            attachments
                .into_iter()
                .filter_map(super::media::content_block),
        );
        let mut result = CallToolResult::success(content);
        result.structured_content = Some(structured);
        result.is_error = Some(!ok);
        // Freeing the rows the trimmer cut can be slow; do it off the response path.
        if !leftovers.is_empty() {
            tokio::task::spawn_blocking(move || drop(leftovers));
        }
        result.with_meta(Some(meta))
    }
}

/// Every method rmcp dispatches that the toolset does not own goes to the composed handler;
/// without one, it is `method not found`, as from an rmcp server that serves none.
macro_rules! delegated {
    ($( $(#[$attr:meta])* $method:ident ( $( $arg:ident : $ty:ty ),* ) -> $out:ty, else $missing:ty ; )*) => {$(
        $(#[$attr])*
        async fn $method(&self, $( $arg: $ty ),* ) -> Result<$out, ErrorData> {
            match &self.handler {
                Some(handler) => handler.$method($( $arg ),*).await,
                None => Err(ErrorData::method_not_found::<$missing>()),
            }
        }
    )*};
}

impl ServerHandler for EnvelopeServer {
    fn get_info(&self) -> ServerConfig {
        let config = &self.inner.config;
        // The composed handler's capabilities, with the toolset's tools and logging merged in.
        let mut capabilities = self
            .handler
            .as_ref()
            .map(|handler| handler.info().capabilities)
            .unwrap_or_default();
        let list_changed = capabilities
            .tools
            .as_ref()
            .and_then(|tools| tools.list_changed)
            .or(self.announces_changes.then_some(true));
        capabilities.tools = ServerCapabilities::builder().enable_tools().build().tools;
        if let Some(tools) = &mut capabilities.tools {
            tools.list_changed = list_changed;
        }
        if capabilities.logging.is_none() {
            capabilities.logging = ServerCapabilities::builder()
                .enable_logging()
                .build()
                .logging;
        }
        let mut info = ServerConfig::new(capabilities).with_server_info(Implementation::new(
            config.name.clone(),
            config.version.clone(),
        ));
        let instructions = config.listed_instructions(
            self.handler
                .as_ref()
                .and_then(|handler| handler.info().instructions),
        );
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
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

    /// rmcp's own answer, with the instructions as this request's caller is shown them: under
    /// a filtered listing, no sentence names a tool the caller may not call.
    async fn initialize(
        &self,
        request: InitializeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<InitializeResult, ErrorData> {
        context.peer.set_peer_info(request.clone());
        let mut result = self.negotiate_initialize(&request)?;
        let parts = context.extensions.get::<http::request::Parts>();
        let shown = Shown::of(parts.map(|parts| &parts.extensions));
        if let Some(instructions) = &mut result.instructions {
            *instructions = prose_shown(
                instructions,
                shown,
                self.served().tools.iter().map(|tool| tool.spec()),
            );
        }
        Ok(result)
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let served = self.served();
        let mut tools = match Shown::of(parts.map(|parts| &parts.extensions)) {
            Shown::All => served.listing.to_vec(),
            // Only what the caller may call: the toolset's tools and the listing agree.
            shown => served
                .tools
                .iter()
                .zip(served.listing.iter())
                .filter(|(tool, _)| shown.includes(tool.spec()))
                .map(|(_, listed)| listed.clone())
                .collect(),
        };
        // The composed handler's own tools follow, those an envelope tool shadows left out. A
        // handler without tools answers `method not found`: the toolset's are the listing then.
        if let Some(handler) = &self.handler {
            match handler.list_tools(request, context).await {
                Ok(theirs) => tools.extend(
                    theirs
                        .tools
                        .into_iter()
                        .filter(|tool| served.tools.get(&tool.name).is_none()),
                ),
                Err(error) => tracing::debug!(%error, "the composed handler lists no tools"),
            }
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let shown = Shown::of(parts.map(|parts| &parts.extensions));
        let tool = match self.served().choose(&request.name) {
            Some(chosen) if shown.includes(chosen.tool.spec()) => chosen,
            // Hidden from this caller (a filtered listing): answered as a name no tool has, and
            // not handed to the composed handler, whose tool of that name this one shadows.
            Some(_) => return Err(self.unknown_tool(&request.name, shown)),
            None => match &self.handler {
                Some(handler) => return handler.call_tool(request, context).await,
                None => return Err(self.unknown_tool(&request.name, shown)),
            },
        };
        let asked = Asked {
            input_responses: request.input_responses,
            request_state: request.request_state,
        };
        // Boxed: rmcp spawns a task a request whose future holds this one, and a call's
        // future is kilobytes, which a task would allocate (cache-aligned) and copy on each
        // spawn; a box is one plain allocation, moved as a pointer.
        Box::pin(self.answer_call(tool, request.arguments.unwrap_or_default(), asked, context))
            .await
    }

    /// A tool's listing, for rmcp's checks of a call against it (the `Mcp-Param-*` headers of
    /// the 2026 revision): the toolset's, else the composed handler's.
    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        match self.served().listing.iter().find(|tool| tool.name == name) {
            Some(tool) => Some(tool.clone()),
            None => self
                .handler
                .as_ref()
                .and_then(|handler| handler.get_tool(name)),
        }
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.session.set_log_level(log_level_of(request.level));
        // The composed handler logs too, at the level the client asked for.
        if let Some(handler) = &self.handler
            && handler.info().capabilities.logging.is_some()
        {
            return handler.set_level(request, context).await;
        }
        Ok(())
    }

    delegated! {
        complete(request: CompleteRequestParams, context: RequestContext<RoleServer>) -> CompleteResult, else CompleteRequestMethod;
        get_prompt(request: GetPromptRequestParams, context: RequestContext<RoleServer>) -> GetPromptResponse, else GetPromptRequestMethod;
        read_resource(request: ReadResourceRequestParams, context: RequestContext<RoleServer>) -> ReadResourceResponse, else ReadResourceRequestMethod;
        list_prompts(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> ListPromptsResult, else ListPromptsRequestMethod;
        list_resources(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> ListResourcesResult, else ListResourcesRequestMethod;
        list_resource_templates(request: Option<PaginatedRequestParams>, context: RequestContext<RoleServer>) -> ListResourceTemplatesResult, else ListResourceTemplatesRequestMethod;
        // The legacy subscription, which the 2025 revisions still speak.
        #[allow(deprecated)] subscribe(request: SubscribeRequestParams, context: RequestContext<RoleServer>) -> (), else SubscribeRequestMethod;
        #[allow(deprecated)] unsubscribe(request: UnsubscribeRequestParams, context: RequestContext<RoleServer>) -> (), else UnsubscribeRequestMethod;
    }

    async fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<CustomResult, ErrorData> {
        match &self.handler {
            Some(handler) => handler.on_custom_request(request, context).await,
            None => Err(ErrorData::new(
                rmcp::model::ErrorCode::METHOD_NOT_FOUND,
                request.method,
                None,
            )),
        }
    }

    /// A 2026-07-28 subscription: one to the tools' changes is told of each (this server's
    /// part), and so is one to a composed handler's prompts or resources when the handler
    /// accepted it ([`EnvelopeServer::tell_list_changed`]); the composed handler runs it when it
    /// accepted a part of its own.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let accepted = context.accepted();
        let told = self.announces_changes
            && [
                accepted.tools_list_changed,
                accepted.prompts_list_changed,
                accepted.resources_list_changed,
            ]
            .contains(&Some(true));
        let number = told.then(|| self.inner.table.subscribe(context.sink().clone()));
        let handler = self.handler.as_ref().filter(|handler| {
            handler
                .accepted_subscription_filter(context.requested())
                .is_some()
        });
        let ended = match handler {
            Some(handler) => handler.listen(context).await,
            None => {
                context.cancelled().await;
                Ok(())
            }
        };
        // Over: no change is told to it any more.
        if let Some(number) = number {
            self.inner.table.unsubscribe(&[number]);
        }
        ended
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let theirs = self
            .handler
            .as_ref()
            .and_then(|handler| handler.accepted_subscription_filter(requested));
        if !self.announces_changes {
            return theirs;
        }
        // A server that announces changes takes every subscription, acknowledging what of it
        // it tells (nothing, for a filter of what it does not): a subscription is not refused
        // as an unknown method by a server that declares `listChanged`.
        let mut accepted = theirs.unwrap_or_default();
        if requested.tools_list_changed == Some(true) {
            accepted.tools_list_changed = Some(true);
        }
        Some(accepted)
    }

    async fn on_initialized(&self, context: NotificationContext<RoleServer>) {
        if self.announces_changes {
            self.inner.table.watch(context.peer.clone());
        }
        if let Some(handler) = &self.handler {
            handler.on_initialized(context).await;
        }
    }

    async fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) {
        if let Some(handler) = &self.handler {
            handler.on_roots_list_changed(context).await;
        }
    }

    async fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) {
        if let Some(handler) = &self.handler {
            handler.on_custom_notification(notification, context).await;
        }
    }
}

impl EnvelopeServer {
    /// The error of a call to `name`, which names no tool `shown` to the caller: `available`
    /// lists those that are.
    fn unknown_tool(&self, name: &str, shown: Shown<'_>) -> ErrorData {
        let served = self.served();
        let available = served.names_shown(shown);
        // The name is the client's, of any length: only its start is echoed.
        let echoed: String = name.chars().take(ECHOED_NAME_CHARS).collect();
        ErrorData::invalid_params(
            format!("unknown tool `{echoed}`"),
            // wire: an MCP error's data, not an envelope
            Some(json!({ "tool": echoed, "available": available })),
        )
    }

    /// One MCP call of `tool`: the transport's facts read off the request (correlation id,
    /// session, principal, progress token, cancellation), the call, and its MCP result.
    pub(crate) async fn answer_call(
        &self,
        chosen: Chosen,
        arguments: JsonObject,
        asked: Asked,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let parts = context.extensions.get::<http::request::Parts>();
        let header = |name: &str| {
            parts
                .and_then(|parts| parts.headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let client_request_id = header(REQUEST_ID_HEADER);
        let session = header("mcp-session-id");
        // Who the HTTP layer's resource server let in, if it is on: never the token itself.
        let caller =
            parts.and_then(|parts| parts.extensions.get::<envelope_core::Caller>().cloned());
        let callable_only = matches!(
            Shown::of(parts.map(|parts| &parts.extensions)),
            Shown::Callable(_)
        );
        // A round's sealed state is the caller's alone, as its continuations are.
        let caller_key = caller
            .as_ref()
            .map(|caller| caller.principal().binding().to_owned())
            .unwrap_or_default();
        // Progress and log messages go out in order, all before the result.
        let forward = Arc::new(Forwarder::new(context.peer.clone()));
        let progress = context
            .meta
            .get_progress_token()
            .filter(reportable)
            .map(|token| PeerProgress::new(Arc::clone(&forward), token));
        let tool = Arc::clone(&chosen.tool);
        let (round, client) =
            self.client_for(&*tool, &arguments, asked, &context, &caller_key, &forward)?;
        let extras = CallExtras {
            client_request_id,
            session,
            caller,
            callable_only,
            progress: progress
                .clone()
                .map(|progress| progress as Arc<dyn ProgressSink>),
            cancelled: Some(Arc::new(TokenCancellation(context.ct.clone()))),
            client: Some(client),
            #[cfg(feature = "otel")]
            trace: crate::otel::TraceContext::of(parts.map(|parts| &parts.headers), &context.meta),
            carries_media: true,
            unbudgeted_ceiling: None,
            dialect: None,
            // Noted by the transport that read the request's text: stdio's on the request,
            // HTTP's on its parts.
            given_twice: context
                .extensions
                .get::<ControlGivenTwice>()
                .or_else(|| parts.and_then(|parts| parts.extensions.get::<ControlGivenTwice>()))
                .map(|twice| twice.0),
        };
        let call = self.call_with(chosen, Value::Object(arguments.clone()), extras);
        let answer = match &round {
            // The first ask without an answer ends the round; the tool's run is dropped.
            Some(round) => tokio::select! {
                answer = call => Some(answer),
                () = round.input_needed() => None,
            },
            None => Some(call.await),
        };
        forward.finish().await;
        // On 2026-07-28, a call that failed for want of a capability its client did not
        // declare is the client's error, as the protocol spells it.
        if let Some(missing) = answer.as_ref().and_then(|answer| answer.missing.as_ref())
            && on_2026(&context)
            && let Some(refusal) =
                missing.refusal(&context.client_capabilities().unwrap_or_default())
        {
            return Err(refusal);
        }
        self.response(&*tool, &arguments, &caller_key, answer, round)
    }

    /// The client a call of `tool` may ask for input, a completion, or send logs to: its peer;
    /// on MCP 2026-07-28, a round of asks answered on the next request (`None` as the round
    /// when this server cannot seal one: asking is then unavailable, logs still go out).
    fn client_for(
        &self,
        tool: &dyn envelope_core::Tool,
        arguments: &JsonObject,
        asked: Asked,
        context: &RequestContext<RoleServer>,
        caller_key: &str,
        forward: &Arc<Forwarder>,
    ) -> Result<(Option<Arc<Round>>, CallClient), ErrorData> {
        // The 2026 revision has no server-to-client requests (a tool asks across rounds) and no
        // session level: each request names the log level it wants, if any.
        let revision_2026 = on_2026(context);
        let wanted = Wanted::of(context.meta.log_level().map(log_level_of), !revision_2026);
        let capabilities = context.client_capabilities().unwrap_or_default();
        let peer = PeerClient::new(
            context.peer.clone(),
            Arc::clone(&self.session),
            wanted,
            Arc::clone(forward),
            capabilities.clone(),
        );
        Ok(match (&self.inner.rounds, revision_2026) {
            (Some(codec), true) => {
                let round = Round::open(
                    codec,
                    &RoundOf {
                        tool: &tool.spec().name,
                        caller: caller_key,
                        arguments,
                    },
                    asked.request_state.as_deref(),
                    asked.input_responses,
                    capabilities,
                    peer,
                )
                .map_err(|error| ErrorData::invalid_params(error.to_string(), None))?;
                (Some(Arc::clone(&round)), round as Arc<dyn ClientChannel>)
            }
            (None, true) => (None, Arc::new(NoClient(peer)) as Arc<dyn ClientChannel>),
            (_, false) => (None, Arc::new(peer) as Arc<dyn ClientChannel>),
        })
    }

    /// The MCP response to a call of `tool`: its answer, or, when the round's first ask went
    /// unanswered, the round's `input_required`.
    fn response(
        &self,
        tool: &dyn envelope_core::Tool,
        arguments: &JsonObject,
        caller_key: &str,
        answer: Option<Answer>,
        round: Option<Arc<Round>>,
    ) -> Result<CallToolResponse, ErrorData> {
        Ok(match (answer, round, &self.inner.rounds) {
            (Some(answer), ..) => self.result(answer).into(),
            (None, Some(round), Some(codec)) => {
                CallToolResponse::InputRequired(round.input_required(
                    codec,
                    &RoundOf {
                        tool: &tool.spec().name,
                        caller: caller_key,
                        arguments,
                    },
                ))
            }
            // A round ends only when there is one.
            (None, ..) => {
                return Err(ErrorData::internal_error("a round ended without one", None));
            }
        })
    }
}

/// Whether `context`'s request speaks MCP 2026-07-28 or later.
fn on_2026(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| version >= ProtocolVersion::V_2026_07_28)
}

/// The client a call's tool talks to: its peer, a round of asks, or neither.
type CallClient = Arc<dyn ClientChannel>;

/// What the client sent back of the rounds before (MCP 2026-07-28): its answers to the last
/// round's asks, and the state that round sealed.
#[derive(Default)]
pub(crate) struct Asked {
    pub(crate) input_responses: Option<rmcp::model::InputResponses>,
    pub(crate) request_state: Option<String>,
}

/// The client of a call on the 2026 revision when this server cannot seal rounds: asking is
/// unavailable, logs still go out.
struct NoClient(PeerClient);

impl ClientChannel for NoClient {
    fn elicit(
        &self,
        _: String,
        _: Value,
    ) -> envelope_core::BoxFuture<
        '_,
        Result<envelope_core::Elicited<Value>, envelope_core::ClientError>,
    > {
        Box::pin(std::future::ready(Err(
            envelope_core::ClientError::Unavailable(envelope_core::ClientFeature::Elicitation),
        )))
    }

    fn sample(
        &self,
        _: envelope_core::SamplingRequest,
    ) -> envelope_core::BoxFuture<'_, Result<envelope_core::Sampled, envelope_core::ClientError>>
    {
        Box::pin(std::future::ready(Err(
            envelope_core::ClientError::Unavailable(envelope_core::ClientFeature::Sampling),
        )))
    }

    fn log(&self, level: envelope_core::LogLevel, logger: &str, data: Value) {
        self.0.log(level, logger, data);
    }

    fn log_level(&self) -> Option<envelope_core::LogLevel> {
        self.0.log_level()
    }
}

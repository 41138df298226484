//! What the upstream serves besides tools, forwarded as it is: prompts, resources and their
//! templates, completion and the log level. The proxy's server composes this handler
//! (`EnvelopeServer::with_handler`), so a client sees the upstream's capabilities and
//! instructions beside the fronted tools.
//!
//! Only what the upstream declared at `initialize` is declared here, `listChanged` included: the
//! upstream's `notifications/prompts/list_changed` and `notifications/resources/list_changed`
//! are told on to every client session (see [`Proxy`](crate::Proxy)). A client's subscription
//! to a resource is forwarded, and the upstream's updates of it are told to the clients that
//! subscribed ([`Watchers`]).
#![allow(deprecated)] // logging and the legacy subscription, which rmcp marks deprecated

use std::sync::Arc;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    GetPromptRequestParams, GetPromptResponse, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse,
    ResultType, ServerCapabilities, ServerConfig, SetLevelRequestParams, SubscribeRequestParams,
    SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{Peer, RequestContext, ServiceError, SubscriptionContext};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler};

use crate::upstream::Upstream;
use crate::watchers::{Watcher, Watchers};

/// The upstream's prompts, resources, completion and logging, forwarded.
#[derive(Clone)]
pub(crate) struct Forwarded {
    upstream: Arc<Upstream>,
    info: ServerConfig,
    watchers: Watchers,
}

impl Forwarded {
    /// Forwards to `upstream` what it declared at `initialize`.
    pub(crate) async fn new(upstream: Arc<Upstream>) -> Forwarded {
        let declared = upstream.server_info().await;
        let mut capabilities = ServerCapabilities::default();
        let mut instructions = None;
        if let Some(declared) = declared {
            let theirs = declared.capabilities.clone();
            capabilities.prompts = theirs.prompts;
            capabilities.resources = theirs.resources;
            capabilities.completions = theirs.completions;
            capabilities.logging = theirs.logging;
            instructions.clone_from(&declared.instructions);
        }
        let mut info = ServerConfig::new(capabilities);
        if let Some(instructions) = instructions {
            info = info.with_instructions(instructions);
        }
        let watchers = upstream.watchers();
        Forwarded {
            upstream,
            info,
            watchers,
        }
    }

    /// The upstream's peer, or the JSON-RPC error saying why there is none.
    async fn peer(&self) -> Result<Peer<RoleClient>, ErrorData> {
        self.upstream.request_peer().await.map_err(relayed)
    }
}

/// Marks a result the upstream answered as complete. rmcp reads an upstream that speaks an
/// older revision into a result without `resultType`, which a client on 2026-07-28 must see
/// (`"complete"`); rmcp drops it again for a client on an older revision.
fn complete(result_type: &mut Option<ResultType>) {
    result_type.get_or_insert(ResultType::COMPLETE);
}

/// How many characters of an unknown tool's name a refusal echoes: the name is the client's,
/// of any length.
const UNKNOWN_NAME_CHARS: usize = 128;

/// The upstream's own JSON-RPC error as it is; any other failure as an internal error.
fn relayed(error: ServiceError) -> ErrorData {
    match error {
        ServiceError::McpError(error) => error,
        other => ErrorData::internal_error(format!("the upstream did not answer: {other}"), None),
    }
}

impl ServerHandler for Forwarded {
    fn get_info(&self) -> ServerConfig {
        self.info.clone()
    }

    /// A 2026-07-28 subscription to the prompts' or the resources' changes, where the upstream
    /// declared them: the proxy's server tells it of each the upstream announces.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        let declared = &self.info.capabilities;
        let mut accepted = SubscriptionFilter::default();
        if requested.prompts_list_changed == Some(true)
            && declared
                .prompts
                .as_ref()
                .and_then(|prompts| prompts.list_changed)
                == Some(true)
        {
            accepted.prompts_list_changed = Some(true);
        }
        if requested.resources_list_changed == Some(true)
            && declared
                .resources
                .as_ref()
                .and_then(|resources| resources.list_changed)
                == Some(true)
        {
            accepted.resources_list_changed = Some(true);
        }
        // Resource updates, where the upstream tells of them.
        if requested
            .resource_subscriptions
            .as_ref()
            .is_some_and(|uris| !uris.is_empty())
            && declared
                .resources
                .as_ref()
                .and_then(|resources| resources.subscribe)
                == Some(true)
        {
            accepted
                .resource_subscriptions
                .clone_from(&requested.resource_subscriptions);
        }
        (accepted != SubscriptionFilter::default()).then_some(accepted)
    }

    /// A 2026-07-28 subscription stream: the resources it names are watched upstream for as
    /// long as it lasts, their updates told to it (the prompts' and resources' list changes
    /// it asked for are told by the proxy's server, [`EnvelopeServer::tell_list_changed`](envelope_mcp::EnvelopeServer::tell_list_changed)).
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        let uris = context
            .accepted()
            .resource_subscriptions
            .clone()
            .unwrap_or_default();
        let stream = self.watchers.stream(context.sink().clone());
        for uri in &uris {
            self.watchers.add(uri, stream.clone());
            if let Err(error) = self.upstream.watch(uri).await {
                tracing::warn!(%error, %uri, "the upstream refused to tell of a resource");
            }
        }
        context.cancelled().await;
        for uri in &uris {
            if !self.watchers.remove(uri, &stream)
                && let Err(error) = self.upstream.unwatch(uri).await
            {
                tracing::warn!(%error, %uri, "the upstream refused to stop telling of a resource");
            }
        }
        Ok(())
    }

    async fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        self.peer()
            .await?
            .list_prompts(request)
            .await
            .map(|mut listed| {
                complete(&mut listed.result_type);
                listed
            })
            .map_err(relayed)
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        self.peer()
            .await?
            .get_prompt_once(request)
            .await
            .map(|mut response| {
                if let GetPromptResponse::Complete(result) = &mut response {
                    complete(&mut result.result_type);
                }
                response
            })
            .map_err(relayed)
    }

    async fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        self.peer()
            .await?
            .list_resources(request)
            .await
            .map(|mut listed| {
                complete(&mut listed.result_type);
                listed
            })
            .map_err(relayed)
    }

    async fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        self.peer()
            .await?
            .list_resource_templates(request)
            .await
            .map(|mut listed| {
                complete(&mut listed.result_type);
                listed
            })
            .map_err(relayed)
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        self.peer()
            .await?
            .read_resource_once(request)
            .await
            .map(|mut response| {
                if let ReadResourceResponse::Complete(result) = &mut response {
                    complete(&mut result.result_type);
                }
                response
            })
            .map_err(relayed)
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        self.peer()
            .await?
            .complete(request)
            .await
            .map(|mut completed| {
                complete(&mut completed.result_type);
                completed
            })
            .map_err(relayed)
    }

    /// A tool the proxy does not serve (the upstream has none of that name, or the
    /// configuration hides it, or its declaration could not be served): never forwarded, and
    /// refused as the proxy's own server refuses a name no tool has.
    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let echoed: String = request.name.chars().take(UNKNOWN_NAME_CHARS).collect();
        Err(ErrorData::invalid_params(
            format!("unknown tool `{echoed}`"),
            Some(serde_json::json!({ "tool": echoed })),
        ))
    }

    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // Watching before the upstream is asked, so that a last watcher leaving meanwhile does
        // not stop it; asked each time (subscribing again is harmless), so that no watcher
        // counts on one whose subscription failed.
        let watcher = Watcher::Session(context.peer);
        self.watchers.add(&request.uri, watcher.clone());
        if let Err(error) = self.upstream.watch(&request.uri).await {
            self.watchers.remove(&request.uri, &watcher);
            return Err(relayed(error));
        }
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The upstream stops telling only when no client watches any more.
        if !self
            .watchers
            .remove(&request.uri, &Watcher::Session(context.peer))
        {
            self.upstream.unwatch(&request.uri).await.map_err(relayed)?;
        }
        Ok(())
    }

    async fn set_level(
        &self,
        request: SetLevelRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        let level = request.level;
        self.peer()
            .await?
            .set_level(request)
            .await
            .map_err(relayed)?;
        self.upstream.keep_log_level(level);
        Ok(())
    }
}

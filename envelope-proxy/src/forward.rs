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
use rmcp::service::{Peer, RequestContext, ServiceError};
use rmcp::{ErrorData, RoleClient, RoleServer, ServerHandler};

use crate::upstream::Upstream;
use crate::watchers::Watchers;

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
        self.upstream
            .peer()
            .await
            .map_err(|error| ErrorData::internal_error(error.message().to_owned(), None))
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
        (accepted != SubscriptionFilter::default()).then_some(accepted)
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
        // Forwarded each time: the upstream may have started again since the first.
        self.peer()
            .await?
            .subscribe(request.clone())
            .await
            .map_err(relayed)?;
        self.watchers.add(&request.uri, context.peer);
        Ok(())
    }

    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        // The upstream stops telling only when no client watches any more.
        if !self.watchers.remove(&request.uri, &context.peer) {
            self.peer()
                .await?
                .unsubscribe(request)
                .await
                .map_err(relayed)?;
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

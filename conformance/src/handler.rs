//! The rmcp handler composed with the envelope server
//! ([`EnvelopeServer::with_handler`](envelope_mcp::EnvelopeServer::with_handler)): it serves
//! everything the toolset does not, prompts (through rmcp's prompt router), resources and
//! their template, subscriptions and completion, and the tools that speak the protocol directly
//! (`input_required.rs`: SEP-2322's multi-round fixtures, with the suite's own input keys, and
//! the JSON-RPC error `-32021`). The envelope server adds `tools` and `logging` to the
//! capabilities advertised here, lists these tools after its own, and hands their calls on.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use crate::input_required::{self, Seal};
use crate::resources;
use crate::rmcp;
use rmcp::handler::server::prompt::PromptContext;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult, CompletionInfo,
    GetPromptRequestParams, GetPromptResponse, Implementation, ListPromptsResult,
    ListResourceTemplatesResult, ListResourcesResult, ListToolsResult, PaginatedRequestParams,
    ReadResourceRequestParams, ReadResourceResponse, Reference, ServerCapabilities, ServerConfig,
    SubscribeRequestParams, SubscriptionFilter, UnsubscribeRequestParams,
};
use rmcp::service::{RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

/// The completions offered for `test_prompt_with_arguments`'s arguments, filtered by what the
/// user typed.
const COMPLETIONS: &[&str] = &["test", "testValue1", "testValue2", "sample", "example"];

/// The fixtures that are not tools: prompts, resources, subscriptions, completion.
#[derive(Clone)]
pub(crate) struct Fixtures {
    /// The prompts (see `prompts.rs`), routed by rmcp.
    prompt_router: PromptRouter<Fixtures>,
    /// The URIs subscribed to. Nothing changes them, so nothing is ever sent; the set is kept
    /// so that an unsubscribe answers what a subscribe did.
    subscribed: Arc<Mutex<BTreeSet<String>>>,
    /// Seals the `requestState` of multi-round calls.
    seal: Seal,
}

impl Fixtures {
    /// The prompts and resources, nothing subscribed yet.
    pub(crate) fn new() -> Self {
        Fixtures {
            prompt_router: Fixtures::prompt_router(),
            subscribed: Arc::default(),
            seal: Seal::default(),
        }
    }

    fn subscriptions(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        // A set of strings cannot be left half-changed by a panic: the poison is moot.
        self.subscribed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl ServerHandler for Fixtures {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_completions()
                .enable_prompts()
                .enable_resources()
                .enable_resources_subscribe()
                .build(),
        )
        .with_server_info(Implementation::new(
            "envelope-conformance",
            env!("CARGO_PKG_VERSION"),
        ))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(input_required::tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        input_required::call(&self.seal, &request, &context.meta).unwrap_or_else(|| {
            Err(ErrorData::invalid_params(
                format!("unknown tool `{}`", request.name),
                None,
            ))
        })
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, ErrorData> {
        let mut prompts = self.prompt_router.list_all();
        prompts.push(input_required::prompt());
        Ok(ListPromptsResult::with_all_items(prompts))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, ErrorData> {
        // The prompt that asks first reads the client's answers, which rmcp's prompt router
        // does not hand its prompts: it is answered here, the rest by the router.
        if request.name == input_required::PROMPT {
            return input_required::get_prompt(&request);
        }
        let prompt = PromptContext::new(self, request.name, request.arguments, context);
        self.prompt_router.get_prompt(prompt).await
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, ErrorData> {
        Ok(resources::list())
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, ErrorData> {
        Ok(resources::templates())
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, ErrorData> {
        resources::read(&request.uri).map(Into::into)
    }

    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions still speak
    async fn subscribe(
        &self,
        request: SubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().insert(request.uri);
        Ok(())
    }

    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions still speak
    async fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.subscriptions().remove(&request.uri);
        Ok(())
    }

    /// `subscriptions/listen` (2026-07-28): what was asked for, of what is advertised.
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.supported_by(&self.get_info().capabilities))
    }

    /// A listener is held open until the client goes; nothing ever changes, so nothing is sent.
    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        context.cancelled().await;
        Ok(())
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, ErrorData> {
        let typed = request.argument.value.as_str();
        let values = match &request.r#ref {
            Reference::Prompt(prompt) if prompt.name == "test_prompt_with_arguments" => COMPLETIONS
                .iter()
                .filter(|value| value.starts_with(typed))
                .map(|value| (*value).to_owned())
                .collect(),
            // Nothing else completes: an empty list, which is an answer, not an error.
            _ => Vec::new(),
        };
        let info = CompletionInfo::new(values)
            .map_err(|message| ErrorData::internal_error(message, None))?;
        Ok(CompleteResult::new(info))
    }
}

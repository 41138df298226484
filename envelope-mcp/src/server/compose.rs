//! The rmcp handler an [`EnvelopeServer`](super::EnvelopeServer) hands what it does not own:
//! prompts, resources and their templates, subscriptions, completion, custom requests, and the
//! tools of its own router.
//!
//! rmcp's [`ServerHandler`] returns `impl Future`s, so it cannot be a trait object; [`Delegate`]
//! is the same methods with boxed futures, implemented for every handler.
//!
//! rmcp marks logging deprecated by SEP-2577, for the revisions after 2025-11-25; the revisions
//! this server speaks still have `logging/setLevel`.
#![allow(deprecated)]

use envelope_core::BoxFuture;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CompleteRequestParams, CompleteResult,
    CustomNotification, CustomRequest, CustomResult, GetPromptRequestParams, GetPromptResponse,
    ListPromptsResult, ListResourceTemplatesResult, ListResourcesResult, ListToolsResult,
    PaginatedRequestParams, ReadResourceRequestParams, ReadResourceResponse, ServerConfig,
    SetLevelRequestParams, SubscribeRequestParams, SubscriptionFilter, Tool,
    UnsubscribeRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, SubscriptionContext};
use rmcp::{ErrorData, RoleServer, ServerHandler};

type Answer<'a, T> = BoxFuture<'a, Result<T, ErrorData>>;

/// rmcp's [`ServerHandler`] methods that an envelope server delegates, object-safe.
pub(crate) trait Delegate: Send + Sync + 'static {
    fn info(&self) -> ServerConfig;
    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult>;
    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse>;
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult>;
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult>;
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult>;
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse>;
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()>;
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter>;
    fn listen(&self, context: SubscriptionContext) -> Answer<'_, ()>;
    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListToolsResult>;
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CallToolResponse>;
    fn get_tool(&self, name: &str) -> Option<Tool>;
    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CustomResult>;
    fn on_initialized(&self, context: NotificationContext<RoleServer>) -> BoxFuture<'_, ()>;
    fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) -> BoxFuture<'_, ()>;
    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> BoxFuture<'_, ()>;
}

impl<H: ServerHandler> Delegate for H {
    fn info(&self) -> ServerConfig {
        self.get_info()
    }
    fn complete(
        &self,
        request: CompleteRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CompleteResult> {
        Box::pin(ServerHandler::complete(self, request, context))
    }
    fn set_level(
        &self,
        request: SetLevelRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::set_level(self, request, context))
    }
    fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, GetPromptResponse> {
        Box::pin(ServerHandler::get_prompt(self, request, context))
    }
    fn list_prompts(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListPromptsResult> {
        Box::pin(ServerHandler::list_prompts(self, request, context))
    }
    fn list_resources(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourcesResult> {
        Box::pin(ServerHandler::list_resources(self, request, context))
    }
    fn list_resource_templates(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListResourceTemplatesResult> {
        Box::pin(ServerHandler::list_resource_templates(
            self, request, context,
        ))
    }
    fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ReadResourceResponse> {
        Box::pin(ServerHandler::read_resource(self, request, context))
    }
    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions still speak
    fn subscribe(
        &self,
        request: SubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::subscribe(self, request, context))
    }
    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions still speak
    fn unsubscribe(
        &self,
        request: UnsubscribeRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ()> {
        Box::pin(ServerHandler::unsubscribe(self, request, context))
    }
    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        ServerHandler::accepted_subscription_filter(self, requested)
    }
    fn listen(&self, context: SubscriptionContext) -> Answer<'_, ()> {
        Box::pin(ServerHandler::listen(self, context))
    }
    fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, ListToolsResult> {
        Box::pin(ServerHandler::list_tools(self, request, context))
    }
    fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CallToolResponse> {
        Box::pin(ServerHandler::call_tool(self, request, context))
    }
    fn get_tool(&self, name: &str) -> Option<Tool> {
        ServerHandler::get_tool(self, name)
    }
    fn on_custom_request(
        &self,
        request: CustomRequest,
        context: RequestContext<RoleServer>,
    ) -> Answer<'_, CustomResult> {
        Box::pin(ServerHandler::on_custom_request(self, request, context))
    }
    fn on_initialized(&self, context: NotificationContext<RoleServer>) -> BoxFuture<'_, ()> {
        Box::pin(ServerHandler::on_initialized(self, context))
    }
    fn on_roots_list_changed(&self, context: NotificationContext<RoleServer>) -> BoxFuture<'_, ()> {
        Box::pin(ServerHandler::on_roots_list_changed(self, context))
    }
    fn on_custom_notification(
        &self,
        notification: CustomNotification,
        context: NotificationContext<RoleServer>,
    ) -> BoxFuture<'_, ()> {
        Box::pin(ServerHandler::on_custom_notification(
            self,
            notification,
            context,
        ))
    }
}

//! The rmcp handler an [`EnvelopeServer`](super::EnvelopeServer) hands what it does not own:
//! prompts, resources and their templates, subscriptions, completion, custom requests, and the
//! tools of its own router.
//!
//! rmcp's [`ServerHandler`] returns `impl Future`s, so it cannot be a trait object; `Delegate`
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

/// Declares [`Delegate`] from one list of rmcp's asynchronous [`ServerHandler`] methods: each
/// is a trait method returning a boxed future, and the impl for every handler boxes rmcp's
/// own. A method added to the list is declared and delegated at once.
macro_rules! object_safe {
    ($( $method:ident ( $( $arg:ident : $ty:ty ),* ) -> $out:ty ; )*) => {
        /// rmcp's [`ServerHandler`] methods that an envelope server delegates, object-safe.
        pub(crate) trait Delegate: Send + Sync + 'static {
            fn info(&self) -> ServerConfig;
            fn accepted_subscription_filter(
                &self,
                requested: &SubscriptionFilter,
            ) -> Option<SubscriptionFilter>;
            fn get_tool(&self, name: &str) -> Option<Tool>;
            $( fn $method(&self, $( $arg: $ty ),*) -> BoxFuture<'_, $out>; )*
        }

        impl<H: ServerHandler> Delegate for H {
            fn info(&self) -> ServerConfig {
                self.get_info()
            }
            fn accepted_subscription_filter(
                &self,
                requested: &SubscriptionFilter,
            ) -> Option<SubscriptionFilter> {
                ServerHandler::accepted_subscription_filter(self, requested)
            }
            fn get_tool(&self, name: &str) -> Option<Tool> {
                ServerHandler::get_tool(self, name)
            }
            $(
                fn $method(&self, $( $arg: $ty ),*) -> BoxFuture<'_, $out> {
                    Box::pin(ServerHandler::$method(self, $( $arg ),*))
                }
            )*
        }
    };
}

/// A request's answer, or its JSON-RPC error.
type Answer<T> = Result<T, ErrorData>;
type Request = RequestContext<RoleServer>;
type Notification = NotificationContext<RoleServer>;
type Page = Option<PaginatedRequestParams>;

object_safe! {
    complete(request: CompleteRequestParams, context: Request) -> Answer<CompleteResult>;
    set_level(request: SetLevelRequestParams, context: Request) -> Answer<()>;
    get_prompt(request: GetPromptRequestParams, context: Request) -> Answer<GetPromptResponse>;
    list_prompts(request: Page, context: Request) -> Answer<ListPromptsResult>;
    list_resources(request: Page, context: Request) -> Answer<ListResourcesResult>;
    list_resource_templates(request: Page, context: Request) -> Answer<ListResourceTemplatesResult>;
    read_resource(request: ReadResourceRequestParams, context: Request) -> Answer<ReadResourceResponse>;
    // The legacy subscription, which the 2025 revisions still speak.
    subscribe(request: SubscribeRequestParams, context: Request) -> Answer<()>;
    unsubscribe(request: UnsubscribeRequestParams, context: Request) -> Answer<()>;
    listen(context: SubscriptionContext) -> Answer<()>;
    list_tools(request: Page, context: Request) -> Answer<ListToolsResult>;
    call_tool(request: CallToolRequestParams, context: Request) -> Answer<CallToolResponse>;
    on_custom_request(request: CustomRequest, context: Request) -> Answer<CustomResult>;
    on_initialized(context: Notification) -> ();
    on_roots_list_changed(context: Notification) -> ();
    on_custom_notification(notification: CustomNotification, context: Notification) -> ();
}

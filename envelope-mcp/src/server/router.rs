//! The toolset mounted inside an rmcp `ToolRouter`: each envelope tool a route, beside the
//! routes `#[tool_router]` makes, answering as it does from an [`EnvelopeServer`].

use rmcp::handler::server::router::tool::{ToolRoute, ToolRouter};
use rmcp::handler::server::tool::ToolCallContext;

use super::EnvelopeServer;

impl EnvelopeServer {
    /// The toolset as an rmcp [`ToolRouter`] of any server `S`: add it to the router
    /// `#[tool_router]` generates, and one listing holds both, each tool answering as it always
    /// did (an envelope tool with its envelope, `structuredContent`, text mirror and `_meta`).
    ///
    /// The routes share this server: its configuration, budget, state and deadline apply to
    /// their calls. A route's tool logs at this server's default level
    /// ([`DEFAULT_LOG_LEVEL`](crate::DEFAULT_LOG_LEVEL)): the host server owns
    /// `logging/setLevel`.
    ///
    /// ```no_run
    /// use envelope_core::{ToolContext, ToolResult, tool, toolset};
    /// use envelope_mcp::rmcp::{self, ServerHandler, handler::server::router::tool::ToolRouter};
    /// use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
    ///
    /// /// How many tools the host serves beside it.
    /// #[tool(tier = lite, read_only)]
    /// async fn word_count(_ctx: &ToolContext) -> ToolResult<usize> {
    ///     Ok(1)
    /// }
    ///
    /// #[derive(Clone)]
    /// struct Host {
    ///     tool_router: ToolRouter<Host>,
    /// }
    ///
    /// #[rmcp::tool_router]
    /// impl Host {
    ///     /// A tool written with rmcp.
    ///     #[rmcp::tool]
    ///     fn ping(&self) -> String {
    ///         "pong".to_owned()
    ///     }
    /// }
    ///
    /// #[rmcp::tool_handler]
    /// impl ServerHandler for Host {}
    ///
    /// let envelope = EnvelopeServer::new(toolset![word_count], EnvelopeConfig::new("notes", "1.0.0"));
    /// let host = Host { tool_router: Host::tool_router() + envelope.tool_router() };
    /// # let _ = host;
    /// ```
    pub fn tool_router<S: Send + Sync + 'static>(&self) -> ToolRouter<S> {
        let mut router = ToolRouter::new();
        for listed in self.tools().iter() {
            let server = self.clone();
            let name = listed.name.clone();
            router.add_route(ToolRoute::new_dyn(
                listed.clone(),
                move |context: ToolCallContext<'_, S>| {
                    let server = server.clone();
                    let name = name.clone();
                    Box::pin(async move {
                        let ToolCallContext {
                            request_context,
                            arguments,
                            input_responses,
                            request_state,
                            ..
                        } = context;
                        // Listed from the toolset; a miss (the tool removed since) is
                        // answered as rmcp answers a name it does not route.
                        let Some(tool) = server.served().choose(&name) else {
                            return Err(rmcp::ErrorData::invalid_params("tool not found", None));
                        };
                        let asked = super::mcp::Asked {
                            input_responses,
                            request_state,
                        };
                        server
                            .answer_call(
                                tool,
                                arguments.unwrap_or_default(),
                                asked,
                                request_context,
                            )
                            .await
                    })
                },
            ));
        }
        router
    }
}

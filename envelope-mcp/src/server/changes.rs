//! Changing the tools a server serves while it runs: tools join and leave, the table is worked
//! out again, and the sessions and subscriptions that asked are told.

use std::sync::Arc;

use envelope_core::{CoreError, Tool, Toolset};

use super::EnvelopeServer;
use super::served::{Listeners, Subscription};

/// A list besides the tools that a composed handler serves
/// ([`EnvelopeServer::with_handler`]), and that can change while the server runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListChanged {
    /// The prompts: told as `notifications/prompts/list_changed`.
    Prompts,
    /// The resources: told as `notifications/resources/list_changed`.
    Resources,
}

impl EnvelopeServer {
    /// This server, advertising `tools.listChanged` at `initialize` and telling each MCP
    /// session that initialized since, by `notifications/tools/list_changed`, when its tools
    /// change ([`add_tool`](Self::add_tool), [`remove_tool`](Self::remove_tool),
    /// [`set_tools`](Self::set_tools)), and each 2026-07-28 `subscriptions/listen` that asks
    /// for the tools' changes. Without it the tools still change, and a client sees them when
    /// it lists them again. A stateless HTTP request has no session to tell.
    #[must_use]
    pub fn with_changing_tools(mut self) -> Self {
        self.announces_changes = true;
        self
    }

    /// Serves `tool` from now on, in place of the tool of its name if there is one, which it
    /// returns: a tool this server learned at run time (a proxy fronting another server's
    /// tools), or a `#[tool]`. Its spec is checked first ([`ToolSpec::validate`]). Calls
    /// already running finish with the tools they started with.
    ///
    /// ```
    /// use std::sync::Arc;
    ///
    /// use envelope_core::{ToolResult, tool, toolset};
    /// use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
    ///
    /// /// Says hello.
    /// #[tool(tier = lite, read_only)]
    /// fn hello() -> ToolResult<&'static str> {
    ///     Ok("hello")
    /// }
    ///
    /// # tokio::runtime::Runtime::new().unwrap().block_on(async {
    /// let server = EnvelopeServer::new(toolset![], EnvelopeConfig::new("notes", "1.0.0"))
    ///     .with_changing_tools();
    /// server.add_tool(Arc::new(hello {})).await?;
    /// assert_eq!(server.tools()[0].name, "hello");
    /// assert!(server.call("hello", serde_json::json!({})).await.is_some());
    /// assert!(server.remove_tool("hello").await.is_some());
    /// assert!(server.call("hello", serde_json::json!({})).await.is_none());
    /// # Ok::<(), envelope_core::CoreError>(())
    /// # }).unwrap();
    /// ```
    ///
    /// [`ToolSpec::validate`]: envelope_core::ToolSpec::validate
    pub async fn add_tool(&self, tool: Arc<dyn Tool>) -> Result<Option<Arc<dyn Tool>>, CoreError> {
        tool.spec().validate()?;
        // Checked: the insert cannot refuse it.
        Ok(self
            .change_tools(|tools| tools.insert(tool).ok().flatten())
            .await)
    }

    /// Stops serving the tool named `name`, returning it; `None` when no tool has that name.
    pub async fn remove_tool(&self, name: &str) -> Option<Arc<dyn Tool>> {
        self.change_tools(|tools| tools.remove(name)).await
    }

    /// Serves `tools` from now on, in place of every tool served before.
    pub async fn set_tools(&self, tools: Toolset) {
        self.change_tools(|served| *served = tools).await;
    }

    /// Applies `change` to the served tools; tells the sessions when the set changed and this
    /// server announces changes.
    async fn change_tools<R>(&self, change: impl FnOnce(&mut Toolset) -> R) -> R {
        let (result, listeners) = self
            .inner
            .table
            .change(change, |tools| self.work_out(tools));
        if let Some(listeners) = listeners
            && self.announces_changes
        {
            self.tell(listeners).await;
        }
        result
    }

    /// Tells each MCP session that initialized since [`with_changing_tools`](Self::with_changing_tools),
    /// and each 2026-07-28 `subscriptions/listen` that accepted it, that `list` changed: for a
    /// composed handler whose prompts or resources change at run time (a proxy relaying its
    /// upstream's). The handler declares `listChanged` for that list in its capabilities, and
    /// accepts it in [`accepted_subscription_filter`](rmcp::ServerHandler::accepted_subscription_filter);
    /// a session that closed, or a subscription that ended, is let go. Returns how many were
    /// told.
    pub async fn tell_list_changed(&self, list: ListChanged) -> usize {
        let mut told = 0;
        for session in self.inner.table.sessions() {
            let sent = match list {
                ListChanged::Prompts => session.notify_prompt_list_changed().await,
                ListChanged::Resources => session.notify_resource_list_changed().await,
            };
            match sent {
                Ok(()) => told += 1,
                Err(error) => {
                    tracing::debug!(%error, ?list, "a session was not told a list changed");
                }
            }
        }
        let mut ended = Vec::new();
        for Subscription { number, sink } in self.inner.table.subscriptions() {
            let accepted = sink.accepted();
            let sent = match list {
                ListChanged::Prompts if accepted.prompts_list_changed == Some(true) => {
                    sink.notify_prompt_list_changed().await
                }
                ListChanged::Resources if accepted.resources_list_changed == Some(true) => {
                    sink.notify_resource_list_changed().await
                }
                _ => continue,
            };
            match sent {
                Ok(()) => told += 1,
                Err(error) => {
                    tracing::debug!(%error, ?list, "a subscription was not told a list changed");
                    ended.push(number);
                }
            }
        }
        self.inner.table.unsubscribe(&ended);
        told
    }

    /// Sends `notifications/tools/list_changed` to each of `listeners`; a subscription that
    /// ended is let go, a session that closed is let go at the next change.
    async fn tell(&self, listeners: Listeners) {
        for session in listeners.sessions {
            if let Err(error) = session.notify_tool_list_changed().await {
                tracing::debug!(%error, "a session was not told the tools changed");
            }
        }
        let mut ended = Vec::new();
        let told = listeners
            .subscriptions
            .into_iter()
            .filter(|subscription| subscription.sink.accepted().tools_list_changed == Some(true));
        for Subscription { number, sink } in told {
            if let Err(error) = sink.notify_tool_list_changed().await {
                tracing::debug!(%error, "a subscription was not told the tools changed");
                ended.push(number);
            }
        }
        self.inner.table.unsubscribe(&ended);
    }
}

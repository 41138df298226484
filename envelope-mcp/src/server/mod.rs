//! The MCP server: tool listing and calls, mapped onto the envelope.
//!
//! [`EnvelopeServer`] and its state live here; each concept in a file of its own, importing
//! one way: `config`, `compose`, `forward`, `media`, `refused`, `scopes` and `stop` name no
//! sibling; `client` and `progress` name `forward`; `served` (the tools served now) names
//! `scopes`; `changes` names `served`; `door` names `refused`, `scopes`, `served` and `stop`;
//! `call` names `door`, `scopes`, `served` and `stop`; `mcp` names `call`, `client`, `door`,
//! `forward`, `progress`, `rounds`, `scopes`, `served` and `stop`; `listing` names `mcp`;
//! `router` names `mcp`'s call.

mod call;
mod changes;
mod client;
mod compose;
mod config;
mod door;
mod forward;
mod listing;
mod mcp;
mod media;
mod missing;
mod progress;
mod refused;
mod rounds;
mod router;
mod scopes;
mod served;
mod stop;
mod turns;

pub use changes::ListChanged;
pub use client::{DEFAULT_LOG_LEVEL, log_level_of, logging_level_of};
pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_REQUEST_BYTES, DEFAULT_MAX_SESSIONS,
    DEFAULT_SESSION_IDLE_TIMEOUT, EnvelopeConfig, META_PREFIX, default_blocking_calls_per_tool,
};
#[cfg(feature = "rest")]
pub(crate) use door::CallExtras;
pub use listing::Listing;
pub use missing::REQUIRED_CAPABILITIES;
pub use progress::MAX_PROGRESS_TOKEN_BYTES;
#[cfg(feature = "auth")]
pub(crate) use scopes::CallableOnly;
#[cfg(feature = "rest")]
pub(crate) use scopes::{Shown, prose_shown};
#[cfg(feature = "rest")]
pub(crate) use served::Served;
pub use stop::DEADLINE_EXCEEDED;
#[cfg(feature = "rest")]
pub(crate) use stop::TokenCancellation;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use envelope_core::{Capability, Toolset};

use config::{Advertised, Capabilities};
use mcp::MetaKeys;

struct Inner {
    config: EnvelopeConfig,
    disabled: Arc<BTreeSet<String>>,
    /// The tools served now, and the sessions told when they change.
    table: served::Table,
    keys: MetaKeys,
    /// Calls running now: a server shutting down waits for them.
    calls: Arc<crate::drain::Calls>,
    /// Seals the `requestState` of a call that asks its client across rounds (2026-07-28);
    /// `None` when no key could be had, and then a tool cannot ask on that revision.
    rounds: Option<rmcp::model::RequestStateCodec>,
}

/// Serves a [`Toolset`] over MCP. Cheap to clone; clones share the tools.
///
/// It composes with rmcp both ways:
/// - [`with_handler`](EnvelopeServer::with_handler) hands every method the toolset does not own
///   (prompts, resources, resource templates, subscriptions, completion, custom requests, and
///   the handler's own tools) to an rmcp [`ServerHandler`](rmcp::ServerHandler) the author
///   already has, capabilities merged;
/// - [`tool_router`](EnvelopeServer::tool_router) mounts the toolset inside an rmcp
///   `ToolRouter`, beside `#[tool_router]` tools.
#[derive(Clone)]
pub struct EnvelopeServer {
    inner: Arc<Inner>,
    /// The capability tags advertised: per server value, since a transport may add its own.
    capabilities: Arc<Advertised>,
    /// The rmcp handler that serves what the toolset does not.
    handler: Option<Arc<dyn compose::Delegate>>,
    /// Whether `initialize` advertises `tools.listChanged`, and sessions are told of changes.
    announces_changes: bool,
    /// What one MCP session keeps (the logging level its client set): fresh per session.
    session: Arc<client::Session>,
}

impl std::fmt::Debug for EnvelopeServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EnvelopeServer")
            .field("tools", &self.served().tools)
            .field("config", &self.inner.config)
            .finish()
    }
}

impl EnvelopeServer {
    /// A server for `tools`, configured by `config`.
    pub fn new(tools: Toolset, config: EnvelopeConfig) -> Self {
        let keys = MetaKeys::new(&config.meta_prefix);
        let capabilities = Advertised::new(config.capabilities());
        let disabled = Arc::new(config.disabled_modules.clone());
        let table = served::Table::new(work_out(tools, &config, &keys));
        // 32 bytes, the codec's minimum: `try_new` cannot refuse it.
        let rounds = round_key(&config)
            .and_then(|key| rmcp::model::RequestStateCodec::try_new(key.to_vec()).ok());
        EnvelopeServer {
            inner: Arc::new(Inner {
                config,
                disabled,
                table,
                keys,
                calls: Arc::default(),
                rounds,
            }),
            capabilities,
            handler: None,
            announces_changes: false,
            session: Arc::default(),
        }
    }

    /// This server, handing every MCP method its toolset does not own to `handler`: prompts,
    /// resources and their templates, subscriptions, completion, custom requests and
    /// notifications, and the calls of the handler's own tools (listed after the toolset's; a
    /// tool of the toolset shadows one of the same name). `initialize` advertises the
    /// handler's capabilities with the toolset's `tools` and `logging` merged in;
    /// `logging/setLevel` sets the level for the toolset's tools and is passed on when the
    /// handler logs too.
    ///
    /// ```no_run
    /// use envelope_core::{ToolContext, ToolResult, tool, toolset};
    /// use envelope_mcp::rmcp::{self, ServerHandler, model::{ServerCapabilities, ServerConfig}};
    /// use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
    ///
    /// /// Says hello.
    /// #[tool(tier = lite, read_only)]
    /// async fn hello(_ctx: &ToolContext) -> ToolResult<String> {
    ///     Ok("hello".to_owned())
    /// }
    ///
    /// /// An rmcp server of prompts, written as rmcp has it.
    /// struct Prompts;
    /// impl ServerHandler for Prompts {
    ///     fn get_info(&self) -> ServerConfig {
    ///         ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
    ///     }
    /// }
    ///
    /// # async fn serve() -> Result<(), envelope_mcp::McpError> {
    /// let server = EnvelopeServer::new(toolset![hello], EnvelopeConfig::new("notes", "1.0.0"))
    ///     .with_handler(Prompts);
    /// server.serve_stdio().await
    /// # }
    /// ```
    #[must_use]
    pub fn with_handler(mut self, handler: impl rmcp::ServerHandler) -> Self {
        self.handler = Some(Arc::new(handler));
        self
    }

    /// A clone for a new MCP session: the same tools and handler, with the session's own
    /// state (its logging level).
    pub(crate) fn for_session(&self) -> Self {
        EnvelopeServer {
            session: Arc::default(),
            ..self.clone()
        }
    }

    /// The largest request this server reads, in bytes.
    pub fn max_request_bytes(&self) -> usize {
        self.inner.config.max_request_bytes
    }

    /// How many streamable HTTP sessions this server holds at once.
    pub fn max_sessions(&self) -> usize {
        self.inner.config.max_sessions
    }

    /// How long a streamable HTTP session may stay idle before it is closed.
    pub fn session_idle_timeout(&self) -> Duration {
        self.inner.config.session_idle_timeout
    }

    /// How long a call may run before it answers `deadline_exceeded`; `None` without a limit.
    pub fn call_timeout(&self) -> Option<Duration> {
        self.inner.config.call_timeout
    }

    /// How many tool calls this server (and its clones) is running now.
    pub fn calls_in_flight(&self) -> usize {
        self.inner.calls.running()
    }

    /// The server's name, version and instructions, as `initialize` gives them.
    #[cfg(feature = "rest")]
    pub(crate) fn identity(&self) -> (&str, &str, Option<&str>) {
        let config = &self.inner.config;
        (
            &config.name,
            &config.version,
            config.instructions.as_deref(),
        )
    }

    /// How many tools this server serves.
    #[cfg(feature = "http")]
    pub(crate) fn tool_count(&self) -> usize {
        self.served().listing.len()
    }

    /// Whether this server seals continuations (its key ring is loaded).
    #[cfg(feature = "http")]
    pub(crate) fn seals_continuations(&self) -> bool {
        self.inner
            .config
            .states
            .get::<envelope_core::paging::Continuations>()
            .is_some()
    }

    /// The capability tags this server advertises.
    pub fn capabilities(&self) -> &[Capability] {
        &self.capabilities.tags
    }

    /// This server, advertising `tag` too when its tags are derived from its configuration
    /// (a transport adds what it provides; an author's own list stays as written).
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) fn with_transport_capability(mut self, tag: Capability) -> Self {
        if matches!(self.inner.config.capabilities, Capabilities::Derived)
            && !self.capabilities.tags.contains(&tag)
        {
            // In the contract's order, as the derived list is.
            let tags = Capability::KNOWN
                .iter()
                .filter(|known| **known == tag || self.capabilities.tags.contains(known))
                .cloned()
                .collect();
            self.capabilities = Advertised::new(tags);
        }
        self
    }

    /// The served table now.
    pub(crate) fn served(&self) -> Arc<served::Served> {
        self.inner.table.now()
    }

    /// `tools` served by this server, worked out (their listing, schemas, declared arguments).
    pub(crate) fn work_out(&self, tools: Toolset) -> served::Served {
        work_out(tools, &self.inner.config, &self.inner.keys)
    }

    /// The tools as MCP lists them now: sorted by name.
    pub fn tools(&self) -> Arc<[rmcp::model::Tool]> {
        Arc::clone(&self.served().listing)
    }
}

/// `tools` as a server configured by `config` serves them: each listed in its detail and
/// dialects, and those of a switched-off module not runnable.
fn work_out(tools: Toolset, config: &EnvelopeConfig, keys: &MetaKeys) -> served::Served {
    served::Served::new(
        tools,
        |tool| {
            listing::listing(
                tool,
                keys,
                config.listing,
                config.offered_dialects(),
                config.dialect,
            )
        },
        // A switched-off tool answers every call with `module_disabled`: not runnable.
        |spec| {
            spec.module
                .as_deref()
                .is_none_or(|module| !config.disabled_modules.contains(module))
        },
        config.blocking_calls_per_tool,
    )
}

/// The configured round key, or one drawn now from the system's source of randomness; `None`
/// (logged) when there is none to draw from: a state sealed with a guessable key could be
/// forged, so no tool asks across rounds then.
fn round_key(config: &EnvelopeConfig) -> Option<zeroize::Zeroizing<[u8; 32]>> {
    if let Some(key) = &config.round_key {
        return Some(key.clone());
    }
    let mut key = zeroize::Zeroizing::new([0_u8; 32]);
    match getrandom::fill(&mut key[..]) {
        Ok(()) => Some(key),
        Err(error) => {
            tracing::error!(%error, "no randomness for the round key: tools cannot ask the client on 2026-07-28");
            None
        }
    }
}

#[cfg(feature = "stdio")]
impl EnvelopeServer {
    /// Serves over standard input and output until the client disconnects. Every line gets an
    /// answer (see [`EnvelopeServer::serve_lines`]).
    pub async fn serve_stdio(self) -> Result<(), crate::McpError> {
        let (input, output) = crate::stdio::standard();
        self.serve_lines(input, output).await
    }
}

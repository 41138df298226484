//! The proxy: an [`EnvelopeServer`] whose tools are the upstream's, listed again whenever the
//! upstream says they changed; a change of the upstream's prompts or resources is told on to
//! the clients.

use std::sync::Arc;
use std::time::Duration;

use envelope_core::{ToolError, Toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer, ListChanged};

use crate::config::ProxyConfig;
use crate::forward::Forwarded;
use crate::fronted::Fronted;
use crate::redis_store::DEFAULT_REDIS_TTL;
use crate::redis_store::RedisStore;
use crate::result_store::ResultStore;
use crate::store::{DEFAULT_STORE_BYTES, DEFAULT_STORED_ANSWER_BYTES, MemoryStore};
use crate::upstream::Upstream;

/// One upstream server, fronted: every call of its tools answered as an envelope.
///
/// ```no_run
/// use envelope_core::paging::{ContinuationKey, Continuations};
/// use envelope_mcp::EnvelopeConfig;
/// use envelope_proxy::{Proxy, ProxyConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = ProxyConfig::parse(
///     r#"
///     [upstream]
///     command = ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv/docs"]
///     "#,
/// )?;
/// let serving = EnvelopeConfig::new("docs", "1.0.0")
///     .with_continuations(Continuations::new(ContinuationKey::generate(1)?));
/// let proxy = Proxy::start(config, serving).await?;
/// proxy.server().clone().serve_stdio().await?;
/// # Ok(())
/// # }
/// ```
#[derive(Clone)]
pub struct Proxy {
    server: EnvelopeServer,
    upstream: Arc<Upstream>,
    store: Arc<ResultStore>,
    config: Arc<ProxyConfig>,
}

impl std::fmt::Debug for Proxy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Proxy")
            .field("upstream", &self.upstream)
            .finish_non_exhaustive()
    }
}

impl Proxy {
    /// Starts (or reaches) the upstream `config` names, lists its tools, and serves them with
    /// `serving` (which must hold the continuation keys: a read-only tool's too-big answer is
    /// paged with them). An error when the upstream cannot be started or listed.
    pub async fn start(config: ProxyConfig, serving: EnvelopeConfig) -> Result<Proxy, String> {
        let upstream = Arc::new(Upstream::start(&config).await?);
        // The upstream's prompts, resources, completion and logging, beside its tools.
        let forwarded = Forwarded::new(Arc::clone(&upstream)).await;
        let server = EnvelopeServer::new(Toolset::default(), serving)
            .with_handler(forwarded)
            .with_changing_tools();
        let max_answer_bytes = config
            .store
            .max_answer_bytes
            .unwrap_or(DEFAULT_STORED_ANSWER_BYTES);
        let store = Arc::new(match &config.store.redis_url {
            Some(url) => {
                let ttl = config
                    .store
                    .ttl_seconds
                    .map_or(DEFAULT_REDIS_TTL, Duration::from_secs);
                let fallback_bytes = config.store.max_bytes.unwrap_or(DEFAULT_STORE_BYTES);
                ResultStore::Redis(
                    RedisStore::connect(url, max_answer_bytes, ttl, fallback_bytes).await?,
                )
            }
            None => ResultStore::Memory(MemoryStore::new(
                config.store.max_bytes.unwrap_or(DEFAULT_STORE_BYTES),
                max_answer_bytes,
            )),
        });
        let proxy = Proxy {
            server,
            upstream,
            store,
            config: Arc::new(config),
        };
        proxy
            .relist()
            .await
            .map_err(|error| format!("cannot list the upstream's tools: {}", error.message()))?;
        let watcher = proxy.clone();
        let changed = proxy.upstream.tools_changed();
        tokio::spawn(async move {
            loop {
                changed.notified().await;
                if let Err(error) = watcher.relist().await {
                    tracing::warn!(
                        error = error.message(),
                        "the upstream's tools changed and could not be listed"
                    );
                }
            }
        });
        // The upstream's prompts and resources are forwarded as they are: a change is only
        // told on, to the clients' sessions.
        let lists = proxy.upstream.lists_changed();
        for (changed, list) in [
            (lists.prompts, ListChanged::Prompts),
            (lists.resources, ListChanged::Resources),
        ] {
            let server = proxy.server.clone();
            tokio::spawn(async move {
                loop {
                    changed.notified().await;
                    server.tell_list_changed(list).await;
                }
            });
        }
        Ok(proxy)
    }

    /// The server the upstream's tools are served by.
    pub fn server(&self) -> &EnvelopeServer {
        &self.server
    }

    /// The upstream.
    pub fn upstream(&self) -> &Arc<Upstream> {
        &self.upstream
    }

    /// The answers of tools that are not read-only, kept for their pages in this process;
    /// `None` when they are kept in Redis (`[store] redis_url`).
    pub fn memory_store(&self) -> Option<&MemoryStore> {
        match &*self.store {
            ResultStore::Memory(store) => Some(store),
            ResultStore::Redis(_) => None,
        }
    }

    /// Lists the upstream's tools again and serves them from now on; returns how many are
    /// served. A tool whose declaration cannot be served (a name MCP does not allow, an empty
    /// description made up for) is left out, with a warning in the log.
    pub async fn relist(&self) -> Result<usize, ToolError> {
        let listed = self.upstream.list_tools().await?;
        let mut tools = Toolset::default();
        for tool in &listed {
            let resolved = self.config.tool(&tool.name);
            if resolved.hidden {
                continue;
            }
            match Fronted::new(
                tool,
                &resolved,
                Arc::clone(&self.upstream),
                Arc::clone(&self.store),
            ) {
                Ok(fronted) => {
                    // Checked by `Fronted::new`: the insert cannot refuse it.
                    let _ = tools.insert(Arc::new(fronted));
                }
                Err(error) => {
                    tracing::warn!(tool = %tool.name, %error, "an upstream tool is not served");
                }
            }
        }
        let served = tools.len();
        self.server.set_tools(tools).await;
        Ok(served)
    }
}

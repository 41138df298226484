//! Streamable HTTP: the server mounted at `/mcp` on an axum router, with `X-Request-ID`
//! handling: a valid ULID from the client is the envelope's `request_id`; another id that is
//! safe to log is kept beside it as `meta.client_request_id`; anything else is replaced by a
//! fresh ULID. The id kept is echoed. Each HTTP concern is one layer, composed in one order
//! ([`layer`]). Served by an accept loop of its own ([`serve`]), so that every connection has
//! deadlines and their number a cap ([`connections`]).

mod admission;
#[cfg(feature = "auth")]
pub mod auth;
mod config;
mod connections;
mod guard;
mod health;
mod holding;
mod layer;
#[cfg(feature = "rest")]
pub mod rest;
mod serve;
mod stall;
mod unread;

pub(crate) use admission::Admission;
#[cfg(feature = "rest")]
pub(crate) use admission::{Admitted, Refusal};
#[cfg(feature = "rest")]
pub(crate) use guard::HostRefusal;

pub use config::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_STREAMS_PER_CONNECTION, DEFAULT_MCP_PATH, DEFAULT_WRITE_TIMEOUT, HttpConfig,
};
pub use connections::{CONNECTION_DESCRIPTOR_HEADROOM, UNLIMITED_FILES_MAX_CONNECTIONS};
use health::Readiness;
pub use health::{HEALTH_PATH, READY_PATH};
pub use layer::request_id_layer;
pub use serve::{MAX_HEADER_LIST_BYTES, MAX_UNSENT_BYTES_PER_STREAM};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::drain::Calls;
use crate::{EnvelopeServer, McpError};

/// Connections the kernel queues before the server accepts them. `TcpListener::bind` asks for
/// 128: 256 clients connecting at once overflowed it, and the dropped ones retried a second
/// later, which was most of the load test's p99. The kernel caps it at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 1024;

impl EnvelopeServer {
    /// An axum router serving this server at `/mcp` over streamable HTTP, with the default
    /// [`HttpConfig`] (loopback hosts only); see [`http_router_with`](Self::http_router_with).
    pub fn http_router(self) -> axum::Router {
        self.http_router_with(HttpConfig::default())
    }

    /// An axum router serving this server over streamable HTTP as `config` says, with
    /// `/healthz` (liveness: `200` while the process serves) and `/readyz` (`200` with the
    /// tool count once the toolset is built and the key ring loaded; `503` once shutdown has
    /// begun, so that a load balancer stops sending new calls).
    ///
    /// Every route's `Host` is judged by one rule (RFC 9112's, then the allowed hosts and
    /// origins): no `Host` on HTTP/1.1, two of them, or one that is no `host[:port]`
    /// (`user@host` included) is answered `400`; a host or origin not allowed `403` (health and
    /// readiness are held to the first rule only). A request target that names an authority
    /// (the absolute form `http://host/path`, or HTTP/2's `:authority`) is judged by it rather
    /// than by its `Host` (RFC 9112 §3.2.2), and is `400` with userinfo in it. A single
    /// trailing dot names the same host (`localhost.` is `localhost`). The MCP endpoint answers
    /// these in plain text, the plain HTTP API as problems.
    ///
    /// Limits, from the server's configuration and `config`:
    /// - a request body over the maximum request size is answered `413` before any of it is
    ///   parsed, whether it declares its length or streams it;
    /// - a body still arriving past the body timeout ([`DEFAULT_BODY_TIMEOUT`] unless
    ///   configured), or past what is left of the request timeout, is answered `408` and its
    ///   connection closed; while it arrives it holds no place under the concurrency limit;
    /// - past the session cap ([`DEFAULT_MAX_SESSIONS`](crate::DEFAULT_MAX_SESSIONS) unless
    ///   configured), a new session is refused with `503` and `Retry-After`; requests within
    ///   existing sessions go on;
    /// - a request reusing the JSON-RPC id of one still in flight in its session is answered
    ///   at once with a JSON-RPC error ([`DUPLICATE_ID`](crate::DUPLICATE_ID)) carrying that id;
    /// - a session idle for longer than the idle timeout
    ///   ([`DEFAULT_SESSION_IDLE_TIMEOUT`](crate::DEFAULT_SESSION_IDLE_TIMEOUT), five minutes,
    ///   unless configured) is closed, and its slot freed;
    /// - past [`HttpConfig::with_max_concurrent_requests`], a request whose body has arrived is
    ///   refused at once with `503`, `Retry-After` and a JSON-RPC error ([`OVERLOADED`]);
    /// - past [`HttpConfig::with_request_timeout`], counted from the end of the request's head
    ///   (its upload included), a request is answered `503` with `Retry-After` and its work
    ///   dropped.
    ///
    /// A call holds its place under the concurrency limit until its answer is sent, an event
    /// stream included. The request timeout holds until the response's headers are sent: with
    /// JSON answers ([`HttpConfig::with_json_response`], stateless) that is when the call is
    /// done; an answer streamed as server-sent events sends its headers at once, and the
    /// call's own timeout
    /// ([`EnvelopeConfig::with_call_timeout`](crate::EnvelopeConfig::with_call_timeout)) is
    /// then what bounds it.
    ///
    /// The connection deadlines (request heads, idleness) and the connection cap are
    /// [`serve_http_with`](Self::serve_http_with)'s: a router served some other way has the
    /// body and request deadlines only.
    pub fn http_router_with(self, config: HttpConfig) -> axum::Router {
        let server = self.with_transport_capability(envelope_core::Capability::STREAMABLE_HTTP);
        let sessions = sessions_for(&server);
        let max_request_bytes = server.max_request_bytes();
        let posts = Arc::<Calls>::default();
        let streams = drain_then_close(Arc::clone(&posts), &config);
        let admission = admission(max_request_bytes, posts, &streams, &config);
        // The resource server, when authentication is on: every scope a tool declares is one a
        // client may ask for.
        #[cfg(feature = "auth")]
        let gate = config.auth.clone().map(|auth| {
            let scopes = auth::declared_scopes(&server.served().tools);
            let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
            Arc::new(auth::Gate::new(auth, &scopes))
        });
        let rmcp_config = StreamableHttpServerConfig::default()
            // rmcp has a body limit of its own (4 MiB): the server's is the one that holds.
            .with_max_request_body_bytes(max_request_bytes)
            .with_json_response(config.json_response)
            .with_sse_keep_alive(config.sse_keep_alive)
            .with_legacy_session_mode(!config.stateless)
            // Hosts and origins are judged once, for every route, by `judge_host`.
            .disable_allowed_hosts()
            .disable_allowed_origins()
            .with_cancellation_token(streams);
        let checks = guard::Checks::new(&config);
        let ready = Readiness {
            tools: server.tool_count(),
            continuations: server.seals_continuations(),
            shutdown: config.shutdown.clone(),
        };
        #[cfg(feature = "rest")]
        let gateway = {
            #[cfg(feature = "auth")]
            let challenges = gate.as_ref().map(|gate| Arc::clone(&gate.challenge));
            #[cfg(not(feature = "auth"))]
            let challenges = ();
            gateway(&server, &admission, &config, challenges)
        };
        let sessions = Arc::new(sessions);
        #[cfg(feature = "auth")]
        let step_up = gate
            .as_ref()
            .map(|gate| (server.clone(), Arc::clone(&gate.challenge)));
        let endpoint = layer::Endpoint {
            admission,
            sessions: Arc::clone(&sessions),
            max_sessions: server.max_sessions(),
            #[cfg(feature = "auth")]
            step_up,
        };
        let service =
            StreamableHttpService::new(move || Ok(server.for_session()), sessions, rmcp_config);
        let mcp = axum::Router::new().nest_service(&config.path, service);
        // Merged into below when the gateway or the authorization server's routes are built in.
        #[cfg_attr(not(any(feature = "rest", feature = "auth")), allow(unused_mut))]
        let mut router = layer::mcp_endpoint(mcp, endpoint).merge(health::routes(ready));
        #[cfg(feature = "rest")]
        let gateway_mounted = gateway.is_some();
        #[cfg(not(feature = "rest"))]
        let gateway_mounted = false;
        #[cfg(feature = "rest")]
        if let Some(gateway) = gateway {
            router = router.merge(gateway);
        }
        #[cfg(feature = "auth")]
        if let Some(gate) = &gate {
            router = router.merge(gate.routes());
        }
        layer::around(
            router,
            layer::Around {
                checks,
                cors_origins: config.cors_origins.clone(),
                gateway: gateway_mounted,
                #[cfg(feature = "auth")]
                gate,
            },
        )
    }

    /// Serves streamable HTTP on `addr` until the process ends, with the default
    /// [`HttpConfig`]; see [`serve_http_with`](Self::serve_http_with).
    pub async fn serve_http(self, addr: SocketAddr) -> Result<(), McpError> {
        self.serve_http_with(addr, HttpConfig::default()).await
    }

    /// Serves streamable HTTP on `addr` as `config` says, with a listen backlog of 1,024
    /// connections, until `config`'s shutdown token is cancelled: then no new connection is
    /// accepted, `/readyz` answers `503`, calls in flight finish (for up to the drain
    /// timeout), open event streams close, and this returns `Ok`.
    ///
    /// Connections speak HTTP/1.1 (and 1.0) and, on the same listener, HTTP/2 over cleartext
    /// (h2c with prior knowledge, as proxies, meshes and load balancers speak to upstreams;
    /// [`HttpConfig::with_http2`]): a connection opening with HTTP/2's preface is served as
    /// HTTP/2, with at most [`HttpConfig::with_max_streams_per_connection`] streams in flight,
    /// headers of at most [`MAX_HEADER_LIST_BYTES`], and h2's guards against reset, SETTINGS
    /// and CONTINUATION floods. TLS (and so ALPN) is the proxy's: this server speaks cleartext.
    /// Beside what [`http_router_with`](Self::http_router_with) holds every request to, every
    /// connection is held to deadlines, so that none can be held open for nothing:
    /// - a request head must arrive whole within the header timeout
    ///   ([`DEFAULT_HEADER_TIMEOUT`] unless set), counted from when the server waits for one
    ///   (the connection accepted, or the previous answer sent), so a connection that sends
    ///   nothing is closed by it too; past it the connection is closed without an answer;
    /// - a connection with no request in flight that reads and writes nothing for the idle
    ///   timeout ([`DEFAULT_IDLE_TIMEOUT`]) is closed; one with a request in flight, an event
    ///   stream included, never is;
    /// - at most [`HttpConfig::with_max_connections`] connections are open, and never more
    ///   than the file limit leaves room for (the soft `RLIMIT_NOFILE` less a headroom for the
    ///   files tools open). Past the cap the oldest connection with no request in flight is
    ///   closed to make room: one that has had no request at once, another once it has written
    ///   what it was writing (at most a second later); a request whose head arrives on it just
    ///   then is answered `503` with `Retry-After: 1` and `Connection: close`. When every one
    ///   has a request in flight, the new one is answered `503` with `Retry-After` and
    ///   `Connection: close`, and closed;
    /// - output the client leaves unread for the write timeout ([`DEFAULT_WRITE_TIMEOUT`]) is
    ///   given up: a connection whose socket takes no byte for that long is closed, and an
    ///   answer (an HTTP/2 stream, an event stream) the client takes nothing of for that long
    ///   is dropped, freeing its place under the concurrency limit.
    ///
    /// The first bytes of a connection tell HTTP/2's preface from an HTTP/1.1 request; they
    /// are read within the header timeout too, so a connection trickling them is closed (its
    /// first head then has at most twice the header timeout in all).
    pub async fn serve_http_with(
        self,
        addr: SocketAddr,
        config: HttpConfig,
    ) -> Result<(), McpError> {
        let io = |source| McpError::Io {
            addr: addr.to_string(),
            source,
        };
        let socket = match addr {
            SocketAddr::V4(_) => tokio::net::TcpSocket::new_v4(),
            SocketAddr::V6(_) => tokio::net::TcpSocket::new_v6(),
        }
        .map_err(io)?;
        // As `TcpListener::bind` does on Unix: a restarted server can bind at once.
        #[cfg(unix)]
        socket.set_reuseaddr(true).map_err(io)?;
        socket.bind(addr).map_err(io)?;
        let listener = socket.listen(LISTEN_BACKLOG).map_err(io)?;
        let max_connections = match config.max_connections {
            Some(limit) => limit.min(connections::file_limit_max_connections()),
            None => connections::file_limit_max_connections(),
        };
        tracing::debug!(max_connections, "serving streamable HTTP");
        let deadlines = serve::Deadlines {
            header: config.header_timeout,
            idle: config.idle_timeout,
            write: config.write_timeout,
            http2: config.http2.then_some(config.max_streams_per_connection),
        };
        let (shutdown, drain) = (config.shutdown.clone(), config.drain_timeout);
        serve::accept_loop(
            listener,
            self.http_router_with(config),
            deadlines,
            connections::Connections::new(max_connections),
            shutdown,
            drain,
        )
        .await;
        Ok(())
    }
}

/// rmcp's session manager for `server`: a session idle for the server's idle timeout is
/// closed, but never before the longest call could have answered.
fn sessions_for(server: &EnvelopeServer) -> LocalSessionManager {
    let mut sessions = LocalSessionManager::default();
    // rmcp counts a session idle while a call runs without messages: a session must outlive
    // the longest call, or a slow call would lose its session and its answer.
    let idle = match server.call_timeout() {
        Some(call) => server
            .session_idle_timeout()
            .max(call + Duration::from_secs(1)),
        None => server.session_idle_timeout(),
    };
    sessions.session_config.keep_alive = Some(idle);
    sessions
}

/// The limits every posted request of the router is held to, counted in `posts`; `streams`
/// closes rmcp's event streams when the router is dropped.
fn admission(
    max_request_bytes: usize,
    posts: Arc<Calls>,
    streams: &CancellationToken,
    config: &HttpConfig,
) -> Admission {
    Admission {
        max_request_bytes,
        posts,
        // Outside a runtime the streams close on the shutdown token itself, which is the
        // caller's to cancel, not the router's.
        _closing: tokio::runtime::Handle::try_current()
            .is_ok()
            .then(|| Arc::new(streams.clone().drop_guard())),
        permits: config
            .max_concurrent_requests
            .map(|limit| Arc::new(tokio::sync::Semaphore::new(limit.max(1)))),
        body_timeout: config.body_timeout,
        request_timeout: config.request_timeout,
    }
}

/// The plain HTTP API's routes, when `config` mounts it, held to `admission` and answering a
/// scope refusal with `challenges`; none when its path would be the MCP endpoint's.
#[cfg(feature = "rest")]
fn gateway(
    server: &EnvelopeServer,
    admission: &Admission,
    config: &HttpConfig,
    challenges: rest::Challenges,
) -> Option<axum::Router> {
    let rest = config.rest.clone()?;
    if rest::is_gateway_path(&config.path) {
        tracing::error!(
            path = config.path,
            "the MCP endpoint's path is the plain HTTP API's: the API is not mounted"
        );
        return None;
    }
    Some(rest::routes(
        server.clone(),
        rest,
        admission.clone(),
        config,
        challenges,
    ))
}

/// The token rmcp's event streams close on: cancelled once `config`'s shutdown has come and
/// every posted message has been answered (or the drain timeout passed), so that a draining
/// server's open streams end and its connections close. Outside a runtime, the shutdown token
/// itself.
fn drain_then_close(posts: Arc<Calls>, config: &HttpConfig) -> CancellationToken {
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return config.shutdown.clone();
    };
    let streams = CancellationToken::new();
    let (shutdown, drain) = (config.shutdown.clone(), config.drain_timeout);
    let close = streams.clone();
    runtime.spawn(async move {
        // Ends when the router is dropped without a shutdown (its guard closes the streams).
        tokio::select! {
            () = shutdown.cancelled() => {}
            () = close.cancelled() => return,
        }
        let running = posts.running();
        tracing::info!(running, "shutting down: draining requests in flight");
        if !posts.drained(drain).await {
            tracing::warn!(
                running = posts.running(),
                "requests still running past the drain timeout are cut off"
            );
        }
        close.cancel();
    });
    streams
}

/// The JSON-RPC error code of a request refused because the server is at its concurrency
/// limit (in the implementation-defined server-error range).
pub const OVERLOADED: i64 = -32005;

/// The JSON-RPC error code of a `tools/call` over HTTP refused `403` because the caller's
/// token lacks a scope the tool declares (in the implementation-defined server-error range):
/// its `data` is the `permission` envelope, code `insufficient_scope`. (Feature `auth`.)
pub const INSUFFICIENT_SCOPE_ERROR: i64 = -32006;

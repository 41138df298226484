//! How the streamable HTTP endpoint is served: hosts and origins it accepts, how it answers,
//! its limits, and when it stops.

use std::time::Duration;

use tokio_util::sync::CancellationToken;

/// The path the MCP endpoint is mounted at unless configured otherwise.
pub const DEFAULT_MCP_PATH: &str = "/mcp";

/// How long a draining server waits for calls in flight after a shutdown signal, unless
/// configured otherwise: past it, the calls still running are cut off.
pub const DEFAULT_DRAIN_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may take to send a whole request head unless configured otherwise:
/// counted from the moment the server waits for one (the connection accepted, or the previous
/// answer sent on a kept-alive one), so that it also closes a connection that sends nothing.
/// Past it the connection is closed without an answer.
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// How long a connection may stay open with no request in flight and no byte read or written,
/// unless configured otherwise. It closes what the header timeout does not: a kept-alive
/// connection that has finished its requests and sends nothing while the header timeout is
/// off or longer, and, as a backstop, any connection with nothing in flight on which no byte
/// moves for that long, whatever it last sent. A connection with a request in flight, an event
/// stream included, is never idle, however long it stays quiet.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How long a request's body may take to arrive whole, unless configured otherwise: counted
/// from the end of its head. Past it the request is answered `408` and its connection closed.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a connection may leave written output unread, unless configured otherwise: a
/// connection whose socket takes no byte for that long while the server has bytes to send is
/// closed, and an answer (an HTTP/2 stream, or an HTTP/1.1 answer) the client takes nothing of
/// for that long is dropped, freeing its place under the concurrency limit.
pub const DEFAULT_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// How many requests one HTTP/2 connection may have in flight at once, unless configured
/// otherwise (its `SETTINGS_MAX_CONCURRENT_STREAMS`).
pub const DEFAULT_MAX_STREAMS_PER_CONNECTION: u32 = 100;

/// How the streamable HTTP endpoint is served ([`EnvelopeServer::http_router_with`],
/// [`EnvelopeServer::serve_http_with`]).
///
/// The defaults suit a server on a developer's machine: only loopback `Host` headers are
/// accepted (a protection against DNS rebinding), answers stream as server-sent events,
/// sessions are kept for clients of protocol versions that have them, and there is no request
/// timeout beyond the call timeout, no concurrency limit and no CORS. Every connection is held
/// to deadlines whatever the configuration says of the rest (a request head within
/// [`DEFAULT_HEADER_TIMEOUT`], a body within [`DEFAULT_BODY_TIMEOUT`], closed when idle for
/// [`DEFAULT_IDLE_TIMEOUT`]), and their number is capped below the file limit. A server behind a proxy
/// or load balancer names the hosts it is reached by ([`with_allowed_hosts`](Self::with_allowed_hosts))
/// and usually runs stateless.
///
/// ```
/// use std::time::Duration;
/// use envelope_mcp::HttpConfig;
///
/// let config = HttpConfig::default()
///     .with_allowed_hosts(["mcp.example.com", "localhost"])
///     .with_stateless(true)
///     .with_json_response(true)
///     .with_max_concurrent_requests(Some(256))
///     .with_request_timeout(Some(Duration::from_secs(150)));
/// assert_eq!(config.path(), "/mcp");
/// ```
///
/// [`EnvelopeServer::http_router_with`]: crate::EnvelopeServer::http_router_with
/// [`EnvelopeServer::serve_http_with`]: crate::EnvelopeServer::serve_http_with
#[derive(Debug, Clone)]
pub struct HttpConfig {
    pub(crate) path: String,
    /// `None`: any `Host`.
    pub(crate) allowed_hosts: Option<Vec<String>>,
    pub(crate) allowed_origins: Vec<String>,
    pub(crate) json_response: bool,
    pub(crate) sse_keep_alive: Option<Duration>,
    pub(crate) stateless: bool,
    pub(crate) request_timeout: Option<Duration>,
    pub(crate) max_concurrent_requests: Option<usize>,
    pub(crate) cors_origins: Vec<String>,
    pub(crate) shutdown: CancellationToken,
    pub(crate) drain_timeout: Duration,
    pub(crate) header_timeout: Option<Duration>,
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) body_timeout: Option<Duration>,
    pub(crate) write_timeout: Option<Duration>,
    pub(crate) http2: bool,
    pub(crate) max_streams_per_connection: u32,
    /// `None`: from the file limit alone.
    pub(crate) max_connections: Option<usize>,
    /// The plain HTTP gateway mounted beside the MCP endpoint; `None` mounts none.
    #[cfg(feature = "rest")]
    pub(crate) rest: Option<RestConfig>,
    /// The resource server every request but health, readiness and its metadata must satisfy;
    /// `None`: no authentication.
    #[cfg(feature = "auth")]
    pub(crate) auth: Option<crate::http::auth::ResourceServer>,
}

impl Default for HttpConfig {
    fn default() -> Self {
        HttpConfig {
            path: DEFAULT_MCP_PATH.to_owned(),
            allowed_hosts: Some(vec![
                "localhost".to_owned(),
                "127.0.0.1".to_owned(),
                "::1".to_owned(),
            ]),
            allowed_origins: Vec::new(),
            json_response: false,
            sse_keep_alive: Some(Duration::from_secs(15)),
            stateless: false,
            request_timeout: None,
            max_concurrent_requests: None,
            cors_origins: Vec::new(),
            shutdown: CancellationToken::new(),
            drain_timeout: DEFAULT_DRAIN_TIMEOUT,
            header_timeout: Some(DEFAULT_HEADER_TIMEOUT),
            idle_timeout: Some(DEFAULT_IDLE_TIMEOUT),
            body_timeout: Some(DEFAULT_BODY_TIMEOUT),
            write_timeout: Some(DEFAULT_WRITE_TIMEOUT),
            http2: true,
            max_streams_per_connection: DEFAULT_MAX_STREAMS_PER_CONNECTION,
            max_connections: None,
            #[cfg(feature = "rest")]
            rest: Some(RestConfig::default()),
            #[cfg(feature = "auth")]
            auth: None,
        }
    }
}

impl HttpConfig {
    /// Mounts the MCP endpoint at `path` (default [`DEFAULT_MCP_PATH`]). A path without a
    /// leading `/` gets one; the root (`""` or `/`) cannot hold it beside `/healthz` and
    /// `/readyz`, so it keeps the default.
    #[must_use]
    pub fn with_path(mut self, path: impl Into<String>) -> Self {
        let path = path.into();
        let path = path.trim_end_matches('/');
        if !path.is_empty() {
            self.path = if path.starts_with('/') {
                path.to_owned()
            } else {
                format!("/{path}")
            };
        }
        self
    }

    /// The path the MCP endpoint is mounted at.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Accepts requests whose `Host` header names one of `hosts` (a name, or `name:port`), or
    /// whose target does when it names an authority (the absolute form, HTTP/2's
    /// `:authority`); names compare without case and without a single trailing dot. The
    /// default is loopback only; a server reached through a proxy or by a public name lists
    /// those names here.
    #[must_use]
    pub fn with_allowed_hosts(
        mut self,
        hosts: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_hosts = Some(hosts.into_iter().map(Into::into).collect());
        self
    }

    /// Accepts any `Host` header. Only behind a proxy that checks it: a server on a public
    /// address without a host check can be reached through DNS rebinding.
    #[must_use]
    pub fn with_any_host(mut self) -> Self {
        self.allowed_hosts = None;
        self
    }

    /// Refuses requests whose `Origin` header is none of `origins` (`scheme://host:port`,
    /// `:*` for any port); requests without one still pass. Empty (the default) checks no
    /// origin.
    #[must_use]
    pub fn with_allowed_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.allowed_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Answers a call that sends nothing before its result as one `application/json` body
    /// instead of a server-sent event stream (a call that reports progress still streams).
    #[must_use]
    pub fn with_json_response(mut self, json: bool) -> Self {
        self.json_response = json;
        self
    }

    /// How often an open event stream gets a keep-alive comment (default 15 s; `None` for
    /// never).
    #[must_use]
    pub fn with_sse_keep_alive(mut self, every: Option<Duration>) -> Self {
        self.sse_keep_alive = every;
        self
    }

    /// Serves every request on its own, keeping no session, whatever protocol version the
    /// client speaks. MCP `2026-07-28` has no sessions and is always served so; older versions
    /// keep theirs unless this is set. A stateless server can run as many replicas behind a
    /// load balancer without stickiness.
    #[must_use]
    pub fn with_stateless(mut self, stateless: bool) -> Self {
        self.stateless = stateless;
        self
    }

    /// The longest a request may take, its upload included (`None`, the default: no limit).
    /// The clock starts when its head has arrived: its body must arrive within the remainder
    /// (and the body timeout), else it is answered `408`; the handler runs within what is then
    /// left, else it is answered `503` with `Retry-After` and its work is dropped. Keep it
    /// above the server's call timeout, so that a call that overruns answers its own
    /// `deadline_exceeded` envelope first and this only catches what no envelope can. It holds
    /// until the response's headers are sent: the whole call with JSON answers, only the start
    /// of a server-sent event stream.
    #[must_use]
    pub fn with_request_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.request_timeout = timeout;
        self
    }

    /// At most `limit` requests are served at once; one more is refused at once with `503`,
    /// `Retry-After` and a JSON-RPC error naming the overload, never queued (`None`, the
    /// default: no limit). Only posted messages count (health checks and open event streams do
    /// not), each until its answer is sent, an event stream's last event included.
    #[must_use]
    pub fn with_max_concurrent_requests(mut self, limit: Option<usize>) -> Self {
        self.max_concurrent_requests = limit;
        self
    }

    /// Answers CORS preflights and marks responses for browser callers from `origins` (`*`
    /// for any). Empty, the default, adds no CORS headers at all.
    #[must_use]
    pub fn with_cors_origins(
        mut self,
        origins: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        self.cors_origins = origins.into_iter().map(Into::into).collect();
        self
    }

    /// Stops serving when `token` is cancelled: no new connection is accepted (`/readyz`
    /// answers `503` on connections still open), calls in flight finish (for up to the drain
    /// timeout), then open streams close and
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) returns. A router built
    /// outside a tokio runtime cannot wait: its streams close when the token is cancelled.
    #[must_use]
    pub fn with_shutdown(mut self, token: CancellationToken) -> Self {
        self.shutdown = token;
        self
    }

    /// The token that stops this server (see [`with_shutdown`](Self::with_shutdown)).
    pub fn shutdown_token(&self) -> &CancellationToken {
        &self.shutdown
    }

    /// How long a draining server waits for calls in flight
    /// ([`DEFAULT_DRAIN_TIMEOUT`] unless set).
    #[must_use]
    pub fn with_drain_timeout(mut self, timeout: Duration) -> Self {
        self.drain_timeout = timeout;
        self
    }

    /// How long a connection may take to send a whole request head
    /// ([`DEFAULT_HEADER_TIMEOUT`] unless set; `None` for no limit), counted from the moment the
    /// server waits for one: the connection accepted (so a connection that sends nothing is
    /// closed by it), or the previous answer sent on a kept-alive connection (so it also bounds
    /// the wait for a next request). Past it the connection is closed without an answer. Only
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) holds connections to it.
    #[must_use]
    pub fn with_header_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.header_timeout = timeout;
        self
    }

    /// How long a connection may stay open with no request in flight and no byte read or
    /// written ([`DEFAULT_IDLE_TIMEOUT`] unless set; `None` for no limit); then it is closed.
    /// It is what closes a kept-alive connection that has finished its requests when the
    /// header timeout is off or longer. A connection with a request in flight, an event stream
    /// included, is never idle. Only
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) holds connections to it.
    #[must_use]
    pub fn with_idle_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.idle_timeout = timeout;
        self
    }

    /// How long a request's body may take to arrive whole, counted from the end of its head
    /// ([`DEFAULT_BODY_TIMEOUT`] unless set; `None` for no limit). A body still arriving then
    /// is answered `408` (plain text on the MCP endpoint, a problem on the plain HTTP API) and
    /// its connection closed. A body still arriving holds no place under the concurrency
    /// limit: that is taken once it is read.
    #[must_use]
    pub fn with_body_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.body_timeout = timeout;
        self
    }

    /// How long the server's output may stay unread ([`DEFAULT_WRITE_TIMEOUT`] unless set;
    /// `None` for no limit). A connection whose socket takes no byte for that long while the
    /// server has bytes for it is closed; an answer the client takes nothing of for that long
    /// (one HTTP/2 stream whose flow-control window stays shut while the connection lives on,
    /// an event stream, a large answer) is dropped, and with it its place under the
    /// concurrency limit and its request's count on the connection. What a connection holds
    /// unsent is bounded besides: hyper's write buffer for HTTP/1.1, and for HTTP/2
    /// [`MAX_UNSENT_BYTES_PER_STREAM`](crate::MAX_UNSENT_BYTES_PER_STREAM) a stream. Only
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) holds connections to it.
    #[must_use]
    pub fn with_write_timeout(mut self, timeout: Option<Duration>) -> Self {
        self.write_timeout = timeout;
        self
    }

    /// Whether HTTP/2 is served beside HTTP/1.1 on the same listener (default `true`): a
    /// connection opening with HTTP/2's preface (prior knowledge, as proxies and meshes speak
    /// to their upstreams: h2c) is served as HTTP/2, any other as HTTP/1.1, each held to the
    /// same deadlines, caps, host checks and authorization. `false` closes a connection that
    /// opens with the preface. Only
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) serves HTTP/2.
    #[must_use]
    pub fn with_http2(mut self, http2: bool) -> Self {
        self.http2 = http2;
        self
    }

    /// How many requests one HTTP/2 connection may have in flight at once
    /// ([`DEFAULT_MAX_STREAMS_PER_CONNECTION`] unless set; at least one): the
    /// `SETTINGS_MAX_CONCURRENT_STREAMS` the server announces. A stream past it is refused
    /// (`REFUSED_STREAM`), which a client retries.
    #[must_use]
    pub fn with_max_streams_per_connection(mut self, limit: u32) -> Self {
        self.max_streams_per_connection = limit.max(1);
        self
    }

    /// At most `limit` connections open at once (`None`, the default: as many as the file
    /// limit allows, the soft `RLIMIT_NOFILE` less a headroom for the files tools open, see
    /// [`CONNECTION_DESCRIPTOR_HEADROOM`](crate::CONNECTION_DESCRIPTOR_HEADROOM)); a limit
    /// above that is lowered to it. A connection past the cap closes the oldest one with no
    /// request in flight (idle, or still sending a request head) to make room: it takes no new
    /// request (one whose head arrives just then is answered `503` with `Retry-After: 1` and
    /// `Connection: close`) and is given at most a second to finish writing. When every one has
    /// a request in flight, the new one is answered `503` with `Retry-After` and
    /// `Connection: close`, and closed. Only
    /// [`serve_http_with`](crate::EnvelopeServer::serve_http_with) counts connections.
    #[must_use]
    pub fn with_max_connections(mut self, limit: Option<usize>) -> Self {
        self.max_connections = limit;
        self
    }

    /// Mounts the plain HTTP gateway (`POST /tools/{name}`, `GET /tools`, `GET /openapi.json`)
    /// on the same router, configured by `rest`, or none with `None`. With feature `rest` it is
    /// mounted by default; see [`RestConfig`](crate::RestConfig).
    #[cfg(feature = "rest")]
    #[must_use]
    pub fn with_rest(mut self, rest: Option<RestConfig>) -> Self {
        self.rest = rest;
        self
    }

    /// The plain HTTP gateway's configuration, when one is mounted.
    #[cfg(feature = "rest")]
    pub fn rest(&self) -> Option<&RestConfig> {
        self.rest.as_ref()
    }

    /// Makes the server an OAuth 2.1 resource server: every request but `/healthz`, `/readyz`
    /// and the metadata at `/.well-known/oauth-protected-resource` must carry an access token
    /// that `auth`'s verifier accepts, on `/mcp` and the REST gateway alike; tools declared
    /// with scopes are refused to a caller whose token lacks them. See [`crate::auth`].
    #[cfg(feature = "auth")]
    #[must_use]
    pub fn with_auth(mut self, auth: crate::http::auth::ResourceServer) -> Self {
        self.auth = Some(auth);
        self
    }

    /// The resource server, when authentication is on.
    #[cfg(feature = "auth")]
    pub fn auth(&self) -> Option<&crate::http::auth::ResourceServer> {
        self.auth.as_ref()
    }
}

/// The ceiling an opted-out call is cut to unless configured otherwise: the graph ceiling,
/// five million token-normalized characters.
#[cfg(feature = "rest")]
pub const DEFAULT_UNBUDGETED_CEILING: usize = envelope_budget::GRAPH_SUBGRAPH_BUDGET_CHARS;

/// How the plain HTTP gateway serves ([`HttpConfig::with_rest`](crate::HttpConfig::with_rest)).
///
/// ```
/// use envelope_mcp::{DEFAULT_UNBUDGETED_CEILING, RestConfig};
///
/// let config = RestConfig::default();
/// assert_eq!(config.unbudgeted_ceiling(), DEFAULT_UNBUDGETED_CEILING);
/// assert_eq!(config.with_unbudgeted_ceiling(200_000).unbudgeted_ceiling(), 200_000);
/// ```
#[cfg(feature = "rest")]
#[derive(Debug, Clone)]
pub struct RestConfig {
    unbudgeted_ceiling: usize,
}

#[cfg(feature = "rest")]
impl Default for RestConfig {
    fn default() -> Self {
        RestConfig {
            unbudgeted_ceiling: DEFAULT_UNBUDGETED_CEILING,
        }
    }
}

#[cfg(feature = "rest")]
impl RestConfig {
    /// The most a call opted out of the budget (`apply_budget=false`) may answer, in
    /// token-normalized characters ([`DEFAULT_UNBUDGETED_CEILING`] unless set): past it, the
    /// response is trimmed as any other, and says so. Opting out only ever raises a budget: a
    /// ceiling below the server's or the tool's budget leaves that budget as it is, and a
    /// server without a budget at all
    /// ([`BudgetPolicy::unlimited`](crate::BudgetPolicy::unlimited)) has no ceiling either.
    #[must_use]
    pub fn with_unbudgeted_ceiling(mut self, chars: usize) -> Self {
        self.unbudgeted_ceiling = chars.max(1);
        self
    }

    /// The ceiling of an opted-out call.
    pub fn unbudgeted_ceiling(&self) -> usize {
        self.unbudgeted_ceiling
    }
}

//! Streamable HTTP: the server mounted at `/mcp` on an axum router, with `X-Request-ID`
//! handling: a valid ULID from the client is the envelope's `request_id`; another id that is
//! safe to log is kept beside it as `meta.client_request_id`; anything else is replaced by a
//! fresh ULID. The id kept is echoed. Served by an accept loop of its own ([`serve`]), so that
//! every connection has deadlines and their number a cap ([`connections`]).

mod admission;
#[cfg(feature = "auth")]
pub mod auth;
mod config;
mod connections;
mod guard;
mod health;
mod holding;
#[cfg(feature = "rest")]
pub mod rest;
mod serve;
mod unread;

pub(crate) use admission::{Admission, Admitted, Refusal};
#[cfg(feature = "rest")]
pub(crate) use guard::HostRefusal;

pub use config::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_TIMEOUT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_STREAMS_PER_CONNECTION, DEFAULT_MCP_PATH, DEFAULT_WRITE_TIMEOUT, HttpConfig,
};
pub use connections::{CONNECTION_DESCRIPTOR_HEADROOM, UNLIMITED_FILES_MAX_CONNECTIONS};
use health::Readiness;
pub use health::{HEALTH_PATH, READY_PATH};
pub use serve::{MAX_HEADER_LIST_BYTES, MAX_UNSENT_BYTES_PER_STREAM};

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use envelope_core::RequestId;
use http::HeaderValue;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::Value;

use rmcp::RoleServer;
use rmcp::model::{ClientRequest, GetExtensions as _, JsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;

use tokio_util::sync::CancellationToken;

use crate::drain::Calls;
use crate::in_flight::{Flight, InFlight, duplicate_answer};
use crate::jsonrpc::ControlGivenTwice;
use crate::lines::judge;
use crate::{EnvelopeServer, McpError, REQUEST_ID_HEADER};

/// Middleware: makes sure every request carries an `X-Request-ID` that is safe to log, and
/// echoes it on the response.
///
/// - A ULID from the client is the envelope's `request_id`, echoed.
/// - Another id that is safe to log (a gateway's UUID, say: 1 to 128 printable ASCII
///   characters, see [`RequestId::client_correlation`]) is kept for log correlation: echoed, and
///   stamped beside the envelope's own ULID as `meta.client_request_id`.
/// - Anything else (absent, too long, control characters, CR/LF) is replaced by a fresh ULID,
///   which becomes the `request_id` and is echoed.
pub async fn request_id_layer(mut request: Request, next: Next) -> Response {
    let client = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    let id = match RequestId::client_correlation(client) {
        Some(correlation) => correlation.to_owned(),
        None => RequestId::from_client(client).to_string(),
    };
    let header = HeaderValue::from_str(&id).ok();
    if let Some(header) = &header {
        request
            .headers_mut()
            .insert(REQUEST_ID_HEADER, header.clone());
    }
    let mut response = next.run(request).await;
    if let Some(header) = header {
        response.headers_mut().insert(REQUEST_ID_HEADER, header);
    }
    response
}

/// Connections the kernel queues before the server accepts them. `TcpListener::bind` asks for
/// 128: 256 clients connecting at once overflowed it, and the dropped ones retried a second
/// later, which was most of the load test's p99. The kernel caps it at `net.core.somaxconn`.
const LISTEN_BACKLOG: u32 = 1024;

/// What the MCP endpoint refuses before rmcp sees a request, beside what every posted request
/// is held to ([`Admission`]).
#[derive(Clone)]
struct Limits {
    admission: Admission,
    max_sessions: usize,
    sessions: Arc<LocalSessionManager>,
    /// Requests in flight, by session id and JSON-RPC id (as compact JSON, so `1` and `"1"`
    /// differ).
    in_flight: Arc<InFlight<(String, String)>>,
    /// Who opened each session, by session id, when the resource server named a caller.
    owners: Arc<std::sync::Mutex<std::collections::HashMap<String, String>>>,
    /// With authentication on: the server whose tools' scopes a call is held to, and the
    /// challenge a call refused for its scopes is answered with (the specification's step-up).
    #[cfg(feature = "auth")]
    step_up: Option<(crate::EnvelopeServer, Arc<auth::Challenge>)>,
}

impl Limits {
    /// Whether a request of `caller` may use `session`: without authentication, yes; with it,
    /// only the principal that opened it (a session whose opening `initialize` never got its
    /// answer has no owner on record, and is no one's). A session id is no credential: a
    /// request naming another principal's session is answered as one naming no session.
    fn may_use(&self, session: &str, caller: Option<&envelope_core::Caller>) -> bool {
        let Some(caller) = caller else {
            return true;
        };
        let owners = self
            .owners
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        owners
            .get(session)
            .is_some_and(|owner| owner == caller.principal().binding())
    }

    /// Records `caller` as the opener of `session`, dropping the records of sessions closed
    /// since (the record count stays near the session cap).
    async fn own(&self, session: &str, caller: &envelope_core::Caller) {
        let open = self.sessions.sessions.read().await;
        let mut owners = self
            .owners
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if owners.len() >= self.max_sessions {
            owners.retain(|id, _| open.contains_key(id.as_str()));
        }
        owners.insert(session.to_owned(), caller.principal().binding().to_owned());
    }
}

/// The session and JSON-RPC id of a request within a session; `None` for anything else (a
/// notification, an answer, a request opening a session). The id as compact JSON keys it, so
/// `1` and `"1"` differ.
fn request_key(
    parts: &http::request::Parts,
    message: &RxJsonRpcMessage<RoleServer>,
) -> Option<((String, String), Value)> {
    let session = parts.headers.get("mcp-session-id")?.to_str().ok()?;
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let id = serde_json::to_value(&request.id).ok()?;
    Some(((session.to_owned(), id.to_string()), id))
}

/// The refusal of a new session past the cap: `503`, and when to try again.
fn sessions_full(max_sessions: usize) -> Response {
    let message = format!("this server holds its maximum of {max_sessions} sessions; retry later");
    let mut refused = (http::StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    refused
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("30"));
    refused
}

/// A JSON-RPC answer sent as plain JSON with `status`.
fn json_answer(status: http::StatusCode, answer: Vec<u8>) -> Response {
    let json = HeaderValue::from_static("application/json");
    (status, [(http::header::CONTENT_TYPE, json)], answer).into_response()
}

/// Refuses a body over the size limit with `413`, reading at most one byte past it; a new
/// session past the cap with `503`; a body that is no JSON-RPC message with `400` and the
/// JSON-RPC error the stdio framing answers it with (rmcp's own answer is a `415` in plain
/// text); and a request reusing an id in flight in its session with that error.
async fn limit(limits: Limits, request: Request, next: Next) -> Response {
    let caller = request.extensions().get::<envelope_core::Caller>().cloned();
    let named = request.headers().get("mcp-session-id");
    // Only a request naming no session can open one: its opener is recorded below.
    let may_open = named.is_none();
    if let Some(session) = named.and_then(|value| value.to_str().ok())
        && !limits.may_use(session, caller.as_ref())
    {
        tracing::info!("a request named a session another principal opened");
        return (http::StatusCode::NOT_FOUND, "Session not found").into_response();
    }
    let Admitted {
        parts,
        bytes,
        held,
        deadline,
    } = match limits.admission.admit(request).await {
        Ok(admitted) => admitted,
        Err(refusal) => return mcp_refusal(&refusal),
    };
    // A request reusing the id of one still in flight in its session is answered at once.
    let mut parts = parts;
    if parts.method == http::Method::POST {
        let message = match judge(&bytes, limits.admission.max_request_bytes) {
            Ok(message) => message,
            Err(answer) => return json_answer(http::StatusCode::BAD_REQUEST, answer),
        };
        // rmcp reads the body again, into a message of its own: what the judge noted of the
        // text travels in the request's parts, which rmcp hands to the handler.
        if let JsonRpcMessage::Request(request) = &message
            && let Some(twice) = request.request.extensions().get::<ControlGivenTwice>()
        {
            parts.extensions.insert(*twice);
        }
        // Only an `initialize` outside a session opens one; past the cap it is refused.
        let opens_session = !parts.headers.contains_key("mcp-session-id")
            && matches!(&message, JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_)));
        if opens_session && limits.sessions.sessions.read().await.len() >= limits.max_sessions {
            return sessions_full(limits.max_sessions);
        }
        #[cfg(feature = "auth")]
        if let Some(refused) = step_up(&limits, &parts, &message, caller.as_ref()).await {
            return refused;
        }
        if let Some((key, id)) = request_key(&parts, &message) {
            let Some(flight) = Flight::begin(&limits.in_flight, key) else {
                let answer = serde_json::to_vec(&duplicate_answer(&id)).unwrap_or_default();
                return json_answer(http::StatusCode::OK, answer);
            };
            // rmcp hands the request's parts to the handler's context: the id stays in flight
            // until the handler is done with it, however early the client hangs up.
            parts.extensions.insert(Arc::new(flight));
        }
    }
    let answering = next.run(Request::from_parts(parts, axum::body::Body::from(bytes)));
    match deadline.bound(answering).await {
        Ok(response) => {
            // A session opened by an authenticated caller is that caller's.
            if may_open
                && let Some(caller) = &caller
                && let Some(session) = response
                    .headers()
                    .get("mcp-session-id")
                    .and_then(|value| value.to_str().ok())
            {
                limits.own(session, caller).await;
            }
            held.until_sent(response)
        }
        Err(overran) => {
            let mut refused =
                (http::StatusCode::SERVICE_UNAVAILABLE, overran.to_string()).into_response();
            refused
                .headers_mut()
                .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
            refused
        }
    }
}

/// The answer to a `tools/call` whose caller's token lacks a scope the tool declares, as the
/// specification's step-up flow has it: `403` with `WWW-Authenticate: Bearer
/// error="insufficient_scope", scope="…", resource_metadata="…"`, so that the client's OAuth
/// layer asks for the wider scope and retries, and in the body the JSON-RPC error
/// [`INSUFFICIENT_SCOPE_ERROR`] whose `data` is the `permission` envelope (code
/// `insufficient_scope`, naming the scopes required and missing): an error, as a client reads
/// a non-`2xx` answer's body. `None` for any other message, an unknown tool, a caller the tool's scopes
/// cover, or a listing filtered to what the caller may call (a tool it may not call is then
/// hidden, and the call answered as the server answers an unknown tool).
#[cfg(feature = "auth")]
async fn step_up(
    limits: &Limits,
    parts: &http::request::Parts,
    message: &RxJsonRpcMessage<RoleServer>,
    caller: Option<&envelope_core::Caller>,
) -> Option<Response> {
    let (server, challenge) = limits.step_up.as_ref()?;
    let caller = caller?;
    if parts
        .extensions
        .get::<crate::server::CallableOnly>()
        .is_some()
    {
        return None;
    }
    let JsonRpcMessage::Request(request) = message else {
        return None;
    };
    let ClientRequest::CallToolRequest(call) = &request.request else {
        return None;
    };
    let client_request_id = parts
        .headers
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    let (scopes, result) = server
        .refuse_for_scope(
            &call.params.name,
            call.params.arguments.clone(),
            caller,
            client_request_id,
        )
        .await?;
    tracing::info!(
        tool = %call.params.name,
        "a call lacking a scope is answered 403 for the client to step up"
    );
    let envelope = result.structured_content.unwrap_or_default();
    let message = envelope[envelope_core::fields::envelope::ERROR]
        [envelope_core::fields::error::MESSAGE]
        .as_str()
        .unwrap_or("the access token lacks a scope this tool requires")
        .to_owned();
    let answer = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request.id,
        // wire: JSON-RPC's error member, not an envelope's
        "error": { "code": INSUFFICIENT_SCOPE_ERROR, "message": message, "data": envelope },
    });
    let mut refused = json_answer(
        http::StatusCode::FORBIDDEN,
        serde_json::to_vec(&answer).unwrap_or_default(),
    );
    refused.headers_mut().insert(
        http::header::WWW_AUTHENTICATE,
        challenge.insufficient_scope(scopes),
    );
    Some(refused)
}

/// A refusal as the MCP endpoint answers it: plain text, or a JSON-RPC error for an overload.
fn mcp_refusal(refusal: &Refusal) -> Response {
    match refusal {
        Refusal::Overloaded => overloaded(),
        Refusal::TooLarge { .. } => {
            (http::StatusCode::PAYLOAD_TOO_LARGE, refusal.to_string()).into_response()
        }
        Refusal::Unreadable => (http::StatusCode::BAD_REQUEST, refusal.to_string()).into_response(),
        // The rest of the body may still be on its way: the connection cannot carry another
        // request.
        Refusal::BodyTimeout { .. } => (
            http::StatusCode::REQUEST_TIMEOUT,
            [(http::header::CONNECTION, HeaderValue::from_static("close"))],
            refusal.to_string(),
        )
            .into_response(),
    }
}

/// Middleware: the one judge of `Host` and `Origin` for every route ([`guard::Checks`]).
/// Health and readiness are held only to RFC 9112's rules, not to the allowed hosts (a load
/// balancer probes them by whatever name it knows). A refusal on the plain HTTP API is a
/// problem; anywhere else plain text, as rmcp answered it.
async fn judge_host(
    checks: Arc<guard::Checks>,
    gateway: bool,
    request: Request,
    next: Next,
) -> Response {
    let path = request.uri().path();
    let allowlisted = path != HEALTH_PATH && path != READY_PATH;
    let Err(refusal) = checks.judge(&request, allowlisted) else {
        return next.run(request).await;
    };
    tracing::warn!(%refusal, "a request's Host or Origin is refused");
    #[cfg(feature = "rest")]
    if gateway && rest::is_gateway_path(path) {
        return rest::host_refusal(&refusal, &request);
    }
    #[cfg(not(feature = "rest"))]
    let _ = gateway;
    (refusal.status(), refusal.to_string()).into_response()
}

/// Middleware: the resource server's door ([`auth::Gate::admit`]). A refusal on the plain
/// HTTP API is a problem; anywhere else plain text.
#[cfg(feature = "auth")]
async fn authenticate(
    gate: Arc<auth::Gate>,
    gateway: bool,
    mut request: Request,
    next: Next,
) -> Response {
    let Err(refusal) = gate.admit(&mut request).await else {
        return next.run(request).await;
    };
    #[cfg(feature = "rest")]
    let mut response = if gateway && rest::is_gateway_path(request.uri().path()) {
        rest::auth_refusal(refusal.status, refusal.message.clone(), &request)
    } else {
        (refusal.status, refusal.message.clone()).into_response()
    };
    #[cfg(not(feature = "rest"))]
    let mut response = {
        let _ = gateway;
        (refusal.status, refusal.message.clone()).into_response()
    };
    refusal.headers(&mut response);
    response
}

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
        let max_request_bytes = server.max_request_bytes();
        let posts = Arc::<Calls>::default();
        let streams = drain_then_close(Arc::clone(&posts), &config);
        let admission = Admission {
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
        };
        // The resource server, when authentication is on: every scope a tool declares is one a
        // client may ask for.
        #[cfg(feature = "auth")]
        let gate = config.auth.clone().map(|auth| {
            Arc::new(auth::Gate::new(
                auth,
                &auth::declared_scopes(server.toolset()),
            ))
        });
        let limits = Limits {
            admission: admission.clone(),
            max_sessions: server.max_sessions(),
            sessions: Arc::new(sessions),
            in_flight: Arc::default(),
            owners: Arc::default(),
            #[cfg(feature = "auth")]
            step_up: gate
                .as_ref()
                .map(|gate| (server.clone(), Arc::clone(&gate.challenge))),
        };
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
        let gateway: Option<axum::Router> = match config.rest.clone() {
            Some(_) if rest::is_gateway_path(&config.path) => {
                tracing::error!(
                    path = config.path,
                    "the MCP endpoint's path is the plain HTTP API's: the API is not mounted"
                );
                None
            }
            Some(rest) => {
                #[cfg(feature = "auth")]
                let challenges = gate.as_ref().map(|gate| Arc::clone(&gate.challenge));
                #[cfg(not(feature = "auth"))]
                let challenges = ();
                Some(rest::routes(
                    server.clone(),
                    rest,
                    admission,
                    &config,
                    challenges,
                ))
            }
            None => None,
        };
        #[cfg(not(feature = "rest"))]
        drop(admission);
        let service = StreamableHttpService::new(
            move || Ok(server.for_session()),
            Arc::clone(&limits.sessions),
            rmcp_config,
        );
        let mut router = axum::Router::new()
            .nest_service(&config.path, service)
            .layer(axum::middleware::from_fn(move |request, next| {
                limit(limits.clone(), request, next)
            }))
            .merge(health::routes(ready));
        #[cfg(feature = "rest")]
        let gateway_mounted = gateway.is_some();
        #[cfg(not(feature = "rest"))]
        let gateway_mounted = false;
        #[cfg(feature = "rest")]
        if let Some(gateway) = gateway {
            router = router.merge(gateway);
        }
        // Inside the host judge, outside every route's own limits: a request is let in by its
        // token before anything reads its body.
        #[cfg(feature = "auth")]
        if let Some(gate) = gate {
            router = router.merge(gate.routes());
            router = router.layer(axum::middleware::from_fn(move |request, next| {
                authenticate(Arc::clone(&gate), gateway_mounted, request, next)
            }));
        }
        router = router.layer(axum::middleware::from_fn(move |request, next| {
            judge_host(Arc::clone(&checks), gateway_mounted, request, next)
        }));
        if let Some(cors) = cors(&config.cors_origins) {
            router = router.layer(cors);
        }
        router.layer(axum::middleware::from_fn(request_id_layer))
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

/// The answer to a call refused by the concurrency limit: `503`, `Retry-After`, and the
/// JSON-RPC error [`OVERLOADED`].
fn overloaded() -> Response {
    let body = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        // wire: JSON-RPC's error member, not an envelope's
        "error": {
            "code": OVERLOADED,
            "message": "the server is at its limit of concurrent requests; retry shortly",
        },
    }))
    .unwrap_or_default();
    let mut response = json_answer(http::StatusCode::SERVICE_UNAVAILABLE, body);
    response
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

/// The request headers a browser caller may send: MCP's, and the REST gateway's controls.
fn allowed_headers() -> Vec<http::HeaderName> {
    let header = |name: &'static str| http::HeaderName::from_static(name);
    #[cfg_attr(not(feature = "rest"), allow(unused_mut))]
    let mut headers = vec![
        http::header::CONTENT_TYPE,
        http::header::ACCEPT,
        http::header::AUTHORIZATION,
        header("mcp-session-id"),
        header("mcp-protocol-version"),
        header("last-event-id"),
        header(REQUEST_ID_HEADER),
        header("traceparent"),
        header("tracestate"),
    ];
    #[cfg(feature = "rest")]
    headers.extend(
        rest::gateway_headers()
            .into_iter()
            .filter_map(|name| http::HeaderName::from_bytes(name.as_bytes()).ok()),
    );
    headers
}

/// The CORS layer for `origins`, or none when empty: `*` allows any origin.
fn cors(origins: &[String]) -> Option<tower_http::cors::CorsLayer> {
    use tower_http::cors::{AllowOrigin, CorsLayer};
    if origins.is_empty() {
        return None;
    }
    let allow = if origins.iter().any(|origin| origin == "*") {
        AllowOrigin::any()
    } else {
        AllowOrigin::list(origins.iter().filter_map(|origin| {
            let value = HeaderValue::from_str(origin).ok();
            if value.is_none() {
                tracing::warn!(origin, "a CORS origin that is no header value is ignored");
            }
            value
        }))
    };
    let header = |name: &'static str| http::HeaderName::from_static(name);
    Some(
        CorsLayer::new()
            .allow_origin(allow)
            .allow_methods([
                http::Method::GET,
                http::Method::POST,
                http::Method::DELETE,
                http::Method::OPTIONS,
            ])
            .allow_headers(allowed_headers())
            .expose_headers([
                header("mcp-session-id"),
                header(REQUEST_ID_HEADER),
                http::header::RETRY_AFTER,
                // A browser client reads where to get a token from a refusal.
                http::header::WWW_AUTHENTICATE,
            ]),
    )
}

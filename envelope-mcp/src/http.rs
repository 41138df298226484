//! Streamable HTTP: the server mounted at `/mcp` on an axum router, with `X-Request-ID`
//! handling: a valid ULID from the client is the envelope's `request_id`; another id that is
//! safe to log is kept beside it as `meta.client_request_id`; anything else is replaced by a
//! fresh ULID. The id kept is echoed.

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
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::service::RxJsonRpcMessage;

use crate::in_flight::{Flight, InFlight, duplicate_answer};
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

/// What the HTTP router refuses before rmcp sees a request.
#[derive(Clone)]
struct Limits {
    max_request_bytes: usize,
    max_sessions: usize,
    sessions: Arc<LocalSessionManager>,
    /// Requests in flight, by session id and JSON-RPC id (as compact JSON, so `1` and `"1"`
    /// differ).
    in_flight: Arc<InFlight<(String, String)>>,
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
    let too_large = || {
        let message = format!(
            "the request is larger than {} bytes",
            limits.max_request_bytes
        );
        (http::StatusCode::PAYLOAD_TOO_LARGE, message).into_response()
    };
    let declared = request
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.parse::<u64>().ok());
    if declared.is_some_and(|length| length > limits.max_request_bytes as u64) {
        return too_large();
    }
    // A body without a declared length is read up to the limit here, so rmcp never buffers
    // more than that.
    let (parts, body) = request.into_parts();
    let limited = http_body_util::Limited::new(body, limits.max_request_bytes);
    let bytes = match http_body_util::BodyExt::collect(limited).await {
        Ok(collected) => collected.to_bytes(),
        Err(error) if error.is::<http_body_util::LengthLimitError>() => return too_large(),
        Err(_) => {
            return (
                http::StatusCode::BAD_REQUEST,
                "the request body could not be read",
            )
                .into_response();
        }
    };
    // A request reusing the id of one still in flight in its session is answered at once.
    let mut parts = parts;
    if parts.method == http::Method::POST {
        let message = match judge(&bytes, limits.max_request_bytes) {
            Ok(message) => message,
            Err(answer) => return json_answer(http::StatusCode::BAD_REQUEST, answer),
        };
        // Only an `initialize` outside a session opens one; past the cap it is refused.
        let opens_session = !parts.headers.contains_key("mcp-session-id")
            && matches!(&message, JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_)));
        if opens_session && limits.sessions.sessions.read().await.len() >= limits.max_sessions {
            return sessions_full(limits.max_sessions);
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
    next.run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await
}

impl EnvelopeServer {
    /// An axum router serving this server at `/mcp` over streamable HTTP.
    ///
    /// Limits, from the server's configuration:
    /// - a request body over the maximum request size is answered `413` before any of it is
    ///   parsed, whether it declares its length or streams it;
    /// - past the session cap ([`DEFAULT_MAX_SESSIONS`](crate::DEFAULT_MAX_SESSIONS) unless
    ///   configured), a new session is refused with `503` and `Retry-After`; requests within
    ///   existing sessions go on;
    /// - a request reusing the JSON-RPC id of one still in flight in its session is answered
    ///   at once with a JSON-RPC error ([`DUPLICATE_ID`](crate::DUPLICATE_ID)) carrying that id;
    /// - a session idle for longer than the idle timeout
    ///   ([`DEFAULT_SESSION_IDLE_TIMEOUT`](crate::DEFAULT_SESSION_IDLE_TIMEOUT), five minutes,
    ///   unless configured) is closed, and its slot freed.
    pub fn http_router(self) -> axum::Router {
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
        let limits = Limits {
            max_request_bytes,
            max_sessions: server.max_sessions(),
            sessions: Arc::new(sessions),
            in_flight: Arc::default(),
        };
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            Arc::clone(&limits.sessions),
            // rmcp has a body limit of its own (4 MiB): the server's is the one that holds.
            StreamableHttpServerConfig::default().with_max_request_body_bytes(max_request_bytes),
        );
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(move |request, next| {
                limit(limits.clone(), request, next)
            }))
            .layer(axum::middleware::from_fn(request_id_layer))
    }

    /// Serves streamable HTTP on `addr` until the process ends, with a listen backlog of 1,024
    /// connections.
    pub async fn serve_http(self, addr: SocketAddr) -> Result<(), McpError> {
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
        axum::serve(listener, self.http_router()).await.map_err(io)
    }
}

//! Streamable HTTP: the server mounted at `/mcp` on an axum router, with `X-Request-ID`
//! handling: a valid ULID from the client is the envelope's `request_id`; another id that is
//! safe to log is kept beside it as `meta.client_request_id`; anything else is replaced by a
//! fresh ULID. The id kept is echoed.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use envelope_core::RequestId;
use http::HeaderValue;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

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

impl EnvelopeServer {
    /// An axum router serving this server at `/mcp` over streamable HTTP.
    pub fn http_router(self) -> axum::Router {
        let server = self.with_transport_capability(envelope_core::Capability::STREAMABLE_HTTP);
        let service = StreamableHttpService::new(
            move || Ok(server.clone()),
            LocalSessionManager::default().into(),
            StreamableHttpServerConfig::default(),
        );
        axum::Router::new()
            .nest_service("/mcp", service)
            .layer(axum::middleware::from_fn(request_id_layer))
    }

    /// Serves streamable HTTP on `addr` until the process ends.
    pub async fn serve_http(self, addr: SocketAddr) -> Result<(), McpError> {
        let io = |source| McpError::Io {
            addr: addr.to_string(),
            source,
        };
        let listener = tokio::net::TcpListener::bind(addr).await.map_err(io)?;
        axum::serve(listener, self.http_router()).await.map_err(io)
    }
}

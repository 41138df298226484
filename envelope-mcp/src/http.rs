//! Streamable HTTP: the server mounted at `/mcp` on an axum router, with `X-Request-ID`
//! handling: a valid ULID from the client is the envelope's `request_id` and is echoed; anything
//! else is replaced by a fresh one, which is echoed too.

use std::net::SocketAddr;

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use envelope_core::RequestId;
use http::HeaderValue;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

use crate::{EnvelopeServer, McpError};

/// The request-id header, read and echoed.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// Middleware: makes sure every request carries a valid ULID `X-Request-ID` (the client's own
/// when valid, a fresh one otherwise) and echoes it on the response.
pub async fn request_id_layer(mut request: Request, next: Next) -> Response {
    let client = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    let id = RequestId::from_client(client);
    let header = HeaderValue::from_str(id.as_str()).ok();
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
        let service = StreamableHttpService::new(
            move || Ok(self.clone()),
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

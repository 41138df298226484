//! The MCP mapping: a call's answer as an MCP result, with its `_meta` keys, and the
//! [`ServerHandler`] rmcp drives (`initialize`, `tools/list`, `tools/call`).

use std::sync::Arc;

use envelope_budget::Prepared;
use envelope_core::meta_keys;
use envelope_core::stage::ProgressSink;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, MetaObject, PaginatedRequestParams, ServerCapabilities, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler};
use serde_json::{Value, json};

use super::EnvelopeServer;
use super::call::{Answer, CallExtras, principal_of};
use super::progress::{PeerProgress, reportable};
use super::stop::TokenCancellation;
use crate::REQUEST_ID_HEADER;

/// The `_meta` keys a server writes, each its prefix and a name, built once per server.
pub(super) struct MetaKeys {
    pub(super) tier: String,
    pub(super) layer: String,
    pub(super) request_id: String,
    pub(super) client_request_id: String,
    pub(super) capabilities: String,
}

impl MetaKeys {
    pub(super) fn new(prefix: &str) -> Self {
        let key = |name: &str| format!("{prefix}{name}");
        MetaKeys {
            tier: key("tier"),
            layer: key(meta_keys::LAYER),
            request_id: key(meta_keys::REQUEST_ID),
            client_request_id: key(meta_keys::CLIENT_REQUEST_ID),
            capabilities: key(meta_keys::CAPABILITIES),
        }
    }
}

/// How many characters of an unknown tool's name an error echoes.
const ECHOED_NAME_CHARS: usize = 128;

impl EnvelopeServer {
    /// The MCP result: the envelope as `structuredContent`, its mirror as text, `isError`, and
    /// in `_meta` the request id, the tier (whatever `compact_only` left in `meta`), the
    /// client's correlation id and the capability tags.
    fn result(&self, answer: Answer) -> CallToolResult {
        let Answer {
            prepared,
            tier,
            client_request_id,
        } = answer;
        let keys = &self.inner.keys;
        let mut meta = MetaObject::new();
        meta.insert(
            keys.request_id.clone(),
            Value::String(prepared.request_id.to_string()),
        );
        meta.insert(keys.tier.clone(), json!(tier));
        if let Some(id) = client_request_id {
            meta.insert(keys.client_request_id.clone(), Value::String(id));
        }
        if !self.capabilities.tags.is_empty() {
            meta.insert(keys.capabilities.clone(), self.capabilities.wire.clone());
        }
        let Prepared {
            ok,
            structured,
            json,
            toon,
            leftovers,
            ..
        } = prepared;
        // The mirror moves into the result: a page of rows is not copied again.
        let mut result = CallToolResult::success(vec![ContentBlock::text(toon.unwrap_or(json))]);
        result.structured_content = Some(structured);
        result.is_error = Some(!ok);
        // Freeing the rows the trimmer cut can be slow; do it off the response path.
        if !leftovers.is_empty() {
            tokio::task::spawn_blocking(move || drop(leftovers));
        }
        result.with_meta(Some(meta))
    }
}

impl ServerHandler for EnvelopeServer {
    fn get_info(&self) -> ServerConfig {
        let config = &self.inner.config;
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                config.name.clone(),
                config.version.clone(),
            ));
        if let Some(instructions) = &config.instructions {
            info = info.with_instructions(instructions.clone());
        }
        // Where an agent looks first: the tags it may gate on, before any call.
        if !self.capabilities.tags.is_empty() {
            let mut meta = MetaObject::new();
            meta.insert(
                self.inner.keys.capabilities.clone(),
                self.capabilities.wire.clone(),
            );
            info.meta = Some(meta);
        }
        info
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.inner.listing.clone()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let Some(tool) = self.inner.tools.get(&request.name) else {
            let available: Vec<&str> = self.inner.tools.names().collect();
            // The name is the client's, of any length: only its start is echoed.
            let echoed: String = request.name.chars().take(ECHOED_NAME_CHARS).collect();
            return Err(ErrorData::invalid_params(
                format!("unknown tool `{echoed}`"),
                // wire: an MCP error's data, not an envelope
                Some(json!({ "tool": echoed, "available": available })),
            ));
        };
        let parts = context.extensions.get::<http::request::Parts>();
        let header = |name: &str| {
            parts
                .and_then(|parts| parts.headers.get(name))
                .and_then(|value| value.to_str().ok())
                .map(str::to_owned)
        };
        let client_request_id = header(REQUEST_ID_HEADER);
        let session = header("mcp-session-id");
        // Never the credentials themselves: tool code can read the principal.
        let principal = header("authorization").map(|credentials| principal_of(&credentials));
        let progress = context
            .meta
            .get_progress_token()
            .filter(reportable)
            .map(|token| PeerProgress::new(context.peer.clone(), token));
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        let extras = CallExtras {
            client_request_id,
            session,
            principal,
            progress: progress
                .clone()
                .map(|progress| progress as Arc<dyn ProgressSink>),
            cancelled: Some(Arc::new(TokenCancellation(context.ct.clone()))),
            #[cfg(feature = "otel")]
            trace: crate::otel::TraceContext::of(parts.map(|parts| &parts.headers), &context.meta),
            unbudgeted_ceiling: None,
        };
        let answer = self.call_with(tool, arguments, extras).await;
        if let Some(progress) = progress {
            progress.finish().await;
        }
        Ok(self.result(answer).into())
    }
}

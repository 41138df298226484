//! Serve envelope tools over MCP with `rmcp`, the official Rust SDK.
//!
//! [`EnvelopeServer`] wraps a [`Toolset`](envelope_core::Toolset): every call answers with the
//! envelope as `structuredContent`, its compact JSON (or TOON) as the first text content,
//! `isError = !ok`, and the request id, tier and capability tags in the result's `_meta` under
//! a reverse-DNS prefix ([`META_PREFIX`], `rs.envelope/`, unless configured). Responses go
//! through the budget stage of `envelope-budget`.
//!
//! Invariant: the only crate here that knows a transport. Anything a known tool's call does
//! wrong is an `isError` result; only an unknown tool is a JSON-RPC error.

mod error;
#[cfg(feature = "http")]
mod http;
mod in_flight;
mod lines;
mod server;

pub use error::McpError;
#[cfg(feature = "http")]
pub use http::request_id_layer;
pub use in_flight::DUPLICATE_ID;
pub use lines::{DEFAULT_MAX_REQUEST_BYTES, INVALID_REQUEST, PARSE_ERROR};
pub use server::{
    DEADLINE_EXCEEDED, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT,
    EnvelopeConfig, EnvelopeServer, META_PREFIX,
};

// What a server author needs besides `envelope-core`, so a server's manifest lists only the
// two: the budget policy, and the crates the server runs on.
pub use envelope_budget::{BudgetPolicy, Estimator};
pub use rmcp;
pub use tokio;

/// The request-id header: read on every call over HTTP, and echoed.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

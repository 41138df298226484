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
//!
//! # A server, whole
//!
//! The manifest needs these two entries and no others: `serde`, `schemars`, `serde_json` and
//! `tokio` come re-exported.
//!
//! ```toml
//! [dependencies]
//! envelope-core = "0.1"
//! envelope-mcp = "0.1"
//! ```
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use envelope_core::schemars::JsonSchema;
//! use envelope_core::serde::{Deserialize, Serialize};
//! use envelope_core::{ToolContext, ToolResult, tool, toolset};
//! use envelope_mcp::{EnvelopeConfig, EnvelopeServer, tokio};
//!
//! /// What the tools share: the server's typed state.
//! struct Greeting(String);
//!
//! #[derive(Deserialize, JsonSchema)]
//! #[serde(crate = "envelope_core::serde")]
//! #[schemars(crate = "envelope_core::schemars")]
//! struct GreetArgs {
//!     /// Who to greet.
//!     name: String,
//! }
//!
//! #[derive(Serialize, JsonSchema)]
//! #[serde(crate = "envelope_core::serde")]
//! #[schemars(crate = "envelope_core::schemars")]
//! struct Greeted {
//!     /// The greeting.
//!     text: String,
//! }
//!
//! /// Greet someone by name.
//! #[tool(tier = lite, read_only)]
//! async fn greet(ctx: &ToolContext, args: GreetArgs) -> ToolResult<Greeted> {
//!     let greeting = ctx.state::<Greeting>()?;
//!     Ok(Greeted { text: format!("{}, {}!", greeting.0, args.name) })
//! }
//!
//! fn server() -> EnvelopeServer {
//!     EnvelopeServer::new(
//!         toolset![greet],
//!         EnvelopeConfig::new("greeter", "1.0.0").with_state(Arc::new(Greeting("Hello".into()))),
//!     )
//! }
//!
//! #[tokio::main(crate = "envelope_mcp::tokio")]
//! async fn main() -> Result<(), envelope_mcp::McpError> {
//!     if std::env::args().any(|arg| arg == "--http") {
//!         // Streamable HTTP at http://127.0.0.1:8080/mcp.
//!         server().serve_http(([127, 0, 0, 1], 8080).into()).await
//!     } else {
//!         // Standard input and output, as a client that spawns the server expects.
//!         server().serve_stdio().await
//!     }
//! }
//! ```
//!
//! # Deploying over HTTP
//!
//! [`HttpConfig`] says how streamable HTTP is served: the `Host` names accepted (loopback only
//! by default), stateless serving for replicas behind a load balancer, JSON answers, a request
//! timeout, a concurrency limit, deadlines on every connection (its request heads, its bodies,
//! its idleness) and a cap on their number below the file limit, CORS, and a shutdown token
//! that drains calls in flight.
//! `/healthz` and `/readyz` come with it. Every call runs in a `tool_call` span carrying the
//! envelope's facts; with feature `otel` it joins the caller's OpenTelemetry trace.
//!
//! ```no_run
//! # use envelope_core::{ToolResult, tool, toolset};
//! # /// Answer with a fixed number.
//! # #[tool(tier = lite, read_only)]
//! # async fn answer() -> ToolResult<u32> {
//! #     Ok(42)
//! # }
//! use std::time::Duration;
//!
//! use envelope_mcp::{CancellationToken, EnvelopeConfig, EnvelopeServer, HttpConfig};
//!
//! # async fn serve() -> Result<(), envelope_mcp::McpError> {
//! let shutdown = CancellationToken::new();
//! let config = HttpConfig::default()
//!     .with_allowed_hosts(["mcp.example.com"])
//!     .with_stateless(true)
//!     .with_max_concurrent_requests(Some(256))
//!     .with_request_timeout(Some(Duration::from_secs(150)))
//!     .with_shutdown(shutdown.clone());
//! // Cancel `shutdown` on SIGTERM: calls in flight finish, then this returns.
//! let server = EnvelopeServer::new(toolset![answer], EnvelopeConfig::new("demo", "1"));
//! server.serve_http_with(([0, 0, 0, 0], 8080).into(), config).await
//! # }
//! ```
//!
//! A call without a transport, as a test makes it:
//!
//! ```
//! # use envelope_core::{ToolResult, tool, toolset};
//! # use envelope_mcp::{EnvelopeConfig, EnvelopeServer, tokio};
//! /// Answer with a fixed number.
//! #[tool(tier = lite, read_only)]
//! async fn answer() -> ToolResult<u32> {
//!     Ok(42)
//! }
//!
//! # #[tokio::main(crate = "envelope_mcp::tokio", flavor = "current_thread")]
//! # async fn main() {
//! let server = EnvelopeServer::new(toolset![answer], EnvelopeConfig::new("demo", "1"));
//! let sent = server.call("answer", envelope_core::serde_json::json!({})).await.expect("served");
//! assert_eq!(sent.structured["ok"], true);
//! assert_eq!(sent.structured["data"], 42);
//! # }
//! ```

#[cfg(feature = "cli")]
pub mod cli;
mod drain;
mod error;
#[cfg(feature = "http")]
mod http;
mod in_flight;
mod jsonrpc;
mod lines;
mod observe;
#[cfg(feature = "otel")]
mod otel;
mod schema_check;
mod server;
#[cfg(feature = "stdio")]
mod stdio;

pub use error::McpError;
#[cfg(feature = "auth")]
pub use http::auth;
#[cfg(feature = "rest")]
pub use http::rest;
#[cfg(feature = "rest")]
pub use http::rest::{DEFAULT_UNBUDGETED_CEILING, RestConfig};
#[cfg(feature = "http")]
pub use http::{
    CONNECTION_DESCRIPTOR_HEADROOM, DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_TIMEOUT,
    DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_STREAMS_PER_CONNECTION,
    DEFAULT_MCP_PATH, DEFAULT_WRITE_TIMEOUT, HEALTH_PATH, HttpConfig, INSUFFICIENT_SCOPE_ERROR,
    MAX_HEADER_LIST_BYTES, MAX_UNSENT_BYTES_PER_STREAM, OVERLOADED, READY_PATH,
    UNLIMITED_FILES_MAX_CONNECTIONS, request_id_layer,
};
pub use in_flight::DUPLICATE_ID;
pub use jsonrpc::{INVALID_REQUEST, PARSE_ERROR};
pub use lines::MAX_JSONRPC_ID_BYTES;
pub use server::{
    DEADLINE_EXCEEDED, DEFAULT_CALL_TIMEOUT, DEFAULT_LOG_LEVEL, DEFAULT_MAX_REQUEST_BYTES,
    DEFAULT_MAX_SESSIONS, DEFAULT_SESSION_IDLE_TIMEOUT, EnvelopeConfig, EnvelopeServer,
    ListChanged, Listing, MAX_PROGRESS_TOKEN_BYTES, META_PREFIX, REQUIRED_CAPABILITIES,
    default_blocking_calls_per_tool, log_level_of, logging_level_of,
};

// What a server author needs besides `envelope-core`, so a server's manifest lists only the
// two: the budget policy, and the crates the server runs on.
pub use envelope_budget::{BudgetPolicy, Estimator};
pub use rmcp;
pub use tokio;
/// The token [`HttpConfig::with_shutdown`] watches (tokio-util's).
#[cfg(feature = "http")]
pub use tokio_util::sync::CancellationToken;

/// The request-id header: read on every call over HTTP, and echoed.
pub const REQUEST_ID_HEADER: &str = "x-request-id";

/// The log filter (`tracing_subscriber::EnvFilter` syntax) a server on this crate logs with
/// by default: `info`, with rmcp at `warn`. rmcp logs its session lifecycle at `info` in its
/// own code ("Service initialized", "input stream terminated", "serve finished"), which over
/// stateless HTTP is three lines a call; at `warn` a call logs nothing unless something is
/// wrong. The per-call `tool_call` span stays for any filter that asks for it
/// (`envelope_mcp=info` or finer, with span events, or an exporter).
///
/// With `tracing-subscriber`, as the example server sets it up:
///
/// ```text
/// let filter = EnvFilter::try_from_default_env()
///     .unwrap_or_else(|_| EnvFilter::new(envelope_mcp::DEFAULT_LOG_FILTER));
/// ```
pub const DEFAULT_LOG_FILTER: &str = "info,rmcp=warn";

//! Answers an agent can act on, from any MCP server: `envelope-proxy` fronts one upstream MCP server (a
//! command over stdio, or a streamable-HTTP URL) and serves its tools over stdio, streamable
//! HTTP and a plain HTTP API, every answer an envelope.
//!
//! - **Listed lean**, as envelope lists its own tools: each upstream tool keeps its name, its
//!   description and its annotations exactly as the upstream declares them, gets a tier and
//!   scopes from the configuration ([`ProxyConfig`]), and takes the per-call controls besides its
//!   own arguments; they are taken off before the call is forwarded. Tools the upstream adds or
//!   drops at run time (`notifications/tools/list_changed`) are listed again.
//! - **Answered as envelopes**: `data` from the upstream's `structuredContent`, else its text
//!   parsed as JSON where it is JSON, else the text; media as attachments; a failure mapped to a
//!   category by one table ([`UPSTREAM_ERRORS`]), `retryable` only where the failure says so;
//!   `tokens_saved` against the upstream's raw answer ([`BASELINE_METHOD`]).
//! - **Paged when too big**: an answer over the budget is cut by rows — a text by lines, a JSON
//!   list by items — with honest markers. For a tool the upstream declares read-only, the
//!   `next-page` action carries a sealed continuation bound to the call and to a digest of the
//!   answer: the next page calls the upstream again, and a page of an answer that changed is
//!   refused as stale, with a `rerun` action. Any other tool is never called twice: its answer
//!   is kept in a bounded result store ([`MemoryStore`]) under the call, and its pages are
//!   served from there.
//! - **Forwarded as they are**: the upstream's prompts, resources, completion and log level;
//!   its prompts' and resources' `list_changed` told on to every client, its resource updates
//!   to the clients that subscribed.
//! - **Bounded**: a message from the upstream longer than `max_message_bytes` is dropped as it
//!   streams by and the call answers `upstream_answer_too_large`; an upstream that dies answers
//!   `upstream_unavailable` and is started again with backoff.
//! - **Never widens access**: the caller's credentials are never forwarded upstream; the
//!   upstream's come from files or the environment only (`env_from`).

mod answer;
mod config;
mod errors;
mod forward;
mod fronted;
mod input;
mod pages;
mod proxy;
mod redis_store;
mod relay;
mod result_store;
mod store;
mod upstream;
mod watchers;

pub use config::{
    ConfigError, DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIER, EXAMPLE_CONFIG,
    ProxyConfig, ResolvedTool, Revision, StoreConfig, Target, ToolConfig, ToolDefaults,
    UpstreamConfig,
};
pub use errors::{
    RESULT_STORE_UNAVAILABLE, UPSTREAM_ANSWER_TOO_LARGE, UPSTREAM_ERRORS, UPSTREAM_INPUT_UNRELAYED,
    UPSTREAM_INVALID_PARAMS, UPSTREAM_MALFORMED, UPSTREAM_RPC_ERROR, UPSTREAM_TIMEOUT,
    UPSTREAM_TOOL_ERROR, UPSTREAM_UNAVAILABLE, UPSTREAM_UNKNOWN_TOOL,
};
pub use fronted::{ANSWER_NOT_KEPT_WHOLE, BASELINE_METHOD};
pub use input::MAX_INPUT_ROUNDS;
pub use pages::MAX_ROW_CHARS;
pub use proxy::Proxy;
pub use redis_store::{DEFAULT_REDIS_TTL, REDIS_KEY_PREFIX, RedisStore};
pub use store::{ANSWERS_PER_CALL, DEFAULT_STORE_BYTES, DEFAULT_STORED_ANSWER_BYTES, MemoryStore};
pub use upstream::{FIRST_BACKOFF, MAX_BACKOFF, Upstream};

//! The server: the workspace served with its tools.

use std::sync::Arc;

use envelope_core::paging::Continuations;
use envelope_core::toolset;
use envelope_mcp::{EnvelopeConfig, EnvelopeServer, Listing};

use crate::tools::{
    change_impact, graph_export, list_files, read_file, search_text, workspace_stats,
};
use crate::workspace::Workspace;

/// What the server tells the client's model about itself.
const INSTRUCTIONS: &str = "Read-only access to one directory tree (the workspace). \
Paths are relative to the workspace root and use `/`. Start with `list_files` or `search_text`, \
read what they point at with `read_file`, and use `workspace_stats` or `graph_export` for an \
overview. Every answer is an envelope: branch on `ok`, `verdict`, `completeness`, \
`empty_reason` and `next_actions` rather than on prose.";

/// The limits a server is run with (the command line's `--call-timeout` and
/// `--max-request-bytes`), and how much of each tool it lists (`--full-listing`).
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// How long a call may run before it answers `deadline_exceeded`; `None` for no limit.
    pub call_timeout: Option<std::time::Duration>,
    /// How many calls of one blocking tool run at once (`--blocking-calls-per-tool`); `None`
    /// for no limit.
    pub blocking_calls_per_tool: Option<usize>,
    /// The largest request read, in bytes.
    pub max_request_bytes: usize,
    /// How much of each tool `tools/list` spells out.
    pub listing: Listing,
    /// The wire the answers are written in (`--dialect`), unless a call asks for another.
    pub dialect: envelope_core::Dialect,
    /// The dialects a call may ask for besides it (`--call-dialects`), each listed in the
    /// output schemas.
    pub call_dialects: envelope_core::DialectSet,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            call_timeout: Some(envelope_mcp::DEFAULT_CALL_TIMEOUT),
            blocking_calls_per_tool: Some(envelope_mcp::default_blocking_calls_per_tool()),
            max_request_bytes: envelope_mcp::DEFAULT_MAX_REQUEST_BYTES,
            listing: Listing::Lean,
            dialect: envelope_core::Dialect::Envelope,
            call_dialects: envelope_core::DialectSet::from_iter([]),
        }
    }
}

/// The server: `workspace` served with its tools; `continuations` seals the paging tokens of
/// `search_text` and `list_files` (servers holding the same key accept each other's). The
/// capability tags it advertises are the ones its configuration supports, each proven by
/// this crate's `tests/capabilities.rs`; serving over HTTP adds `streamable_http`.
/// The `disabled` modules are switched off (`--disable-module graph` turns off
/// `graph_export`, which then answers `module_disabled`).
pub fn server(
    workspace: Workspace,
    continuations: Continuations,
    disabled: &[String],
) -> EnvelopeServer {
    server_with(workspace, continuations, disabled, Limits::default())
}

/// [`server`] with `limits`.
pub fn server_with(
    workspace: Workspace,
    continuations: Continuations,
    disabled: &[String],
    limits: Limits,
) -> EnvelopeServer {
    let config = EnvelopeConfig::new("workspace_server", env!("CARGO_PKG_VERSION"))
        .with_instructions(INSTRUCTIONS)
        .with_continuations(continuations)
        .with_state(Arc::new(workspace))
        .with_call_timeout(limits.call_timeout)
        .with_blocking_calls_per_tool(limits.blocking_calls_per_tool)
        .with_max_request_bytes(limits.max_request_bytes)
        .with_listing(limits.listing)
        .with_dialect(limits.dialect)
        .with_call_dialects(limits.call_dialects.iter());
    let config = disabled.iter().fold(config, |config, module| {
        config.disable_module(module.clone())
    });
    EnvelopeServer::new(
        toolset![
            search_text,
            read_file,
            list_files,
            workspace_stats,
            graph_export,
            change_impact
        ],
        config,
    )
}

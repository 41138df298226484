//! The server: the workspace served with its tools.

use std::sync::Arc;

use envelope_core::paging::Continuations;
use envelope_core::toolset;
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};

use crate::Workspace;
use crate::tools::{
    change_impact, graph_export, list_files, read_file, search_text, workspace_stats,
};

/// What the server tells the client's model about itself.
const INSTRUCTIONS: &str = "Read-only access to one directory tree (the workspace). \
Paths are relative to the workspace root and use `/`. Start with `list_files` or `search_text`, \
read what they point at with `read_file`, and use `workspace_stats` or `graph_export` for an \
overview. Every answer is an envelope: branch on `ok`, `verdict`, `completeness`, \
`empty_reason` and `next_actions` rather than on prose.";

/// The server: `workspace` served with its tools; `continuations` seals the paging tokens of
/// `search_text` and `list_files` (servers holding the same key accept each other's). The
/// capability tags it advertises are the ones its configuration supports, each proven by
/// `envelope-mcp/tests/workspace_server.rs`; serving over HTTP adds `streamable_http`.
/// The `disabled` modules are switched off (`--disable-module graph` turns off
/// `graph_export`, which then answers `module_disabled`).
pub fn server(
    workspace: Workspace,
    continuations: Continuations,
    disabled: &[String],
) -> EnvelopeServer {
    let config = EnvelopeConfig::new("workspace_server", env!("CARGO_PKG_VERSION"))
        .with_instructions(INSTRUCTIONS)
        .with_continuations(continuations)
        .with_state(Arc::new(workspace));
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

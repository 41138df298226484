//! `workspace_server`: one directory tree served over MCP, every answer an envelope.
//!
//! ```text
//! cargo run -p envelope-mcp --example workspace_server -- --help
//! ```
//!
//! The server is a small crate of its own, `workspace-server` (in `examples/workspace_server/`):
//! a module per tool, the walk, the import parser and this command line ([`workspace_server::cli`]),
//! so that its tests (`examples/workspace_server/tests/`) build the very server this example runs.

fn main() -> std::process::ExitCode {
    workspace_server::cli::main()
}

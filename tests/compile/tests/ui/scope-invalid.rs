use envelope_core::{ToolResult, tool};

/// Export the graph.
#[tool(tier = heavy, read_only, scopes = ["workspace:read", "workspace heavy"])]
fn graph_export() -> ToolResult<&'static str> {
    Ok("graph")
}

fn main() {}

use envelope_core::{Tool, ToolResult, tool};

/// Read a file.
#[tool(tier = lite, read_only, scopes = ["workspace:read"])]
fn read_file() -> ToolResult<&'static str> {
    Ok("file")
}

/// Export the graph.
#[tool(tier = heavy, read_only, scopes = ["workspace:read", "workspace:heavy"])]
fn graph_export() -> ToolResult<&'static str> {
    Ok("graph")
}

/// Say hello: anyone may.
#[tool(tier = lite, read_only)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {
    assert_eq!(*read_file {}.spec().scopes, ["workspace:read"]);
    assert_eq!(*graph_export {}.spec().scopes, ["workspace:read", "workspace:heavy"]);
    assert!(hello {}.spec().scopes.is_empty());
}

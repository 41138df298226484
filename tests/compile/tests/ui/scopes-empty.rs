use envelope_core::{ToolResult, tool};

/// Read a file.
#[tool(tier = lite, read_only, scopes = [])]
fn read_file() -> ToolResult<&'static str> {
    Ok("file")
}

fn main() {}

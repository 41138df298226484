use envelope_core::{ToolResult, tool};

/// Take a bare number: MCP arguments are an object, so nothing could call this.
#[tool(tier = lite)]
fn count(n: u32) -> ToolResult<u32> {
    Ok(n)
}

fn main() {}

use envelope_core::{ToolResult, tool};

/// Say hello.
#[tool(tier = huge)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

use envelope_core::{ToolResult, tool};

/// Say hello.
#[tool(read_only)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

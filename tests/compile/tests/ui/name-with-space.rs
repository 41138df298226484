use envelope_core::{ToolResult, tool};

/// Say hello.
#[tool(tier = lite, name = "say hello")]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

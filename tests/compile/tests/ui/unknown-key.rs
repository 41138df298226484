use envelope_core::{ToolResult, tool};

/// Say hello.
#[tool(tier = lite, colour = "red")]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

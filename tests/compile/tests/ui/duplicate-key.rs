use envelope_core::{ToolResult, tool};

/// Say hello.
#[tool(tier = lite, tier = heavy)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

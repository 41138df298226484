use envelope_core::{ToolResult, tool, toolset};

/// Say hello.
#[tool(tier = lite, name = "greet")]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

/// Say hi.
#[tool(tier = lite, name = "greet")]
fn hi() -> ToolResult<&'static str> {
    Ok("hi")
}

fn main() {
    let _ = toolset![hello, hi];
}

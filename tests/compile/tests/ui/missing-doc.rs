use envelope_core::{ToolResult, tool};

#[tool(tier = lite)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {}

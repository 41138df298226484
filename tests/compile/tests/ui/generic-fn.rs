use envelope_core::{ToolResult, tool};

/// Echo anything.
#[tool(tier = lite)]
fn echo<T>(args: T) -> ToolResult<T> {
    Ok(args)
}

fn main() {}

use envelope_core::{ToolResult, tool};

/// An async body on the blocking pool: there is nothing to block on.
#[tool(tier = lite, blocking)]
async fn both() -> ToolResult<()> {
    Ok(())
}

fn main() {}

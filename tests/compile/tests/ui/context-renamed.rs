use envelope_core::ToolContext as Ctx;
use envelope_core::{ToolResult, tool};

/// The context under another name: the macro knows it by its spelling, `ToolContext`.
#[tool(tier = lite)]
fn renamed(ctx: &Ctx) -> ToolResult<()> {
    let _ = ctx;
    Ok(())
}

fn main() {}

use envelope_core::{ToolContext, ToolResult, tool, toolset};

/// Take the context by value: the macro says to borrow it.
#[tool(tier = lite)]
fn owned(ctx: ToolContext) -> ToolResult<()> {
    let _ = ctx;
    Ok(())
}

fn main() {
    // Used in a toolset, the broken tool still shows one error only.
    let _ = toolset![owned];
}

use envelope_core::{Tool, ToolContext, ToolResult, tool};

/// Echo the session.
#[tool(tier = lite, read_only)]
fn session(ctx: &ToolContext) -> ToolResult<Option<String>> {
    Ok(ctx.session().map(str::to_owned))
}

fn main() {
    let _ = <session as Tool>::spec(&session {});
    let _ = session(&ToolContext::new());
}

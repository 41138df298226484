use envelope_core::{Tool, ToolContext, ToolResult, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Count the characters, without waiting.
#[tool(tier = lite, read_only)]
fn count_sync(args: Query) -> ToolResult<usize> {
    Ok(args.text.len())
}

/// Count the characters, after waiting.
#[tool(tier = standard)]
async fn count_async(ctx: &ToolContext, args: Query) -> ToolResult<usize> {
    let _ = ctx.request_id();
    Ok(args.text.len())
}

fn main() {
    let _ = <count_sync as Tool>::spec(&count_sync {});
    let _ = <count_async as Tool>::spec(&count_async {});
    let query = || Query {
        text: "needle".to_owned(),
    };
    let _ = count_sync(query());
    let _ = count_async(&ToolContext::new(), query());
}

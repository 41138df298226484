use envelope_core::{Tool, ToolError, ToolResult, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Limit {
    limit: u32,
}

/// Count up to a limit.
#[tool(tier = lite, read_only)]
fn count(args: Limit) -> ToolResult<u32> {
    if args.limit == 0 {
        return Err(ToolError::validation("`limit` must be at least 1"));
    }
    if args.limit > 100 {
        return Ok(100);
    }
    Ok(args.limit)
}

/// Count up to a limit, asynchronously.
#[tool(tier = lite, read_only)]
async fn count_async(args: Limit) -> ToolResult<u32> {
    if args.limit == 0 {
        return Err(ToolError::validation("`limit` must be at least 1"));
    }
    Ok(args.limit)
}

fn main() {
    let _ = <count as Tool>::spec(&count {});
    let _ = <count_async as Tool>::spec(&count_async {});
}

use envelope_core::{ToolResult, tool};

#[derive(schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Search for a literal.
#[tool(tier = lite)]
fn search(args: Query) -> ToolResult<usize> {
    Ok(args.text.len())
}

fn main() {}

use envelope_core::{ToolResult, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Args {
    /// A number, as text.
    n: String,
}

/// Parse a number: `?` on a foreign error needs a category for it.
#[tool(tier = lite)]
fn parse(args: Args) -> ToolResult<i64> {
    Ok(args.n.parse::<i64>()?)
}

fn main() {}

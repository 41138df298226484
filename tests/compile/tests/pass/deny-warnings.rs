//! A crate that denies warnings and missing docs still builds with `#[tool]` in it.
#![deny(warnings, missing_docs)]

use envelope_core::{Tool, ToolContext, ToolResult, tool};

/// The arguments of [`search`].
#[derive(serde::Deserialize, schemars::JsonSchema)]
pub struct Query {
    /// The literal to look for.
    pub text: String,
}

/// Search for a literal.
#[tool(tier = lite, read_only, name = "search.text", title = "Search", module = "search")]
pub async fn search(ctx: &ToolContext, args: Query) -> ToolResult<usize> {
    let _ = ctx;
    Ok(args.text.len())
}

/// Say hello.
#[tool(tier = lite)]
pub fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {
    let _ = <search as Tool>::spec(&search {});
    let _ = envelope_core::toolset![search, hello];
}

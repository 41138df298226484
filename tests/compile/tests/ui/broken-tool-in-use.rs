use envelope_core::{NextAction, Role, ToolResult, tool, toolset};

#[derive(serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
struct Query {
    /// What to look for.
    text: String,
}

/// Search without a tier: the one mistake in this file.
#[tool(read_only)]
fn search(args: Query) -> ToolResult<usize> {
    Ok(args.text.len())
}

fn main() {
    // Named in a toolset and in a typed next action, the broken tool still shows one error.
    let _ = toolset![search];
    let _ = NextAction::call::<search>(
        "again",
        Role::Retry,
        0,
        Query { text: "x".into() },
        "try again",
    );
}

use envelope_core::{NextAction, Role, ToolResult, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

#[derive(serde::Serialize)]
struct Other {
    path: String,
}

/// Search for a literal.
#[tool(tier = lite)]
fn search(args: Query) -> ToolResult<usize> {
    Ok(args.text.len())
}

fn main() {
    // `search` takes a `Query`, not an `Other`.
    let _ = NextAction::call::<search>(
        "again",
        Role::Retry,
        0,
        Other { path: "x".into() },
        "try again",
    );
}

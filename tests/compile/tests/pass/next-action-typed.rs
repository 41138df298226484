use envelope_core::{NextAction, Role, ToolResult, tool};

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct Query {
    text: String,
}

/// Search for a literal.
#[tool(tier = lite)]
fn search(args: Query) -> ToolResult<usize> {
    Ok(args.text.len())
}

/// Count everything.
#[tool(tier = standard)]
fn stats() -> ToolResult<usize> {
    Ok(0)
}

fn main() {
    let search = NextAction::call::<search>("again", Role::Retry, 0, Query { text: "x".into() }, "try again")
        .expect("an object");
    assert_eq!(search.tool, "search");
    assert_eq!(search.arguments["text"], "x");
    let stats = NextAction::call::<stats>("stats", Role::Inspect, 0, (), "look around").expect("an object");
    assert!(stats.arguments.is_empty());
}

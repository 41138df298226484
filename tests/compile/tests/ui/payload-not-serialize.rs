use envelope_core::{ToolResult, tool};

struct Hits {
    count: usize,
}

/// Return a payload that cannot be serialized.
#[tool(tier = lite)]
fn hits() -> ToolResult<Hits> {
    Ok(Hits { count: 1 })
}

fn main() {}

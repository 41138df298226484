use std::rc::Rc;

use envelope_core::{ToolResult, tool};

#[derive(serde::Serialize)]
struct Hits {
    count: Rc<usize>,
}

/// Return a payload that cannot travel to the budget stage: it is not `Send`.
#[tool(tier = lite)]
fn hits() -> ToolResult<Hits> {
    Ok(Hits { count: Rc::new(1) })
}

fn main() {}

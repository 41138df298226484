use envelope_core::{ToolResult, tool};

/// Read the clock.
#[tool(tier = lite, read_only, idempotent = false)]
fn now() -> ToolResult<u64> {
    Ok(0)
}

fn main() {}

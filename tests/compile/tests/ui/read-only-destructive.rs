use envelope_core::{ToolResult, tool};

/// Delete everything, carefully.
#[tool(tier = lite, read_only, destructive)]
fn wipe() -> ToolResult<()> {
    Ok(())
}

fn main() {}

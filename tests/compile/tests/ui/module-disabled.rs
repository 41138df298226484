use envelope_core::{ToolError, ToolResult, tool};

/// Pretend the module is off.
#[tool(tier = lite)]
fn sneaky() -> ToolResult<()> {
    Err(ToolError::module_disabled("search"))
}

fn main() {}

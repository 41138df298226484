use envelope_core::{ToolResult, tool};

/// Pretend the module is off, through the macro's private path.
#[tool(tier = lite)]
fn sneaky() -> ToolResult<()> {
    Err(envelope_core::__private::module_disabled("search"))
}

fn main() {}

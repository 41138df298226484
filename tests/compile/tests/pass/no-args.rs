use envelope_core::{Tool, ToolResult, tool};

/// Say hello.
#[tool(tier = lite, read_only)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {
    let _ = <hello as Tool>::spec(&hello {});
    let _ = <hello as Tool>::input_schema(&hello {});
    let _ = hello();
}

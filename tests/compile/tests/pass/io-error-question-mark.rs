use envelope_core::{Tool, ToolResult, tool};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Path {
    path: String,
}

/// Read a file.
#[tool(tier = standard, read_only)]
fn read(args: Path) -> ToolResult<String> {
    let text = std::fs::read_to_string(&args.path)?;
    Ok(text)
}

/// Read a file, with the error type spelled out.
#[tool(tier = standard, read_only)]
fn read_io(args: Path) -> Result<String, std::io::Error> {
    std::fs::read_to_string(&args.path)
}

fn main() {
    let _ = <read as Tool>::spec(&read {});
    let _ = <read_io as Tool>::spec(&read_io {});
}

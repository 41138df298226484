// Regression test for #11: a tool's behaviour hints are what its author declared, nothing more.
// A hint left out stays `None`, so the listing omits it and MCP's cautious defaults apply.

use envelope_core::{Tool, ToolResult, tool};

/// Write a file; the author declared nothing about safety.
#[tool(tier = lite)]
fn write_note() -> ToolResult<()> {
    Ok(())
}

/// Append to a log; declared additive and closed-world.
#[tool(tier = lite, title = "Append", destructive = false, open_world = false)]
fn append() -> ToolResult<()> {
    Ok(())
}

/// Read a file.
#[tool(tier = lite, read_only)]
fn read() -> ToolResult<()> {
    Ok(())
}

fn main() {
    let spec = write_note {}.spec();
    assert_eq!(
        (spec.read_only, spec.idempotent, spec.destructive, spec.open_world, spec.title.as_deref()),
        (None, None, None, None, None)
    );
    assert!(!spec.is_idempotent());

    let spec = append {}.spec();
    assert_eq!(
        (spec.read_only, spec.idempotent, spec.destructive, spec.open_world, spec.title.as_deref()),
        (None, None, Some(false), Some(false), Some("Append"))
    );

    // `read_only` implies `idempotent`, and says nothing about destruction or the world.
    let spec = read {}.spec();
    assert_eq!(
        (spec.read_only, spec.idempotent, spec.destructive, spec.open_world),
        (Some(true), Some(true), None, None)
    );
    assert!(spec.is_idempotent());
}

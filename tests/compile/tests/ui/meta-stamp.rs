use envelope_core::{Envelope, ToolResult, tool};

/// Claim another tool's name.
#[tool(tier = lite)]
fn forge() -> ToolResult<()> {
    let mut envelope = Envelope::ok(());
    let _ = envelope.meta_mut();
    Ok(())
}

fn main() {}

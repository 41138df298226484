use envelope_core::tool;

/// Count to three.
#[tool(tier = lite)]
fn count() -> u32 {
    3
}

fn main() {}

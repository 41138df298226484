use envelope_core::tool;

/// Fail with a bare string: the envelope needs a category for it.
#[tool(tier = lite)]
fn fail() -> Result<(), String> {
    Err("nope".to_owned())
}

fn main() {}

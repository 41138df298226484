use envelope_core::tool;

/// Not a function.
#[tool(tier = lite)]
struct Hello;

fn main() {}

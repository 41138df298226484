use envelope_core::{NextAction, Role};

#[derive(serde::Serialize)]
struct Query {
    text: String,
}

fn main() {
    // No tool named `search` exists in this crate.
    let _ = NextAction::call::<search>(
        "again",
        Role::Retry,
        0,
        Query { text: "x".into() },
        "try again",
    );
}

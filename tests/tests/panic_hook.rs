//! The library's panic hook chains to the hook installed before it. Its own test binary, since
//! a panic hook is process-wide.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use envelope_core::{ToolResult, tool};

static PREVIOUS_HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);

/// Panics.
#[tool(tier = lite)]
fn boom() -> ToolResult<()> {
    panic!("inside a tool")
}

#[test]
fn the_hook_chains_outside_tools_and_records_inside() {
    std::panic::set_hook(Box::new(|_| {
        PREVIOUS_HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    }));
    envelope_core::stage::install_panic_hook();

    let outside = std::panic::catch_unwind(|| panic!("outside any tool"));
    assert!(outside.is_err());
    assert_eq!(
        PREVIOUS_HOOK_CALLS.load(Ordering::SeqCst),
        1,
        "the previous hook saw it"
    );

    let envelope = common::call(&boom {}, serde_json::json!({}));
    assert_eq!(envelope["error"]["category"], "internal");
    assert_eq!(
        PREVIOUS_HOOK_CALLS.load(Ordering::SeqCst),
        1,
        "a tool's panic goes to the server log, not the previous hook"
    );
}

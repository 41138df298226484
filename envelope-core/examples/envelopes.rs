//! Builds an ok, a truncated and an error envelope and prints each as the JSON an agent reads.
//!
//! Run: `cargo run -p envelope-core --example envelopes`

use envelope_core::{
    Completeness, EmptyReason, Envelope, NextAction, Notice, Role, ToolError, TruncationReason,
    Unit, Verdict,
};
use serde_json::json;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ok = Envelope::ok(json!({ "path": "src/lib.rs", "lines": 120 }))
        .with_verdict(Verdict::Safe)
        .with_summary_line("src/lib.rs: 120 lines, no risk found");

    let callers: Vec<String> = ["parse_args", "main", "run"].map(String::from).to_vec();
    let page = Completeness::truncated_page(
        Unit::custom("caller")?,
        callers.len(),
        Some(39),
        TruncationReason::PageLimit,
        None,
    )?;
    let truncated = Envelope::ok(json!({ "callers": callers }))
        .with_completeness(page)
        .with_warning(Notice::warning(
            "stale_cache",
            "call edges are from a cache 2 hours old",
        ))
        .with_next_actions([NextAction::new(
            "raise-limit",
            Role::Retry,
            1,
            "find_callers",
            json!({ "symbol": "build_response", "limit": 39 }),
            "Fetch every caller in one call.",
        )?]);

    let empty = Envelope::ok(json!({ "matches": [] }))
        .with_verdict(Verdict::NotFound)
        .with_empty_reason(
            EmptyReason::NoMatch,
            "searched 512 files; no line contains `FriggMcp`",
        );

    let error: Envelope<()> = Envelope::err(
        ToolError::validation("`limit` must be between 1 and 500, got 0")
            .with_code("limit_out_of_range")
            .with_hint("pass a limit between 1 and 500"),
    );

    for (label, wire) in [
        ("ok", serde_json::to_string_pretty(&ok)?),
        ("truncated", serde_json::to_string_pretty(&truncated)?),
        ("empty", serde_json::to_string_pretty(&empty)?),
        ("error", serde_json::to_string_pretty(&error)?),
    ] {
        println!("// {label}\n{wire}\n");
    }
    Ok(())
}

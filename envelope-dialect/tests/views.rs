//! Each dialect read back (`view`) gives the envelope's agent-facing fields it carries: what a
//! checker or an agent kit written against the envelope relies on, in every wire.

use envelope_core::{Dialect, Envelope, ToolError};
use envelope_dialect::{Rendering, render, view};
use serde_json::{Value, json};

/// A page of a search as the budget stage writes it: two rows of 532, the next page offered.
fn page() -> Value {
    json!({
        "ok": true,
        "verdict": "INFO",
        "next_step": "showing 2 of 532 occurrences — follow `next-page`",
        "data": {"occurrences": [{"path": "a.rs", "line": 1}, {"path": "b.rs", "line": 2}]},
        "completeness": {"unit": "occurrence", "returned": 2, "total": 532, "complete": false,
                          "truncated": true, "truncation_reasons": ["page_limit"]},
        "next_actions": [{"id": "next-page", "role": "broaden_scope", "tool": "search_text",
                          "arguments": {"query": "x", "limit": 2, "continuation": "IQJrEY_kvkMABQmk03YoZ14q"},
                          "reason": "next page"}],
        "meta": {"request_id": "01M8Y668ZWS01APKW5MCT6BK9G", "complexity_tier": "lite", "truncated": false}
    })
}

fn next_page(envelope: &Value) -> Option<(&str, &Value)> {
    envelope["next_actions"]
        .as_array()?
        .iter()
        .find(|action| action["id"] == "next-page")
        .map(|action| {
            (
                action["tool"].as_str().unwrap_or_default(),
                &action["arguments"],
            )
        })
}

#[test]
fn a_page_reads_back_with_its_rows_and_the_call_that_continues_it() {
    let page = page();
    for dialect in Dialect::ALL {
        let wire = render(dialect, &page, &Rendering::default());
        let back = view(dialect, &wire);
        assert_eq!(back["ok"], true, "{dialect}: {back:#}");
        assert_eq!(back["data"], page["data"], "{dialect}: {back:#}");
        assert_eq!(next_page(&back), next_page(&page), "{dialect}: {back:#}");
    }
}

#[test]
fn a_failure_reads_back_as_a_failure_with_its_message_and_retry_advice() {
    let failed: Envelope<()> = Envelope::err(
        ToolError::validation("invalid argument `limit`: expected a number")
            .with_code("invalid_argument"),
    );
    let envelope = serde_json::to_value(&failed).expect("serializes");
    for dialect in Dialect::ALL {
        let wire = render(dialect, &envelope, &Rendering::default());
        let back = view(dialect, &wire);
        assert_eq!(back["ok"], false, "{dialect}: {back:#}");
        assert_eq!(back["error"]["retryable"], false, "{dialect}: {back:#}");
        let message = back["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains("`limit`"), "{dialect}: {back:#}");
        // The category, or in its place the code: one of them always comes back.
        let kind = (&back["error"]["category"], &back["error"]["code"]);
        assert!(
            kind.0 == "validation" || kind.1 == "invalid_argument",
            "{dialect}: {back:#}"
        );
    }
}

#[test]
fn a_list_payload_and_a_scalar_payload_come_back_as_they_were() {
    for payload in [json!([1, 2, 3]), json!("done"), json!({"n": 1})] {
        let envelope = serde_json::to_value(Envelope::ok(payload.clone())).expect("serializes");
        for dialect in Dialect::ALL {
            let back = view(dialect, &render(dialect, &envelope, &Rendering::default()));
            assert_eq!(back["ok"], true, "{dialect}: {back:#}");
            assert_eq!(back["data"], payload, "{dialect}: {back:#}");
        }
    }
}

#[test]
fn odd_answers_read_back_without_panicking() {
    for odd in [
        json!(null),
        json!([]),
        json!("x"),
        json!({}),
        json!({"_meta": 3}),
        json!({"ok": true, "data": {"meta": 1}}),
    ] {
        for dialect in Dialect::ALL {
            let back = view(dialect, &odd);
            assert!(
                back.is_object() || dialect == Dialect::Envelope,
                "{dialect}: {back:#}"
            );
        }
    }
}

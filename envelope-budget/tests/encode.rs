//! The budget-aware encoder through the real `#[tool]` entry: what is sent is the same as with
//! plain `serde_json::to_value`, rows that could never be kept are never converted, and the
//! markers and `completeness` still carry the full numbers.

use envelope_budget::{BudgetPolicy, Estimator, prepare};
use envelope_core::stage::{Controls, ToolOutput};
use envelope_core::{
    Completeness, Envelope, Reply, Tool, ToolContext, ToolResult, TruncationReason, Unit, tool,
};
use serde_json::{Value, json};

mod support;

use support::block_on;

#[derive(serde::Serialize)]
struct Hit {
    path: String,
    line: usize,
    text: &'static str,
}

#[derive(serde::Serialize)]
struct Hits {
    query: &'static str,
    results: Vec<Hit>,
}

/// Returns 20,000 hits on a page of an 80,000-row result.
#[tool(tier = lite, read_only)]
fn many_hits() -> ToolResult<Reply<Hits>> {
    let results: Vec<Hit> = (0..20_000)
        .map(|line| Hit {
            path: format!("src/file_{line}.rs"),
            line,
            text: "let x = compute(input)?;",
        })
        .collect();
    let page = Completeness::truncated_page(
        Unit::OCCURRENCE,
        results.len(),
        Some(80_000),
        TruncationReason::PageLimit,
        None,
    )?;
    Ok(Reply::new(Hits {
        query: "compute",
        results,
    })
    .completeness(page))
}

/// One call's response: its payload encoded by the budget stage's encoder, or (`plain`)
/// converted whole with `serde_json` first, as a hand-written tool hands it over.
fn send(ctx: ToolContext, plain: bool) -> Value {
    let mut output = block_on(many_hits {}.call(Value::Null, ctx));
    if plain {
        let wire = serde_json::to_value(&output.envelope).expect("serializes");
        let envelope: Envelope<Value> = serde_json::from_value(wire).expect("reads back");
        output = ToolOutput::from(envelope).with_controls(output.controls);
    }
    let mut sent = prepare(output, &BudgetPolicy::default().for_call(None)).structured;
    // Request ids differ between two calls, and with them the token estimate (a ULID's random
    // characters tokenize differently); the rest must not differ.
    if let Some(Value::Object(meta)) = sent.get_mut("meta") {
        for key in ["request_id", "latency_ms", "tokens_estimated"] {
            meta.remove(key);
        }
    }
    sent
}

#[test]
fn the_encoder_changes_nothing_an_agent_reads() {
    // One request id for both calls: its random characters weigh in the estimate, so two
    // fresh ones could leave room for one row more in one call than in the other.
    let id = Some("01JD7X3Q5M8N2P4R6T8V0W2Y4Z");
    let plain = send(ToolContext::new().with_client_request_id(id), true);
    let bounded = send(ToolContext::new().with_client_request_id(id), false);
    assert_eq!(bounded["meta"], plain["meta"]);
    assert_eq!(bounded, plain);
    assert_eq!(bounded["meta"]["truncated_results_from"], 20_000);
    let sent = bounded["data"]["results"].as_array().map_or(0, Vec::len);
    assert_eq!(bounded["completeness"]["returned"], sent);
    assert_eq!(bounded["completeness"]["total"], 80_000);
    assert!(
        bounded["next_step"]
            .as_str()
            .unwrap_or("")
            .starts_with(&format!("showing {sent} of 80000 occurrences"))
    );
}

#[derive(serde::Serialize)]
struct Note {
    title: String,
    score: f32,
    tags: Vec<&'static str>,
}

/// Fields out of key order, `f32`s, and text that needs escaping.
#[derive(serde::Serialize)]
struct SmallPage {
    zeta: Value,
    notes: Vec<Note>,
    alpha: f64,
}

/// A payload that fits: a few rows of every kind of value.
#[tool(tier = lite, read_only)]
fn small_page() -> ToolResult<Reply<SmallPage>> {
    let notes: Vec<Note> = (0..12)
        .map(|i| Note {
            title: format!("note \"{i}\" — ünïcode\n漢字 {}", "x".repeat(i)),
            score: 0.1 * i as f32,
            tags: vec!["a", "b"],
        })
        .collect();
    Ok(Reply::new(SmallPage {
        zeta: serde_json::json!({"deep": [1, 2, {"k": null}]}),
        notes,
        alpha: -3.5,
    }))
}

#[test]
fn a_payload_that_fits_is_mirrored_byte_for_byte() {
    for estimator in [
        Estimator::Calibrated,
        Estimator::ScriptAware,
        Estimator::CharsDiv4,
    ] {
        let output = block_on(small_page {}.call(Value::Null, ToolContext::new()));
        let policy = BudgetPolicy::default().with_estimator(estimator);
        let full = Controls {
            response_mode: envelope_core::stage::ResponseMode::Full,
            ..Controls::default()
        };
        let prepared = prepare(output.with_controls(full.clone()), &policy.for_call(None));
        // The response is written once, the encoder's bytes spliced in: they must be exactly
        // what serde_json writes.
        assert_eq!(
            prepared.json,
            serde_json::to_string(&prepared.structured).expect("serializes")
        );
        // And the stamped count is the count of those bytes, itself included.
        let tokens = estimator.estimate(&prepared.json);
        assert_eq!(
            prepared.structured["meta"]["tokens_estimated"], tokens,
            "{estimator:?}"
        );
        assert_eq!(
            prepared.structured["meta"]["tokens_method"],
            json!(estimator.method())
        );
        assert_eq!(prepared.structured["meta"]["truncated"], false);
    }
}

/// Returns arrays nested 80 levels deep: small enough to fit any budget.
#[tool(tier = lite, read_only)]
fn deep() -> ToolResult<Value> {
    let mut value = Value::Null;
    for _ in 0..80 {
        value = Value::Array(vec![value]);
    }
    Ok(value)
}

#[test]
fn a_payload_that_fits_is_still_cut_below_the_safe_depth() {
    let output = block_on(deep {}.call(Value::Null, ToolContext::new()));
    let prepared = prepare(output, &BudgetPolicy::default().for_call(None));
    // The encoder measured it whole and it fits, yet it is not sent as encoded.
    assert_eq!(
        prepared.structured["meta"]["truncated_depth"]["limit"],
        envelope_budget::MAX_DEPTH,
        "{}",
        prepared.json
    );
    assert_eq!(
        prepared.json,
        serde_json::to_string(&prepared.structured).expect("serializes")
    );
}

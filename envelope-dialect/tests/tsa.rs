//! The `tsa` dialect against the words of tree-sitter-analyzer's agent envelope contract: its
//! three worked examples (kept verbatim in `fixtures/tsa/`; each is valid JSON as printed, the
//! `…<trimmed>` marks being inside strings, so nothing needed resolving), its verdict table,
//! its honest-truncation table, its control-surface table, and the rendering of envelopes
//! equivalent to each example.

use std::collections::BTreeSet;

use envelope_core::stage::{Controls, OutputFormat};
use envelope_core::{
    Completeness, CompletenessParts, Dialect, EmptyReason, Envelope, IncompleteReason, NextAction,
    Notice, Role, ToolError, TruncationReason, Unit, Verdict,
};
use envelope_dialect::{Rendering, dropped, render, schema, unexpressed};
use serde_json::{Value, json};

const EXAMPLE_1: &str = include_str!("fixtures/tsa/example1.json");
const EXAMPLE_2: &str = include_str!("fixtures/tsa/example2.json");
const EXAMPLE_3: &str = include_str!("fixtures/tsa/example3.json");

/// The seed's verdict table, in its order.
const SEED_VERDICTS: [&str; 8] = [
    "SAFE",
    "CAUTION",
    "REVIEW",
    "UNSAFE",
    "INFO",
    "WARN",
    "ERROR",
    "NOT_FOUND",
];

/// The seed's control-surface table (`TOON_CONTROL_SURFACE`), in its order.
const SEED_CONTROL_SURFACE: [&str; 13] = [
    "success",
    "format",
    "toon_content",
    "verdict",
    "error",
    "error_type",
    "output_format",
    "summary_line",
    "hint",
    "file_path",
    "pr_url",
    "pr_number",
    "deprecation",
];

// ---------------------------------------------------------------------------------------------
// Helpers

fn example(text: &str) -> Value {
    serde_json::from_str(text).expect("the seed's example is JSON")
}

fn how(output_format: OutputFormat, compact_only: bool) -> Rendering {
    Rendering {
        controls: Controls {
            output_format,
            compact_only,
            ..Controls::default()
        },
        ..Rendering::default()
    }
}

fn json_form() -> Rendering {
    how(OutputFormat::Json, false)
}

fn toon_form() -> Rendering {
    how(OutputFormat::Toon, false)
}

fn compact_only() -> Rendering {
    how(OutputFormat::Toon, true)
}

/// Every way a call may ask for its answer in this dialect.
fn every_form() -> [Rendering; 4] {
    [
        json_form(),
        toon_form(),
        compact_only(),
        how(OutputFormat::Json, true),
    ]
}

fn tsa(envelope: &Value, rendering: &Rendering) -> Value {
    render(Dialect::Tsa, envelope, rendering)
}

fn wire<T: envelope_core::serde::Serialize>(envelope: &Envelope<T>) -> Value {
    serde_json::to_value(envelope).expect("an envelope serializes")
}

/// Sets `meta.<key>` the way the budget stage writes it.
fn with_meta(mut envelope: Value, key: &str, value: Value) -> Value {
    if let Some(meta) = envelope.get_mut("meta").and_then(Value::as_object_mut) {
        meta.insert(key.to_owned(), value);
    }
    envelope
}

fn tsa_schema(data: &Value) -> Value {
    schema(Dialect::Tsa, data, None)
}

fn assert_valid_with(schema: &Value, response: &Value) {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(response)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{response:#} does not validate: {errors:#?}"
    );
}

fn assert_valid(response: &Value) {
    assert_valid_with(&tsa_schema(&json!(true)), response);
}

fn keys(response: &Value) -> BTreeSet<String> {
    response
        .as_object()
        .expect("a response is an object")
        .keys()
        .cloned()
        .collect()
}

fn text<'a>(response: &'a Value, key: &str) -> &'a str {
    response[key]
        .as_str()
        .unwrap_or_else(|| panic!("`{key}` is a string in {response:#}"))
}

/// The search page of the task's example: two of 532 occurrences, with a `next-page` action.
fn search_page() -> Value {
    json!({
        "ok": true, "verdict": "INFO",
        "next_step": "showing 2 of 532 occurrences — follow `next-page`",
        "data": {
            "occurrences": [
                {"path": "README.md", "line": 8, "column": 94, "text": "cargo run …"},
                {"path": "README.md", "line": 29, "column": 355, "text": "…"}
            ],
            "target_ref": "MWsRj-QB7G7-CQBFbnZlbG9wZS94IhY8uZkdJR0"
        },
        "completeness": {"unit": "occurrence", "returned": 2, "total": 532, "complete": false,
                         "truncated": true, "truncation_reasons": ["page_limit"]},
        "next_actions": [{"id": "next-page", "role": "broaden_scope", "order": 0,
                          "tool": "search_text",
                          "arguments": {"query": "Envelope", "limit": 2,
                                        "continuation": "IQJrEY_kvkMABQmk03YoZ14q"},
                          "reason": "next page"}],
        "meta": {"request_id": "01M8Y668ZWS01APKW5MCT6BK9G", "tool": "search_text",
                 "complexity_tier": "lite", "idempotent": true, "latency_ms": 40,
                 "tokens_estimated": 444, "tokens_method": "heuristic", "tokens_saved": 11823,
                 "tokens_saved_pct": 96.4, "baseline_method": "grep_recursive",
                 "schema_version": 3,
                 "capabilities": ["standardized_error_envelope", "canonical_verdicts",
                                  "completeness", "next_actions", "continuations"],
                 "truncated": false}
    })
}

/// The envelope equivalent to worked example 1 (`nav action=callers`, limit 3).
fn example_1_envelope() -> Value {
    let callers = json!([
        {"name": "execute", "file": "a.py", "line": 10},
        {"name": "run", "file": "b.py", "line": 20},
        {"name": "call", "file": "c.py", "line": 30},
    ]);
    let page = Completeness::truncated_page(
        Unit::custom("caller").expect("a snake-case unit"),
        3,
        Some(39),
        TruncationReason::PageLimit,
        None,
    )
    .expect("a valid page");
    let seed = example(EXAMPLE_1);
    let envelope = Envelope::ok(json!({
        "callers": callers,
        "data_source": "parse",
        "function": "build_response",
    }))
    .with_completeness(page)
    .with_next_step(text(&seed, "next_step"))
    .with_warning(Notice::warning(
        "stale_cache",
        "most edges have callee_resolution='unknown'. Run `uv run tree-sitter-analyzer \
         --ast-cache --ast-cache-mode index --ast-cache-force` or rebuild with `--mode resolve` \
         to populate Synapse resolution columns.",
    ));
    with_meta(wire(&envelope), "truncated", json!(false))
}

/// The envelope equivalent to worked example 2 (`edit action=safe`). The tool's own triage
/// members (`risk`, `edit_strategy`, …) are payload members: an envelope cannot put them in
/// `agent_summary`.
fn example_2_envelope() -> Value {
    let seed = example(EXAMPLE_2);
    let summary = &seed["agent_summary"];
    let envelope = Envelope::ok(json!({
        "file_path": seed["file_path"],
        "risk_level": seed["risk_level"],
        "recommendation": seed["recommendation"],
        "health_grade": seed["health_grade"],
        "downstream_count": seed["downstream_count"],
        "risk": summary["risk"],
        "edit_strategy": summary["edit_strategy"],
        "verification_command": summary["verification_command"],
        "guardrails": summary["guardrails"],
    }))
    .with_verdict(Verdict::Safe)
    .with_summary_line(text(summary, "summary_line"))
    .with_next_step(text(summary, "next_step"));
    wire(&envelope)
}

/// The envelope equivalent to worked example 3 (`health action=file`).
fn example_3_envelope() -> Value {
    let envelope = Envelope::ok(json!({
        "file_path": "tree_sitter_analyzer/mcp/utils/format_helper.py",
        "grade": "B",
        "total_score": 89.5,
        "dimensions": [{"name": "dependencies", "score": 71}, {"name": "size", "score": 95}],
        "smells": ["long_function"],
    }))
    .with_verdict(Verdict::Safe)
    .with_summary_line(
        "tree_sitter_analyzer/mcp/utils/format_helper.py grade=B score=89.5 smells=1 \
         weakest=dependencies",
    );
    wire(&envelope)
}

// ---------------------------------------------------------------------------------------------
// The seed's examples, as written

#[test]
fn the_seeds_three_examples_validate_against_the_schema() {
    for text in [EXAMPLE_1, EXAMPLE_2, EXAMPLE_3] {
        assert_valid(&example(text));
    }
}

#[test]
fn the_schema_is_draft_2020_12_and_refuses_what_the_contract_forbids() {
    let schema = tsa_schema(&json!(true));
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    let refused = [
        json!({"verdict": "INFO"}),                    // success is always present
        json!({"success": false, "verdict": "ERROR"}), // error iff failure
        json!({"success": true, "verdict": "INFO", "error": "boom"}), // error iff failure
        json!({"success": true, "verdict": "ERROR"}),  // ERROR iff failure
        json!({"success": false, "verdict": "INFO", "error": "x"}), // a failure is ERROR
        json!({"success": true, "verdict": "OK"}),     // outside the alphabet
        json!({"success": true, "format": "toon"}),    // format without content
        json!({"success": true, "toon_content": "a: 1"}), // content without format
        json!({"success": true, "truncated": "yes"}),
        json!({"success": true, "warnings": [{"code": "x"}]}), // warnings are strings
        json!({"success": true, "next_actions": [{"id": "next-page"}]}),
    ];
    for response in refused {
        assert!(!validator.is_valid(&response), "accepted {response}");
    }
}

// ---------------------------------------------------------------------------------------------
// Verdict alphabet

#[test]
fn the_verdict_alphabet_is_exactly_the_seeds_table() {
    let schema = tsa_schema(&json!(true));
    let alphabet: BTreeSet<&str> = schema["properties"]["verdict"]["enum"]
        .as_array()
        .expect("an enum")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(alphabet, SEED_VERDICTS.into_iter().collect());
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    // "Anything outside this alphabet (OK, CLEAN, n/a, lowercase variants…) is a bug."
    for drift in ["OK", "CLEAN", "n/a", "info", "safe", "Warn"] {
        assert!(!validator.is_valid(&json!({"success": true, "verdict": drift})));
    }
}

#[test]
fn every_verdict_renders_as_itself_row_by_row() {
    for row in SEED_VERDICTS {
        let verdict = Verdict::canonicalize(row);
        assert_eq!(verdict.as_str(), row);
        let envelope = if verdict == Verdict::Error {
            wire(&Envelope::<()>::err(ToolError::validation("bad input")))
        } else {
            wire(&Envelope::ok(json!({})).with_verdict(verdict))
        };
        for rendering in every_form() {
            let rendered = tsa(&envelope, &rendering);
            assert_eq!(rendered["verdict"], row);
            // `ERROR` iff the call failed (`success: false`).
            assert_eq!(rendered["success"], row != "ERROR");
            assert_valid(&rendered);
        }
    }
}

#[test]
fn a_missing_verdict_is_back_filled_and_drift_canonicalized() {
    let mut envelope = wire(&Envelope::ok(json!({"n": 1})));
    if let Some(object) = envelope.as_object_mut() {
        object.remove("verdict");
    }
    assert_eq!(tsa(&envelope, &json_form())["verdict"], "INFO");
    envelope["verdict"] = json!("clean");
    assert_eq!(tsa(&envelope, &json_form())["verdict"], "SAFE");
    envelope["verdict"] = json!("n/a");
    assert_eq!(tsa(&envelope, &json_form())["verdict"], "INFO");
}

// ---------------------------------------------------------------------------------------------
// Honest truncation (worked example 1 and the four-part table)

#[test]
fn example_1_renders_the_seeds_response_field_for_field() {
    let seed = example(EXAMPLE_1);
    let rendered = tsa(&example_1_envelope(), &json_form());
    assert_valid(&rendered);
    // The seed printed everything but `callers`.
    let mut without_callers = rendered.clone();
    let callers = without_callers
        .as_object_mut()
        .and_then(|object| object.remove("callers"))
        .expect("the callers list is at the top level");
    assert_eq!(callers.as_array().map(Vec::len), Some(3));
    assert_eq!(without_callers, seed);
}

#[test]
fn the_four_part_truncation_table_row_by_row() {
    let rendered = tsa(&example_1_envelope(), &json_form());
    // `truncated` (bool): true iff anything was omitted.
    assert_eq!(rendered["truncated"], true);
    // pre-cap total: the exact count before slicing, `<unit>_count`.
    assert_eq!(rendered["caller_count"], 39);
    // listed count / cap: `<unit plural>_listed` and `listed_cap`.
    assert_eq!(rendered["callers_listed"], 3);
    assert_eq!(rendered["listed_cap"], 3);
    // next_step interpolates the real numbers.
    assert!(text(&rendered, "next_step").starts_with("showing 3 of 39 callers"));
    // WARN-grade degradation travels in warnings while the verdict stays INFO.
    assert_eq!(rendered["verdict"], "INFO");
    assert!(
        rendered["warnings"][0]
            .as_str()
            .is_some_and(|line| line.starts_with("stale_cache: "))
    );
}

#[test]
fn a_page_names_its_counts_after_the_unit_and_pages_with_next_actions_as_given() {
    let envelope = search_page();
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    assert_eq!(rendered["truncated"], true);
    assert_eq!(rendered["occurrence_count"], 532);
    assert_eq!(rendered["occurrences_listed"], 2);
    assert_eq!(rendered["listed_cap"], 2);
    assert_eq!(rendered["next_step"], envelope["next_step"]);
    // The payload's members at the top level; the observability meta is not written.
    assert_eq!(rendered["target_ref"], envelope["data"]["target_ref"]);
    assert_eq!(rendered["occurrences"], envelope["data"]["occurrences"]);
    for gone in [
        "meta",
        "ok",
        "data",
        "completeness",
        "request_id",
        "tokens_estimated",
    ] {
        assert!(rendered.get(gone).is_none(), "`{gone}` in {rendered:#}");
    }
    // Paging: the next-page action, exactly as the envelope has it.
    assert_eq!(rendered["next_actions"], envelope["next_actions"]);
    let next = &rendered["next_actions"][0];
    assert_eq!(next["id"], "next-page");
    assert_eq!(next["tool"], "search_text");
    assert_eq!(
        next["arguments"],
        json!({"query": "Envelope", "limit": 2, "continuation": "IQJrEY_kvkMABQmk03YoZ14q"})
    );
}

#[test]
fn the_toon_form_keeps_paging_beside_toon_content_and_compact_only_inside_it() {
    let envelope = search_page();
    let toon = tsa(&envelope, &toon_form());
    assert_valid(&toon);
    assert_eq!(toon["format"], "toon");
    assert_eq!(toon["output_format"], "toon");
    assert_eq!(toon["next_actions"], envelope["next_actions"]);
    assert_eq!(toon["truncated"], true);
    assert_eq!(toon["occurrence_count"], 532);
    // The payload's list lives in toon_content only; its scalars stay alongside.
    assert!(toon.get("occurrences").is_none());
    assert_eq!(toon["target_ref"], envelope["data"]["target_ref"]);
    let content = text(&toon, "toon_content");
    assert!(content.contains("occurrences[2]"));
    assert!(content.contains("IQJrEY_kvkMABQmk03YoZ14q"));

    let compact = tsa(&envelope, &compact_only());
    assert_valid(&compact);
    assert!(
        keys(&compact)
            .iter()
            .all(|key| SEED_CONTROL_SURFACE.contains(&key.as_str()))
    );
    // "everything stripped from the top level is recoverable here"
    let content = text(&compact, "toon_content");
    for kept in [
        "IQJrEY_kvkMABQmk03YoZ14q",
        "search_text",
        "occurrence_count: 532",
        "truncated: true",
    ] {
        assert!(content.contains(kept), "`{kept}` not in {content}");
    }
}

#[test]
fn listed_cap_is_written_when_every_cap_bounds_the_listed_count() {
    let cut = |reasons: Vec<TruncationReason>| {
        let page = Completeness::try_from_parts(CompletenessParts {
            unit: Unit::FILE,
            returned: 5,
            offset: 0,
            total: Some(12),
            complete: false,
            truncated: true,
            truncation_reasons: reasons,
            incomplete_reasons: Vec::new(),
            shortened: Vec::new(),
            continuation: None,
        })
        .expect("a valid page");
        tsa(
            &wire(&Envelope::ok(json!({"files": [1, 2, 3, 4, 5]})).with_completeness(page)),
            &json_form(),
        )
    };
    // The page size, the response budget, a top-K or merge cap: the listed count is the cap.
    for reasons in [
        vec![TruncationReason::PageLimit],
        vec![TruncationReason::TopKLimit],
        vec![TruncationReason::BudgetLimit],
        vec![TruncationReason::PageLimit, TruncationReason::BudgetLimit],
        vec![TruncationReason::MergePageLimit],
    ] {
        let rendered = cut(reasons);
        assert_eq!(rendered["listed_cap"], 5, "{rendered:#}");
        assert_valid(&rendered);
    }
    // A per-file, child or ancestor cap bounds something else: its size is not guessed.
    for reasons in [
        vec![TruncationReason::PerFileLimit],
        vec![TruncationReason::PageLimit, TruncationReason::PerFileLimit],
        vec![TruncationReason::ChildLimit],
    ] {
        let rendered = cut(reasons);
        assert!(rendered.get("listed_cap").is_none(), "{rendered:#}");
        assert_eq!(rendered["truncated"], true);
        assert_eq!(rendered["file_count"], 12);
        assert_eq!(rendered["files_listed"], 5);
        assert_valid(&rendered);
    }
}

#[test]
fn an_unknown_total_is_absent_never_zero_and_next_step_is_derived_when_missing() {
    let page = Completeness::truncated_page(
        Unit::INCOMING_CALL,
        4,
        None,
        TruncationReason::PageLimit,
        None,
    )
    .expect("a valid page");
    let next = NextAction::new(
        "next-page",
        Role::BroadenScope,
        0,
        "callers",
        json!({"name": "f", "continuation": "tok"}),
        "next page",
    )
    .expect("object arguments");
    let mut envelope = wire(
        &Envelope::ok(json!({"calls": [1, 2, 3, 4]}))
            .with_completeness(page)
            .with_next_actions([next]),
    );
    // The typed envelope words a next_step of its own; one written without it gets the
    // completeness's line from the dialect.
    if let Some(object) = envelope.as_object_mut() {
        object.remove("next_step");
    }
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    assert!(rendered.get("incoming_call_count").is_none());
    assert_eq!(rendered["incoming_calls_listed"], 4);
    let step = text(&rendered, "next_step");
    assert!(step.starts_with("showing 4 incoming calls"), "{step}");
    assert!(step.contains("next-page"), "{step}");
}

#[test]
fn a_later_page_says_how_many_rows_earlier_pages_listed() {
    let last = Completeness::try_from_parts(CompletenessParts {
        unit: Unit::SYMBOL,
        returned: 2,
        offset: 10,
        total: Some(12),
        complete: true,
        truncated: false,
        truncation_reasons: Vec::new(),
        incomplete_reasons: Vec::new(),
        shortened: Vec::new(),
        continuation: None,
    })
    .expect("a valid last page");
    let rendered = tsa(
        &wire(&Envelope::ok(json!({"symbols": ["a", "b"]})).with_completeness(last)),
        &json_form(),
    );
    assert_valid(&rendered);
    // 2 of 12 listed: the earlier pages' rows are omitted from this response.
    assert_eq!(rendered["truncated"], true);
    assert_eq!(rendered["symbol_count"], 12);
    assert_eq!(rendered["symbols_listed"], 2);
    assert_eq!(rendered["symbols_offset"], 10);
    assert!(rendered.get("listed_cap").is_none());
}

#[test]
fn a_budget_cut_says_it_was_cut_and_by_how_much() {
    // A completeness the budget stage updated to the rows it sent, and its markers.
    let mut envelope = search_page();
    envelope["completeness"]["truncation_reasons"] = json!(["page_limit", "budget_limit"]);
    envelope["completeness"]["returned"] = json!(1);
    envelope["next_step"] = json!("showing 1 of 532 occurrences — follow `next-page`");
    if let Some(list) = envelope["data"]["occurrences"].as_array_mut() {
        list.truncate(1);
    }
    let envelope = with_meta(envelope, "truncated", json!(true));
    let envelope = with_meta(envelope, "truncated_occurrences_from", json!(2));
    let envelope = with_meta(envelope, "truncated_occurrences_to", json!(1));
    let envelope = with_meta(
        envelope,
        "truncated_string_fields",
        json!(["/data/occurrences/0/text"]),
    );
    for rendering in every_form() {
        let rendered = tsa(&envelope, &rendering);
        assert_valid(&rendered);
        if rendering.controls.compact_only {
            let content = text(&rendered, "toon_content");
            assert!(
                content.contains("truncated_occurrences_from: 2"),
                "{content}"
            );
            continue;
        }
        assert_eq!(rendered["truncated"], true);
        assert_eq!(rendered["occurrence_count"], 532);
        assert_eq!(rendered["occurrences_listed"], 1);
        // The page size and the budget both cap the listed count, which the cut list equals.
        assert_eq!(rendered["listed_cap"], 1);
        assert_eq!(rendered["truncated_occurrences_from"], 2);
        assert_eq!(rendered["truncated_occurrences_to"], 1);
        assert_eq!(
            rendered["truncated_string_fields"],
            json!(["/data/occurrences/0/text"])
        );
        assert!(text(&rendered, "next_step").starts_with("showing 1 of 532"));
    }
}

#[test]
fn a_list_payload_cut_by_the_budget_goes_under_data_with_its_markers() {
    let envelope = wire(&Envelope::ok(json!([1, 2, 3])));
    let envelope = with_meta(envelope, "truncated", json!(true));
    let envelope = with_meta(envelope, "truncated_data_from", json!(40));
    let envelope = with_meta(envelope, "truncated_data_to", json!(3));
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    assert_eq!(rendered["data"], json!([1, 2, 3]));
    assert_eq!(rendered["truncated"], true);
    assert_eq!(rendered["truncated_data_from"], 40);
    assert_eq!(rendered["truncated_data_to"], 3);
}

// ---------------------------------------------------------------------------------------------
// agent_summary (worked example 2)

#[test]
fn example_2_renders_agent_summary_with_the_seeds_values() {
    let seed = example(EXAMPLE_2);
    let rendered = tsa(&example_2_envelope(), &json_form());
    assert_valid(&rendered);
    for key in ["summary_line", "verdict", "next_step"] {
        assert_eq!(
            rendered["agent_summary"][key], seed["agent_summary"][key],
            "agent_summary.{key}"
        );
    }
    for (key, value) in seed.as_object().expect("an object") {
        if key != "agent_summary" {
            assert_eq!(&rendered[key], value, "`{key}`");
        }
    }
    // summary_line is also mirrored to the top level.
    assert_eq!(
        rendered["summary_line"],
        seed["agent_summary"]["summary_line"]
    );
    assert_eq!(rendered["next_step"], seed["agent_summary"]["next_step"]);
    // The tool's own triage members cannot sit in agent_summary: they are top-level members.
    assert_eq!(
        rendered["verification_command"],
        seed["agent_summary"]["verification_command"]
    );
    assert!(
        rendered["agent_summary"]
            .get("verification_command")
            .is_none()
    );
    assert!(
        unexpressed(Dialect::Tsa)
            .iter()
            .any(|gap| gap.field.starts_with("agent_summary"))
    );
}

#[test]
fn agent_summary_appears_only_with_a_summary_line() {
    // Worked example 1 has a next_step and no agent_summary.
    let rendered = tsa(&example_1_envelope(), &json_form());
    assert!(rendered.get("agent_summary").is_none());
    let only_line = wire(&Envelope::ok(json!({})).with_summary_line("one line"));
    let rendered = tsa(&only_line, &json_form());
    assert_eq!(
        rendered["agent_summary"],
        json!({"summary_line": "one line", "verdict": "INFO"})
    );
    assert_eq!(rendered["summary_line"], "one line");
    assert!(rendered.get("next_step").is_none());
}

// ---------------------------------------------------------------------------------------------
// The control surface (worked example 3)

#[test]
fn example_3_reduces_to_the_seeds_control_surface() {
    let seed = example(EXAMPLE_3);
    let rendered = tsa(&example_3_envelope(), &compact_only());
    assert_valid(&rendered);
    let rendered_keys = keys(&rendered);
    // "Every top-level key is a member of TOON_CONTROL_SURFACE."
    assert!(
        rendered_keys
            .iter()
            .all(|key| SEED_CONTROL_SURFACE.contains(&key.as_str())),
        "{rendered_keys:?}"
    );
    // The seed's keys, with its values (toon_content aside: the seed's is trimmed).
    for (key, value) in seed.as_object().expect("an object") {
        if key != "toon_content" {
            assert_eq!(&rendered[key], value, "`{key}`");
        }
    }
    // Beside them only the echo of the requested format.
    let extra: Vec<&String> = rendered_keys
        .iter()
        .filter(|key| seed.get(key.as_str()).is_none())
        .collect();
    assert_eq!(extra, ["output_format"]);
    assert_eq!(rendered["output_format"], "toon");
    // toon_content holds the full payload.
    let content = text(&rendered, "toon_content");
    for line in [
        "success: true",
        "verdict: SAFE",
        "grade: B",
        "total_score: 89.5",
        "file_path: tree_sitter_analyzer/mcp/utils/format_helper.py",
        "dimensions[2]{name,score}:",
        "smells[1]: long_function",
    ] {
        assert!(
            content.lines().any(|l| l.trim() == line),
            "`{line}` not in\n{content}"
        );
    }
}

#[test]
fn the_control_surface_is_exactly_the_seeds_table() {
    // A success and a failure that together have every control-surface field to give.
    let success = wire(
        &Envelope::ok(json!({
            "file_path": "src/a.rs", "pr_url": "https://example.invalid/pr/7", "pr_number": 7,
            "deprecation": "`old_tool` is now `new_tool`", "rows": [1, 2],
        }))
        .with_summary_line("a line")
        .with_next_step("do it")
        .with_warning(Notice::warning("w", "warned")),
    );
    let failure = wire(&Envelope::<()>::err(
        ToolError::validation("bad")
            .with_code("BAD")
            .with_hint("fix it"),
    ));
    let mut union = BTreeSet::new();
    for envelope in [&success, &failure] {
        let rendered = tsa(envelope, &compact_only());
        assert_valid(&rendered);
        union.extend(keys(&rendered));
    }
    let seed: BTreeSet<String> = SEED_CONTROL_SURFACE
        .iter()
        .map(|k| (*k).to_owned())
        .collect();
    assert_eq!(union, seed);
}

#[test]
fn the_reduction_is_idempotent() {
    for envelope in [
        example_3_envelope(),
        search_page(),
        wire(&Envelope::<()>::err(ToolError::not_found("no such file"))),
    ] {
        for rendering in [compact_only(), how(OutputFormat::Json, true)] {
            let once = tsa(&envelope, &rendering);
            // Reducing the reduced response to the surface again changes nothing.
            let mut again = once.clone();
            if let Some(object) = again.as_object_mut() {
                object.retain(|key, _| SEED_CONTROL_SURFACE.contains(&key.as_str()));
            }
            assert_eq!(again, once);
            assert_eq!(tsa(&envelope, &rendering), once, "deterministic");
        }
    }
}

#[test]
fn compact_only_implies_the_toon_form_and_echoes_the_format_asked_for() {
    let rendered = tsa(&example_3_envelope(), &how(OutputFormat::Json, true));
    assert_valid(&rendered);
    assert_eq!(rendered["format"], "toon");
    assert_eq!(rendered["output_format"], "json");
    assert!(text(&rendered, "toon_content").contains("grade: B"));
    // The JSON form echoes nothing (the seed's example 1 was asked for JSON and has none).
    let json = tsa(&example_3_envelope(), &json_form());
    for key in ["format", "toon_content", "output_format"] {
        assert!(json.get(key).is_none());
    }
}

// ---------------------------------------------------------------------------------------------
// Failures

#[test]
fn a_failure_writes_error_error_type_and_hint() {
    let envelope = json!({
        "ok": false, "verdict": "ERROR",
        "error": {"category": "validation", "code": "STALE_CONTINUATION",
                  "message": "the snapshot moved", "retryable": false,
                  "hint": "call again without continuation", "data": {"field": "continuation"}},
        "meta": {"request_id": "01M8Y668ZWS01APKW5MCT6BK9G", "truncated": false}
    });
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    assert_eq!(
        rendered,
        json!({
            "success": false, "verdict": "ERROR",
            "error": "the snapshot moved", "error_type": "STALE_CONTINUATION",
            "hint": "call again without continuation", "retryable": false,
        })
    );
    let compact = tsa(&envelope, &compact_only());
    assert_valid(&compact);
    assert_eq!(compact["error"], "the snapshot moved");
    assert_eq!(compact["error_type"], "STALE_CONTINUATION");
    assert_eq!(compact["hint"], "call again without continuation");
    assert!(compact.get("retryable").is_none(), "not on the surface");
}

#[test]
fn error_type_is_the_category_without_a_code_and_retry_advice_is_kept() {
    // The envelope's categories with their retryable defaults, through the real constructors.
    // `not_found` is the contract's NOT_FOUND, a success: see its own test.
    let rows = [
        (ToolError::transient("timed out"), "transient", true),
        (ToolError::validation("bad"), "validation", false),
        (ToolError::unavailable("no backend"), "unavailable", true),
        (ToolError::internal("boom"), "internal", false),
    ];
    for (error, category, retryable) in rows {
        let rendered = tsa(&wire(&Envelope::<()>::err(error)), &json_form());
        assert_valid(&rendered);
        assert_eq!(rendered["error_type"], category);
        assert_eq!(rendered["retryable"], retryable, "{category}");
        assert_eq!(rendered["verdict"], "ERROR");
        assert!(!text(&rendered, "error").is_empty());
    }
}

/// A missing target is what the contract calls `NOT_FOUND`: "the tool ran fine but the
/// requested symbol/file/path does not exist … treat as an empty result, not a failure".
#[test]
fn a_missing_target_is_not_found_and_a_success() {
    let missing = ToolError::not_found("no file `a/b.rs` in the workspace")
        .with_code("file_not_found")
        .with_hint("check the path with list_files");
    let rendered = tsa(&wire(&Envelope::<()>::err(missing)), &json_form());
    assert_valid(&rendered);
    assert_eq!(rendered["success"], true);
    assert_eq!(rendered["verdict"], "NOT_FOUND");
    assert!(
        rendered.get("error").is_none(),
        "error iff success is false"
    );
    assert_eq!(
        rendered["summary_line"],
        "no file `a/b.rs` in the workspace"
    );
    assert_eq!(rendered["next_step"], "check the path with list_files");
    assert_eq!(rendered["agent_summary"]["verdict"], "NOT_FOUND");
    assert_eq!(rendered["error_type"], "file_not_found");
    assert!(envelope_dialect::contract(Dialect::Tsa).succeeded(&rendered));
    // Read back, it is the envelope's `not_found` failure it was written from.
    let viewed = envelope_dialect::view(Dialect::Tsa, &rendered);
    assert_eq!(viewed["ok"], false);
    assert_eq!(viewed["error"]["category"], "not_found");
    assert_eq!(viewed["error"]["code"], "file_not_found");
    assert_eq!(
        viewed["error"]["message"],
        "no file `a/b.rs` in the workspace"
    );
    assert_eq!(viewed["error"]["hint"], "check the path with list_files");
    // A success that found nothing stays a success with its payload.
    let empty = tsa(
        &wire(&Envelope::ok(json!({"files": []})).with_verdict(Verdict::NotFound)),
        &json_form(),
    );
    assert_eq!(envelope_dialect::view(Dialect::Tsa, &empty)["ok"], true);
}

// ---------------------------------------------------------------------------------------------
// Warnings

#[test]
fn warnings_are_code_colon_message_lines_for_everything_flagged() {
    let incomplete =
        Completeness::incomplete(Unit::FILE, 2, None, vec![IncompleteReason::WalkFailure])
            .expect("a valid incomplete result")
            .with_shortened(["text"]);
    let envelope = wire(
        &Envelope::ok(json!({"files": ["a", "b"]}))
            .with_verdict(Verdict::Warn)
            .with_completeness(incomplete)
            .with_warning(Notice::warning(
                "unknown_arg",
                "`colour` is not an argument",
            ))
            .with_diagnostic(Notice::info("parse_error", "b.rs did not parse")),
    );
    let envelope = with_meta(
        envelope,
        "binary_drift_warning",
        json!({"stored_version": 4, "running_version": 3, "remediation": "upgrade the server"}),
    );
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    let lines: Vec<&str> = rendered["warnings"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert_eq!(lines[0], "unknown_arg: `colour` is not an argument");
    assert_eq!(lines[1], "parse_error: b.rs did not parse");
    assert_eq!(
        lines[2],
        format!("walk_failure: {}", IncompleteReason::WalkFailure.meaning())
    );
    assert!(lines[3].starts_with("shortened: text — "), "{}", lines[3]);
    assert_eq!(
        lines[4],
        "binary_drift_warning: index written by schema version 4, this server reads 3; \
         upgrade the server"
    );
    assert_eq!(lines.len(), 5);
    assert_eq!(
        rendered["truncated"], false,
        "not exhaustive, but nothing omitted"
    );
}

#[test]
fn an_empty_result_says_why_in_warnings() {
    let envelope = wire(
        &Envelope::ok(json!({"symbols": []}))
            .with_verdict(Verdict::NotFound)
            .with_empty_reason(EmptyReason::TargetNotResolved, "no symbol named `Foo.bar`"),
    );
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    assert_eq!(rendered["verdict"], "NOT_FOUND");
    assert_eq!(rendered["success"], true);
    assert_eq!(
        rendered["warnings"],
        json!(["target_not_resolved: no symbol named `Foo.bar`"])
    );
    assert_eq!(rendered["symbols"], json!([]));
}

// ---------------------------------------------------------------------------------------------
// Payload placement

#[test]
fn a_payload_member_that_would_overwrite_or_pass_for_a_dialect_field_keeps_it_whole_under_data() {
    let under_data = |payload: Value| {
        let rendered = tsa(&wire(&Envelope::ok(payload.clone())), &json_form());
        assert_valid(&rendered);
        assert_eq!(rendered["data"], payload, "{rendered:#}");
        rendered
    };
    // A member named like a contract field the response does not write.
    let rendered = under_data(json!({"warnings": ["own"], "n": 1}));
    assert!(rendered.get("warnings").is_none() && rendered.get("n").is_none());
    under_data(json!({"error": "not a failure"}));
    under_data(json!({"next_actions": [{"tool": "x"}]}));
    under_data(json!({"data": 1}));
    // A member named like one the response writes, with another value.
    under_data(json!({"verdict": "mine"}));
    under_data(json!({"success": "yes"}));

    // The same name with the same value is that field: flattened.
    let page = Completeness::complete(Unit::FILE, 2);
    let rendered = tsa(
        &wire(&Envelope::ok(json!({"file_count": 2, "files": ["a", "b"]})).with_completeness(page)),
        &json_form(),
    );
    assert!(rendered.get("data").is_none());
    assert_eq!(rendered["file_count"], 2);
    assert_eq!(rendered["files"], json!(["a", "b"]));
    // The echo keys are the payload's to fill.
    let rendered = tsa(
        &wire(&Envelope::ok(json!({"file_path": "a.rs"}))),
        &json_form(),
    );
    assert_eq!(rendered["file_path"], "a.rs");
}

#[test]
fn non_object_payloads_go_under_data_and_null_is_absent() {
    for payload in [json!([1, 2]), json!("text"), json!(7), json!(true)] {
        let rendered = tsa(&wire(&Envelope::ok(payload.clone())), &json_form());
        assert_valid(&rendered);
        assert_eq!(rendered["data"], payload);
    }
    let rendered = tsa(&wire(&Envelope::ok(())), &json_form());
    assert!(rendered.get("data").is_none());
    // A scalar payload stays beside toon_content; a list is in it only.
    assert_eq!(tsa(&wire(&Envelope::ok(json!(7))), &toon_form())["data"], 7);
    assert!(
        tsa(&wire(&Envelope::ok(json!([1]))), &toon_form())
            .get("data")
            .is_none()
    );
}

#[test]
fn a_typed_payload_types_the_flattened_members() {
    let data = json!({
        "type": "object",
        "required": ["files"],
        "properties": {
            "files": {"type": "array", "items": {"type": "string"}},
            "file_path": {"type": "string"},
            "warnings": {"type": "integer"},
        },
    });
    let schema = tsa_schema(&data);
    let rendered = tsa(
        &wire(&Envelope::ok(json!({"files": ["a"], "file_path": "a"}))),
        &json_form(),
    );
    assert_valid_with(&schema, &rendered);
    let validator = jsonschema::validator_for(&schema).expect("compiles");
    assert!(!validator.is_valid(&json!({"success": true, "files": [1]})));
    // The dialect's own `warnings` is not the payload's.
    assert!(validator.is_valid(&json!({"success": true, "warnings": ["a: b"]})));
}

// ---------------------------------------------------------------------------------------------
// Robustness

#[test]
fn odd_envelopes_degrade_and_never_panic() {
    let deep = (0..200).fold(json!(1), |inner, _| json!([inner]));
    let odd = [
        json!(null),
        json!([]),
        json!("ok"),
        json!({}),
        json!({"ok": true}),
        json!({"ok": true, "verdict": "INFO", "data": [1, {"a": null}]}),
        json!({"ok": true, "verdict": "INFO", "data": null}),
        json!({"ok": true, "verdict": "ERROR", "data": {}}),
        json!({"ok": true, "verdict": 3, "data": {"x": 1}}),
        json!({"ok": false, "verdict": "ERROR", "error": {"category": "validation", "message": "m"}}),
        json!({"ok": false, "error": {"code": "X"}}),
        json!({"ok": false, "error": "a bare string"}),
        json!({"ok": false, "verdict": "INFO", "error": {}}),
        json!({"ok": false, "data": {"x": 1}}),
        json!({"ok": "yes", "meta": "no"}),
        json!({"ok": true, "data": {}, "completeness": {"unit": "Not A Unit", "returned": -1,
               "total": "many", "truncated": "yes", "truncation_reasons": "page_limit"}}),
        json!({"ok": true, "data": {}, "completeness": {"unit": "file", "returned": 2,
               "truncated": true, "truncation_reasons": ["page_limit"]}}),
        json!({"ok": true, "data": {}, "completeness": [1]}),
        json!({"ok": true, "data": {}, "warnings": ["plain", 3, null, {"code": "c"}],
               "diagnostics": {"not": "a list"}, "next_actions": "none"}),
        json!({"ok": true, "data": {}, "next_actions": [1, {"id": "next-page"}]}),
        json!({"ok": true, "data": {}, "meta": {"truncated": "yes", "truncated_x_from": "a",
               "binary_drift_warning": {"stored_version": "x"}}}),
        json!({"ok": true, "data": {}, "empty_reason": 5, "diagnosis": "only prose"}),
        json!({"ok": true, "data": {"deep": deep}}),
    ];
    for envelope in &odd {
        for rendering in every_form() {
            let rendered = tsa(envelope, &rendering);
            assert_valid(&rendered);
            let failed = rendered["success"] == false;
            assert_eq!(rendered.get("error").is_some(), failed, "{rendered:#}");
            assert_eq!(rendered["verdict"] == "ERROR", failed, "{rendered:#}");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Gap tables

#[test]
fn the_gap_tables_say_each_why_in_one_sentence() {
    for table in [unexpressed(Dialect::Tsa), dropped(Dialect::Tsa)] {
        assert!(!table.is_empty());
        let fields: BTreeSet<&str> = table.iter().map(|gap| gap.field).collect();
        assert_eq!(fields.len(), table.len(), "no field listed twice");
        for gap in table {
            let why = gap.why;
            assert!(why.ends_with('.'), "{why}");
            assert!(
                !why.trim_end_matches('.').contains(". "),
                "one sentence: {why}"
            );
        }
    }
}

/// What is not an answer in this dialect is not read as one: `view` says it failed, and why,
/// in the envelope's own failure (nothing of it passes for a success).
#[test]
fn what_is_not_a_tsa_answer_reads_back_as_a_failure_that_says_so() {
    for foreign in [
        json!(42),
        json!({"ok": true, "data": {}}),
        json!({"success": "yes"}),
        json!({"success": true, "truncated": 3}),
    ] {
        let back = envelope_dialect::view(Dialect::Tsa, &foreign);
        assert_eq!(back["ok"], false, "{foreign}: {back:#}");
        assert_eq!(back["error"]["category"], "internal", "{back:#}");
        let message = back["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.starts_with("not a tree-sitter-analyzer agent envelope"),
            "{message}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// next_step: "one concrete, imperative action"; on truncation it "MUST state the real
// shown/total numbers" and says how to get the rest.

/// A page of 3 of 39 symbols, cut by its size, without a `next-page` action.
fn three_of_39() -> Completeness {
    Completeness::truncated_page(Unit::SYMBOL, 3, Some(39), TruncationReason::PageLimit, None)
        .expect("a valid page")
}

#[test]
fn a_tools_own_next_step_is_led_by_the_real_numbers_when_it_does_not_state_them() {
    let envelope = wire(
        &Envelope::ok(json!({"callers": [1, 2, 3]}))
            .with_next_step("raise limit to see every caller")
            .with_completeness(three_of_39()),
    );
    let step = text(&tsa(&envelope, &json_form()), "next_step").to_owned();
    assert!(step.starts_with("showing 3 of 39 symbols; "), "{step}");
    assert!(step.ends_with("raise limit to see every caller"), "{step}");
    // One that states them already is kept as it is.
    let envelope = wire(
        &Envelope::ok(json!({"callers": [1, 2, 3]}))
            .with_next_step("3 of 39 symbols shown: raise limit for the rest")
            .with_completeness(three_of_39()),
    );
    assert_eq!(
        text(&tsa(&envelope, &json_form()), "next_step"),
        "3 of 39 symbols shown: raise limit for the rest"
    );
}

#[test]
fn a_derived_next_step_says_how_to_get_the_rest_when_no_page_follows() {
    let mut envelope =
        wire(&Envelope::ok(json!({"callers": [1, 2, 3]})).with_completeness(three_of_39()));
    if let Some(object) = envelope.as_object_mut() {
        object.remove("next_step");
    }
    let step = text(&tsa(&envelope, &json_form()), "next_step").to_owned();
    assert!(step.starts_with("showing 3 of 39 symbols"), "{step}");
    assert!(
        step.contains("raise the limit or narrow the query"),
        "{step}"
    );
}

#[test]
fn a_list_the_budget_cut_without_a_completeness_gets_its_real_numbers_in_next_step() {
    let envelope = wire(&Envelope::ok(json!([1, 2, 3])));
    let envelope = with_meta(envelope, "truncated", json!(true));
    let envelope = with_meta(envelope, "truncated_data_from", json!(40));
    let envelope = with_meta(envelope, "truncated_data_to", json!(3));
    let rendered = tsa(&envelope, &json_form());
    assert_valid(&rendered);
    let step = text(&rendered, "next_step");
    assert!(step.starts_with("showing 3 of 40 `data`"), "{step}");
    assert!(
        step.contains("raise the limit or narrow the query"),
        "{step}"
    );
}

/// "control-surface keys that this particular call has no value for … are simply absent": a
/// payload member that is null is not a value.
#[test]
fn a_null_payload_member_is_absent_from_the_control_surface() {
    let envelope = wire(&Envelope::ok(
        json!({"file_path": null, "pr_url": "https://x/1"}),
    ));
    let rendered = tsa(&envelope, &compact_only());
    assert_valid(&rendered);
    assert!(rendered.get("file_path").is_none(), "{rendered:#}");
    assert_eq!(rendered["pr_url"], "https://x/1");
}

/// ERROR: "Do not consume other payload fields as valid results": a failure carries none.
#[test]
fn a_failure_carries_no_payload_members() {
    let envelope = json!({
        "ok": false,
        "error": {"category": "internal", "retryable": false, "message": "boom"},
        "data": {"x": 1},
    });
    for rendering in every_form() {
        let rendered = tsa(&envelope, &rendering);
        assert_valid(&rendered);
        assert!(rendered.get("x").is_none(), "{rendered:#}");
        assert!(rendered.get("data").is_none(), "{rendered:#}");
    }
}

/// NOT_FOUND: "Check spelling, qualify the name … before retrying" is the next step of a
/// missing target that came with no hint of its own.
#[test]
fn a_missing_target_without_a_hint_is_told_what_not_found_obliges() {
    let missing: Envelope<()> = Envelope::err(ToolError::not_found("no file named a.rs"));
    let rendered = tsa(&wire(&missing), &json_form());
    assert_eq!(rendered["verdict"], "NOT_FOUND");
    assert_eq!(rendered["next_step"], Verdict::NotFound.obligation());
    assert_eq!(
        rendered["agent_summary"]["next_step"],
        rendered["next_step"]
    );
}

/// `agent_summary` is "summary_line + verdict + next_step": its verdict is the answer's.
#[test]
fn agent_summarys_verdict_is_the_answers_for_every_verdict() {
    for verdict in Verdict::ALL {
        let envelope = wire(
            &Envelope::ok(json!({}))
                .with_verdict(*verdict)
                .with_summary_line("one line"),
        );
        let rendered = tsa(&envelope, &json_form());
        assert_eq!(
            rendered["agent_summary"]["verdict"], rendered["verdict"],
            "{verdict:?}"
        );
    }
}

/// The contract's string fields are strings: the schema refuses any other type in them.
#[test]
fn the_schema_refuses_the_contracts_strings_of_another_type() {
    let validator = jsonschema::validator_for(&tsa_schema(&json!(true))).expect("compiles");
    for (field, value) in [
        ("summary_line", json!(3)),
        ("next_step", json!({})),
        ("hint", json!([])),
        ("error_type", json!(false)),
    ] {
        let mut answer = json!({"success": true, "verdict": "INFO"});
        answer[field] = value;
        assert!(!validator.is_valid(&answer), "{field}");
    }
    assert!(!validator.is_valid(&json!({"success": false, "verdict": "ERROR", "error": 3})));
}

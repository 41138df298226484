//! The trimming boundary, read the way an agent reads the result.

use envelope_budget::{
    BudgetPolicy, Estimator, GRAPH_SUBGRAPH_BUDGET_CHARS, Prepared, TRUNCATION_SUFFIX, prepare,
};
use envelope_core::stage::ToolOutput;
use envelope_core::stage::{Controls, ResponseMode};
use envelope_core::{Completeness, Envelope, NextAction, Role, TruncationReason, Unit};
use serde_json::{Value, json};

fn policy(chars: usize) -> BudgetPolicy {
    BudgetPolicy::default().with_agent_chars(Some(chars))
}

fn run(envelope: Envelope<Value>, chars: usize) -> Prepared {
    prepare(envelope, &policy(chars).for_call(None))
}

/// Under `response_mode: full`, where `meta` carries the token stamps.
fn full() -> Controls {
    Controls {
        response_mode: ResponseMode::Full,
        ..Controls::default()
    }
}

/// The stamp is left out of a compact answer, and the count it kept is an upper bound of the
/// bytes sent (it counted the stamp too).
fn assert_unstamped_but_counted(prepared: &Prepared, estimator: Estimator) {
    let meta = &prepared.structured["meta"];
    assert!(meta.get("tokens_estimated").is_none(), "{}", prepared.json);
    assert!(meta.get("tokens_method").is_none(), "{}", prepared.json);
    assert!(
        !prepared.json.contains("tokens_estimated"),
        "{}",
        prepared.json
    );
    let counted = prepared.tokens_estimated.expect("counted");
    let sent = estimator.estimate(&prepared.json);
    assert!((sent..=sent + 8).contains(&counted), "{counted} for {sent}");
}

fn size(prepared: &Prepared) -> u64 {
    Estimator::default().normalized_size(&envelope_budget::Counts::of(&prepared.json))
}

fn hits(n: usize) -> Value {
    let rows: Vec<Value> = (0..n)
        .map(|i| json!({"path": format!("src/file_{i}.rs"), "line": i, "text": "fn main() { println!(\"hello\"); }"}))
        .collect();
    json!({ "query": "main", "results": rows })
}

#[test]
fn within_budget_is_unchanged_and_not_truncated() {
    let payload = hits(3);
    let prepared = run(Envelope::ok(payload.clone()), 32_000);
    assert_eq!(prepared.structured["data"], payload);
    assert_eq!(
        prepared.structured["meta"]["truncated"], false,
        "the trimmer ran and cut nothing"
    );
    assert!(
        prepared.structured["meta"]
            .get("truncated_results_from")
            .is_none()
    );
}

#[test]
fn a_long_list_is_cut_to_fit_with_markers() {
    let prepared = run(Envelope::ok(hits(5_000)), 32_000);
    assert!(size(&prepared) <= 32_000, "{}", size(&prepared));
    let meta = &prepared.structured["meta"];
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["truncated_results_from"], 5_000);
    let sent = prepared.structured["data"]["results"]
        .as_array()
        .expect("rows")
        .len();
    assert_eq!(meta["truncated_results_to"], sent);
    assert!(sent > 100, "kept only {sent}");
    assert_eq!(
        prepared.structured["data"]["query"], "main",
        "short scalars are never touched"
    );
}

#[test]
fn error_envelopes_are_counted_too() {
    let error = || Envelope::err(envelope_core::ToolError::validation("bad limit"));
    assert_unstamped_but_counted(&run(error(), 32_000), Estimator::default());
    let prepared = prepare(
        ToolOutput::from(error()).with_controls(full()),
        &policy(32_000).for_call(None),
    );
    let stamped = prepared.structured["meta"]["tokens_estimated"]
        .as_u64()
        .expect("stamped");
    assert_eq!(stamped, Estimator::default().estimate(&prepared.json));
    assert!(prepared.structured.get("data").is_none());
}

#[test]
fn tokens_estimated_counts_the_bytes_sent_itself_included() {
    assert_unstamped_but_counted(&run(Envelope::ok(hits(50)), 32_000), Estimator::default());
    let prepared = prepare(
        ToolOutput::from(Envelope::ok(hits(50))).with_controls(full()),
        &policy(32_000).for_call(None),
    );
    let stamped = prepared.structured["meta"]["tokens_estimated"]
        .as_u64()
        .expect("stamped");
    assert_eq!(stamped, Estimator::default().estimate(&prepared.json));
    assert_eq!(prepared.structured["meta"]["tokens_method"], "heuristic");
}

#[test]
fn every_estimator_counts_the_bytes_sent_whether_or_not_anything_was_cut() {
    let unicode = json!({"title": "Überblick — 東京の概要 🚀", "lines": [1, 22, 333, -4, 5.5]});
    for estimator in [
        Estimator::Calibrated,
        Estimator::ScriptAware,
        Estimator::CharsDiv4,
    ] {
        let policy = BudgetPolicy::default()
            .with_agent_chars(Some(4_000))
            .with_estimator(estimator);
        // Fits (nothing to mark), cut (markers and a shorter list), and no payload at all.
        for envelope in [
            Envelope::ok(hits(3)),
            Envelope::ok(unicode.clone()),
            Envelope::ok(hits(500)),
            Envelope::err(envelope_core::ToolError::validation("bad limit")),
        ] {
            assert_unstamped_but_counted(
                &prepare(envelope.clone(), &policy.for_call(None)),
                estimator,
            );
            let prepared = prepare(
                ToolOutput::from(envelope).with_controls(full()),
                &policy.for_call(None),
            );
            let meta = &prepared.structured["meta"];
            assert_eq!(
                meta["tokens_estimated"].as_u64(),
                Some(estimator.estimate(&prepared.json)),
                "{estimator:?}: {}",
                prepared.json
            );
            assert_eq!(meta["tokens_method"], json!(estimator.method()));
        }
    }
}

#[test]
fn completeness_follows_the_rows_actually_sent() {
    let page = Completeness::truncated_page(
        Unit::FILE,
        5_000,
        Some(90_000),
        TruncationReason::PageLimit,
        Some("tok".into()),
    )
    .expect("consistent");
    // The tool also offered the next page with the same token, and a look at one row.
    let next_page = NextAction::new(
        "next-page",
        Role::BroadenScope,
        0,
        "search",
        serde_json::json!({"query": "main", "continuation": "tok"}),
        "fetch the next page",
    )
    .expect("an object");
    let inspect = NextAction::new(
        "inspect",
        Role::Inspect,
        0,
        "read",
        serde_json::json!({"path": "src/0.rs"}),
        "read the first hit",
    )
    .expect("an object");
    let envelope = Envelope::ok(hits(5_000))
        .with_completeness(page)
        .with_next_actions([next_page, inspect]);
    let prepared = run(envelope, 32_000);
    let ids: Vec<&str> = prepared.structured["next_actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|action| action["id"].as_str())
        .collect();
    assert_eq!(
        ids,
        ["inspect"],
        "the next-page call would skip unsent rows too"
    );
    let sent = prepared.structured["data"]["results"]
        .as_array()
        .expect("rows")
        .len();
    let completeness: Completeness =
        serde_json::from_value(prepared.structured["completeness"].clone()).expect("still valid");
    assert_eq!(completeness.returned(), sent);
    assert_eq!(completeness.total(), Some(90_000));
    assert!(
        completeness
            .truncation_reasons()
            .contains(&TruncationReason::BudgetLimit)
    );
    assert_eq!(
        completeness.continuation(),
        None,
        "the old continuation would skip unsent rows"
    );
    let step = prepared.structured["next_step"]
        .as_str()
        .expect("re-rendered");
    assert!(
        step.starts_with(&format!("showing {sent} of 90000 files")),
        "{step}"
    );
}

#[test]
fn trimming_twice_equals_trimming_once() {
    let once = run(Envelope::ok(hits(5_000)), 32_000);
    let again: Envelope<Value> =
        serde_json::from_value(once.structured.clone()).expect("valid envelope");
    let twice = run(again, 32_000);
    assert_eq!(twice.structured, once.structured);
}

#[test]
fn long_strings_are_cut_on_char_boundaries() {
    let text: String = "é🙂漢字👩‍👩‍👧".repeat(20_000);
    let prepared = run(Envelope::ok(json!({ "body": text, "kind": "x" })), 32_000);
    assert!(size(&prepared) <= 32_000);
    let body = prepared.structured["data"]["body"]
        .as_str()
        .expect("string");
    assert!(body.ends_with(TRUNCATION_SUFFIX));
    assert_eq!(
        prepared.structured["meta"]["truncated_string_fields"],
        json!(["/body"])
    );
    assert_eq!(prepared.structured["data"]["kind"], "x");
}

#[test]
fn nested_member_lists_shrink_before_rows() {
    let rows: Vec<Value> = (0..40)
        .map(|i| json!({"id": i, "members": (0..200).map(|m| format!("member-{m}")).collect::<Vec<_>>()}))
        .collect();
    let prepared = run(Envelope::ok(json!({ "clusters": rows })), 32_000);
    assert!(size(&prepared) <= 32_000);
    let marker = &prepared.structured["meta"]["truncated_nested_lists"]["clusters[].members"];
    let cap = marker["cap"].as_u64().expect("cap");
    assert!(cap >= 3);
    // The rung caps the rows that could be kept; the rest are cut whole by the list rung.
    let lists = marker["lists"].as_u64().expect("lists");
    assert_eq!(marker["from"].as_u64(), Some(lists * 200));
    assert_eq!(marker["to"].as_u64(), Some(lists * cap));
    let kept = prepared.structured["data"]["clusters"]
        .as_array()
        .expect("rows");
    assert!(kept.len() as u64 <= lists, "every kept row was capped");
    for row in kept {
        assert!(row["members"].as_array().expect("members").len() as u64 <= cap);
    }
}

#[test]
fn buckets_of_a_dict_of_lists_are_capped() {
    let bucket = |n: usize| {
        (0..n)
            .map(|i| json!({"from": i, "to": i + 1}))
            .collect::<Vec<_>>()
    };
    let payload = json!({ "edges_by_type": { "calls": bucket(3_000), "imports": bucket(20) } });
    let prepared = run(Envelope::ok(payload), 32_000);
    assert!(size(&prepared) <= 32_000);
    let marker = &prepared.structured["meta"]["truncated_edges_by_type"];
    assert_eq!(marker["calls"]["from"], 3_000);
    assert!(
        marker.get("imports").is_none(),
        "short buckets stay whole: {marker}"
    );
}

#[test]
fn graphs_keep_a_coherent_subgraph() {
    let nodes: Vec<Value> = (0..20_000)
        .map(|i| json!({"id": format!("n{i}"), "label": "node label"}))
        .collect();
    let edges: Vec<Value> = (0..60_000)
        .map(|i| json!({"source": format!("n{}", i % 20_000), "target": format!("n{}", (i * 7) % 500)}))
        .collect();
    let payload = json!({ "nodes": nodes, "edges": edges });
    let prepared = prepare(
        ToolOutput::from(Envelope::ok(payload)).with_controls(full()),
        &BudgetPolicy::default().for_call(Some(200_000)),
    );
    assert!(size(&prepared) <= 200_000);
    let meta = &prepared.structured["meta"];
    assert_eq!(meta["truncated_subgraph"], true);
    let data = &prepared.structured["data"];
    let kept: std::collections::HashSet<&str> = data["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .filter_map(|n| n["id"].as_str())
        .collect();
    for edge in data["edges"].as_array().expect("edges") {
        assert!(kept.contains(edge["source"].as_str().expect("source")));
        assert!(kept.contains(edge["target"].as_str().expect("target")));
    }
    assert_eq!(meta["truncated_nodes_to"], kept.len());
    // The subgraph's own counts stand in for a recount: the stamp must still be exact.
    assert_eq!(
        meta["tokens_estimated"].as_u64(),
        Some(Estimator::default().estimate(&prepared.json))
    );
    const { assert!(GRAPH_SUBGRAPH_BUDGET_CHARS > 200_000) };
}

#[test]
fn opt_out_never_trims() {
    let prepared = prepare(
        Envelope::ok(hits(5_000)),
        &BudgetPolicy::unlimited().for_call(None),
    );
    assert_eq!(
        prepared.structured["data"]["results"]
            .as_array()
            .map(Vec::len),
        Some(5_000)
    );
    assert!(prepared.structured["meta"].get("truncated").is_none());
    assert!(
        prepared.structured["meta"]
            .get("envelope_unshrinkable")
            .is_none()
    );
}

#[test]
fn toon_is_rendered_on_request_and_json_stays_the_structured_form() {
    let controls = Controls {
        output_format: envelope_core::stage::OutputFormat::Toon,
        ..Controls::default()
    };
    let prepared = prepare(
        ToolOutput::from(Envelope::ok(hits(2))).with_controls(controls.clone()),
        &policy(32_000).for_call(None),
    );
    let toon = prepared.toon.as_deref().expect("rendered");
    assert!(toon.contains("results[2]{line,path,text}:"), "{toon}");
    assert_eq!(prepared.text(), toon);
    let plain = run(Envelope::ok(hits(2)), 32_000);
    assert!(plain.toon.is_none());
    assert_eq!(plain.text(), plain.json);
}

#[test]
fn opt_out_still_cuts_unsafe_depth() {
    let mut value = Value::Null;
    for _ in 0..10_000 {
        value = Value::Array(vec![value]);
    }
    let prepared = prepare(
        Envelope::ok(value),
        &BudgetPolicy::unlimited().for_call(None),
    );
    assert_eq!(
        prepared.structured["meta"]["truncated_depth"]["limit"],
        envelope_budget::MAX_DEPTH
    );
    envelope_core::stage::drop_deep(prepared.structured);
}

#[test]
fn unshrinkable_is_the_last_word() {
    let keys: serde_json::Map<String, Value> =
        (0..5_000).map(|i| (format!("k{i}"), json!(i))).collect();
    let prepared = run(Envelope::ok(Value::Object(keys)), 2_000);
    assert_eq!(prepared.structured["meta"]["envelope_unshrinkable"], true);
}

#[test]
fn a_very_deep_payload_is_cut_and_dropped_without_overflow() {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(|| {
            // Built by hand: `json!` would serialize the inner value, recursively.
            let mut value = Value::String("leaf".to_owned());
            for _ in 0..100_000 {
                let mut map = serde_json::Map::new();
                map.insert("child".to_owned(), Value::Array(vec![value]));
                value = Value::Object(map);
            }
            let prepared = run(Envelope::ok(value), 32_000);
            assert!(prepared.structured["meta"]["truncated"] == true);
            assert!(size(&prepared) <= 32_000);
            drop(prepared);
        })
        .expect("spawns")
        .join()
        .expect("no stack overflow");
}

#[test]
fn compact_drops_only_observability_and_compact_only_keeps_the_control_surface() {
    let envelope =
        Envelope::ok(hits(2)).with_warning(envelope_core::Notice::warning("w", "warned"));
    let compact = run(envelope.clone(), 32_000);
    assert!(compact.structured.get("warnings").is_some());
    let controls = Controls {
        compact_only: true,
        ..Controls::default()
    };
    let surface = prepare(
        ToolOutput::from(envelope).with_controls(controls.clone()),
        &policy(32_000).for_call(None),
    );
    let keys: Vec<&str> = surface
        .structured
        .as_object()
        .expect("object")
        .keys()
        .map(String::as_str)
        .collect();
    for key in &keys {
        assert!(envelope_budget::CONTROL_SURFACE.contains(key), "{key}");
    }
    assert!(surface.structured.get("warnings").is_none());
    let again: Envelope<Value> =
        serde_json::from_value(surface.structured.clone()).expect("still a valid envelope");
    let twice = prepare(
        ToolOutput::from(again).with_controls(controls.clone()),
        &policy(32_000).for_call(None),
    );
    assert_eq!(
        twice.structured, surface.structured,
        "the reduction is idempotent"
    );
}

#[test]
fn savings_against_a_declared_baseline() {
    let output = || ToolOutput::from(Envelope::ok(hits(3))).with_baseline("full_file_read", 10_000);
    let compact = prepare(output(), &policy(32_000).for_call(None));
    assert!(
        compact.structured["meta"].get("tokens_saved").is_none(),
        "observability-only"
    );
    let full = Controls {
        response_mode: envelope_core::stage::ResponseMode::Full,
        ..Controls::default()
    };
    let prepared = prepare(
        output().with_controls(full.clone()),
        &policy(32_000).for_call(None),
    );
    let meta = &prepared.structured["meta"];
    let used = meta["tokens_estimated"].as_i64().expect("stamped");
    assert_eq!(meta["baseline_method"], "full_file_read");
    assert_eq!(meta["tokens_saved"].as_i64(), Some(10_000 - used));
    let pct = ((10_000 - used) as f64 / 10_000.0 * 1000.0).round() / 10.0;
    assert_eq!(meta["tokens_saved_pct"].as_f64(), Some(pct));
    assert_eq!(
        used as u64,
        Estimator::default().estimate(&prepared.json),
        "savings are part of what is counted"
    );
}

#[test]
fn savings_may_be_negative() {
    let envelope = ToolOutput::from(Envelope::ok(hits(40))).with_baseline("grep_recursive", 10);
    let full = Controls {
        response_mode: envelope_core::stage::ResponseMode::Full,
        ..Controls::default()
    };
    let prepared = prepare(
        envelope.with_controls(full.clone()),
        &policy(32_000).for_call(None),
    );
    let meta = &prepared.structured["meta"];
    assert!(meta["tokens_saved"].as_i64().expect("stamped") < 0);
    assert!(meta["tokens_saved_pct"].as_f64().expect("stamped") < 0.0);
}

#[cfg(feature = "exact")]
#[test]
fn exact_counts_stamp_the_exact_tokens_of_the_bytes_sent() {
    let counter = envelope_budget::ExactCounter::cl100k();
    let policy = BudgetPolicy::default().with_exact(Some(counter));
    let compact = prepare(Envelope::ok(hits(20)), &policy.for_call(None));
    assert!(compact.structured["meta"].get("tokens_estimated").is_none());
    assert!(compact.tokens_estimated.is_some());
    let prepared = prepare(
        ToolOutput::from(Envelope::ok(hits(20))).with_controls(full()),
        &policy.for_call(None),
    );
    let meta = &prepared.structured["meta"];
    assert_eq!(meta["tokens_method"], "cl100k_base");
    assert_eq!(
        meta["tokens_estimated"].as_u64(),
        Some(counter.count(&prepared.json) as u64)
    );
}

#[test]
fn what_is_sent_reads_back_through_the_typed_getters() {
    // Every stamp the budget stage writes lands in a named field of `Meta`: a misspelt key
    // would fall into the flattened marker map instead, and fail the last check.
    let output = ToolOutput::from(Envelope::ok(hits(400))).with_baseline("grep_recursive", 50_000);
    let full = Controls {
        response_mode: envelope_core::stage::ResponseMode::Full,
        ..Controls::default()
    };
    let prepared = prepare(
        output.with_controls(full.clone()),
        &policy(4_000).for_call(None),
    );
    let envelope: Envelope<Value> =
        serde_json::from_value(prepared.structured.clone()).expect("what is sent is an envelope");
    let meta = envelope.meta();
    assert!(meta.tokens_estimated().is_some_and(|tokens| tokens > 0));
    assert!(meta.tokens_method().is_some());
    assert_eq!(meta.truncated(), Some(true));
    assert_eq!(meta.baseline_method(), Some("grep_recursive"));
    assert!(meta.tokens_saved().is_some() && meta.tokens_saved_pct().is_some());
    let markers = meta.trim_markers();
    assert_eq!(
        markers.get(&envelope_core::meta_keys::list_cut_from("results")),
        Some(&json!(400))
    );
    for key in markers.keys() {
        assert!(
            key.starts_with(envelope_core::meta_keys::MARKER_PREFIX),
            "`{key}` is no named field of `meta` and no trimmer marker"
        );
    }
}

#[test]
fn prose_beside_a_payload_is_cut_to_half_the_budget() {
    // Regression test for #12: only the payload obeyed the budget; a tool's own prose did not.
    let envelope = Envelope::ok(hits(2)).with_summary_line("s".repeat(100_000));
    let prepared = prepare(envelope, &policy(4_000).for_call(None));
    let summary = prepared.structured["summary_line"]
        .as_str()
        .expect("kept, cut");
    assert!(summary.ends_with(TRUNCATION_SUFFIX), "{summary}");
    assert_eq!(prepared.structured["meta"]["truncated"], true);
    assert_eq!(
        prepared.structured["data"],
        hits(2),
        "the payload keeps its half"
    );
    assert!(size(&prepared) <= 4_000, "{}", size(&prepared));
}

#[test]
fn savings_stamped_after_trimming_still_fit_the_budget() {
    // Regression test for #12 (review): `baseline_method`, `tokens_saved` and
    // `tokens_saved_pct` were written after trimming, past the budget.
    let method = "a_baseline_method_with_a_rather_long_name_".repeat(3);
    let output = ToolOutput::from(Envelope::ok(hits(400))).with_baseline(method.clone(), 1);
    let full = Controls {
        response_mode: envelope_core::stage::ResponseMode::Full,
        ..Controls::default()
    };
    let prepared = prepare(
        output.with_controls(full.clone()),
        &policy(4_000).for_call(None),
    );
    assert_eq!(
        prepared.structured["meta"]["baseline_method"],
        method.as_str()
    );
    assert!(size(&prepared) <= 4_000, "{}", size(&prepared));
}

#[test]
fn a_bare_list_the_budget_cuts_gets_a_completeness_saying_so() {
    // Regression test for #14: a bare list came out shorter with only `meta` markers to say so.
    let rows: Vec<Value> = (0..500)
        .map(|i| json!({"path": format!("src/file_{i}.rs"), "line": i}))
        .collect();
    let prepared = run(Envelope::ok(Value::Array(rows)), 4_000);
    let sent = prepared.structured["data"].as_array().map_or(0, Vec::len);
    assert!(sent > 0 && sent < 500, "{sent}");
    let completeness = &prepared.structured["completeness"];
    assert_eq!(completeness["returned"], sent);
    assert_eq!(completeness["total"], 500);
    assert_eq!(completeness["complete"], false);
    assert_eq!(completeness["truncation_reasons"], json!(["budget_limit"]));
    let step = prepared.structured["next_step"]
        .as_str()
        .expect("a next step");
    assert!(step.contains(&format!("{sent} of 500")), "{step}");
    assert!(size(&prepared) <= 4_000, "{}", size(&prepared));
    // What is sent is still an envelope, its completeness consistent.
    let _: Envelope<Value> = serde_json::from_value(prepared.structured).expect("an envelope");
}

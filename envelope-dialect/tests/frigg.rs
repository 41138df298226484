//! The `frigg` dialect against the words of Frigg's result and recovery contract: its example,
//! its field tables, enumerations and error tables, each checked against what an equivalent
//! envelope renders, and every rendering against the dialect's schema.

use std::collections::BTreeSet;

use envelope_budget::Estimator;
use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::paging::{
    Binding, CONFLICTING_TARGET_INPUT, CONTINUATION_CODES, CONTINUATION_SCOPE_MISMATCH,
    ContinuationKey, Continuations, MIXED_CONTINUATION_FORMS, NEXT_PAGE, PageArgs,
    STALE_CONTINUATION, STALE_TARGET_SNAPSHOT, Snapshot, TARGET_CODES, TARGET_NOT_FOUND,
    TARGET_SCOPE_MISMATCH, TargetBinding, conflicting_target_input, target_not_found,
};
use envelope_core::stage::{Controls, ResponseMode};
use envelope_core::{
    Category, Completeness, Dialect, EmptyReason, Envelope, IncompleteReason, NextAction, Notice,
    Role, ToolError, TruncationReason, Unit, Verdict,
};
use envelope_dialect::{EXPRESSIBLE, Rendering, dropped, render, schema, unexpressed};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers

/// A fixture of this dialect's tests.
fn fixture(name: &str) -> Value {
    let path = format!("{}/tests/fixtures/frigg/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("the fixture exists");
    serde_json::from_str(&text).expect("the fixture is JSON")
}

fn compact() -> Rendering {
    Rendering::default()
}

fn full() -> Rendering {
    Rendering {
        controls: Controls {
            response_mode: ResponseMode::Full,
            ..Controls::default()
        },
        estimator: Estimator::default(),
    }
}

fn frigg(envelope: &Value, how: &Rendering) -> Value {
    render(Dialect::Frigg, envelope, how)
}

fn wire<T: envelope_core::serde::Serialize>(envelope: &Envelope<T>) -> Value {
    serde_json::to_value(envelope).expect("an envelope serializes")
}

/// The errors `value` has against the Frigg schema of any payload (empty when it validates).
fn violations(value: &Value) -> Vec<String> {
    violations_of(&schema(Dialect::Frigg, &json!(true), None), value)
}

fn violations_of(schema: &Value, value: &Value) -> Vec<String> {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    validator
        .iter_errors(value)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect()
}

#[track_caller]
fn assert_valid(value: &Value) {
    let errors = violations(value);
    assert!(errors.is_empty(), "{value:#}\n{errors:#?}");
}

fn names(list: impl IntoIterator<Item = impl AsRef<str>>) -> BTreeSet<String> {
    list.into_iter().map(|n| n.as_ref().to_owned()).collect()
}

fn failed(error: ToolError) -> Value {
    wire(&Envelope::<()>::err(error))
}

/// A continuation service with a fixed key, as a server holds one.
fn continuations() -> Continuations {
    Continuations::new(ContinuationKey::new(1, [7; 32]))
}

// ---------------------------------------------------------------------------------------------
// The seed's example and its next-action contract

/// The seed's one example, a `verify_exact` action, validates as an action of a response.
#[test]
fn the_seeds_example_action_validates() {
    let example = fixture("verify_exact_action.json");
    assert_valid(&json!({ "next_actions": [example.clone()] }));
    let item =
        schema(Dialect::Frigg, &json!(true), None)["properties"]["next_actions"]["items"].clone();
    assert!(violations_of(&item, &example).is_empty());
}

/// An envelope action with the example's values renders exactly as the seed writes it
/// (`order` and the empty `dependencies` spelt out).
#[test]
fn an_envelope_action_with_the_examples_values_renders_identically() {
    let action = NextAction::new(
        "verify-exact-1",
        Role::VerifyExact,
        20,
        "search_text",
        json!({ "query": "FriggMcpServer" }),
        "Verify the discovered identifier with exact text search.",
    )
    .expect("object arguments");
    let envelope = wire(&Envelope::ok(json!({})).with_next_actions([action]));
    let rendered = frigg(&envelope, &compact());
    assert_eq!(
        rendered["next_actions"],
        json!([fixture("verify_exact_action.json")])
    );
    assert_valid(&rendered);
}

/// "Roles are retry, broaden_scope, resolve_target, verify_exact, proof_read, inspect, and
/// diagnose": the envelope's roles are exactly those, and the schema accepts no other.
#[test]
fn the_role_alphabet_is_the_seeds() {
    let seed = names([
        "retry",
        "broaden_scope",
        "resolve_target",
        "verify_exact",
        "proof_read",
        "inspect",
        "diagnose",
    ]);
    assert_eq!(names(Role::ALL.iter().map(|role| role.as_str())), seed);
    let mut action = fixture("verify_exact_action.json");
    action["role"] = json!("execute");
    assert!(!violations(&json!({ "next_actions": [action] })).is_empty());
}

/// "Dependency groups use all or any over earlier action IDs": an envelope dependency renders
/// as `{mode, action_ids}` and validates; another mode does not.
#[test]
fn dependency_groups_are_all_or_any() {
    let first = NextAction::new(
        "a",
        Role::ResolveTarget,
        0,
        "search_symbol",
        json!({}),
        "find",
    )
    .expect("object arguments");
    let second = NextAction::new("b", Role::Inspect, 1, "read_file", json!({}), "read")
        .expect("object arguments")
        .after(envelope_core::DependencyMode::Any, ["a"]);
    let rendered = frigg(
        &wire(&Envelope::ok(json!({})).with_next_actions([first, second])),
        &compact(),
    );
    assert_eq!(
        rendered["next_actions"][1]["dependencies"],
        json!([{ "mode": "any", "action_ids": ["a"] }])
    );
    assert_valid(&rendered);
    let mut odd = rendered.clone();
    odd["next_actions"][1]["dependencies"][0]["mode"] = json!("some");
    assert!(!violations(&odd).is_empty());
}

/// "Responses contain at most eight normalized actions": ten in an envelope's JSON render as
/// eight, and the schema refuses a ninth.
#[test]
fn at_most_eight_actions() {
    let action = fixture("verify_exact_action.json");
    let ten: Vec<Value> = (0..10)
        .map(|n| {
            let mut one = action.clone();
            one["id"] = json!(format!("a{n}"));
            one
        })
        .collect();
    let envelope = json!({ "ok": true, "verdict": "INFO", "data": {}, "next_actions": ten });
    let rendered = frigg(&envelope, &compact());
    assert_eq!(rendered["next_actions"].as_array().map(Vec::len), Some(8));
    assert_valid(&rendered);
    let nine = json!({ "next_actions": ten[..9] });
    assert!(!violations(&nine).is_empty());
}

// ---------------------------------------------------------------------------------------------
// ResultCompleteness

/// The seed's field table of `completeness`, row by row: a truncated page carries each field
/// under Frigg's name, with `continuation` the token of the `next-page` action.
#[test]
fn completeness_fields_follow_the_seeds_table() {
    let completeness = Completeness::truncated_page(
        Unit::OCCURRENCE,
        40,
        Some(512),
        TruncationReason::PageLimit,
        Some("tok".to_owned()),
    )
    .expect("a valid page");
    let action = NextAction::new(
        NEXT_PAGE,
        Role::BroadenScope,
        0,
        "search_text",
        json!({ "query": "q", "continuation": "tok" }),
        "next page",
    )
    .expect("object arguments");
    let envelope = Envelope::ok(json!({ "matches": [] }))
        .with_completeness(completeness)
        .with_next_actions([action]);
    let rendered = frigg(&wire(&envelope), &compact());
    let got = &rendered["completeness"];
    // unit, returned, total, complete, truncated, truncation_reasons, incomplete_reasons,
    // continuation: the table's rows.
    assert_eq!(got["unit"], "occurrence");
    assert_eq!(got["returned"], 40);
    assert_eq!(got["total"], 512);
    assert_eq!(got["complete"], false);
    assert_eq!(got["truncated"], true);
    assert_eq!(got["truncation_reasons"], json!(["page_limit"]));
    assert_eq!(got["incomplete_reasons"], json!([]));
    assert_eq!(got["continuation"], "tok");
    let seed_fields = names([
        "unit",
        "returned",
        "total",
        "complete",
        "truncated",
        "truncation_reasons",
        "incomplete_reasons",
        "continuation",
    ]);
    let written: BTreeSet<String> = got
        .as_object()
        .expect("an object")
        .keys()
        .cloned()
        .collect();
    assert_eq!(written, seed_fields);
    assert_valid(&rendered);
}

/// "Missing means unknown, never a lower bound": no total in the envelope, none written.
#[test]
fn an_unknown_total_is_absent() {
    let page = Completeness::truncated_page(Unit::FILE, 3, None, TruncationReason::TopKLimit, None)
        .expect("a valid page");
    let rendered = frigg(
        &wire(&Envelope::ok(json!({ "files": [1, 2, 3] })).with_completeness(page)),
        &compact(),
    );
    assert!(rendered["completeness"].get("total").is_none());
    assert!(rendered["completeness"].get("continuation").is_none());
    assert_valid(&rendered);
}

/// "A page can be intentionally truncated and still have an exact total, while a ranked
/// discovery result can be untruncated but non-exhaustive": both render and validate.
#[test]
fn truncated_with_total_and_untruncated_but_incomplete_both_hold() {
    let ranked = Completeness::incomplete(
        Unit::SYMBOL,
        5,
        None,
        vec![IncompleteReason::RankedDiscovery],
    )
    .expect("a valid completeness");
    let rendered = frigg(
        &wire(&Envelope::ok(json!({ "symbols": [] })).with_completeness(ranked)),
        &compact(),
    );
    assert_eq!(rendered["completeness"]["truncated"], false);
    assert_eq!(rendered["completeness"]["complete"], false);
    assert_eq!(
        rendered["completeness"]["incomplete_reasons"],
        json!(["ranked_discovery"])
    );
    assert_valid(&rendered);
}

/// The truncation reasons are the seed's six, a closed list: the envelope's seventh,
/// `budget_limit`, is written `page_limit` (the bound on this page), and the schema refuses it.
#[test]
fn truncation_reasons_are_the_seeds_six() {
    let seed = [
        "page_limit",
        "per_file_limit",
        "top_k_limit",
        "child_limit",
        "merge_page_limit",
        "ancestor_limit",
    ];
    for reason in seed {
        let page = json!({ "completeness": { "unit": "file", "returned": 1, "complete": false,
            "truncated": true, "truncation_reasons": [reason], "incomplete_reasons": [] } });
        assert_valid(&page);
    }
    for reason in TruncationReason::ALL {
        let page = Completeness::truncated_page(Unit::FILE, 1, Some(3), *reason, None)
            .expect("a valid page");
        let envelope = wire(&Envelope::ok(json!({ "files": ["a"] })).with_completeness(page));
        let rendered = frigg(&envelope, &compact());
        let written = rendered["completeness"]["truncation_reasons"].clone();
        let expected = match reason {
            TruncationReason::BudgetLimit | TruncationReason::StoreLimit => "page_limit",
            other => other.as_str(),
        };
        assert_eq!(written, json!([expected]), "{reason:?}");
        assert_valid(&rendered);
    }
    let budget = json!({ "completeness": { "unit": "file", "returned": 1, "complete": false,
        "truncated": true, "truncation_reasons": ["budget_limit"], "incomplete_reasons": [] } });
    assert!(!violations(&budget).is_empty());
    let odd = json!({ "completeness": { "unit": "file", "returned": 1, "complete": false,
        "truncated": true, "truncation_reasons": ["moon_limit"], "incomplete_reasons": [] } });
    assert!(!violations(&odd).is_empty());
}

/// The seed's incomplete reasons: three by their exact names, the others by the words the seed
/// uses for them.
#[test]
fn incomplete_reasons_cover_the_seeds() {
    let ours = names(IncompleteReason::ALL.iter().map(|r| r.as_str()));
    for exact in [
        "ranked_discovery",
        "diagnostic_coverage",
        "child_incomplete",
    ] {
        assert!(ours.contains(exact), "{exact}");
    }
    // "unreadable/walk/backend failures, unsupported backend semantics,
    // partial/heuristic/unavailable navigation coverage"
    for words in [
        ["unreadable", ""],
        ["walk", "failure"],
        ["backend", "failure"],
        ["backend", "unsupported"],
        ["navigation", "partial"],
        ["navigation", "heuristic"],
        ["navigation", "unavailable"],
    ] {
        assert!(
            ours.iter()
                .any(|name| words.iter().all(|word| name.contains(word))),
            "{words:?}"
        );
    }
}

/// The seed's row units are the envelope's known units (its "incoming/outgoing call" being
/// two).
#[test]
fn the_seeds_units_are_known_units() {
    let known = names(Unit::KNOWN.iter().map(|unit| unit.as_str()));
    for unit in [
        "occurrence",
        "file",
        "symbol",
        "reference",
        "definition",
        "declaration",
        "implementation",
        "incoming_call",
        "outgoing_call",
        "document_symbol",
        "syntax_node",
        "structural_match",
        "batch_probe",
        "impact_section",
    ] {
        assert!(known.contains(unit), "{unit}");
    }
}

/// The schema holds Frigg's completeness invariants: complete means no truncation (its total
/// may be missing: "missing means unknown"), a truncation needs a reason, a continuation needs
/// a truncation.
#[test]
fn the_schema_refuses_contradictory_completeness() {
    let base = json!({ "unit": "file", "returned": 2, "complete": false, "truncated": true,
        "truncation_reasons": ["page_limit"], "incomplete_reasons": [] });
    assert_valid(&json!({ "completeness": base }));
    let complete_unknown_total = json!({ "unit": "file", "returned": 2, "complete": true, "truncated": false,
            "truncation_reasons": [], "incomplete_reasons": [] });
    assert_valid(&json!({ "completeness": complete_unknown_total }));
    let contradictions = [
        json!({ "complete": true, "total": 2, "truncated": true }),
        json!({ "truncation_reasons": [] }),
        json!({ "truncated": false, "truncation_reasons": [], "incomplete_reasons": ["walk_failure"],
            "continuation": "tok" }),
    ];
    for change in contradictions {
        let mut completeness = base.clone();
        for (key, value) in change.as_object().expect("an object") {
            completeness[key] = value.clone();
        }
        assert!(
            !violations(&json!({ "completeness": completeness })).is_empty(),
            "{completeness}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Continuations and paging

/// The brief's search page, as the budget stage writes it: rows flattened beside
/// `completeness`, the token in `completeness.continuation`, the `next-page` action kept.
#[test]
fn the_search_page_renders_rows_beside_completeness() {
    let envelope = fixture("search_page_envelope.json");
    let rendered = frigg(&envelope, &compact());
    assert_eq!(rendered["occurrences"], envelope["data"]["occurrences"]);
    assert_eq!(rendered["target_ref"], envelope["data"]["target_ref"]);
    assert_eq!(
        rendered["completeness"]["continuation"],
        "IQJrEY_kvkMABQmk03YoZ14q"
    );
    assert_eq!(rendered["completeness"]["total"], 532);
    let action = &rendered["next_actions"][0];
    assert_eq!(action["id"], NEXT_PAGE);
    assert_eq!(action["tool"], "search_text");
    assert_eq!(
        action["arguments"],
        envelope["next_actions"][0]["arguments"]
    );
    // Compact: no notes, no runtime, no diagnostics (nothing cut, verdict INFO).
    for absent in [
        "notes",
        "runtime",
        "diagnostics",
        "error_code",
        "data",
        "ok",
        "verdict",
    ] {
        assert!(rendered.get(absent).is_none(), "{absent}");
    }
    assert_valid(&rendered);
}

/// "Replay the original request unchanged and set only the returned continuation": the
/// `next-page` action's arguments are the original ones plus `continuation` alone, and the
/// token opens under the binding of that replayed call.
#[test]
fn the_next_page_is_the_original_request_plus_only_the_continuation() {
    let original = json!({ "query": "Envelope", "limit": 2 });
    let pages = continuations();
    let binding = Binding::new("search_text", "", &original);
    let token = pages.seal(&binding, 2).expect("sealed");
    let mut arguments = original.clone();
    arguments["continuation"] = json!(token);
    let next = NextAction::new(
        NEXT_PAGE,
        Role::BroadenScope,
        0,
        "search_text",
        &arguments,
        "next page",
    )
    .expect("object arguments");
    let page = Completeness::truncated_page(
        Unit::OCCURRENCE,
        2,
        Some(532),
        TruncationReason::PageLimit,
        Some(token.clone()),
    )
    .expect("a valid page");
    let envelope = wire(
        &Envelope::ok(json!({ "occurrences": [1, 2] }))
            .with_completeness(page)
            .with_next_actions([next]),
    );
    let rendered = frigg(&envelope, &compact());
    assert_eq!(rendered["completeness"]["continuation"], json!(token));
    let mut replayed = rendered["next_actions"][0]["arguments"].clone();
    assert_eq!(replayed["continuation"], json!(token));
    let stored = rendered["completeness"]["continuation"]
        .as_str()
        .expect("a token");
    let _ = replayed
        .as_object_mut()
        .expect("an object")
        .remove("continuation");
    assert_eq!(replayed, original);
    // What a Frigg client does: the original request, with the stored continuation set.
    let mut call = original.clone();
    call["continuation"] = json!(stored);
    let binding = Binding::new("search_text", "", &call);
    let opened = pages
        .page(
            &binding,
            PageArgs::new(2)
                .with_limit(Some(2))
                .with_continuation(Some(stored)),
        )
        .expect("the replayed call opens the token");
    assert_eq!(opened.start, 2);
    assert_valid(&rendered);
}

/// The seed's continuation error table, row by row, with the errors the envelope's own paging
/// raises: each renders as `error_code` with the envelope's recovery hint, not retryable.
#[test]
fn continuation_errors_follow_the_seeds_table() {
    let pages = continuations();
    let original = json!({ "query": "q" });
    let sealed_under = Binding::new("search_text", "", &original).with_snapshot("rev-1");
    let token = pages.seal(&sealed_under, 10).expect("sealed");
    let open =
        |binding: &Binding<'_>, args: PageArgs<'_>| pages.page(binding, args).expect_err("refused");
    // STALE_CONTINUATION: the repository snapshot changed.
    let moved = Binding::new("search_text", "", &original).with_snapshot("rev-2");
    let stale = open(&moved, PageArgs::new(10).with_continuation(Some(&token)));
    // CONTINUATION_SCOPE_MISMATCH: the tool or request does not match.
    let other = json!({ "query": "other" });
    let elsewhere = Binding::new("search_text", "", &other).with_snapshot("rev-1");
    let mismatch = open(
        &elsewhere,
        PageArgs::new(10).with_continuation(Some(&token)),
    );
    // MIXED_CONTINUATION_FORMS: legacy resume_from sent with the continuation.
    let mixed = open(
        &sealed_under,
        PageArgs::new(10)
            .with_continuation(Some(&token))
            .with_resume_from(Some(10)),
    );
    for (error, code) in [
        (stale, STALE_CONTINUATION),
        (mismatch, CONTINUATION_SCOPE_MISMATCH),
        (mixed, MIXED_CONTINUATION_FORMS),
    ] {
        let hint = error.hint().expect("a hint").to_owned();
        let message = error.message().to_owned();
        let rendered = frigg(&failed(error), &compact());
        assert_eq!(rendered["error_code"], code);
        assert_eq!(rendered["correction_hint"], json!(hint));
        assert_eq!(rendered["message"], json!(message));
        assert_eq!(rendered["retryable"], false);
        assert_valid(&rendered);
    }
}

/// A paging error without a hint of its own takes the recovery of the envelope's table.
#[test]
fn a_hintless_paging_error_takes_the_tables_recovery() {
    for (code, _, recovery) in CONTINUATION_CODES {
        let rendered = frigg(
            &failed(ToolError::validation("refused").with_code(code)),
            &compact(),
        );
        assert_eq!(rendered["error_code"], code);
        assert_eq!(rendered["correction_hint"], recovery);
    }
    for (code, _, _, recovery) in TARGET_CODES {
        let rendered = frigg(
            &failed(ToolError::validation("refused").with_code(code)),
            &compact(),
        );
        assert_eq!(rendered["correction_hint"], recovery);
    }
}

// ---------------------------------------------------------------------------------------------
// target_ref errors and handles

/// The seed's target error table, row by row: the codes the envelope raises render as
/// `error_code` with their hint; the two it lacks are listed as unexpressed.
#[test]
fn target_errors_follow_the_seeds_table() {
    let refs = continuations();
    let rev = String::from("rev-1");
    let targets: [(&str, &dyn Snapshot); 1] = [("README.md", &rev)];
    let issued = TargetBinding::new("read", "");
    let target_ref = refs.seal_target(&issued, &targets, None).expect("sealed");
    let scope = refs
        .open_target(&target_ref, &TargetBinding::new("edit", ""), "target_ref")
        .expect_err("another family");
    let stale = refs
        .open_target(&target_ref, &issued, "target_ref")
        .expect("opens")
        .check_snapshot("README.md", "rev-2")
        .expect_err("moved");
    let raised = [
        (
            conflicting_target_input("target_ref", &["line"]),
            CONFLICTING_TARGET_INPUT,
        ),
        (scope, TARGET_SCOPE_MISMATCH),
        (stale, STALE_TARGET_SNAPSHOT),
        (target_not_found("target_ref"), TARGET_NOT_FOUND),
    ];
    for (error, code) in raised {
        let hint = error.hint().map(str::to_owned);
        let retryable = error.retryable();
        let rendered = frigg(&failed(error), &compact());
        assert_eq!(rendered["error_code"], code);
        assert_eq!(rendered["correction_hint"].as_str(), hint.as_deref());
        assert_eq!(rendered["retryable"], retryable);
        assert_valid(&rendered);
    }
    let listed: String = unexpressed(Dialect::Frigg)
        .iter()
        .map(|gap| gap.field)
        .collect::<Vec<_>>()
        .join(" | ");
    for lacking in [
        "TARGET_REPOSITORY_MISMATCH",
        "TARGET_ANCHOR_INSUFFICIENT",
        "STALE_HANDLE",
        "MIXED_HANDLE",
        "STALE_PROOF_ANCHOR",
        "result_handle",
        "match_id",
        "handle_scope",
        "handle_expires",
        "presentation_mode",
        "suggested_next",
        "resume_from",
        "data.error_code",
    ] {
        assert!(listed.contains(lacking), "{lacking} is not listed");
    }
}

/// "Copy target_ref unchanged": a payload's target ref is written as it is, at the top level.
#[test]
fn a_target_ref_is_copied_unchanged() {
    let envelope = wire(&Envelope::ok(
        json!({ "hits": [], "target_ref": "AbC-123_x" }),
    ));
    assert_eq!(frigg(&envelope, &compact())["target_ref"], "AbC-123_x");
}

// ---------------------------------------------------------------------------------------------
// Recovery fields

/// A failure in each category without a code: `error_code` is the category in upper snake
/// case, `retryable` the category's default, `message`, `correction_hint` and the error's
/// `data` carried.
#[test]
fn categories_without_a_code_name_the_failure_with_their_defaults() {
    let expected = [
        (Category::Transient, "TRANSIENT", true),
        (Category::Validation, "VALIDATION", false),
        (Category::Permission, "PERMISSION", false),
        (Category::NotFound, "NOT_FOUND", false),
        (Category::Unavailable, "UNAVAILABLE", true),
        (Category::Internal, "INTERNAL", false),
    ];
    for (category, code, retryable) in expected {
        assert_eq!(category.retryable_default(), retryable);
        let error = ToolError::new(category, "it failed")
            .with_hint("do this")
            .with_data(json!({ "field": "path" }));
        let rendered = frigg(&failed(error), &compact());
        assert_eq!(rendered["error_code"], code);
        assert_eq!(rendered["retryable"], retryable);
        assert_eq!(rendered["correction_hint"], "do this");
        assert_eq!(rendered["data"], json!({ "field": "path" }));
        assert!(rendered["message"].is_string());
        assert_valid(&rendered);
    }
    // The generated gate's category, read from the wire.
    let gate = json!({ "ok": false, "verdict": "ERROR",
        "error": { "category": "module_disabled", "message": "off", "retryable": false } });
    assert_eq!(frigg(&gate, &compact())["error_code"], "MODULE_DISABLED");
}

/// An explicit retryable override wins over the category's default; a recovery action is kept
/// and its tool listed in `related_tools`.
#[test]
fn recovery_keeps_the_override_and_its_actions() {
    let retry = NextAction::new(
        "retry-1",
        Role::Retry,
        0,
        "search_text",
        json!({ "q": 1 }),
        "retry",
    )
    .expect("object arguments");
    let error = ToolError::transient("timed out")
        .with_code("TIMEOUT")
        .with_retryable(false)
        .with_recovery(retry);
    let rendered = frigg(&failed(error), &compact());
    assert_eq!(rendered["error_code"], "TIMEOUT");
    assert_eq!(rendered["retryable"], false);
    assert_eq!(rendered["related_tools"], json!(["search_text"]));
    assert_eq!(rendered["next_actions"][0]["id"], "retry-1");
    assert_valid(&rendered);
}

/// The zero-hit table row by row: every envelope empty reason renders as Frigg's reason where
/// Frigg has one, under its own name where it has none, with the diagnosis as `message` and
/// the reason's documented response as `correction_hint`.
#[test]
fn zero_hit_reasons_map_row_by_row() {
    let seed = names([
        "indexed_search_complete",
        "wrong_repository_possible",
        "path_class_not_indexed",
        "scope_excluded_all_candidates",
        "index_stale_possible",
        "query_looks_like_regex",
        "tool_unavailable",
        "precise_graph_unavailable",
        "no_index_coverage",
        "index_not_ready",
        "query_miss",
    ]);
    let table = [
        (EmptyReason::NotIndexed, "no_index_coverage"),
        (EmptyReason::StaleIndex, "index_stale_possible"),
        (EmptyReason::UnsupportedLanguage, "unsupported_language"),
        (EmptyReason::LowConfidence, "low_confidence"),
        (EmptyReason::CapabilityUnavailable, "tool_unavailable"),
        (
            EmptyReason::FiltersExcludedAll,
            "scope_excluded_all_candidates",
        ),
        (EmptyReason::QueryTooNarrow, "query_too_narrow"),
        (EmptyReason::QueryLooksLikeRegex, "query_looks_like_regex"),
        (EmptyReason::NoMatch, "query_miss"),
        (EmptyReason::CapDroppedAll, "cap_dropped_all"),
        (EmptyReason::IncrementalNoChange, "incremental_no_change"),
        (EmptyReason::AllFilesBlocked, "path_class_not_indexed"),
        (
            EmptyReason::ExtractorEmittedNothing,
            "extractor_emitted_nothing",
        ),
        (EmptyReason::TargetNotResolved, "target_not_resolved"),
        (
            EmptyReason::WrongRepositoryPossible,
            "wrong_repository_possible",
        ),
    ];
    assert_eq!(table.len(), EmptyReason::ALL.len());
    for (reason, expected) in table {
        let mapped = seed.contains(expected);
        // A reason keeps its own name exactly when Frigg has none for it.
        assert_eq!(
            !mapped,
            expected == reason.as_str() && !seed.contains(reason.as_str())
        );
        let envelope = Envelope::ok(json!({ "hits": [] }))
            .with_empty_reason(reason.clone(), "nothing found here");
        let rendered = frigg(&wire(&envelope), &compact());
        assert_eq!(rendered["zero_hit_reason"], expected, "{}", reason.as_str());
        assert_eq!(rendered["message"], "nothing found here");
        assert_eq!(rendered["correction_hint"], reason.agent_response());
        assert!(rendered.get("error_code").is_none());
        assert_valid(&rendered);
    }
    // An unknown reason read from the wire passes through as it is.
    let odd = json!({ "ok": true, "verdict": "INFO", "data": [], "empty_reason": "moon_phase",
        "diagnosis": "no moon" });
    assert_eq!(frigg(&odd, &compact())["zero_hit_reason"], "moon_phase");
}

// ---------------------------------------------------------------------------------------------
// Response detail

/// "response_mode controls structured payload detail": Frigg expresses both modes, and `full`
/// alone adds notes (the prose) and runtime (meta's observability, counted for this wire).
#[test]
fn full_adds_notes_and_runtime_compact_leaves_them_out() {
    for mode in ["compact", "full"] {
        assert!(EXPRESSIBLE.expresses(Dialect::Frigg, "response_mode", &json!(mode)));
    }
    let envelope = fixture("search_page_envelope.json");
    let rendered = frigg(&envelope, &full());
    assert_eq!(rendered["notes"], json!([envelope[field::NEXT_STEP]]));
    let runtime = &rendered["runtime"];
    for key in [
        keys::REQUEST_ID,
        keys::TOOL,
        keys::COMPLEXITY_TIER,
        keys::LATENCY_MS,
        keys::TOKENS_METHOD,
        keys::BASELINE_METHOD,
        keys::CAPABILITIES,
    ] {
        assert_eq!(runtime[key], envelope["meta"][key], "{key}");
    }
    assert!(runtime.get(keys::TRUNCATED).is_none());
    // The count is of this rendering's bytes, itself included.
    let counted = Estimator::default().estimate(&serde_json::to_string(&rendered).expect("JSON"));
    assert_eq!(runtime[keys::TOKENS_ESTIMATED], counted);
    // The savings are against the same baseline (444 + 11823 tokens).
    let saved = runtime[keys::TOKENS_SAVED].as_i64().expect("a saving");
    assert_eq!(saved, 444 + 11_823 - i64::try_from(counted).expect("small"));
    assert_valid(&rendered);
    let compact = frigg(&envelope, &compact());
    assert!(compact.get("notes").is_none() && compact.get("runtime").is_none());
}

// ---------------------------------------------------------------------------------------------
// Signals kept in diagnostics

/// A budget cut is stated in the rendering: `completeness` with Frigg's `page_limit` (its closed
/// list has no `budget_limit`), and a `response_budget` entry in `diagnostics` with every
/// marker and the envelope's own reasons, in compact as in full; read back as `budget_limit`.
#[test]
fn a_budget_cut_is_stated() {
    let page = Completeness::truncated_page(
        Unit::OCCURRENCE,
        12,
        Some(40),
        TruncationReason::BudgetLimit,
        None,
    )
    .expect("a valid page");
    let mut envelope = wire(&Envelope::ok(json!({ "occurrences": [] })).with_completeness(page));
    envelope["meta"][keys::TRUNCATED] = json!(true);
    let (from, to) = (
        keys::list_cut_from("occurrences"),
        keys::list_cut_to("occurrences"),
    );
    envelope["meta"][from.as_str()] = json!(40);
    envelope["meta"][to.as_str()] = json!(12);
    envelope["meta"][keys::TRUNCATED_STRING_FIELDS] = json!(["/occurrences/3/text"]);
    for how in [compact(), full()] {
        let rendered = frigg(&envelope, &how);
        assert_eq!(
            rendered["completeness"]["truncation_reasons"],
            json!(["page_limit"])
        );
        let entry = &rendered["diagnostics"][0];
        assert_eq!(entry["data"]["truncation_reasons"], json!(["budget_limit"]));
        let viewed = envelope_dialect::view(Dialect::Frigg, &rendered);
        assert_eq!(
            viewed["completeness"]["truncation_reasons"],
            json!(["budget_limit"])
        );
        assert_eq!(entry["code"], "response_budget");
        assert_eq!(entry["severity"], "warning");
        assert_eq!(entry["data"][keys::TRUNCATED], true);
        assert_eq!(entry["data"][from.as_str()], 40);
        assert_eq!(entry["data"][to.as_str()], 12);
        assert_eq!(
            entry["data"][keys::TRUNCATED_STRING_FIELDS],
            json!(["/occurrences/3/text"])
        );
        assert_valid(&rendered);
    }
}

/// A verdict other than the inferred one is a `verdict` entry: UNSAFE as an error with its
/// obligation; INFO on success and ERROR on failure write nothing.
#[test]
fn a_non_default_verdict_is_kept() {
    let unsafe_ = wire(&Envelope::ok(json!({ "impact": [] })).with_verdict(Verdict::Unsafe));
    let rendered = frigg(&unsafe_, &compact());
    let entry = &rendered["diagnostics"][0];
    assert_eq!(entry["code"], "verdict");
    assert_eq!(entry["severity"], "error");
    assert_eq!(entry["data"]["verdict"], "UNSAFE");
    assert_eq!(entry["message"], Verdict::Unsafe.obligation());
    assert_valid(&rendered);
    let info = frigg(&wire(&Envelope::ok(json!({}))), &compact());
    assert!(info.get("diagnostics").is_none());
    let error = frigg(&failed(ToolError::not_found("gone")), &compact());
    assert!(error.get("diagnostics").is_none());
}

/// Warnings then diagnostics, as they are, and index drift, all in `diagnostics`.
#[test]
fn notices_and_freshness_are_diagnostics() {
    let mut envelope = wire(
        &Envelope::ok(json!({}))
            .with_warning(
                Notice::warning("unknown_arg", "ignored `qeury`")
                    .with_data(json!({ "accepted": ["query"] })),
            )
            .with_diagnostic(Notice::info("cold_cache", "first call")),
    );
    envelope["meta"][keys::BINARY_DRIFT_WARNING] =
        json!({ "stored_version": 4, "running_version": 3, "remediation": "upgrade" });
    envelope["meta"][keys::SCHEMA_VERSION_AT_INDEX] = json!(4);
    let rendered = frigg(&envelope, &compact());
    let codes: Vec<&str> = rendered["diagnostics"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(|entry| entry["code"].as_str())
        .collect();
    assert_eq!(
        codes,
        [
            "unknown_arg",
            "cold_cache",
            "binary_drift",
            "index_schema_version"
        ]
    );
    assert_eq!(
        rendered["diagnostics"][0]["data"],
        json!({ "accepted": ["query"] })
    );
    assert_eq!(rendered["diagnostics"][2]["message"], "upgrade");
    assert_valid(&rendered);
}

// ---------------------------------------------------------------------------------------------
// Payload placement

/// An object payload is flattened; one with a member named like a Frigg field goes whole under
/// `data`, as a list or a scalar does; a null one is left out.
#[test]
fn payload_placement_rules() {
    let flat = frigg(&wire(&Envelope::ok(json!({ "files": ["a"] }))), &compact());
    assert_eq!(flat["files"], json!(["a"]));
    let colliding = json!({ "files": ["a"], "message": "from the tool" });
    let kept = frigg(&wire(&Envelope::ok(colliding.clone())), &compact());
    assert_eq!(kept["data"], colliding);
    assert!(kept.get("files").is_none() && kept.get("message").is_none());
    let list = frigg(&wire(&Envelope::ok(json!([1, 2]))), &compact());
    assert_eq!(list["data"], json!([1, 2]));
    let scalar = frigg(&wire(&Envelope::ok(json!("text"))), &compact());
    assert_eq!(scalar["data"], "text");
    let null = frigg(&wire(&Envelope::ok(())), &compact());
    assert!(null.get("data").is_none());
    for rendered in [flat, kept, list, scalar, null] {
        assert_valid(&rendered);
    }
}

/// A payload schema with inline members types them at the top level: a wrong type fails.
#[test]
fn the_payloads_own_schema_types_its_flattened_members() {
    let data = json!({ "type": "object", "properties": { "files": { "type": "array" } } });
    let typed = schema(Dialect::Frigg, &data, None);
    assert!(violations_of(&typed, &json!({ "files": [] })).is_empty());
    assert!(!violations_of(&typed, &json!({ "files": 3 })).is_empty());
    assert_eq!(
        typed["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}

// ---------------------------------------------------------------------------------------------
// Robustness and gap tables

/// Odd envelopes degrade without a panic, into an object that validates.
#[test]
fn odd_envelopes_never_panic() {
    let odd = [
        json!(null),
        json!([]),
        json!("text"),
        json!({}),
        json!({ "ok": true, "data": [1, 2] }),
        json!({ "ok": true, "verdict": "INFO", "data": null }),
        json!({ "ok": false, "verdict": "ERROR", "error": { "message": "no code" } }),
        json!({ "ok": false, "error": "not an object" }),
        json!({ "ok": false }),
        json!({ "ok": true, "verdict": 7, "data": {}, "meta": "nope" }),
        json!({ "ok": true, "data": {}, "completeness": { "unit": 3, "returned": "x" } }),
        json!({ "ok": true, "data": {}, "next_actions": "none", "warnings": {} }),
        json!({ "ok": true, "data": {}, "next_actions": [1, {"id": "next-page", "arguments": 3}] }),
        json!({ "ok": true, "verdict": "clean", "data": {}, "meta": { "tokens_estimated": -1,
            "tokens_saved": "x", "truncated": "yes", "binary_drift_warning": 1 } }),
        json!({ "ok": false, "error": { "category": "teapot", "code": 5, "retryable": "no" } }),
    ];
    for envelope in odd {
        for how in [compact(), full()] {
            let rendered = frigg(&envelope, &how);
            assert!(rendered.is_object(), "{envelope}");
            if envelope.get("completeness").is_none() && envelope.get("next_actions").is_none() {
                assert_valid(&rendered);
            }
        }
    }
    // An error without a code or a category still reads as a failure.
    let bare = frigg(
        &json!({ "ok": false, "error": { "message": "m" } }),
        &compact(),
    );
    assert_eq!(bare["error_code"], "ERROR");
    assert_eq!(bare["retryable"], false);
}

/// Both gap tables are filled, each entry one sentence; what this dialect writes is not listed
/// as dropped.
#[test]
fn gap_tables_are_sentences() {
    for gap in unexpressed(Dialect::Frigg)
        .iter()
        .chain(dropped(Dialect::Frigg))
    {
        assert!(!gap.field.is_empty());
        assert!(gap.why.ends_with('.'), "{}", gap.field);
        assert!(
            gap.why.chars().next().is_some_and(char::is_uppercase),
            "{}",
            gap.field
        );
    }
    let fields: Vec<&str> = dropped(Dialect::Frigg)
        .iter()
        .map(|gap| gap.field)
        .collect();
    for expected in ["ok", "error.retry_after_ms"] {
        assert!(
            fields.iter().any(|field| field.starts_with(expected)),
            "{expected}"
        );
    }
    assert!(!fields.iter().any(|field| field.contains("completeness")));
}

/// A page both the page size and the budget bounded is one bound in Frigg's words, written
/// once beside the others.
#[test]
fn budget_and_page_limits_are_one_reason() {
    let page = Completeness::try_from_parts(envelope_core::CompletenessParts {
        unit: Unit::FILE,
        returned: 2,
        offset: 0,
        total: Some(9),
        complete: false,
        truncated: true,
        truncation_reasons: vec![
            TruncationReason::BudgetLimit,
            TruncationReason::PerFileLimit,
            TruncationReason::PageLimit,
        ],
        incomplete_reasons: Vec::new(),
        shortened: Vec::new(),
        continuation: None,
    })
    .expect("a valid page");
    let rendered = frigg(
        &wire(&Envelope::ok(json!({ "files": ["a", "b"] })).with_completeness(page)),
        &compact(),
    );
    assert_eq!(
        rendered["completeness"]["truncation_reasons"],
        json!(["page_limit", "per_file_limit"])
    );
    assert_valid(&rendered);
}

/// What is not an answer in this dialect is not read as one: `view` says it failed, and why,
/// in the envelope's own failure (nothing of it passes for a success).
#[test]
fn what_is_not_a_frigg_answer_reads_back_as_a_failure_that_says_so() {
    for foreign in [
        json!(42),
        json!({"error_code": 7}),
        json!({"completeness": {"unit": "file"}}),
        json!({"diagnostics": "none"}),
    ] {
        let back = envelope_dialect::view(Dialect::Frigg, &foreign);
        assert_eq!(back["ok"], false, "{foreign}: {back:#}");
        assert_eq!(back["error"]["category"], "internal", "{back:#}");
        let message = back["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("not a Frigg answer"), "{message}");
    }
}

/// A dependency names an earlier action of the response: when one it names was left out (an
/// entry that is no action), an `all` group's action cannot run as it says and goes too, and
/// an `any` group keeps the ids it still has.
#[test]
fn dependencies_name_only_earlier_actions_of_the_response() {
    let action = |id: &str, order: u16, after: Option<(&str, Vec<&str>)>| {
        let mut action = json!({"id": id, "role": "inspect", "order": order, "tool": "read_file",
                                "arguments": {}, "reason": "read"});
        if let Some((mode, ids)) = after {
            action["dependencies"] = json!([{ "mode": mode, "action_ids": ids }]);
        }
        action
    };
    let mut broken = action("gone", 0, None);
    broken["arguments"] = json!(3);
    let envelope = json!({
        "ok": true,
        "data": {},
        "next_actions": [
            action("a", 0, None),
            broken,
            action("b", 1, Some(("all", vec!["a", "gone"]))),
            action("c", 1, Some(("any", vec!["a", "gone", "a"]))),
            action("d", 2, Some(("all", vec!["b"]))),
        ],
    });
    let rendered = frigg(&envelope, &compact());
    assert_valid(&rendered);
    let ids: Vec<&str> = rendered["next_actions"]
        .as_array()
        .expect("actions")
        .iter()
        .filter_map(|action| action["id"].as_str())
        .collect();
    assert_eq!(ids, ["a", "c"], "{rendered:#}");
    assert_eq!(
        rendered["next_actions"][1]["dependencies"],
        json!([{ "mode": "any", "action_ids": ["a"] }])
    );
}

/// "store only completeness.continuation": a page whose token no action carries (the budget
/// stage keeps it in the envelope's completeness) still hands it to a Frigg client.
#[test]
fn a_token_no_action_carries_is_still_the_completeness_continuation() {
    let page =
        Completeness::truncated_page(Unit::FILE, 2, Some(9), TruncationReason::PageLimit, None)
            .expect("a valid page");
    let mut envelope = wire(&Envelope::ok(json!({"files": ["a", "b"]})).with_completeness(page));
    assert!(envelope.get("next_actions").is_none());
    // Where the budget stage writes a page's token that no action carries.
    envelope["completeness"]["continuation"] = json!("IQJrEY_kvkMABQmk03YoZ14q");
    let rendered = frigg(&envelope, &compact());
    assert_valid(&rendered);
    assert_eq!(
        rendered["completeness"]["continuation"],
        "IQJrEY_kvkMABQmk03YoZ14q"
    );
}

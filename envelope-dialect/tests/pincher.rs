//! The `pincher` dialect against the words of pincher's `_meta` contract: its example
//! responses validate against the dialect's schema, the envelope equivalent to each renders
//! the same fields and values, every table of the contract an envelope can express is checked
//! row by row, and its host-loop pseudocode, written out in Rust, pages through a result.

use std::cell::RefCell;
use std::collections::{BTreeSet, VecDeque};

use envelope_budget::{BudgetPolicy, Estimator, prepare};
use envelope_core::stage::Controls;
use envelope_core::{
    Category, Completeness, Dialect, EmptyReason, Envelope, IncompleteReason, NextAction, Notice,
    Role, ToolError, TruncationReason, Unit, Verdict,
};
use envelope_dialect::{EXPRESSIBLE, Rendering, dropped, render, schema, unexpressed};
use serde_json::{Value, json};

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// The envelope in pincher's wire, rendered with the server's default estimator.
fn pincher(envelope: &Value) -> Value {
    render(Dialect::Pincher, envelope, &Rendering::default())
}

/// An envelope as JSON, the way the budget stage hands it on.
fn wire(envelope: &Envelope<Value>) -> Value {
    serde_json::to_value(envelope).expect("an envelope serializes")
}

/// `envelope` with `extra` merged into its `meta`, as the full-mode budget stage stamps it.
fn stamped(mut envelope: Value, extra: Value) -> Value {
    if let (Some(meta), Value::Object(extra)) = (
        envelope.get_mut("meta").and_then(Value::as_object_mut),
        extra,
    ) {
        meta.extend(extra);
    }
    envelope
}

/// The dialect's schema for any payload.
fn pincher_schema() -> Value {
    schema(Dialect::Pincher, &json!(true), None)
}

/// Asserts `instance` validates against `schema`, listing every error when it does not.
fn assert_valid_against(schema: &Value, instance: &Value) {
    let validator = jsonschema::validator_for(schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(instance)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{instance:#}\ndoes not validate: {errors:#?}"
    );
}

/// Asserts `instance` validates against the dialect's schema.
fn assert_valid(instance: &Value) {
    assert_valid_against(&pincher_schema(), instance);
}

/// Whether the dialect's schema accepts `instance`.
fn is_valid(instance: &Value) -> bool {
    jsonschema::validator_for(&pincher_schema())
        .expect("the schema compiles")
        .is_valid(instance)
}

/// `_meta` of a rendering.
fn meta(rendered: &Value) -> &Value {
    &rendered["_meta"]
}

/// The `warnings_v2` entry with `code`, if any.
fn warning<'a>(rendered: &'a Value, code: &str) -> Option<&'a Value> {
    meta(rendered)["warnings_v2"]
        .as_array()?
        .iter()
        .find(|entry| entry["code"] == code)
}

/// A fixture from pincher's contract, as written there.
fn fixture(name: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/pincher/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).expect("the fixture is there")
}

/// A JSONC example from the contract made JSON, minimally: `//` and `/* */` comments are
/// removed (so `{ /* tool-specific payload */ }` is an empty payload), and a bare `...` that
/// elides the rest of a `{code, severity, ...}` entry is resolved to that entry's remaining
/// required member of the frozen shape, `"message": "..."`. Strings are left as written.
fn jsonc(text: &str) -> Value {
    let mut out = String::new();
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            if c == '\\' {
                out.extend(chars.next());
            } else if c == '"' {
                in_string = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for skipped in chars.by_ref() {
                    if skipped == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut last = ' ';
                for skipped in chars.by_ref() {
                    if last == '*' && skipped == '/' {
                        break;
                    }
                    last = skipped;
                }
            }
            ('.', Some('.')) => {
                while chars.peek() == Some(&'.') {
                    chars.next();
                }
                out.push_str("\"message\": \"...\"");
            }
            _ => out.push(c),
        }
    }
    serde_json::from_str(&out).unwrap_or_else(|error| panic!("{error}:\n{out}"))
}

/// Whether `id` is a ULID: 26 characters of Crockford's base32, the first at most `7`.
fn is_ulid(id: &str) -> bool {
    const ALPHABET: &str = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    id.len() == 26
        && id.chars().all(|c| ALPHABET.contains(c))
        && id.chars().next().is_some_and(|first| first <= '7')
}

/// The next-page action of a search, with its sealed continuation.
fn next_page(token: &str) -> NextAction {
    NextAction::new(
        "next-page",
        Role::BroadenScope,
        0,
        "search_text",
        json!({"query": "Envelope", "limit": 2, "continuation": token}),
        "next page",
    )
    .expect("object arguments")
}

// ---------------------------------------------------------------------------------------------
// The contract's examples, as written, against the schema
// ---------------------------------------------------------------------------------------------

#[test]
fn the_anatomy_example_validates_against_the_schema() {
    let anatomy = jsonc(&fixture("anatomy.jsonc"));
    assert_eq!(
        anatomy["result"],
        json!({}),
        "the payload comment is an empty payload"
    );
    assert_eq!(
        anatomy["_meta"]["diagnosis_v2"][0],
        json!({"code": "...", "severity": "warning", "message": "..."})
    );
    assert_valid(&anatomy);
}

#[test]
fn the_warnings_v2_entry_and_drift_examples_validate_against_their_fields() {
    let schema = pincher_schema();
    let fields = &schema["properties"]["_meta"]["properties"];
    let entry = jsonc(&fixture("warnings_v2_entry.jsonc"));
    assert_valid_against(&fields["warnings_v2"]["items"], &entry);
    assert_valid_against(&fields["diagnosis_v2"]["items"], &entry);
    let drift = jsonc(&fixture("binary_drift_warning.jsonc"));
    assert_valid_against(&fields["binary_drift_warning"], &drift);
    assert_valid_against(&fields["binary_drift_warning"], &Value::Null);
}

#[test]
fn the_schema_refuses_what_the_contract_rules_out() {
    let anatomy = jsonc(&fixture("anatomy.jsonc"));
    let broken = |pointer: &str, value: Value| {
        let mut response = anatomy.clone();
        *response.pointer_mut(pointer).expect("the field is there") = value;
        response
    };
    // request_id is a ULID; tiers, severities and schema versions have their alphabets.
    assert!(!is_valid(&broken("/_meta/request_id", json!("req-1"))));
    assert!(!is_valid(&broken(
        "/_meta/complexity_tier",
        json!("medium")
    )));
    assert!(!is_valid(&broken(
        "/_meta/warnings_v2/0/severity",
        json!("critical")
    )));
    assert!(!is_valid(&broken("/_meta/schema_version", json!("38"))));
    assert!(!is_valid(&broken("/_meta/next_steps/0/args", json!("q"))));
    // An entry keeps its frozen members, and `_meta` is always there.
    let mut no_message = anatomy.clone();
    if let Some(entry) = no_message
        .pointer_mut("/_meta/warnings_v2/0")
        .and_then(Value::as_object_mut)
    {
        entry.remove("message");
    }
    assert!(!is_valid(&no_message));
    assert!(!is_valid(&json!({"result": {}})));
    // New `_meta` fields are pure additions.
    let mut added = anatomy.clone();
    added["_meta"]["a_new_field"] = json!(1);
    assert!(is_valid(&added));
}

#[test]
fn the_schema_types_result_with_the_payloads_schema() {
    let typed = schema(
        Dialect::Pincher,
        &json!({"$ref": "#/$defs/Hits"}),
        Some(&json!({"Hits": {"type": "array", "items": {"type": "integer"}}})),
    );
    assert_eq!(
        typed["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    let response = |result: Value| json!({"result": result, "_meta": {"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC"}});
    let validator = jsonschema::validator_for(&typed).expect("the schema compiles");
    assert!(validator.is_valid(&response(json!([1, 2]))));
    assert!(!validator.is_valid(&response(json!(["one"]))));
}

// ---------------------------------------------------------------------------------------------
// The anatomy's equivalent envelope renders the same fields and values
// ---------------------------------------------------------------------------------------------

/// The envelope saying what the anatomy example says, as far as an envelope can.
fn anatomy_envelope() -> Value {
    let envelope = Envelope::ok(json!({}))
        .with_empty_reason(
            EmptyReason::QueryTooNarrow,
            "tightly-bounded query returned no rows; widen by …",
        )
        .with_diagnostic(Notice::warning("...", "..."))
        .with_next_actions([NextAction::new(
            "broaden",
            Role::BroadenScope,
            0,
            "search",
            json!({"q": "broader term"}),
            "current query was AND-joined; OR retry usually wins",
        )
        .expect("object arguments")])
        .with_warning(Notice::info("...", "..."));
    stamped(
        wire(&envelope),
        json!({
            "request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC",
            "tokens_estimated": 1247,
            "tokens_method": "heuristic",
            "tokens_saved": 11583,
            "tokens_saved_pct": 90.3,
            "baseline_method": "full_file_read",
            "complexity_tier": "lite",
            "latency_ms": 38,
            "schema_version": 3,
            "capabilities": ["standardized_error_envelope", "complexity_tier", "idempotency_declared"],
            "schema_version_at_index": 34,
        }),
    )
}

#[test]
fn the_anatomys_equivalent_envelope_renders_its_fields_and_values() {
    let seed = jsonc(&fixture("anatomy.jsonc"));
    let rendered = pincher(&anatomy_envelope());
    assert_valid(&rendered);
    let (ours, theirs) = (meta(&rendered), &seed["_meta"]);
    assert_eq!(rendered["result"], seed["result"]);
    for field in [
        "request_id",
        "baseline_method",
        "complexity_tier",
        "latency_ms",
        "empty_reason",
        "diagnosis",
        "diagnosis_v2",
        "next_steps",
        "warnings_v2",
        "schema_version_at_index",
    ] {
        assert_eq!(ours[field], theirs[field], "`{field}`");
    }
    // `tokens_used` counts this payload; the savings are the baseline's tokens minus it, the
    // baseline being the one the seed's numbers imply (1247 + 11583).
    let used = ours["tokens_used"].as_i64().expect("tokens_used");
    assert_eq!(
        used,
        i64::try_from(Estimator::default().estimate("{}")).expect("small")
    );
    let baseline = 1247 + 11583;
    assert_eq!(ours["tokens_saved"], baseline - used);
    let pct = ours["tokens_saved_pct"].as_f64().expect("a percentage");
    let expected = ((baseline - used) as f64 / baseline as f64 * 1000.0).round() / 10.0;
    assert!(
        (pct - expected).abs() < f64::EPSILON,
        "{pct} against {expected}"
    );
    // The server's own tags travel as it advertised them.
    assert_eq!(
        ours["capabilities"],
        json!([
            "standardized_error_envelope",
            "complexity_tier",
            "idempotency_declared"
        ])
    );
    // The legacy string list ships alongside ("consumers can read either"): the same
    // entries' messages.
    let messages: Vec<&Value> = ours["warnings_v2"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|entry| &entry["message"])
        .collect();
    assert!(!messages.is_empty());
    assert_eq!(ours["warnings"], json!(messages));
    // What an envelope cannot say is absent, not made up, and listed as unexpressed.
    for absent in ["project_id", "project_name", "session_id", "schema_version"] {
        assert!(ours.get(absent).is_none(), "`{absent}` was invented");
        assert!(
            unexpressed(Dialect::Pincher)
                .iter()
                .any(|gap| gap.field.contains(absent)),
            "`{absent}` is not listed as unexpressed"
        );
    }
    // The seed's `binary_drift_warning: null` is "no drift"; absent says the same to its loop.
    assert!(theirs["binary_drift_warning"].is_null() && ours.get("binary_drift_warning").is_none());
}

#[test]
fn every_field_written_is_a_field_of_the_anatomy() {
    let seed = jsonc(&fixture("anatomy.jsonc"));
    let named: BTreeSet<&str> = seed["_meta"]
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    for envelope in [
        loaded_envelope(),
        anatomy_envelope(),
        search_page(),
        failed(),
    ] {
        let rendered = pincher(&envelope);
        let top: Vec<&String> = rendered.as_object().expect("an object").keys().collect();
        assert!(top.iter().all(|key| *key == "result" || *key == "_meta"));
        for key in meta(&rendered).as_object().expect("an object").keys() {
            assert!(named.contains(key.as_str()), "`{key}` is not pincher's");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// The frozen contract
// ---------------------------------------------------------------------------------------------

/// An envelope with every field an agent branches on: an obliging verdict, a cut page, an
/// empty reason, diagnostics, warnings, next actions, and a drift.
fn loaded_envelope() -> Value {
    let page =
        Completeness::truncated_page(Unit::SYMBOL, 2, Some(9), TruncationReason::PageLimit, None)
            .expect("a valid page");
    let envelope = Envelope::ok(json!({"symbols": ["a", "b"]}))
        .with_verdict(Verdict::Review)
        .with_summary_line("2 callers in 2 files")
        .with_completeness(page)
        .with_empty_reason(EmptyReason::StaleIndex, "the index predates the schema")
        .with_next_actions([next_page("tok-2")])
        .with_warning(
            Notice::warning("unknown_arg", "unknown argument `lmit`")
                .with_data(json!({"accepted": ["query", "limit"]})),
        )
        .with_diagnostic(Notice::info("corpus_mismatch", "the corpus is docs"));
    stamped(
        wire(&envelope),
        json!({
            "request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC",
            "complexity_tier": "standard",
            "latency_ms": 12,
            "tokens_estimated": 300,
            "tokens_saved": 700,
            "tokens_saved_pct": 70.0,
            "baseline_method": "grep_recursive",
            "capabilities": ["completeness"],
            "schema_version": 3,
            "schema_version_at_index": 34,
            "binary_drift_warning": {"stored_version": 34, "running_version": 33, "remediation": "restart"},
            "truncated": false,
        }),
    )
}

#[test]
fn the_frozen_field_names_are_written() {
    let rendered = pincher(&loaded_envelope());
    assert_valid(&rendered);
    let fields = meta(&rendered);
    for name in [
        "request_id",
        "tokens_used",
        "tokens_saved",
        "tokens_saved_pct",
        "baseline_method",
        "complexity_tier",
        "latency_ms",
        "empty_reason",
        "diagnosis",
        "diagnosis_v2",
        "next_steps",
        "warnings_v2",
        "capabilities",
        "binary_drift_warning",
        "schema_version",
        "schema_version_at_index",
    ] {
        assert!(fields.get(name).is_some(), "`{name}` missing");
    }
    // The drift's running version is the index schema the binary understands.
    assert_eq!(fields["schema_version"], 33);
    assert_eq!(fields["schema_version_at_index"], 34);
    assert_eq!(
        fields["binary_drift_warning"],
        json!({"stored_version": 34, "running_version": 33, "remediation": "restart"})
    );
}

#[test]
fn warnings_v2_and_diagnosis_v2_keep_the_frozen_shape() {
    for envelope in [loaded_envelope(), failed(), anatomy_envelope()] {
        let rendered = pincher(&envelope);
        for list in ["warnings_v2", "diagnosis_v2"] {
            for entry in meta(&rendered)[list].as_array().into_iter().flatten() {
                let keys: BTreeSet<&str> = entry
                    .as_object()
                    .expect("an object")
                    .keys()
                    .map(String::as_str)
                    .collect();
                assert!(keys.is_subset(&BTreeSet::from(["code", "severity", "message", "data"])));
                assert!(entry["code"].as_str().is_some_and(|code| !code.is_empty()));
                assert!(
                    ["info", "warning", "error"]
                        .contains(&entry["severity"].as_str().unwrap_or(""))
                );
                assert!(entry["message"].is_string());
            }
        }
    }
}

#[test]
fn request_id_is_a_ulid_and_schema_versions_are_integers() {
    // A fresh envelope's own request id, untouched.
    let envelope = wire(&Envelope::ok(json!([1])));
    let rendered = pincher(&envelope);
    let id = meta(&rendered)["request_id"]
        .as_str()
        .expect("a request id");
    assert!(is_ulid(id), "{id}");
    assert_eq!(Some(id), envelope["meta"]["request_id"].as_str());
    let loaded = pincher(&loaded_envelope());
    assert!(meta(&loaded)["schema_version"].is_u64());
    assert!(meta(&loaded)["schema_version_at_index"].is_u64());
}

// ---------------------------------------------------------------------------------------------
// empty_reason: the table row by row
// ---------------------------------------------------------------------------------------------

/// The envelope's empty reasons and pincher's values for them.
const EMPTY_REASONS: [(&str, &str); 15] = [
    ("not_indexed", "no_project_indexed"),
    ("stale_index", "stale_index"),
    ("unsupported_language", "unsupported_language"),
    ("low_confidence", "low_confidence_extractor"),
    // No pincher value: travels under its own name (pincher's enum is open).
    ("capability_unavailable", "capability_unavailable"),
    ("filters_excluded_all", "filters_excluded_all"),
    ("query_too_narrow", "query_too_narrow"),
    ("query_looks_like_regex", "query_looks_like_regex"),
    ("no_match", "no_results_in_corpus"),
    ("cap_dropped_all", "cap_dropped_all"),
    ("incremental_no_change", "incremental_no_change"),
    ("all_files_blocked", "all_files_blocked"),
    ("extractor_emitted_nothing", "extractor_emitted_nothing"),
    ("target_not_resolved", "target_not_resolved"),
    ("wrong_repository_possible", "wrong_repository_possible"),
];

/// pincher's `empty_reason` enum, as its table lists it.
const PINCHER_EMPTY_REASONS: [&str; 12] = [
    "no_project_indexed",
    "stale_index",
    "unsupported_language",
    "low_confidence_extractor",
    "same_file_only",
    "cross_file_unavailable",
    "query_too_narrow",
    "no_results_in_corpus",
    "cap_dropped_all",
    "incremental_no_change",
    "all_files_blocked",
    "extractor_emitted_nothing",
];

#[test]
fn every_empty_reason_maps_row_by_row() {
    assert_eq!(EmptyReason::ALL.len(), EMPTY_REASONS.len());
    for (reason, (envelope_name, pincher_name)) in EmptyReason::ALL.iter().zip(EMPTY_REASONS) {
        assert_eq!(reason.as_str(), envelope_name);
        let envelope =
            wire(&Envelope::ok(json!([])).with_empty_reason(reason.clone(), reason.meaning()));
        let rendered = pincher(&envelope);
        assert_valid(&rendered);
        assert_eq!(
            meta(&rendered)["empty_reason"],
            pincher_name,
            "{envelope_name}"
        );
        assert_eq!(meta(&rendered)["diagnosis"], reason.meaning());
    }
}

#[test]
fn every_pincher_empty_reason_is_written_or_listed_as_unexpressed() {
    let written: BTreeSet<&str> = EMPTY_REASONS.iter().map(|(_, ours)| *ours).collect();
    for value in PINCHER_EMPTY_REASONS {
        let listed = unexpressed(Dialect::Pincher)
            .iter()
            .any(|gap| gap.field.starts_with("empty_reason") && gap.field.contains(value));
        assert!(written.contains(value) != listed, "`{value}`");
    }
}

#[test]
fn an_unknown_empty_reason_travels_unchanged() {
    let envelope = json!({"ok": true, "verdict": "INFO", "data": [], "empty_reason": "moon_phase_wrong",
                          "diagnosis": "…", "meta": {"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC"}});
    let rendered = pincher(&envelope);
    assert_eq!(meta(&rendered)["empty_reason"], "moon_phase_wrong");
    assert_valid(&rendered);
}

// ---------------------------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------------------------

/// The brief's failed continuation.
fn failed() -> Value {
    let error = ToolError::validation("the continuation is stale: the index moved")
        .with_code("STALE_CONTINUATION")
        .with_hint("call again without `continuation` to start over");
    stamped(
        wire(&Envelope::err(error)),
        json!({"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC", "complexity_tier": "lite", "latency_ms": 3}),
    )
}

#[test]
fn a_failed_call_has_a_null_result_and_its_error_heads_diagnosis_v2() {
    let rendered = pincher(&failed());
    assert_valid(&rendered);
    // Present, so the contract's host loop (`return resp["result"]`) returns instead of raising.
    assert_eq!(rendered.get("result"), Some(&Value::Null));
    let fields = meta(&rendered);
    assert_eq!(
        fields["diagnosis"],
        "the continuation is stale: the index moved"
    );
    assert_eq!(
        fields["diagnosis_v2"],
        json!([{
            "code": "STALE_CONTINUATION",
            "severity": "error",
            "message": "the continuation is stale: the index moved",
            "data": {
                "category": "validation",
                "retryable": false,
                "hint": "call again without `continuation` to start over",
            },
        }])
    );
    // No payload, no payload tokens; the verdict ERROR is not repeated as a warning.
    assert!(fields.get("tokens_used").is_none());
    assert!(fields.get("warnings_v2").is_none());
    assert_eq!(fields["request_id"], "01HM3K2X9V7QY8R4PNZTH5W6BC");
}

#[test]
fn every_error_category_carries_its_retryable_default() {
    for category in Category::ALL {
        // `module_disabled` only the generated gate builds: written as it writes it.
        let error = if *category == Category::ModuleDisabled {
            json!({"category": "module_disabled", "message": "module `graph` is disabled", "retryable": false})
        } else {
            serde_json::to_value(ToolError::new(*category, "it failed")).expect("serializes")
        };
        let envelope = json!({"ok": false, "verdict": "ERROR", "error": error,
                              "meta": {"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC"}});
        let rendered = pincher(&envelope);
        assert_valid(&rendered);
        let entry = &meta(&rendered)["diagnosis_v2"][0];
        assert_eq!(
            entry["code"],
            category.as_str(),
            "a code-less error is coded by its category"
        );
        assert_eq!(entry["severity"], "error");
        assert_eq!(entry["data"]["category"], category.as_str());
        assert_eq!(
            entry["data"]["retryable"],
            category.retryable_default(),
            "{category:?}"
        );
    }
}

#[test]
fn an_errors_wait_data_and_diagnosis_travel_too() {
    let error = ToolError::transient("the backend timed out")
        .with_retry_after(std::time::Duration::from_millis(250))
        .with_data(json!({"backend": "index"}));
    let mut envelope = wire(&Envelope::err(error));
    envelope["diagnosis"] = json!("the index server is restarting");
    envelope["diagnostics"] =
        json!([{"code": "slow_backend", "severity": "warning", "message": "p99 over 2s"}]);
    let rendered = pincher(&envelope);
    assert_valid(&rendered);
    let fields = meta(&rendered);
    assert_eq!(
        fields["diagnosis"],
        "the backend timed out — the index server is restarting"
    );
    let data = &fields["diagnosis_v2"][0]["data"];
    assert_eq!(data["retryable"], true);
    assert_eq!(data["retry_after_ms"], 250);
    assert_eq!(data["data"], json!({"backend": "index"}));
    assert_eq!(fields["diagnosis_v2"][1]["code"], "slow_backend");
}

// ---------------------------------------------------------------------------------------------
// Verdicts
// ---------------------------------------------------------------------------------------------

#[test]
fn the_verdict_alphabet_row_by_row() {
    // (verdict, the `verdict` entry's severity, or none)
    let table: [(Verdict, Option<&str>); 8] = [
        (Verdict::Safe, None),
        (Verdict::Caution, Some("warning")),
        (Verdict::Review, Some("warning")),
        (Verdict::Unsafe, Some("error")),
        (Verdict::Info, None),
        (Verdict::Warn, Some("warning")),
        (Verdict::Error, None),
        (Verdict::NotFound, Some("info")),
    ];
    assert_eq!(Verdict::ALL.len(), table.len());
    for (verdict, severity) in table {
        let mut envelope = wire(
            &Envelope::ok(json!({"files": []}))
                .with_summary_line("0 files")
                .with_next_step("inspect the callers first"),
        );
        envelope["verdict"] = json!(verdict.as_str());
        let rendered = pincher(&envelope);
        assert_valid(&rendered);
        let entry = warning(&rendered, "verdict");
        assert_eq!(
            entry.map(|e| e["severity"].clone()),
            severity.map(Value::from),
            "{verdict:?}"
        );
        if let Some(entry) = entry {
            assert_eq!(
                entry["data"],
                json!({"verdict": verdict.as_str(), "summary_line": "0 files", "next_step": "inspect the callers first"})
            );
            assert!(
                entry["message"]
                    .as_str()
                    .is_some_and(|m| m.contains(verdict.obligation()))
            );
        }
    }
}

#[test]
fn not_found_with_an_empty_reason_is_carried_by_the_reason() {
    let envelope = wire(
        &Envelope::ok(json!([]))
            .with_verdict(Verdict::NotFound)
            .with_empty_reason(EmptyReason::TargetNotResolved, "no symbol `Foo`"),
    );
    let rendered = pincher(&envelope);
    assert!(warning(&rendered, "verdict").is_none());
    assert_eq!(meta(&rendered)["empty_reason"], "target_not_resolved");
}

// ---------------------------------------------------------------------------------------------
// Truncation and paging
// ---------------------------------------------------------------------------------------------

/// The brief's page of a search, as the budget stage writes it in full mode.
fn search_page() -> Value {
    json!({"ok":true,"verdict":"INFO","next_step":"showing 2 of 532 occurrences — follow `next-page`",
     "data":{"occurrences":[{"path":"README.md","line":8,"column":94,"text":"cargo run …"},{"path":"README.md","line":29,"column":355,"text":"…"}],
             "target_ref":"MWsRj-QB7G7-CQBFbnZlbG9wZS94IhY8uZkdJR0"},
     "completeness":{"unit":"occurrence","returned":2,"total":532,"complete":false,"truncated":true,"truncation_reasons":["page_limit"]},
     "next_actions":[{"id":"next-page","role":"broaden_scope","order":0,"tool":"search_text","arguments":{"query":"Envelope","limit":2,"continuation":"IQJrEY_kvkMABQmk03YoZ14q"},"reason":"next page"}],
     "meta":{"request_id":"01M8Y668ZWS01APKW5MCT6BK9G","tool":"search_text","complexity_tier":"lite","idempotent":true,"latency_ms":40,
             "tokens_estimated":444,"tokens_method":"heuristic","tokens_saved":11823,"tokens_saved_pct":96.4,"baseline_method":"grep_recursive",
             "schema_version":3,"capabilities":["standardized_error_envelope","canonical_verdicts","completeness","next_actions","continuations"],"truncated":false}})
}

#[test]
fn a_truncated_page_says_how_much_was_cut_and_how_to_page() {
    let envelope = search_page();
    let rendered = pincher(&envelope);
    assert_valid(&rendered);
    assert_eq!(
        rendered["result"], envelope["data"],
        "the payload, target ref included"
    );
    let cut = warning(&rendered, "truncated").expect("the cut is flagged");
    assert_eq!(cut["severity"], "info");
    assert_eq!(cut["message"], envelope["next_step"]);
    assert_eq!(cut["data"]["completeness"], envelope["completeness"]);
    assert_eq!(cut["data"]["truncated"], false, "the budget did not cut");
    // Paging: the next-page action, followable verbatim.
    assert_eq!(
        meta(&rendered)["next_steps"],
        json!([{"tool": "search_text",
                "args": {"query": "Envelope", "limit": 2, "continuation": "IQJrEY_kvkMABQmk03YoZ14q"},
                "why": "next page"}])
    );
    // Cost: the payload alone, the savings against the baseline it implies (11823 + 444).
    let used =
        Estimator::default().estimate(&serde_json::to_string(&envelope["data"]).expect("json"));
    assert_eq!(meta(&rendered)["tokens_used"], used);
    let used = i64::try_from(used).expect("small");
    assert_eq!(meta(&rendered)["tokens_saved"], 12_267 - used);
    assert_eq!(meta(&rendered)["baseline_method"], "grep_recursive");
    // The observability stamps with no pincher field are not invented into `_meta`.
    for absent in [
        "tool",
        "idempotent",
        "tokens_estimated",
        "tokens_method",
        "truncated",
    ] {
        assert!(meta(&rendered).get(absent).is_none(), "`{absent}`");
    }
}

#[test]
fn a_budget_cut_is_flagged_with_the_trimmers_markers() {
    let rows: Vec<Value> = (0..5_000)
        .map(|i| json!({"path": format!("src/f{i}.rs"), "line": i}))
        .collect();
    let page = Completeness::truncated_page(
        Unit::FILE,
        5_000,
        Some(80_000),
        TruncationReason::PageLimit,
        None,
    )
    .expect("a valid page");
    let envelope = Envelope::ok(json!({"results": rows})).with_completeness(page);
    let sent = prepare(envelope, &BudgetPolicy::default().for_call(None));
    let rendered = pincher(&sent.structured);
    assert_valid(&rendered);
    let kept = rendered["result"]["results"].as_array().map_or(0, Vec::len);
    assert!(kept < 5_000);
    let cut = warning(&rendered, "truncated").expect("the cut is flagged");
    assert_eq!(cut["data"]["truncated"], true);
    assert_eq!(cut["data"]["truncated_results_from"], 5_000);
    assert_eq!(cut["data"]["truncated_results_to"], kept);
    assert_eq!(cut["data"]["completeness"]["returned"], kept);
    assert_eq!(cut["data"]["completeness"]["total"], 80_000);
    let message = cut["message"].as_str().expect("a message");
    assert!(
        message.starts_with(&format!("showing {kept} of 80000 files")),
        "{message}"
    );
}

#[test]
fn a_cut_list_payload_without_completeness_is_still_flagged() {
    let envelope = json!({"ok": true, "verdict": "INFO", "data": [1, 2, 3],
        "meta": {"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC", "truncated": true,
                 "truncated_data_from": 900, "truncated_data_to": 3}});
    let rendered = pincher(&envelope);
    assert_valid(&rendered);
    assert_eq!(rendered["result"], json!([1, 2, 3]));
    let cut = warning(&rendered, "truncated").expect("the cut is flagged");
    assert_eq!(
        cut["message"],
        "the response budget cut part of the payload"
    );
    assert_eq!(
        cut["data"],
        json!({"truncated": true, "truncated_data_from": 900, "truncated_data_to": 3})
    );
}

#[test]
fn an_incomplete_result_is_flagged_apart_from_a_cut() {
    let partial =
        Completeness::incomplete(Unit::FILE, 3, None, vec![IncompleteReason::WalkFailure])
            .expect("valid");
    let mut envelope = wire(&Envelope::ok(json!(["a", "b", "c"])).with_completeness(partial));
    if let Some(object) = envelope.as_object_mut() {
        object.remove("next_step");
    }
    let rendered = pincher(&envelope);
    assert_valid(&rendered);
    assert!(warning(&rendered, "truncated").is_none());
    let entry = warning(&rendered, "incomplete").expect("flagged");
    assert_eq!(entry["severity"], "warning");
    assert_eq!(
        entry["message"],
        "returned 3 files; the result was incomplete"
    );
    assert_eq!(
        entry["data"]["completeness"]["incomplete_reasons"],
        json!(["walk_failure"])
    );
}

#[test]
fn a_whole_collection_needs_no_warning() {
    let envelope =
        wire(&Envelope::ok(json!(["a"])).with_completeness(Completeness::complete(Unit::FILE, 1)));
    let rendered = pincher(&envelope);
    assert!(meta(&rendered).get("warnings_v2").is_none());
}

#[test]
fn next_steps_keep_the_actions_order_and_arguments() {
    let first = NextAction::new(
        "read",
        Role::ProofRead,
        0,
        "read_file",
        json!({"path": "a.rs", "dialect": "pincher"}),
        "read it",
    )
    .expect("object");
    let second = NextAction::new(
        "callers",
        Role::Inspect,
        1,
        "callers",
        json!({"symbol": "f"}),
        "who calls it",
    )
    .expect("object")
    .after(envelope_core::DependencyMode::All, ["read"]);
    let envelope = wire(&Envelope::ok(json!(null)).with_next_actions([first, second]));
    let steps = meta(&pincher(&envelope))["next_steps"].clone();
    assert_eq!(
        steps,
        json!([
            {"tool": "read_file", "args": {"path": "a.rs", "dialect": "pincher"}, "why": "read it"},
            {"tool": "callers", "args": {"symbol": "f"}, "why": "who calls it"},
        ])
    );
}

#[test]
fn warnings_and_diagnostics_become_the_v2_lists_in_order() {
    let rendered = pincher(&loaded_envelope());
    let codes = |list: &str| -> Vec<String> {
        meta(&rendered)[list]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|entry| entry["code"].as_str().map(str::to_owned))
            .collect()
    };
    assert_eq!(codes("warnings_v2"), ["verdict", "truncated"]);
    // `unknown_arg` is a diagnosis in pincher ("`data.accepted` lists the valid keys").
    assert_eq!(codes("diagnosis_v2"), ["unknown_arg", "corpus_mismatch"]);
    let diagnosis = meta(&rendered)["diagnosis_v2"]
        .as_array()
        .and_then(|entries| entries.iter().find(|entry| entry["code"] == "unknown_arg"))
        .cloned();
    assert_eq!(
        diagnosis.map(|entry| entry["data"].clone()),
        Some(json!({"accepted": ["query", "limit"]}))
    );
    // Read back, it is the envelope's warning again.
    let viewed = envelope_dialect::view(envelope_core::Dialect::Pincher, &rendered);
    assert!(
        viewed["warnings"]
            .as_array()
            .is_some_and(|warnings| warnings.iter().any(|w| w["code"] == "unknown_arg")),
        "{viewed:#}"
    );
}

// ---------------------------------------------------------------------------------------------
// Cost, controls and the rendering stage
// ---------------------------------------------------------------------------------------------

#[test]
fn tokens_used_counts_the_result_with_the_servers_estimator() {
    let envelope = search_page();
    let how = Rendering {
        estimator: Estimator::CharsDiv4,
        ..Rendering::default()
    };
    let rendered = render(Dialect::Pincher, &envelope, &how);
    let text = serde_json::to_string(&envelope["data"]).expect("json");
    assert_eq!(
        meta(&rendered)["tokens_used"],
        Estimator::CharsDiv4.estimate(&text)
    );
}

#[test]
fn savings_are_left_out_when_the_baseline_cannot_be_recovered() {
    // Savings without the response size they were counted against: the baseline is unknown,
    // so no difference from `tokens_used` can be stated.
    let envelope = stamped(
        wire(&Envelope::ok(json!({"a": 1}))),
        json!({"tokens_saved": 50, "tokens_saved_pct": 50.0, "baseline_method": "full_file_read"}),
    );
    let fields = meta(&pincher(&envelope)).clone();
    assert!(fields.get("tokens_used").is_some());
    assert!(fields.get("tokens_saved").is_none(), "{fields:#?}");
    assert!(fields.get("tokens_saved_pct").is_none(), "{fields:#?}");
    assert_eq!(fields["baseline_method"], "full_file_read");
    // No baseline at all: no savings, not zero savings.
    let plain = pincher(&wire(&Envelope::ok(json!({"a": 1}))));
    assert!(meta(&plain).get("tokens_saved").is_none());
    assert!(meta(&plain).get("baseline_method").is_none());
}

#[test]
fn the_control_surface_is_the_defaults_and_paging() {
    // Every control key, at the value a call sends by default (or a token, for paging).
    for (control, value) in Controls::KEYS.iter().zip([
        json!("compact"),
        json!("json"),
        json!(false),
        json!("tok"),
        json!("pincher"),
    ]) {
        assert!(
            EXPRESSIBLE.expresses(Dialect::Pincher, control, &value),
            "{control}"
        );
    }
    for (control, value) in [
        ("response_mode", json!("full")),
        ("output_format", json!("toon")),
        ("compact_only", json!(true)),
    ] {
        assert!(
            !EXPRESSIBLE.expresses(Dialect::Pincher, control, &value),
            "{control}"
        );
    }
    // What reaches the dialect renders the same whatever the call asked.
    let envelope = search_page();
    let how = Rendering {
        controls: Controls {
            continuation: Some("IQJrEY_kvkMABQmk03YoZ14q".to_owned()),
            dialect: Some(Dialect::Pincher),
            ..Controls::default()
        },
        ..Rendering::default()
    };
    assert_eq!(
        render(Dialect::Pincher, &envelope, &how),
        pincher(&envelope)
    );
}

#[test]
fn the_rendering_stage_writes_pinchers_json_and_counts_it() {
    let envelope = Envelope::ok(json!({"files": ["a.rs"]}));
    let sent = prepare(envelope, &BudgetPolicy::default().for_call(None));
    let how = Rendering::default();
    let rendered = envelope_dialect::apply(Dialect::Pincher, sent, &how);
    assert_eq!(rendered.structured["result"], json!({"files": ["a.rs"]}));
    let text: Value = serde_json::from_str(&rendered.json).expect("the text is JSON");
    assert_eq!(text, rendered.structured);
    assert_eq!(
        rendered.tokens_estimated,
        Some(how.estimator.estimate(&rendered.json))
    );
    assert_valid(&rendered.structured);
}

// ---------------------------------------------------------------------------------------------
// Odd envelopes
// ---------------------------------------------------------------------------------------------

#[test]
fn render_never_panics_on_odd_envelopes() {
    let id = "01HM3K2X9V7QY8R4PNZTH5W6BC";
    let odd = [
        json!(null),
        json!([]),
        json!("text"),
        json!(42),
        json!({}),
        json!({"ok": true}),
        json!({"ok": false}),
        json!({"ok": false, "error": {}}),
        json!({"ok": false, "error": "boom"}),
        json!({"ok": false, "error": {"message": 7, "category": ["x"]}}),
        json!({"ok": true, "data": {}, "meta": "not an object"}),
        json!({"ok": true, "data": {}, "meta": {"request_id": 5, "capabilities": "all", "tokens_saved": "many", "tokens_estimated": -1}}),
        json!({"ok": true, "verdict": 3, "next_step": [], "summary_line": {}}),
        json!({"ok": true, "verdict": "clean", "data": 1}),
        json!({"ok": true, "next_actions": "none", "warnings": {}, "diagnostics": 3}),
        json!({"ok": true, "next_actions": [1, {"tool": 2}, {"tool": "t", "arguments": []}, {"tool": "t", "arguments": {}}]}),
        json!({"ok": true, "warnings": [1, {"code": "x"}, {"code": "x", "severity": "loud", "message": "m"}]}),
        json!({"ok": true, "completeness": {"returned": "two", "truncated": "yes", "shortened": "all"}}),
        json!({"ok": true, "completeness": 5, "meta": {"truncated": "yes", "truncated_x_from": null}}),
        json!({"ok": true, "meta": {"binary_drift_warning": {"stored_version": "a"}, "schema_version_at_index": "x"}}),
        json!({"ok": true, "meta": {"tokens_saved": i64::MAX, "tokens_estimated": u64::MAX}, "data": "x"}),
        json!({"ok": true, "meta": {"tokens_saved": i64::MIN, "tokens_estimated": 0}, "data": "x"}),
    ];
    for envelope in odd {
        let rendered = pincher(&envelope);
        assert!(rendered["_meta"].is_object(), "{envelope}");
    }
    // Any payload shape, with a proper meta, renders a valid response.
    for data in [
        json!([1, 2]),
        json!(null),
        json!("text"),
        json!(3.5),
        json!(false),
    ] {
        let envelope =
            json!({"ok": true, "verdict": "INFO", "data": data, "meta": {"request_id": id}});
        let rendered = pincher(&envelope);
        assert_eq!(rendered["result"], data);
        assert_valid(&rendered);
    }
    // A failure with nothing in it still reads as a failure.
    let bare = pincher(&json!({"ok": false, "meta": {"request_id": id}}));
    assert_valid(&bare);
    assert_eq!(meta(&bare)["diagnosis_v2"][0]["severity"], "error");
    assert_eq!(meta(&bare)["diagnosis_v2"][0]["code"], "error");
    // Malformed notices and unschedulable actions are left out, not passed on broken.
    let junk = pincher(&json!({"ok": true, "data": 1, "meta": {"request_id": id},
        "warnings": [1, {"code": "x"}, {"code": "x", "severity": "loud", "message": "m"}],
        "next_actions": [1, {"tool": 2}, {"tool": "t", "arguments": []}]}));
    assert_valid(&junk);
    assert!(meta(&junk).get("warnings_v2").is_none());
    assert!(meta(&junk).get("next_steps").is_none());
}

// ---------------------------------------------------------------------------------------------
// The gap tables
// ---------------------------------------------------------------------------------------------

#[test]
fn the_gap_tables_are_one_clear_sentence_each() {
    for table in [unexpressed(Dialect::Pincher), dropped(Dialect::Pincher)] {
        assert!(!table.is_empty());
        let fields: BTreeSet<&str> = table.iter().map(|gap| gap.field).collect();
        assert_eq!(fields.len(), table.len(), "fields repeat");
        for gap in table {
            assert!(!gap.field.is_empty());
            assert!(gap.why.ends_with('.'), "{}", gap.why);
            assert!(!gap.why.contains('\n'));
            assert_eq!(
                gap.why.matches(". ").count(),
                0,
                "one sentence: {}",
                gap.why
            );
        }
    }
    let dropped_fields: Vec<&str> = dropped(Dialect::Pincher)
        .iter()
        .map(|gap| gap.field)
        .collect();
    for field in [
        "meta.tool",
        "meta.layer",
        "meta.client_request_id",
        "meta.schema_version",
        "next_actions[].id",
    ] {
        assert!(
            dropped_fields.iter().any(|listed| listed.contains(field)),
            "{field}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// The contract's host loop, in Rust
// ---------------------------------------------------------------------------------------------

/// A server answering in pincher's wire: `search_text` pages through five occurrences two at a
/// time (the continuation names the next offset), and `index` indexes the project, before
/// which a search says `not_indexed`.
struct FakeServer {
    indexed: RefCell<bool>,
    calls: RefCell<Vec<(String, Value)>>,
}

const OCCURRENCES: usize = 5;
const PAGE: usize = 2;

impl FakeServer {
    fn new(indexed: bool) -> Self {
        FakeServer {
            indexed: RefCell::new(indexed),
            calls: RefCell::new(Vec::new()),
        }
    }

    fn call(&self, tool: &str, args: &Value) -> Value {
        self.calls
            .borrow_mut()
            .push((tool.to_owned(), args.clone()));
        let envelope = match tool {
            "index" => {
                *self.indexed.borrow_mut() = true;
                Envelope::ok(json!({"indexed": true}))
            }
            "search_text" if !*self.indexed.borrow() => Envelope::ok(json!({"occurrences": []}))
                .with_empty_reason(EmptyReason::NotIndexed, "nothing at this path is indexed"),
            "search_text" => self.page(args),
            _ => Envelope::err(ToolError::not_found(format!("no tool `{tool}`"))),
        };
        pincher(&stamped(
            wire(&envelope),
            json!({"capabilities": ["completeness", "continuations"]}),
        ))
    }

    /// The page a search's arguments ask for.
    fn page(&self, args: &Value) -> Envelope<Value> {
        let offset = match args.get("continuation").and_then(Value::as_str) {
            Some(token) => match token.strip_prefix("at-").and_then(|n| n.parse().ok()) {
                Some(offset) => offset,
                None => {
                    return Envelope::err(
                        ToolError::validation("tampered").with_code("INVALID_CONTINUATION"),
                    );
                }
            },
            None => 0,
        };
        let end = (offset + PAGE).min(OCCURRENCES);
        let rows: Vec<Value> = (offset..end)
            .map(|line| json!({"path": "README.md", "line": line}))
            .collect();
        let returned = end - offset;
        let data = json!({"occurrences": rows});
        if end == OCCURRENCES {
            let last = Completeness::last_page(Unit::OCCURRENCE, offset, returned).expect("valid");
            return Envelope::ok(data).with_completeness(last);
        }
        let page = Completeness::truncated_page(
            Unit::OCCURRENCE,
            returned,
            Some(OCCURRENCES),
            TruncationReason::PageLimit,
            None,
        )
        .and_then(|page| page.with_offset(offset))
        .expect("valid");
        Envelope::ok(data)
            .with_completeness(page)
            .with_next_actions([next_page(&format!("at-{end}"))])
    }
}

/// What the host loop did besides returning results.
#[derive(Default)]
struct Host {
    log: Vec<String>,
    banners: Vec<(String, String, String)>,
    queue: VecDeque<(String, Value)>,
    trusted: Vec<&'static str>,
}

/// The contract's `call_pincher`, line by line.
fn call_pincher(server: &FakeServer, host: &mut Host, tool: &str, args: &Value) -> Value {
    let resp = server.call(tool, args);
    let meta = resp.get("_meta").cloned().unwrap_or_else(|| json!({}));

    // Capability gating (one-time per session is enough)
    let capabilities = meta["capabilities"].as_array().cloned().unwrap_or_default();
    if !capabilities.contains(&json!("schema_v38")) {
        host.log
            .push("server schema older than this integration was built for".to_owned());
    }

    // Drift handling
    if meta
        .get("binary_drift_warning")
        .is_some_and(|warning| !warning.is_null())
    {
        host.log
            .push("pincher binary stale; restart pending".to_owned());
    }

    // Diagnose empty / partial
    if meta["empty_reason"] == "no_project_indexed" {
        return call_pincher(server, host, "index", &json!({"path": "."}));
    }

    // Surface warnings
    for w in meta["warnings_v2"].as_array().into_iter().flatten() {
        host.banners.push((
            w["code"].as_str().unwrap_or_default().to_owned(),
            w["message"].as_str().unwrap_or_default().to_owned(),
            w["severity"].as_str().unwrap_or_default().to_owned(),
        ));
    }

    // Schedule next steps (the contract's `if step.tool in trusted_tools`)
    for step in meta["next_steps"].as_array().into_iter().flatten() {
        let tool = step["tool"].as_str().unwrap_or_default();
        if host.trusted.contains(&tool) {
            host.queue
                .push_back((tool.to_owned(), step["args"].clone()));
        }
    }

    // `return resp["result"]`: Python raises `KeyError` when the key is missing.
    resp.get("result")
        .cloned()
        .expect("resp[\"result\"]: every answer has one")
}

#[test]
fn the_host_loop_returns_from_a_failed_call_too() {
    let server = FakeServer::new(true);
    let mut host = Host::default();
    // A tool the fake does not serve, and a tampered continuation: both failures.
    let unknown = call_pincher(&server, &mut host, "no_such_tool", &json!({}));
    assert_eq!(unknown, Value::Null);
    let tampered = call_pincher(
        &server,
        &mut host,
        "search_text",
        &json!({"query": "Envelope", "continuation": "bogus"}),
    );
    assert_eq!(tampered, Value::Null);
    assert!(host.queue.is_empty());
}

#[test]
fn the_host_loop_pages_through_a_result_by_its_next_steps() {
    let server = FakeServer::new(true);
    let mut host = Host {
        trusted: vec!["search_text"],
        ..Host::default()
    };
    let mut results = vec![call_pincher(
        &server,
        &mut host,
        "search_text",
        &json!({"query": "Envelope", "limit": 2}),
    )];
    while let Some((tool, args)) = host.queue.pop_front() {
        results.push(call_pincher(&server, &mut host, &tool, &args));
    }
    // Every occurrence once, in order, over three pages.
    let lines: Vec<u64> = results
        .iter()
        .flat_map(|result| {
            result["occurrences"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .filter_map(|row| row["line"].as_u64())
        .collect();
    assert_eq!(lines, [0, 1, 2, 3, 4]);
    let calls = server.calls.borrow();
    assert_eq!(calls.len(), 3);
    assert_eq!(
        calls[1].1["continuation"], "at-2",
        "next_steps[0] re-called verbatim"
    );
    assert_eq!(calls[2].1["continuation"], "at-4");
    // The first two pages were cut, and said so with real numbers; the last was whole.
    let cuts: Vec<&str> = host
        .banners
        .iter()
        .filter(|(code, _, _)| code == "truncated")
        .map(|(_, message, _)| message.as_str())
        .collect();
    assert_eq!(cuts.len(), 2);
    assert!(
        cuts[0].starts_with("showing 2 of 5 occurrences"),
        "{}",
        cuts[0]
    );
    assert!(
        cuts[1].starts_with("showing 3–4 of 5 occurrences"),
        "{}",
        cuts[1]
    );
    assert!(
        host.banners
            .iter()
            .all(|(_, _, severity)| severity == "info")
    );
    // This server advertises no `schema_v38`: the loop logged it, and saw no drift.
    assert_eq!(host.log.len(), 3);
    assert!(
        host.log
            .iter()
            .all(|line| line.starts_with("server schema older"))
    );
}

#[test]
fn the_host_loop_indexes_when_no_project_is_indexed() {
    let server = FakeServer::new(false);
    let mut host = Host::default();
    let result = call_pincher(
        &server,
        &mut host,
        "search_text",
        &json!({"query": "Envelope"}),
    );
    assert_eq!(result, json!({"indexed": true}));
    let tools: Vec<String> = server
        .calls
        .borrow()
        .iter()
        .map(|(tool, _)| tool.clone())
        .collect();
    assert_eq!(tools, ["search_text", "index"]);
    // An untrusted tool's steps are not scheduled.
    let mut untrusting = Host::default();
    call_pincher(
        &server,
        &mut untrusting,
        "search_text",
        &json!({"query": "Envelope", "limit": 2}),
    );
    assert!(untrusting.queue.is_empty());
}

#[test]
fn the_host_loop_surfaces_a_drift() {
    let server_answer = pincher(&loaded_envelope());
    assert!(meta(&server_answer)["binary_drift_warning"].is_object());
    // The loop's drift branch reads exactly this field.
    assert!(
        meta(&server_answer)
            .get("binary_drift_warning")
            .is_some_and(|warning| !warning.is_null())
    );
}

#[test]
fn a_cut_without_next_step_is_stated_from_its_counts() {
    let mut envelope = loaded_envelope();
    if let Some(object) = envelope.as_object_mut() {
        object.remove("next_step");
    }
    let rendered = pincher(&envelope);
    let cut = warning(&rendered, "truncated").expect("flagged");
    assert_eq!(
        cut["message"],
        "returned 2 of 9 symbols; the result was cut"
    );
}

/// What is not an answer in this dialect is not read as one: `view` says it failed, and why,
/// in the envelope's own failure, and it does not count as a success.
#[test]
fn what_is_not_a_pincher_answer_reads_back_as_a_failure_that_says_so() {
    for foreign in [
        json!(42),
        json!({"result": 1}),
        json!({"result": 1, "_meta": {}, "ok": true}),
        json!({"result": null, "_meta": {"diagnosis_v2": "none"}}),
    ] {
        let back = envelope_dialect::view(Dialect::Pincher, &foreign);
        assert_eq!(back["ok"], false, "{foreign}: {back:#}");
        assert_eq!(back["error"]["category"], "internal", "{back:#}");
        let message = back["error"]["message"].as_str().unwrap_or_default();
        assert!(message.starts_with("not a pincher answer"), "{message}");
        assert!(!envelope_dialect::contract(Dialect::Pincher).succeeded(&foreign));
    }
}

/// `binary_drift_warning` is `{stored_version, running_version, remediation}`: a drift the
/// server stamped without a remediation of its own still says what to do, so a host that
/// surfaces it to the user has something to surface.
#[test]
fn a_drift_always_says_what_to_do_about_it() {
    let drift = envelope_core::IndexStatus::new(4, 3)
        .drift()
        .expect("stored data newer than the binary");
    let envelope = stamped(
        wire(&Envelope::ok(json!({"a": 1}))),
        json!({"binary_drift_warning": drift}),
    );
    let rendered = pincher(&envelope);
    assert_valid(&rendered);
    let warning = &meta(&rendered)["binary_drift_warning"];
    assert_eq!(warning["stored_version"], 4);
    assert_eq!(warning["running_version"], 3);
    let remediation = warning["remediation"].as_str().expect("a remediation");
    assert!(remediation.contains("upgrade the server"), "{remediation}");
    assert!(envelope_core::IndexStatus::new(3, 3).drift().is_none());
}

/// The anatomy's field types: `complexity_tier` is `lite | standard | heavy` (another value is
/// not one, and is left out rather than passed on), `latency_ms` is whole milliseconds, and
/// every `next_steps` entry has its `why`.
#[test]
fn tier_latency_and_steps_keep_the_anatomys_types() {
    for (tier, kept) in [
        ("lite", true),
        ("standard", true),
        ("heavy", true),
        ("medium", false),
    ] {
        let envelope = stamped(
            wire(&Envelope::ok(json!({"a": 1}))),
            json!({"complexity_tier": tier, "latency_ms": 12}),
        );
        let fields = meta(&pincher(&envelope)).clone();
        assert_eq!(fields.get("complexity_tier").is_some(), kept, "{tier}");
        assert_eq!(fields["latency_ms"], 12);
    }
    let envelope = stamped(
        wire(&Envelope::ok(json!({"a": 1}))),
        json!({"latency_ms": 12.5}),
    );
    assert!(meta(&pincher(&envelope)).get("latency_ms").is_none());
    let steps = pincher(&loaded_envelope());
    let steps = meta(&steps)["next_steps"].as_array().expect("steps");
    assert!(!steps.is_empty());
    for step in steps {
        assert!(
            step["why"].as_str().is_some_and(|why| !why.is_empty()),
            "{step}"
        );
    }
}

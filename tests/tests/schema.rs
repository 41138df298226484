//! `docs/envelope.schema.json` against envelopes written by hand from the contract, the way a
//! client in another language would validate what it receives.

use serde_json::{Value, json};

fn validator() -> jsonschema::Validator {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/envelope.schema.json");
    let text = std::fs::read_to_string(path).expect("docs/envelope.schema.json is committed");
    let schema: Value = serde_json::from_str(&text).expect("the schema is JSON");
    jsonschema::draft202012::new(&schema).expect("the schema is a valid draft 2020-12 schema")
}

fn meta() -> Value {
    json!({
        "request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC",
        "tool": "search_text",
        "complexity_tier": "lite",
        "idempotent": true,
        "latency_ms": 38,
        "tokens_estimated": 1247,
        "tokens_method": "heuristic",
        "schema_version": 2,
        "capabilities": ["standardized_error_envelope", "complexity_tier"]
    })
}

fn ok_envelope() -> Value {
    json!({
        "ok": true,
        "verdict": "INFO",
        "summary_line": "3 matches in 2 files",
        "data": {"matches": [{"path": "src/lib.rs", "line": 3}]},
        "warnings": [{"code": "stale_cache", "severity": "warning", "message": "cache is old"}],
        "meta": meta()
    })
}

fn error_envelope() -> Value {
    json!({
        "ok": false,
        "verdict": "ERROR",
        "error": {
            "category": "transient",
            "code": "backend_timeout",
            "message": "the index backend timed out",
            "retryable": true,
            "hint": "retry in a few seconds",
            "retry_after_ms": 2000
        },
        "meta": meta()
    })
}

fn truncated_envelope() -> Value {
    json!({
        "ok": true,
        "verdict": "INFO",
        "next_step": "showing 40 of 512 results — raise limit or narrow the path",
        "data": {"results": []},
        "completeness": {
            "unit": "file",
            "returned": 40,
            "total": 512,
            "complete": false,
            "truncated": true,
            "truncation_reasons": ["page_limit"],
            "continuation": "opaque-token"
        },
        "next_actions": [{
            "id": "verify-exact-1",
            "role": "verify_exact",
            "order": 20,
            "dependencies": [],
            "tool": "search_text",
            "arguments": {"query": "FriggMcpServer"},
            "reason": "Verify the discovered identifier with exact text search."
        }],
        "diagnostics": [{"code": "unknown_arg", "severity": "info", "message": "ignored `limt`", "data": {"accepted": ["limit", "path"]}}],
        "meta": meta()
    })
}

fn assert_valid(instance: &Value) {
    let validator = validator();
    let problems: Vec<String> = validator
        .iter_errors(instance)
        .map(|e| e.to_string())
        .collect();
    assert!(problems.is_empty(), "{instance:#}\n{problems:#?}");
}

fn assert_invalid(instance: &Value, why: &str) {
    assert!(
        !validator().is_valid(instance),
        "accepted {why}: {instance:#}"
    );
}

#[test]
fn well_formed_envelopes_validate() {
    assert_valid(&ok_envelope());
    assert_valid(&error_envelope());
    assert_valid(&truncated_envelope());
}

#[test]
fn envelopes_the_library_writes_validate() {
    use envelope_core::{Completeness, Envelope, ToolError, TruncationReason, Unit};
    let page =
        Completeness::truncated_page(Unit::FILE, 1, Some(9), TruncationReason::PageLimit, None)
            .expect("consistent");
    let written = [
        serde_json::to_value(Envelope::ok(json!({"rows": [1]})).with_completeness(page)),
        serde_json::to_value(Envelope::<Value>::err(ToolError::internal("secret"))),
        serde_json::to_value(Envelope::ok(())),
    ];
    for envelope in written {
        assert_valid(&envelope.expect("serializes"));
    }
}

#[test]
fn rejects_an_unknown_verdict() {
    let mut envelope = ok_envelope();
    envelope["verdict"] = json!("CATASTROPHIC");
    assert_invalid(&envelope, "an unknown verdict");
}

#[test]
fn rejects_an_unknown_category() {
    let mut envelope = error_envelope();
    envelope["error"]["category"] = json!("cosmic_rays");
    assert_invalid(&envelope, "an unknown category");
}

#[test]
fn rejects_ok_true_with_an_error() {
    let mut envelope = ok_envelope();
    envelope["error"] = error_envelope()["error"].clone();
    assert_invalid(&envelope, "ok: true with an error");
}

#[test]
fn rejects_ok_false_without_an_error() {
    let mut envelope = error_envelope();
    envelope.as_object_mut().expect("object").remove("error");
    assert_invalid(&envelope, "ok: false without an error");
}

#[test]
fn rejects_a_next_action_without_tool() {
    let mut envelope = truncated_envelope();
    envelope["next_actions"][0]
        .as_object_mut()
        .expect("object")
        .remove("tool");
    assert_invalid(&envelope, "a next action without tool");
}

#[test]
fn rejects_a_notice_with_severity_fatal() {
    let mut envelope = ok_envelope();
    envelope["warnings"][0]["severity"] = json!("fatal");
    assert_invalid(&envelope, "a notice with severity fatal");
}

#[test]
fn rejects_nulls_for_absent_fields() {
    let mut envelope = ok_envelope();
    envelope["summary_line"] = Value::Null;
    assert_invalid(&envelope, "null for an absent field");
}

#[test]
fn rejects_contradictory_completeness_it_can_express() {
    let mut envelope = truncated_envelope();
    envelope["completeness"]["complete"] = json!(true);
    assert_invalid(&envelope, "complete and truncated");
    let mut envelope = truncated_envelope();
    envelope["completeness"]["truncation_reasons"] = json!([]);
    assert_invalid(&envelope, "truncated without a reason");
}

#[test]
fn rejects_more_than_eight_next_actions() {
    let mut envelope = truncated_envelope();
    let action = envelope["next_actions"][0].clone();
    envelope["next_actions"] = Value::Array(vec![action; 9]);
    assert_invalid(&envelope, "nine next actions");
}

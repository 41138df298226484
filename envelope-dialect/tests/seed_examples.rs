//! Each source contract's own worked examples, copied from its text, validate against that
//! dialect's schema: a schema that describes what this library writes must still accept every
//! shape the contract shows a client. Elided values (`"..."`, `…`) are kept as the contract
//! writes them where they stand for a string, and replaced by a value of the field's type where
//! they stand for one (a comment in the contract's JSONC, a trimmed payload).

use envelope_core::Dialect;
use envelope_dialect::schema;
use serde_json::{Value, json};

fn assert_valid(dialect: Dialect, example: &str, answer: &Value) {
    let schema = schema(dialect, &json!(true), None);
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|error| format!("at `{}`: {error}", error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{dialect}, {example}: {errors:#?}");
}

/// pincher: "Anatomy of a response", with the JSONC comments' alternatives as values.
#[test]
fn pinchers_anatomy_validates() {
    let anatomy = json!({
        "result": { "hits": [] },
        "_meta": {
            "request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC",
            "tokens_used": 1247,
            "tokens_saved": 11583,
            "tokens_saved_pct": 90.3,
            "baseline_method": "full_file_read",
            "complexity_tier": "lite",
            "latency_ms": 38,
            "empty_reason": "query_too_narrow",
            "diagnosis": "tightly-bounded query returned no rows; widen by …",
            // `{ "code": "...", "severity": "warning", ... }`: the elided rest is the frozen
            // shape's `message` (and optional `data`).
            "diagnosis_v2": [ { "code": "...", "severity": "warning", "message": "..." } ],
            "next_steps": [
                { "tool": "search", "args": { "q": "broader term" },
                  "why": "current query was AND-joined; OR retry usually wins" }
            ],
            "warnings": ["legacy string form"],
            "warnings_v2": [ { "code": "...", "severity": "info", "message": "..." } ],
            "capabilities": ["schema_v38", "hook_check", "supervised", "..."],
            "binary_drift_warning": null,
            "schema_version": 38,
            "schema_version_at_index": 34,
            "project_id": "d:claudecodepincher-repo",
            "project_name": "pincher-repo",
            "session_id": "..."
        }
    });
    assert_valid(Dialect::Pincher, "anatomy", &anatomy);
    let drift = json!({
        "result": null,
        "_meta": { "binary_drift_warning": {
            "stored_version": 34,
            "running_version": 33,
            "remediation": "supervised mode will respawn on next call; if not running supervised, restart pincher"
        } }
    });
    assert_valid(Dialect::Pincher, "binary_drift_warning", &drift);
    let warning = json!({
        "result": {},
        "_meta": { "warnings_v2": [ {
            "code": "ambiguous_match",
            "severity": "warning",
            "message": "human-readable text",
            "data": { "candidates": ["...", "..."] }
        } ] }
    });
    assert_valid(Dialect::Pincher, "warnings_v2", &warning);
}

/// cos: the success and error shapes, and "data is whatever the tool produced".
#[test]
fn cos_shapes_validate() {
    let success = json!({
        "ok": true,
        "data": {
            "task_id": "TASK-001",
            "status": "done",
            "meta": { "layer": "memory", "tokens_estimated": 12, "truncated": false }
        }
    });
    assert_valid(Dialect::Cos, "success", &success);
    for (category, retryable) in [
        ("transient", true),
        ("validation", false),
        ("permission", false),
        ("not_found", false),
        ("unavailable", true),
        ("internal", false),
        ("module_disabled", false),
    ] {
        let error = json!({
            "ok": false,
            "error": { "category": category, "retryable": retryable, "message": "<human-readable>" }
        });
        assert_valid(Dialect::Cos, category, &error);
    }
    for data in [json!(null), json!(["a", "b"]), json!(3), json!("x")] {
        assert_valid(
            Dialect::Cos,
            "any data",
            &json!({ "ok": true, "data": data }),
        );
    }
    let trimmed = json!({
        "ok": true,
        "data": {
            "results": [1, 2],
            "edges_by_type": { "calls": [] },
            "meta": {
                "layer": "graph",
                "tokens_estimated": 8000,
                "truncated": true,
                "truncated_results_from": 90,
                "truncated_results_to": 2,
                "truncated_edges_by_type": { "calls": { "from": 40, "to": 0 } },
                "truncated_string_fields": ["description"],
                "resolved_from": "fuzzy_fts5"
            }
        }
    });
    assert_valid(Dialect::Cos, "trimmed", &trimmed);
}

/// tsa: the three worked examples, as printed (the first without its `callers`, as the
/// contract prints it; the second's `agent_summary` with the members it shows).
#[test]
fn tsas_worked_examples_validate() {
    let callers = json!({
        "success": true,
        "verdict": "INFO",
        "data_source": "parse",
        "function": "build_response",
        "caller_count": 39,
        "callers_listed": 3,
        "listed_cap": 3,
        "truncated": true,
        "warnings": [
            "stale_cache: most edges have callee_resolution='unknown'. Run `uv run tree-sitter-analyzer --ast-cache --ast-cache-mode index --ast-cache-force` or rebuild with `--mode resolve` to populate Synapse resolution columns."
        ],
        "next_step": "showing 3 of 39 callers — raise limit, or qualify with ClassName.method to narrow (dynamic-dispatch names like 'execute' have huge fan-in). Each caller/callee's source body is inlined under 'body' — answer directly, no Read needed. Coordinate-only entries beyond the top-N can be Read on demand."
    });
    assert_valid(Dialect::Tsa, "example 1", &callers);
    let safe = json!({
        "success": true,
        "file_path": "tree_sitter_analyzer/mcp/utils/format_helper.py",
        "risk_level": "safe",
        "verdict": "SAFE",
        "recommendation": "SAFE to edit (health A, 0 downstream). Standard test pass after the edit is sufficient.",
        "agent_summary": {
            "summary_line": "tree_sitter_analyzer/mcp/utils/format_helper.py risk=safe verdict=SAFE health=A tests=yes",
            "verdict": "SAFE",
            "risk": "safe",
            "edit_strategy": "direct_focused_edit",
            "next_step": "Run pre-edit verification first: uv run pytest tests/unit/mcp/test_utils/test_format_helper.py tests/property/test_format_properties.py tests/regression/test_format_regression.py -q",
            "verification_command": "uv run pytest tests/unit/mcp/test_utils/test_format_helper.py tests/property/test_format_properties.py tests/regression/test_format_regression.py -q",
            "guardrails": ["preserve public API signatures"]
        },
        "health_grade": "A",
        "downstream_count": 0
    });
    assert_valid(Dialect::Tsa, "example 2", &safe);
    let compact = json!({
        "format": "toon",
        "toon_content": "success: true\nfile_path: tree_sitter_analyzer/mcp/utils/format_helper.py\ngrade: B\nverdict: SAFE\ntotal_score: 89.5\n...<trimmed — full payload lives here>",
        "success": true,
        "file_path": "tree_sitter_analyzer/mcp/utils/format_helper.py",
        "verdict": "SAFE",
        "summary_line": "tree_sitter_analyzer/mcp/utils/format_helper.py grade=B score=89.5 smells=1 weakest=dependencies"
    });
    assert_valid(Dialect::Tsa, "example 3", &compact);
    let not_found = json!({ "success": true, "verdict": "NOT_FOUND" });
    assert_valid(Dialect::Tsa, "NOT_FOUND", &not_found);
    let failed = json!({ "success": false, "verdict": "ERROR", "error": "bad path", "error_type": "validation", "hint": "pass a file" });
    assert_valid(Dialect::Tsa, "ERROR", &failed);
}

/// Frigg: an executable next action as the contract shows it, completeness with an unknown
/// total, and the compact recovery grammar (no `retryable`).
#[test]
fn friggs_examples_validate() {
    let action = json!({
        "zero_hit_reason": "query_miss",
        "next_actions": [{
            "id": "verify-exact-1",
            "role": "verify_exact",
            "order": 20,
            "dependencies": [],
            "tool": "search_text",
            "arguments": { "query": "FriggMcpServer" },
            "reason": "Verify the discovered identifier with exact text search."
        }]
    });
    assert_valid(Dialect::Frigg, "next_actions", &action);
    let ranked = json!({
        "completeness": {
            "unit": "symbol", "returned": 10, "complete": false, "truncated": false,
            "truncation_reasons": [], "incomplete_reasons": ["ranked_discovery"]
        }
    });
    assert_valid(Dialect::Frigg, "ranked discovery", &ranked);
    let exhausted = json!({
        "completeness": {
            "unit": "file", "returned": 2, "complete": true, "truncated": false,
            "truncation_reasons": [], "incomplete_reasons": []
        }
    });
    assert_valid(Dialect::Frigg, "complete, total unknown", &exhausted);
    let recovery = json!({
        "error_code": "STALE_CONTINUATION",
        "message": "The repository snapshot changed.",
        "correction_hint": "Re-run the original tool without a continuation.",
        "related_tools": ["search_text"]
    });
    assert_valid(Dialect::Frigg, "recovery", &recovery);
}

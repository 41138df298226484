//! The `cos` dialect against the `cos_*` error-envelope contract's own words: its two example
//! shapes, its error-category table, its `data.meta` diagnostics block and trimmer markers, its
//! budget tiers and its testing section, each checked against the rendering of the equivalent
//! envelope and against the dialect's schema.
//!
//! The contract's examples are kept as written in `fixtures/cos/*.jsonc` and resolved minimally
//! (see [`resolve`]): every `a | b | …` alternative becomes one example of its own, `<bool>` both
//! booleans, `<int>` the integer 42, the `...` value of `"<payload-keys>"` a `null` (the
//! placeholder key is kept), and the `"<truncated_*>": ...` line a pair of list markers
//! (`truncated_results_from`/`_to`) when `truncated` is true and nothing when it is false.

use std::time::Duration;

use envelope_budget::{
    AGENT_BUDGET_CHARS, BudgetPolicy, Estimator, GRAPH_SUBGRAPH_BUDGET_CHARS, LONG_STRING_CHARS,
    TRIMMABLE_LIST_KEYS, TRUNCATION_SUFFIX, prepare,
};
use envelope_core::paging::NEXT_PAGE;
use envelope_core::stage::{Controls, ResponseMode, ToolOutput, meta_stamp};
use envelope_core::{
    Category, Completeness, Dialect, EmptyReason, Envelope, IndexStatus, NextAction, Notice, Role,
    ToolError, TruncationReason, Unit, Verdict,
};
use envelope_dialect::{Rendering, dropped, render, schema, unexpressed};
use serde_json::{Value, json};

const SUCCESS: &str = include_str!("fixtures/cos/success.jsonc");
const ERROR: &str = include_str!("fixtures/cos/error.jsonc");

/// The contract's layers, in its order.
const LAYERS: [&str; 9] = [
    "memory", "docs", "tasks", "metrics", "routing", "graph", "health", "learning", "audit",
];

// ---------------------------------------------------------------------------------------------
// Helpers

/// `envelope` rendered in the cos dialect with the default estimator.
fn cos(envelope: &Value) -> Value {
    render(Dialect::Cos, envelope, &Rendering::default())
}

/// The envelope's JSON.
fn wire(envelope: &Envelope<Value>) -> Value {
    serde_json::to_value(envelope).expect("an envelope serializes")
}

/// The schema errors of `value` against the cos schema with the payload schema `data`.
fn schema_errors(value: &Value, data: &Value) -> Vec<String> {
    let schema = schema(Dialect::Cos, data, None);
    let validator = jsonschema::validator_for(&schema).expect("the cos schema compiles");
    validator
        .iter_errors(value)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect()
}

/// Asserts `value` is a valid cos response (any payload).
fn assert_valid(value: &Value) {
    let errors = schema_errors(value, &json!(true));
    assert!(errors.is_empty(), "{value:#}\n{errors:#?}");
}

/// Asserts `value` is not a valid cos response.
fn assert_invalid(value: &Value) {
    assert!(
        !schema_errors(value, &json!(true)).is_empty(),
        "accepted: {value:#}"
    );
}

/// `envelope` through the real budget stage, in full mode (as a server runs it for a
/// non-envelope dialect), with an agent budget of `chars` (`None`: the browser opt-out).
fn budgeted(envelope: Envelope<Value>, policy: BudgetPolicy) -> Value {
    let controls = Controls {
        response_mode: ResponseMode::Full,
        ..Controls::default()
    };
    let output = ToolOutput::from(envelope).with_controls(controls);
    prepare(output, &policy.for_call(None)).structured
}

/// A budget policy with an agent budget of `chars`.
fn agent_budget(chars: usize) -> BudgetPolicy {
    BudgetPolicy::default().with_agent_chars(Some(chars))
}

/// `count` search rows.
fn rows(count: usize) -> Vec<Value> {
    (0..count)
        .map(
            |i| json!({"path": format!("src/module_{i}.rs"), "line": i, "text": "fn handler() {}"}),
        )
        .collect()
}

/// `data.meta` of a cos success.
fn block(rendered: &Value) -> &serde_json::Map<String, Value> {
    rendered["data"]["meta"]
        .as_object()
        .expect("a success carries data.meta")
}

/// The `truncated_*` keys of a block.
fn marker_keys(block: &serde_json::Map<String, Value>) -> Vec<&str> {
    block
        .keys()
        .map(String::as_str)
        .filter(|key| key.starts_with("truncated_"))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The contract's examples, resolved

/// The contract's example `text` resolved into concrete JSON documents (see the module docs).
fn resolve(text: &str) -> Vec<Value> {
    let mut texts = vec![text.to_owned()];
    while let Some(at) = texts.iter().position(|text| has_choice(text)) {
        let text = texts.remove(at);
        texts.extend(expand_first_choice(&text));
    }
    texts
        .iter()
        .map(|text| {
            let text = resolve_markers(text)
                .replace("\"<payload-keys>\": ...", "\"<payload-keys>\": null")
                .replace("<int>", "42");
            serde_json::from_str(&text).unwrap_or_else(|error| panic!("{error}: {text}"))
        })
        .collect()
}

/// Whether a line of `text` still holds alternatives.
fn has_choice(text: &str) -> bool {
    text.lines()
        .any(|line| line.contains(" | ") || line.contains("<bool>"))
}

/// `text` once per alternative of its first line with alternatives.
fn expand_first_choice(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let Some(at) = lines
        .iter()
        .position(|line| line.contains(" | ") || line.contains("<bool>"))
    else {
        return vec![text.to_owned()];
    };
    let line = lines[at].replace("<bool>", "true | false");
    let (key, rest) = line.split_once(": ").expect("a member line");
    let (values, comma) = match rest.strip_suffix(',') {
        Some(values) => (values, ","),
        None => (rest, ""),
    };
    values
        .split(" | ")
        .map(|value| {
            let mut out = lines.clone();
            let chosen = format!("{key}: {value}{comma}");
            out[at] = &chosen;
            out.join("\n")
        })
        .collect()
}

/// The `"<truncated_*>": ...` placeholder: list markers when the example is truncated, else
/// nothing (and the comma before it goes).
fn resolve_markers(text: &str) -> String {
    const PLACEHOLDER: &str = "\"<truncated_*>\": ...";
    if text.contains("\"truncated\": true") {
        return text.replace(
            PLACEHOLDER,
            "\"truncated_results_from\": 120, \"truncated_results_to\": 40",
        );
    }
    let Some(at) = text.find(PLACEHOLDER) else {
        return text.to_owned();
    };
    let before = text[..at].trim_end();
    let before = before.strip_suffix(',').unwrap_or(before);
    format!("{before}\n{}", &text[at + PLACEHOLDER.len()..])
}

#[test]
fn the_examples_resolve_to_every_alternative() {
    // 9 layers × 2 booleans; 7 categories × 2 booleans.
    assert_eq!(resolve(SUCCESS).len(), 18);
    assert_eq!(resolve(ERROR).len(), 14);
}

#[test]
fn the_contract_success_examples_validate_and_render_alike() {
    for example in resolve(SUCCESS) {
        assert_valid(&example);
        let meta = &example["data"]["meta"];
        let layer = LAYERS
            .iter()
            .find(|layer| meta["layer"] == **layer)
            .copied();
        let truncated = meta["truncated"] == true;
        let mut envelope = Envelope::ok(json!({"<payload-keys>": null}));
        let mut stamp = meta_stamp(&mut envelope);
        stamp.layer(layer).truncated(truncated);
        if truncated {
            stamp.trim_markers().extend([
                ("truncated_results_from".to_owned(), json!(120)),
                ("truncated_results_to".to_owned(), json!(40)),
            ]);
        }
        let rendered = cos(&wire(&envelope));
        assert_valid(&rendered);
        assert_eq!(rendered["ok"], example["ok"]);
        assert_eq!(rendered["data"]["<payload-keys>"], Value::Null);
        let ours = block(&rendered);
        let theirs = meta.as_object().expect("the example has data.meta");
        let mut our_keys: Vec<&String> = ours.keys().collect();
        let mut their_keys: Vec<&String> = theirs.keys().collect();
        our_keys.sort();
        their_keys.sort();
        assert_eq!(our_keys, their_keys, "{rendered:#}");
        for (key, value) in theirs {
            if key == "tokens_estimated" {
                assert!(ours[key].is_u64(), "{key}: {}", ours[key]);
            } else {
                assert_eq!(&ours[key], value, "{key}");
            }
        }
    }
}

/// The equivalent envelope of an error example: built through `ToolError`'s constructors where
/// tool code can build that category; `internal` (whose message the library masks) and
/// `module_disabled` (built only by the generated gate) as the budget stage writes them.
fn error_envelope(category: Category, retryable: bool, message: &str) -> Value {
    let error = match category {
        Category::Internal | Category::ModuleDisabled => ToolError::validation(message),
        _ => ToolError::new(category, message),
    }
    .with_retryable(retryable);
    let mut envelope = wire(&Envelope::<Value>::err(error));
    envelope["error"]["category"] = json!(category.as_str());
    envelope
}

#[test]
fn the_contract_error_examples_validate_and_render_alike() {
    for example in resolve(ERROR) {
        assert_valid(&example);
        let error = &example["error"];
        let category = Category::ALL
            .iter()
            .copied()
            .find(|category| error["category"] == category.as_str())
            .expect("a known category");
        let retryable = error["retryable"].as_bool().expect("a boolean");
        let message = error["message"].as_str().expect("a message");
        let rendered = cos(&error_envelope(category, retryable, message));
        assert_eq!(rendered, example);
    }
}

#[test]
fn the_schema_refuses_what_the_contract_rules_out() {
    let error = |error: Value| json!({"ok": false, "error": error});
    let full = json!({"category": "validation", "retryable": false, "message": "m"});
    assert_valid(&error(full.clone()));
    // Exactly category, retryable and message.
    let mut extra = full.clone();
    extra["code"] = json!("STALE_CONTINUATION");
    assert_invalid(&error(extra));
    for missing in ["category", "retryable", "message"] {
        let mut cut = full.clone();
        cut.as_object_mut().map(|error| error.remove(missing));
        assert_invalid(&error(cut));
    }
    let mut unknown = full.clone();
    unknown["category"] = json!("timeout");
    assert_invalid(&error(unknown));
    // ok decides the branch; success needs data.meta with its stamps.
    assert_invalid(&json!({"ok": true, "error": full}));
    assert_invalid(&json!({"ok": false, "data": {}}));
    assert_invalid(&json!({"ok": true, "data": {"x": 1}}));
    assert_invalid(&json!({"ok": true, "data": {"meta": {"truncated": false}}}));
    assert_invalid(
        &json!({"ok": true, "data": {"meta": {"tokens_estimated": 1, "truncated": "no"}}}),
    );
    assert_invalid(
        &json!({"ok": true, "data": {"meta": {"tokens_estimated": 1, "truncated": true, "truncated_results_from": "many"}}}),
    );
    assert_valid(
        &json!({"ok": true, "data": {"meta": {"tokens_estimated": 1, "truncated": false}}}),
    );
    // "data is whatever the tool produced — a dict, a list, a scalar, or even null".
    for data in [
        json!(null),
        json!([1, {"a": 2}]),
        json!(7),
        json!("done"),
        json!(true),
    ] {
        assert_valid(&json!({"ok": true, "data": data}));
    }
}

// ---------------------------------------------------------------------------------------------
// Error categories

#[test]
fn the_category_table_row_by_row() {
    // (category, retryable default) as the contract's table lists them, in its order.
    let table = [
        ("transient", true),
        ("validation", false),
        ("permission", false),
        ("not_found", false),
        ("unavailable", true),
        ("internal", false),
        ("module_disabled", false),
    ];
    let names: Vec<&str> = Category::ALL.iter().map(|c| c.as_str()).collect();
    let listed: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names, listed,
        "the same seven categories, in the same order"
    );
    let built = [
        ToolError::transient("timed out"),
        ToolError::validation("task_id is required"),
        ToolError::permission("read-only database"),
        ToolError::not_found("no task named T-1"),
        ToolError::unavailable("embeddings are not installed"),
        ToolError::internal("OperationalError: disk I/O error"),
    ];
    for (error, (name, retryable)) in built.into_iter().zip(table) {
        assert_eq!(error.category().as_str(), name);
        assert_eq!(error.retryable(), retryable, "{name}");
        let rendered = cos(&wire(&Envelope::<Value>::err(error)));
        assert_valid(&rendered);
        assert_eq!(rendered["error"]["category"], name);
        assert_eq!(rendered["error"]["retryable"], retryable, "{name}");
    }
    // module_disabled: emitted by the gate, never by tool bodies.
    assert!(!Category::ModuleDisabled.retryable_default());
    let claimed = ToolError::new(Category::ModuleDisabled, "off");
    assert_eq!(
        claimed.category(),
        Category::Internal,
        "tool code cannot claim it"
    );
    let gate = json!({"ok": false, "verdict": "ERROR",
        "error": {"category": "module_disabled", "code": "MODULE_DISABLED",
                  "message": "module `graph` is disabled on this server", "retryable": false,
                  "hint": "enable module `graph` in the server's configuration, or use another tool",
                  "data": {"module": "graph"}},
        "meta": {"request_id": "01M8Y668ZWS01APKW5MCT6BK9G"}});
    assert_eq!(
        cos(&gate),
        json!({"ok": false, "error": {"category": "module_disabled", "retryable": false,
                "message": "module `graph` is disabled on this server"}})
    );
}

#[test]
fn a_retryable_override_is_rendered_as_given() {
    // `fail(category, message, retryable=...)` when the default is wrong for one call.
    let busy = ToolError::validation("index is being rebuilt").with_retryable(true);
    assert_eq!(
        cos(&wire(&Envelope::<Value>::err(busy)))["error"]["retryable"],
        true
    );
    let gone = ToolError::transient("upstream removed").with_retryable(false);
    assert_eq!(
        cos(&wire(&Envelope::<Value>::err(gone)))["error"]["retryable"],
        false
    );
}

#[test]
fn an_error_is_exactly_category_retryable_and_message() {
    let search = NextAction::new(
        "search-again",
        Role::Retry,
        0,
        "search_text",
        json!({"query": "x"}),
        "re-run the search",
    )
    .expect("object arguments");
    let error = ToolError::validation("continuation is stale")
        .with_code("STALE_CONTINUATION")
        .with_hint("repeat the first call")
        .with_retry_after(Duration::from_millis(250))
        .with_data(json!({"field": "continuation"}))
        .with_recovery(search);
    let envelope = Envelope::<Value>::err(error)
        .with_warning(Notice::warning("unknown_arg", "ignored `foo`"))
        .with_summary_line("stale");
    let rendered = cos(&wire(&envelope));
    assert_eq!(
        rendered,
        json!({"ok": false, "error": {"category": "validation", "retryable": false,
                "message": "continuation is stale"}})
    );
    assert_valid(&rendered);
}

#[test]
fn an_internal_error_stays_masked() {
    let rendered = cos(&wire(&Envelope::<Value>::err(ToolError::internal(
        "OperationalError: no such table: tasks",
    ))));
    let message = rendered["error"]["message"].as_str().expect("a message");
    assert!(!message.contains("OperationalError"), "{message}");
    assert_eq!(rendered["error"]["category"], "internal");
}

// ---------------------------------------------------------------------------------------------
// The contract's testing section, literally

#[test]
fn the_testing_section_literally() {
    // result = server.cos_example("TASK-001"); payload = json.loads(result)
    let found = Envelope::ok(json!({"task_id": "TASK-001", "status": "done"}));
    let text = serde_json::to_string(&cos(&wire(&found))).expect("serializes");
    let payload: Value = serde_json::from_str(&text).expect("parses");
    assert_eq!(payload["ok"], json!(true));
    assert_eq!(payload["data"]["status"], "done");

    // payload = json.loads(server.cos_example(""))
    let refused = Envelope::<Value>::err(ToolError::validation("task_id is required"));
    let text = serde_json::to_string(&cos(&wire(&refused))).expect("serializes");
    let payload: Value = serde_json::from_str(&text).expect("parses");
    assert_eq!(payload["ok"], json!(false));
    assert_eq!(payload["error"]["category"], "validation");
    assert_eq!(payload["error"]["retryable"], json!(false));
}

// ---------------------------------------------------------------------------------------------
// data.meta: stamps and trimmer markers, from the real budget stage

#[test]
fn nothing_cut_means_truncated_false_and_no_markers() {
    let small = Envelope::ok(json!({"results": rows(3)}));
    let rendered = cos(&budgeted(small, BudgetPolicy::default()));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["truncated"], false);
    assert!(marker_keys(meta).is_empty(), "{meta:?}");
    assert!(!meta.contains_key("envelope_unshrinkable"));
}

#[test]
fn a_budget_cut_list_is_marked_with_its_from_and_to() {
    let page = Completeness::truncated_page(
        Unit::FILE,
        200,
        Some(900),
        TruncationReason::PageLimit,
        None,
    )
    .expect("a valid page");
    let envelope =
        Envelope::ok(json!({"results": rows(200), "query": "handler"})).with_completeness(page);
    let sent = budgeted(envelope, agent_budget(2_000));
    assert_eq!(
        sent["meta"]["truncated"], true,
        "the budget stage cut: {sent:#}"
    );
    let rendered = cos(&sent);
    assert_valid(&rendered);
    let kept = rendered["data"]["results"].as_array().map_or(0, Vec::len);
    assert!(kept < 200);
    let meta = block(&rendered);
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["truncated_results_from"], 200);
    assert_eq!(meta["truncated_results_to"], kept);
    // The cut is also in completeness, under the envelope's names.
    assert_eq!(meta["completeness"]["returned"], kept);
    assert_eq!(meta["completeness"]["total"], 900);
    let reasons = meta["completeness"]["truncation_reasons"].to_string();
    assert!(reasons.contains("budget_limit"), "{reasons}");
    assert!(
        meta["next_step"]
            .as_str()
            .is_some_and(|step| step.contains(&kept.to_string()))
    );
    // Every marker the envelope carried is in the block under its own name.
    for (key, value) in sent["meta"].as_object().expect("meta") {
        if key.starts_with("truncated_") {
            assert_eq!(&meta[key], value, "{key}");
        }
    }
}

#[test]
fn a_cut_root_list_reads_as_results() {
    let envelope = Envelope::ok(Value::Array(rows(200)));
    let sent = budgeted(envelope, agent_budget(2_000));
    assert_eq!(
        sent["meta"]["truncated_data_from"], 200,
        "{:#}",
        sent["meta"]
    );
    let rendered = cos(&sent);
    assert_valid(&rendered);
    let kept = rendered["data"]["results"].as_array().map_or(0, Vec::len);
    let meta = block(&rendered);
    assert_eq!(meta["truncated_results_from"], 200);
    assert_eq!(meta["truncated_results_to"], kept);
    assert!(!meta.contains_key("truncated_data_from"));
    assert_eq!(
        rendered["data"].as_object().map(|d| d.len()),
        Some(2),
        "results and meta only"
    );
}

#[test]
fn long_strings_are_cut_and_named_short_scalars_never() {
    let long = "a detailed description of the risk ".repeat(150);
    let envelope =
        Envelope::ok(json!({"risk_level": "high", "status": "open", "description": long}));
    let rendered = cos(&budgeted(envelope, agent_budget(2_000)));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["truncated"], true);
    assert_eq!(meta["truncated_string_fields"], json!(["/description"]));
    let cut = rendered["data"]["description"].as_str().expect("a string");
    assert!(cut.ends_with(TRUNCATION_SUFFIX));
    assert_eq!(rendered["data"]["risk_level"], "high");
    assert_eq!(rendered["data"]["status"], "open");
    assert_eq!(LONG_STRING_CHARS, 200, "the contract's scalar trim floor");
}

#[test]
fn a_cut_scalar_payload_points_into_value() {
    let envelope = Envelope::ok(json!("x".repeat(5_000)));
    let rendered = cos(&budgeted(envelope, agent_budget(2_000)));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["truncated_string_fields"], json!(["/value"]));
    let value = rendered["data"]["value"]
        .as_str()
        .expect("the scalar, under value");
    assert!(value.ends_with(TRUNCATION_SUFFIX));
}

#[test]
fn edges_by_type_buckets_are_marked_per_kind() {
    let edges = |kind: &str| -> Vec<Value> {
        (0..150)
            .map(|i| json!({"source": format!("{kind}:a{i}"), "target": format!("{kind}:b{i}")}))
            .collect()
    };
    let envelope = Envelope::ok(
        json!({"edges_by_type": {"calls": edges("calls"), "imports": edges("imports")}}),
    );
    let rendered = cos(&budgeted(envelope, agent_budget(2_000)));
    assert_valid(&rendered);
    let meta = block(&rendered);
    let marker = meta["truncated_edges_by_type"]
        .as_object()
        .expect("a per-bucket record");
    for (kind, cut) in marker {
        let kept = rendered["data"]["edges_by_type"][kind]
            .as_array()
            .map_or(0, Vec::len);
        assert_eq!(cut["from"], 150, "{kind}");
        assert_eq!(cut["to"], kept, "{kind}");
    }
    assert!(!marker.is_empty());
    // The schema holds the record to its `{kind: {from, to}}` shape.
    for odd in [
        json!("x"),
        json!({"calls": 3}),
        json!({"calls": {"from": 1}}),
    ] {
        let mut refused = rendered.clone();
        refused["data"]["meta"]["truncated_edges_by_type"] = odd;
        assert_invalid(&refused);
    }
}

#[test]
fn a_graph_payload_is_cut_coherently_and_says_so() {
    let nodes: Vec<Value> = (0..400)
        .map(|i| json!({"id": format!("n{i}"), "label": format!("node {i}")}))
        .collect();
    let edges: Vec<Value> = (1..400)
        .map(|i| json!({"source": "n0", "target": format!("n{i}"), "kind": "contains"}))
        .collect();
    let envelope = Envelope::ok(json!({"nodes": nodes, "edges": edges}));
    let policy = BudgetPolicy::default().with_graph_chars(5_000);
    let rendered = cos(&budgeted(envelope, policy));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["truncated_subgraph"], true, "{meta:?}");
    assert_eq!(meta["truncated_nodes_from"], 400);
    assert_eq!(meta["truncated_edges_from"], 399);
    let kept_nodes = rendered["data"]["nodes"].as_array().map_or(0, Vec::len);
    let kept_edges = rendered["data"]["edges"].as_array().map_or(0, Vec::len);
    assert_eq!(meta["truncated_nodes_to"], kept_nodes);
    assert_eq!(meta["truncated_edges_to"], kept_edges);
}

#[test]
fn an_unshrinkable_answer_says_so() {
    // Short scalars are never cut, so many of them cannot be brought under the budget.
    let fields: serde_json::Map<String, Value> = (0..400)
        .map(|i| (format!("field_{i}"), json!("high")))
        .collect();
    let rendered = cos(&budgeted(
        Envelope::ok(Value::Object(fields)),
        agent_budget(2_000),
    ));
    assert_valid(&rendered);
    assert_eq!(block(&rendered)["envelope_unshrinkable"], true);
}

#[test]
fn the_browser_opt_out_never_trims_nor_calls_itself_unshrinkable() {
    let rendered = cos(&budgeted(
        Envelope::ok(json!({"results": rows(2_000)})),
        BudgetPolicy::unlimited(),
    ));
    assert_valid(&rendered);
    assert_eq!(
        rendered["data"]["results"].as_array().map(Vec::len),
        Some(2_000)
    );
    let meta = block(&rendered);
    assert_eq!(meta["truncated"], false);
    assert!(marker_keys(meta).is_empty());
    assert!(!meta.contains_key("envelope_unshrinkable"));
}

#[test]
fn the_budget_tiers_and_trimmable_keys_are_the_contracts() {
    assert_eq!(AGENT_BUDGET_CHARS, 32_000, "TOKEN_BUDGET_CHARS");
    assert_eq!(
        GRAPH_SUBGRAPH_BUDGET_CHARS, 5_000_000,
        "GRAPH_SUBGRAPH_BUDGET_CHARS"
    );
    let contract = [
        "results",
        "neighbours",
        "references",
        "edges",
        "nodes",
        "processes",
        "call_sites",
        "import_sites",
        "doc_references",
        "test_references",
        "string_literals",
        "external_targets",
        "branches",
        "steps",
        "http_routes",
        "mcp_tools",
        "grpc_endpoints",
        "event_handlers",
        "websocket",
        "nodes_top",
        "samples",
        "rows",
        "entries",
        "cycles",
        "untested",
        "dead",
    ];
    assert_eq!(TRIMMABLE_LIST_KEYS, contract.as_slice());
}

#[test]
fn tokens_estimated_counts_the_whole_response_itself_included() {
    let estimator = Estimator::default();
    for payload in [
        json!({"status": "done"}),
        json!([1, 2, 3]),
        json!("配置文件未找到，请检查路径设置"),
    ] {
        let rendered = cos(&wire(&Envelope::ok(payload)));
        let text = serde_json::to_string(&rendered).expect("serializes");
        assert_eq!(
            block(&rendered)["tokens_estimated"],
            estimator.estimate(&text),
            "{text}"
        );
    }
    // Script-aware: non-Latin text is not undercounted (about one token a character).
    let cjk = "配置文件未找到".repeat(20);
    let rendered = cos(&wire(&Envelope::ok(json!({"text": cjk}))));
    let tokens = block(&rendered)["tokens_estimated"].as_u64().unwrap_or(0);
    assert!(tokens >= 140, "{tokens}");
}

#[test]
fn a_declared_layer_is_stamped_and_an_undeclared_one_absent() {
    let mut envelope = Envelope::ok(json!({"hits": 3}));
    meta_stamp(&mut envelope).layer(Some("graph"));
    assert_eq!(block(&cos(&wire(&envelope)))["layer"], "graph");
    let plain = cos(&wire(&Envelope::ok(json!({"hits": 3}))));
    assert!(!block(&plain).contains_key("layer"));
}

// ---------------------------------------------------------------------------------------------
// Paging and the carried envelope signals

#[test]
fn an_agent_can_page_from_the_block_alone() {
    let arguments =
        json!({"query": "Envelope", "limit": 2, "continuation": "IQJrEY_kvkMABQmk03YoZ14q"});
    let next = NextAction::new(
        NEXT_PAGE,
        Role::BroadenScope,
        0,
        "search_text",
        arguments.clone(),
        "next page",
    )
    .expect("object arguments");
    let page =
        Completeness::truncated_page(Unit::FILE, 2, Some(532), TruncationReason::PageLimit, None)
            .expect("a valid page");
    let envelope = Envelope::ok(
        json!({"occurrences": [{"path": "README.md", "line": 8}, {"path": "README.md", "line": 29}],
                                       "target_ref": "MWsRj-QB7G7-CQBFbnZlbG9wZS94IhY8uZkdJR0"}),
    )
    .with_completeness(page)
    .with_next_actions([next]);
    let rendered = cos(&wire(&envelope));
    assert_valid(&rendered);
    let meta = block(&rendered);
    // (a) the answer was cut, and by how much.
    assert_eq!(meta["completeness"]["returned"], 2);
    assert_eq!(meta["completeness"]["total"], 532);
    assert_eq!(meta["completeness"]["truncated"], true);
    assert!(
        meta["next_step"]
            .as_str()
            .is_some_and(|step| step.contains("532"))
    );
    // (b) the call that fetches the next page, verbatim.
    let actions = meta["next_actions"].as_array().expect("next actions");
    let next = actions
        .iter()
        .find(|a| a["id"] == NEXT_PAGE)
        .expect("next-page");
    assert_eq!(next["tool"], "search_text");
    assert_eq!(next["arguments"], arguments);
    // The payload, its target ref included, is untouched.
    assert_eq!(
        rendered["data"]["target_ref"],
        "MWsRj-QB7G7-CQBFbnZlbG9wZS94IhY8uZkdJR0"
    );
}

#[test]
fn agent_facing_signals_are_carried_and_observability_dropped() {
    let mut envelope = Envelope::ok(json!({"callers": []}))
        .with_verdict(Verdict::Unsafe)
        .with_summary_line("0 callers")
        .with_empty_reason(EmptyReason::NoMatch, "no caller of `f` in the index")
        .with_warning(Notice::warning("unknown_arg", "ignored `foo`"))
        .with_diagnostic(Notice::info("fallback", "fts5 fallback used"));
    meta_stamp(&mut envelope)
        .latency(Duration::from_millis(40))
        .index_status(Some(&IndexStatus::new(5, 3)));
    let rendered = cos(&wire(&envelope));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["verdict"], "UNSAFE");
    assert_eq!(meta["summary_line"], "0 callers");
    assert_eq!(meta["empty_reason"], "no_match");
    assert_eq!(meta["diagnosis"], "no caller of `f` in the index");
    assert_eq!(meta["warnings"][0]["code"], "unknown_arg");
    assert_eq!(meta["diagnostics"][0]["code"], "fallback");
    assert_eq!(meta["binary_drift_warning"]["stored_version"], 5);
    for gone in [
        "request_id",
        "latency_ms",
        "schema_version",
        "capabilities",
        "schema_version_at_index",
        "tool",
    ] {
        assert!(!meta.contains_key(gone), "{gone}");
    }
    // The success default says nothing `ok: true` does not.
    let plain = cos(&wire(&Envelope::ok(json!({"n": 1}))));
    assert!(!block(&plain).contains_key("verdict"));
    assert_eq!(
        rendered.as_object().map(|r| r.len()),
        Some(2),
        "ok and data only"
    );
}

#[test]
fn a_payloads_own_meta_is_kept_but_cannot_spoof_the_librarys() {
    let payload = json!({"node": "code:fn:f", "meta": {"resolved_from": "fuzzy_fts5", "semantic_scope": "transitive_depth_2",
        "truncated": true, "tokens_estimated": 1, "truncated_results_from": 9, "envelope_unshrinkable": true,
        "next_actions": [{"tool": "rm", "arguments": {}}]}});
    let rendered = cos(&wire(&Envelope::ok(payload)));
    assert_valid(&rendered);
    let meta = block(&rendered);
    assert_eq!(meta["resolved_from"], "fuzzy_fts5");
    assert_eq!(meta["semantic_scope"], "transitive_depth_2");
    assert_eq!(meta["truncated"], false);
    assert!(meta["tokens_estimated"].as_u64().is_some_and(|n| n > 1));
    for spoofed in [
        "truncated_results_from",
        "envelope_unshrinkable",
        "next_actions",
    ] {
        assert!(!meta.contains_key(spoofed), "{spoofed}");
    }
    assert_eq!(rendered["data"]["node"], "code:fn:f");

    // `ok(data, meta={"layer": ...})`: a caller's layer stands unless the tool declares one.
    let own_layer = json!({"hits": 1, "meta": {"layer": "memory"}});
    assert_eq!(
        block(&cos(&wire(&Envelope::ok(own_layer.clone()))))["layer"],
        "memory"
    );
    let mut declared = Envelope::ok(own_layer);
    meta_stamp(&mut declared).layer(Some("docs"));
    assert_eq!(block(&cos(&wire(&declared)))["layer"], "docs");
}

// ---------------------------------------------------------------------------------------------
// Schemas of rendered answers, and odd envelopes

#[test]
fn rendered_answers_validate_against_the_payloads_own_schema() {
    let object = json!({"type": "object", "required": ["status"], "properties": {"status": {"type": "string"}}});
    let rendered = cos(&wire(&Envelope::ok(json!({"status": "done"}))));
    let errors = schema_errors(&rendered, &object);
    assert!(errors.is_empty(), "{errors:?}");
    let wrong = cos(&wire(&Envelope::ok(json!({"status": 3}))));
    assert!(!schema_errors(&wrong, &object).is_empty());

    let list = json!({"type": "array", "items": {"type": "integer"}});
    let rendered = cos(&wire(&Envelope::ok(json!([1, 2, 3]))));
    let errors = schema_errors(&rendered, &list);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(rendered["data"]["results"], json!([1, 2, 3]));

    let failed = cos(&wire(&Envelope::<Value>::err(ToolError::not_found(
        "no task",
    ))));
    assert!(schema_errors(&failed, &object).is_empty());
    let schema = schema(Dialect::Cos, &json!(true), None);
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
}

#[test]
fn odd_envelopes_degrade_and_never_panic() {
    // (envelope, whether its rendering is still a valid cos answer)
    let odd = [
        json!({}),
        json!(null),
        json!([1, 2]),
        json!("ok"),
        json!({"ok": true}),
        json!({"ok": true, "data": null}),
        json!({"ok": true, "data": [1, {"a": 2}]}),
        json!({"ok": true, "data": 7, "meta": "not an object"}),
        json!({"ok": true, "data": {"meta": 5}, "meta": {"truncated": "yes", "layer": 3}}),
        json!({"ok": true, "data": {}, "next_actions": {"id": "x"}, "warnings": "w", "completeness": [1]}),
        json!({"ok": true, "data": {}, "next_actions": [1, {"id": "no-tool"}, {"tool": "t", "arguments": []}], "verdict": "clean"}),
        json!({"ok": true, "data": [], "meta": {"truncated": true, "truncated_data_from": 3, "truncated_data_to": 0,
               "truncated_string_fields": [3, "/0"], "truncated_nested_lists": "odd"}}),
        json!({"ok": false}),
        json!({"ok": false, "error": "boom"}),
        json!({"ok": false, "error": {"message": 5}}),
        json!({"ok": false, "error": {"category": "validation", "retryable": "no", "message": "bad"}}),
        json!({"ok": false, "error": {"category": "not_a_category", "code": "E1"}}),
        json!({"ok": "true", "data": {"x": 1}}),
    ];
    for envelope in odd {
        let rendered = cos(&envelope);
        assert!(rendered["ok"].is_boolean(), "{envelope} -> {rendered}");
        assert_valid(&rendered);
    }
    // An error without a code or message still says what it can.
    let bare = cos(&json!({"ok": false, "error": {"category": "transient"}}));
    assert_eq!(
        bare,
        json!({"ok": false, "error": {"category": "transient", "retryable": true, "message": ""}})
    );
    let coded = cos(&json!({"ok": false, "error": {"code": "E1"}}));
    assert_eq!(coded["error"]["category"], "internal");
    assert_eq!(coded["error"]["message"], "E1");
}

// ---------------------------------------------------------------------------------------------
// The gap tables

#[test]
fn the_gap_tables_are_documented_sentences() {
    for (table, gaps) in [
        ("unexpressed", unexpressed(Dialect::Cos)),
        ("dropped", dropped(Dialect::Cos)),
    ] {
        assert!(gaps.len() >= 5, "{table}");
        let mut fields: Vec<&str> = gaps.iter().map(|gap| gap.field).collect();
        fields.sort_unstable();
        fields.dedup();
        assert_eq!(fields.len(), gaps.len(), "{table}: a field listed twice");
        for gap in gaps {
            let first = gap.why.chars().next().unwrap_or(' ');
            assert!(first.is_uppercase() || first == '`', "{table}: {}", gap.why);
            assert!(gap.why.ends_with('.'), "{table}: {}", gap.why);
            assert_eq!(
                gap.why.matches(". ").count(),
                0,
                "{table}: one sentence: {}",
                gap.why
            );
            assert!(
                !gap.why.to_lowercase().contains("seed"),
                "{table}: {}",
                gap.why
            );
        }
    }
    // The envelope's error fields this contract has no place for are each listed.
    let dropped: Vec<&str> = dropped(Dialect::Cos).iter().map(|gap| gap.field).collect();
    for field in [
        "error.code",
        "error.hint",
        "error.retry_after_ms",
        "error.data",
    ] {
        assert!(dropped.contains(&field), "{field}");
    }
}

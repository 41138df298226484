//! What the example promises an agent beyond each tool's data: the listing's tiers and hints, the
//! meta stamped on every answer, next actions that run, the module gate, strict arguments and
//! savings. Every capability tag the example stamps is proven here.

mod common;

use envelope_budget::Estimator;
use envelope_core::paging::Continuations;
use envelope_core::{Capability, RequestId};
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestParamsMeta};
use serde_json::{Value, json};

use common::calls::call;
use common::pages::{first_token, next_page};
use common::rmcp_client::connect_in_memory;
use common::tree::{TEXT_FILES, Tree, test_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_declares_tiers_and_read_only_idempotent_tools() {
    let tree = Tree::new("listing");
    let server = tree.server();
    let tools = server.tools();
    let listed: Vec<(&str, Value)> = tools
        .iter()
        .map(|tool| {
            let annotations = tool.annotations.as_ref().expect("annotated");
            assert_eq!(annotations.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(annotations.idempotent_hint, Some(true), "{}", tool.name);
            // Read-only: a destructive hint would mean nothing, so none is listed.
            assert_eq!(annotations.destructive_hint, None, "{}", tool.name);
            // The workspace is a closed world, and the example says so.
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.title.is_some(), "{}", tool.name);
            // Only the tools that page advertise `continuation`.
            let pages = matches!(tool.name.as_ref(), "search_text" | "list_files");
            let properties = tool.input_schema.get("properties").expect("properties");
            assert_eq!(
                properties.get("continuation").is_some(),
                pages,
                "{}",
                tool.name
            );
            assert!(tool.output_schema.is_some(), "{}", tool.name);
            let meta = tool.meta.as_ref().expect("meta");
            (
                tool.name.as_ref(),
                meta.get("rs.envelope/tier").cloned().expect("tier"),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("change_impact", json!("standard")),
            ("graph_export", json!("heavy")),
            ("list_files", json!("lite")),
            ("read_file", json!("lite")),
            ("search_text", json!("lite")),
            ("workspace_stats", json!("standard")),
        ]
    );
    let tools = server.tools();
    let search = tools
        .iter()
        .find(|tool| tool.name == "search_text")
        .expect("listed");
    let properties = search.input_schema["properties"]
        .as_object()
        .expect("properties");
    for key in ["query", "regex", "path_glob", "limit", "continuation"] {
        assert!(properties.contains_key(key), "{key}");
    }
    // The lean listing says the shaping controls once, in the instructions, not per tool.
    for key in ["response_mode", "output_format", "compact_only"] {
        assert!(!properties.contains_key(key), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_carries_the_stamped_meta() {
    let tree = Tree::new("meta");
    let server = tree.server();
    let prepared = server
        .call(
            "search_text",
            json!({"query": "needle", "response_mode": "full"}),
        )
        .await
        .expect("a tool of this server");
    let meta = &prepared.structured["meta"];
    assert!(
        RequestId::parse(meta["request_id"].as_str().expect("request id")).is_ok(),
        "{meta:#}"
    );
    assert_eq!(meta["tool"], "search_text");
    assert_eq!(meta["complexity_tier"], "lite");
    assert_eq!(meta["idempotent"], true);
    assert_eq!(meta["truncated"], false);
    // `tokens_estimated` counts the bytes sent, itself included.
    assert_eq!(
        meta["tokens_estimated"],
        Estimator::default().estimate(&prepared.json)
    );
    assert_eq!(meta["capabilities"], json!(server.capabilities()));
    assert!(!server.capabilities().contains(&Capability::STREAMABLE_HTTP));

    // Errors use the one shape, with the verdict alphabet's ERROR.
    let failed = call(&server, "read_file", json!({"path": "nope"})).await;
    assert_eq!(failed["verdict"], "ERROR");
    assert!(failed["meta"]["request_id"].is_string());
    assert!(failed["error"]["message"].is_string());

    let toon = server
        .call("list_files", json!({"limit": 2, "output_format": "toon"}))
        .await
        .expect("a tool of this server");
    let text = toon.toon.as_deref().expect("rendered as TOON");
    assert!(text.contains("ok: true"), "{text}");
    assert_eq!(toon.text(), text);
}

/// Every capability tag the server advertises is a promise an agent gates on: each is probed
/// here by the behaviour it names, and a tag without a probe fails the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_capability_is_probed() {
    let tree = Tree::new("capabilities");
    let server = tree.server();
    let advertised = server.capabilities().to_vec();
    // Everything the example supports: it trims to a budget and seals paging tokens; it is
    // not on HTTP here.
    assert_eq!(
        advertised,
        [
            Capability::STANDARDIZED_ERROR_ENVELOPE,
            Capability::CANONICAL_VERDICTS,
            Capability::REQUEST_IDS,
            Capability::COMPLEXITY_TIER,
            Capability::IDEMPOTENCY_DECLARED,
            Capability::TOKENS_ESTIMATED,
            Capability::BUDGET_TRIMMING,
            Capability::COMPLETENESS,
            Capability::NEXT_ACTIONS,
            Capability::CONTINUATIONS,
            Capability::TOON_OUTPUT,
            Capability::PROGRESS,
        ]
    );

    // Where an agent looks first: the `initialize` result, then every result's `_meta`.
    let (client, handler) = connect_in_memory(server.clone()).await;
    let info = client.peer_info().expect("initialized");
    let key = "rs.envelope/capabilities";
    assert_eq!(
        info.meta.as_ref().and_then(|meta| meta.get(key)),
        Some(&json!(advertised))
    );
    let mut params = CallToolRequestParams::new("workspace_stats");
    params.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    let result = client.call_tool(params).await.expect("answers");
    assert_eq!(
        result.meta.as_ref().and_then(|meta| meta.get(key)),
        Some(&json!(advertised))
    );

    let listing = server.tools();
    for tag in &advertised {
        match tag.as_str() {
            "standardized_error_envelope" => {
                let failed = call(&server, "read_file", json!({"path": "nope"})).await;
                assert_eq!(failed["ok"], false);
                let error = &failed["error"];
                assert!(
                    serde_json::from_value::<envelope_core::Category>(error["category"].clone())
                        .is_ok(),
                    "{error}"
                );
                assert!(error["message"].is_string() && error["retryable"].is_boolean());
            }
            "canonical_verdicts" => {
                for (tool, arguments) in [
                    ("list_files", json!({})),
                    ("search_text", json!({"query": "absent-everywhere"})),
                    ("read_file", json!({"path": "nope"})),
                ] {
                    let verdict = call(&server, tool, arguments).await["verdict"].clone();
                    assert!(
                        serde_json::from_value::<envelope_core::Verdict>(verdict.clone()).is_ok(),
                        "{tool}: {verdict}"
                    );
                }
            }
            "request_ids" => {
                let envelope = call(&server, "list_files", json!({})).await;
                let id = envelope["meta"]["request_id"].as_str().expect("an id");
                assert!(RequestId::parse(id).is_ok(), "{id}");
            }
            "complexity_tier" | "idempotency_declared" => {
                for tool in listing.iter() {
                    // In full, `meta` carries the tier the listing declares.
                    let arguments = match tool.name.as_ref() {
                        "read_file" => json!({"path": "README.md", "response_mode": "full"}),
                        "search_text" => json!({"query": "needle", "response_mode": "full"}),
                        _ => json!({"response_mode": "full"}),
                    };
                    let envelope = call(&server, &tool.name, arguments).await;
                    let meta = tool.meta.as_ref().expect("listed meta");
                    assert_eq!(
                        Some(&envelope["meta"]["complexity_tier"]),
                        meta.get("rs.envelope/tier")
                    );
                    let declared = tool
                        .annotations
                        .as_ref()
                        .and_then(|hints| hints.idempotent_hint);
                    assert_eq!(
                        envelope["meta"]["idempotent"],
                        json!(declared.unwrap_or(false))
                    );
                }
            }
            "tokens_estimated" => {
                // Stamped under `response_mode: full`, of the bytes sent, itself included.
                let prepared = server
                    .call(
                        "search_text",
                        json!({"query": "needle", "response_mode": "full"}),
                    )
                    .await
                    .expect("a tool of this server");
                assert_eq!(
                    prepared.structured["meta"]["tokens_estimated"],
                    Estimator::default().estimate(&prepared.json)
                );
            }
            "budget_trimming" => {
                let envelope = call(&server, "read_file", json!({"path": "long.txt"})).await;
                assert_eq!(envelope["meta"]["truncated"], true);
                assert_eq!(
                    envelope["meta"]["truncated_string_fields"],
                    json!(["/content"])
                );
            }
            "completeness" => {
                let envelope = call(&server, "list_files", json!({"limit": 2})).await;
                let completeness: envelope_core::Completeness =
                    serde_json::from_value(envelope["completeness"].clone())
                        .expect("a completeness that keeps its invariants");
                assert_eq!(completeness.returned(), 2);
                assert_eq!(completeness.total(), Some(TEXT_FILES.len()));
            }
            "next_actions" => {
                let arguments = json!({"query": "need.*here", "path_glob": "*.md"});
                let envelope = call(&server, "search_text", arguments).await;
                let actions = envelope["next_actions"].as_array().expect("actions");
                assert!(!actions.is_empty());
                for action in actions {
                    let tool = action["tool"].as_str().expect("a tool");
                    assert!(listing.iter().any(|listed| listed.name == tool), "{action}");
                    let followed = call(&server, tool, action["arguments"].clone()).await;
                    assert_eq!(followed["ok"], true, "{followed:#}");
                }
            }
            "continuations" => {
                let token = first_token(&server).await;
                let page = next_page(&server, &token).await;
                assert_eq!(page["ok"], true, "{page:#}");
                assert_eq!(page["completeness"]["returned"], 2);
            }
            "toon_output" => {
                let prepared = server
                    .call("list_files", json!({"output_format": "toon"}))
                    .await
                    .expect("a tool of this server");
                let text = prepared.toon.as_deref().expect("rendered as TOON");
                assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
                assert!(text.contains("ok: true"), "{text}");
            }
            "progress" => {
                // The `workspace_stats` call above carried a progress token.
                assert!(!handler.wait_for_progress(1).await.is_empty());
            }
            other => panic!("`{other}` is advertised, but no probe here proves it"),
        }
    }
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_suggested_action_names_a_served_tool_with_valid_arguments() {
    let tree = Tree::new("actions");
    let server = tree.server();
    // Each tool's input schema and its validator. The schemas allow unknown keys (a tool only
    // warns about them), so suggested arguments are also checked against the declared ones.
    let inputs: std::collections::BTreeMap<String, (Value, jsonschema::Validator)> = server
        .tools()
        .iter()
        .map(|tool| {
            let schema = Value::Object((*tool.input_schema).clone());
            let validator = jsonschema::validator_for(&schema).expect("a valid schema");
            (tool.name.to_string(), (schema, validator))
        })
        .collect();
    let calls = [
        ("search_text", json!({"query": "needle", "limit": 2})),
        ("search_text", json!({"query": "need+le"})),
        (
            "search_text",
            json!({"query": "needle", "path_glob": "*.nothing"}),
        ),
        ("search_text", json!({"query": "absent-word"})),
        ("list_files", json!({"limit": 2})),
        ("list_files", json!({"glob": "*.nothing"})),
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "missing.md"})),
        ("workspace_stats", json!({})),
        ("graph_export", json!({"max_nodes": 2})),
    ];
    let mut seen = 0;
    for (tool, arguments) in calls {
        let envelope = call(&server, tool, arguments).await;
        for action in envelope["next_actions"].as_array().into_iter().flatten() {
            let target = action["tool"].as_str().expect("a tool name");
            let (schema, input) = inputs
                .get(target)
                .unwrap_or_else(|| panic!("{tool} suggests `{target}`, which is not served"));
            assert!(
                input.is_valid(&action["arguments"]),
                "{tool} suggests {action:#}, which fails `{target}`'s input schema"
            );
            let declared = schema["properties"]
                .as_object()
                .expect("declared properties");
            for key in action["arguments"].as_object().expect("an object").keys() {
                assert!(
                    declared.contains_key(key),
                    "{tool} suggests `{key}`, which `{target}` does not declare"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 4, "only {seen} actions were suggested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_shows_the_gate_strict_arguments_and_savings_on_the_wire() {
    let tree = Tree::new("whole-contract");
    // A module switched off answers `module_disabled`; the other tools still serve.
    let gated = workspace_server::server(
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory"),
        Continuations::new(test_key()),
        &["graph".to_owned()],
    );
    let graph = call(&gated, "graph_export", json!({})).await;
    assert_eq!(graph["error"]["category"], "module_disabled", "{graph:#}");
    let listed = call(&gated, "list_files", json!({})).await;
    assert_eq!(listed["ok"], true, "{listed:#}");

    // `list_files` takes no argument it does not know.
    let server = tree.server();
    let typo = call(&server, "list_files", json!({"globb": "*.rs"})).await;
    assert_eq!(typo["error"]["category"], "validation", "{typo:#}");
    let lenient = call(
        &server,
        "search_text",
        json!({"query": "needle", "globb": 1}),
    )
    .await;
    assert_eq!(lenient["ok"], true, "{lenient:#}");

    // `search_text` declares what a recursive grep would have cost; full meta shows savings.
    let full = json!({"query": "needle", "response_mode": "full"});
    let found = call(&server, "search_text", full).await;
    let meta = &found["meta"];
    assert_eq!(meta["baseline_method"], "grep_recursive", "{meta:#}");
    assert!(meta["tokens_saved"].is_i64(), "{meta:#}");
}

//! The server over an in-memory duplex, driven by rmcp's own client the way any MCP client
//! would drive it.

use std::sync::LazyLock;

use envelope_core::{
    Capability, DependencyMode, EmptyReason, IndexStatus, NextAction, Reply, Role, SCHEMA_VERSION,
    ToolContext, ToolError, ToolResult, tool, toolset,
};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer, META_PREFIX};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestParamsMeta};
use rmcp::service::RunningService;
use serde_json::{Value, json};

mod common;

use common::rmcp_client::{ProgressClient, connect_in_memory};
use common::tools::{EchoArgs, echo};

/// Echo a text, refusing unknown arguments.
#[tool(tier = lite, read_only, strict_args)]
fn strict_echo(args: EchoArgs) -> ToolResult<String> {
    Ok(args.text)
}

/// Count to three, reporting progress.
#[tool(tier = standard, read_only)]
async fn count(ctx: &ToolContext) -> ToolResult<u32> {
    for step in 1..=3 {
        ctx.report_progress(f64::from(step), Some(3.0), Some("counting"));
        tokio::task::yield_now().await;
    }
    Ok(3)
}

/// Always fails as not found.
#[tool(tier = lite)]
fn missing() -> ToolResult<()> {
    Err(ToolError::not_found("no such thing"))
}

/// Suggests six follow-ups, of which the server can run one.
#[tool(tier = lite, read_only)]
fn suggest() -> ToolResult<Reply<&'static str>> {
    let runnable = NextAction::call::<echo>(
        "echo",
        Role::Inspect,
        0,
        EchoArgs {
            text: "again".into(),
            times: Some(2),
        },
        "echo it twice",
    )?;
    let bad_arguments = NextAction::new(
        "bad",
        Role::Retry,
        0,
        "echo",
        json!({"text": "x", "times": "many"}),
        "times is not a number",
    )?;
    let not_served = NextAction::new(
        "elsewhere",
        Role::Diagnose,
        0,
        "nowhere",
        json!({}),
        "no such tool here",
    )?;
    let after_bad = NextAction::new(
        "after",
        Role::VerifyExact,
        1,
        "echo",
        json!({"text": "then"}),
        "runs after the bad one",
    )?
    .after(DependencyMode::All, ["bad"]);
    let unknown_to_strict = NextAction::new(
        "strict",
        Role::Retry,
        0,
        "strict_echo",
        json!({"text": "x", "loud": true}),
        "a strict tool refuses `loud`",
    )?;
    let switched_off = NextAction::new(
        "bill",
        Role::Inspect,
        0,
        "invoice",
        json!({}),
        "its module is disabled on this server",
    )?;
    Ok(Reply::new("suggested").next_actions([
        runnable,
        bad_arguments,
        not_served,
        after_bad,
        switched_off,
        unknown_to_strict,
    ]))
}

/// A tool in a switched-off module.
#[tool(
    tier = lite,
    module = "billing",
    title = "Send an invoice",
    destructive = false,
    open_world,
    idempotent = false
)]
fn invoice() -> ToolResult<Reply<&'static str>> {
    Ok(Reply::new("invoiced"))
}

async fn connect() -> (RunningService<RoleClient, ProgressClient>, ProgressClient) {
    connect_in_memory(EnvelopeServer::new(
        toolset![echo, count, missing, invoice, suggest, strict_echo],
        EnvelopeConfig::new("test-server", "1.2.3")
            .with_instructions("test instructions")
            .disable_module("billing"),
    ))
    .await
}

fn call(name: &'static str, arguments: Value) -> CallToolRequestParams {
    let Value::Object(arguments) = arguments else {
        panic!("arguments are an object")
    };
    CallToolRequestParams::new(name).with_arguments(arguments)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_info_and_sorted_listing() {
    let (client, _) = connect().await;
    let info = client.peer_info().expect("initialized");
    let server = info.server_info.clone().expect("server info");
    assert_eq!(server.name, "test-server");
    assert_eq!(server.version, "1.2.3");
    // The author's instructions, then the shaping controls the lean listing lists once.
    let instructions = info.instructions.as_deref().expect("instructions");
    assert!(
        instructions.starts_with("test instructions\n\nEvery tool also accepts"),
        "{instructions}"
    );
    for control in ["response_mode", "output_format", "compact_only"] {
        assert_eq!(instructions.matches(&format!("`{control}`")).count(), 1);
    }
    let tools = client.list_tools(None).await.expect("lists").tools;
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(
        names,
        [
            "count",
            "echo",
            "invoice",
            "missing",
            "strict_echo",
            "suggest"
        ]
    );
    let echo = &tools[1];
    assert_eq!(echo.description.as_deref(), Some("Echo a text."));
    // Regression test for #11: only what the author declared is listed. `read_only` implies
    // `idempotent`; `destructive` and `open_world` were not declared, so they are absent (and
    // mean nothing next to `readOnlyHint: true`).
    let annotations = serde_json::to_value(echo.annotations.as_ref().expect("annotated"))
        .expect("annotations serialize");
    assert_eq!(
        annotations,
        json!({"readOnlyHint": true, "idempotentHint": true})
    );
    // A plain `#[tool(tier = lite)]` claims nothing: a client applies MCP's defaults, which
    // treat it as destructive and open-world.
    let missing = tools.iter().find(|t| t.name == "missing").expect("listed");
    let hints = missing.annotations.clone().unwrap_or_default();
    assert_eq!(hints, rmcp::model::ToolAnnotations::default());
    assert!(hints.is_destructive());
    let wire = serde_json::to_value(missing).expect("a tool serializes");
    // Nothing declared, nothing listed: not even an empty `annotations`.
    assert!(wire.get("annotations").is_none(), "{wire}");
    // Declared hints, `false` included, and the title are listed as written.
    let invoice = tools.iter().find(|t| t.name == "invoice").expect("listed");
    let wire = serde_json::to_value(invoice).expect("a tool serializes");
    assert_eq!(wire["title"], "Send an invoice");
    assert_eq!(
        wire["annotations"],
        json!({"title": "Send an invoice", "destructiveHint": false, "openWorldHint": true, "idempotentHint": false})
    );
    let meta = echo.meta.as_ref().expect("meta");
    assert_eq!(
        meta.get(&format!("{META_PREFIX}tier")),
        Some(&json!("lite"))
    );
    assert_eq!(
        meta.get(&format!("{META_PREFIX}layer")),
        Some(&json!("test"))
    );
    assert!(
        echo.input_schema
            .get("properties")
            .and_then(|p| p.get("text"))
            .is_some()
    );
    assert!(
        echo.output_schema
            .as_ref()
            .expect("output schema")
            .get("oneOf")
            .is_some()
    );
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn next_actions_the_server_cannot_run_are_dropped() {
    let (client, _) = connect().await;
    let result = client
        .call_tool(call("suggest", json!({})))
        .await
        .expect("answers");
    let envelope = result.structured_content.expect("structured");
    let actions = envelope["next_actions"].as_array().expect("actions");
    // The unserved tool, the switched-off one, the bad arguments and the argument a strict
    // tool refuses are dropped; normalizing again drops the action that depended on the bad
    // one, since its prerequisite is gone.
    let ids: Vec<&str> = actions.iter().filter_map(|a| a["id"].as_str()).collect();
    assert_eq!(ids, ["echo"]);
    assert_eq!(actions[0]["tool"], "echo");
    assert_eq!(
        actions[0]["arguments"],
        json!({"text": "again", "times": 2})
    );
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ok_call_maps_onto_mcp() {
    let (client, _) = connect().await;
    let result = client
        .call_tool(call("echo", json!({"text": "ab", "times": 2})))
        .await
        .expect("answers");
    assert_eq!(result.is_error, Some(false));
    let envelope = result.structured_content.clone().expect("structured");
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["data"]["echo"], "abab");
    let text = result.content[0]
        .as_text()
        .expect("text content")
        .text
        .clone();
    let mirrored: Value = serde_json::from_str(&text).expect("the text mirrors the envelope");
    assert_eq!(mirrored, envelope);
    let meta = result.meta.as_ref().expect("result meta");
    assert_eq!(
        meta.get(&format!("{META_PREFIX}request_id")),
        Some(&envelope["meta"]["request_id"])
    );
    assert_eq!(
        meta.get(&format!("{META_PREFIX}tier")),
        Some(&json!("lite"))
    );
    // The compact mode leaves the observability stamps to `response_mode: full`.
    assert!(
        envelope["meta"].get("tokens_estimated").is_none(),
        "{envelope}"
    );
    let full = client
        .call_tool(call(
            "echo",
            json!({"text": "ab", "times": 2, "response_mode": "full"}),
        ))
        .await
        .expect("answers");
    let envelope = full.structured_content.expect("structured");
    assert!(envelope["meta"]["tokens_estimated"].is_u64(), "{envelope}");
    assert_eq!(envelope["meta"]["tool"], "echo");
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_are_is_error_results_and_unknown_tools_are_json_rpc_errors() {
    let (client, _) = connect().await;
    let bad = client
        .call_tool(call("echo", json!({"text": 5})))
        .await
        .expect("answers");
    assert_eq!(bad.is_error, Some(true));
    let envelope = bad.structured_content.expect("structured");
    assert_eq!(envelope["error"]["category"], "validation");
    assert_eq!(envelope["error"]["data"]["field"], "text");

    let missing = client
        .call_tool(call("missing", json!({})))
        .await
        .expect("answers");
    assert_eq!(missing.is_error, Some(true));
    assert_eq!(
        missing.structured_content.expect("structured")["error"]["category"],
        "not_found"
    );

    let disabled = client
        .call_tool(call("invoice", json!({})))
        .await
        .expect("answers");
    assert_eq!(
        disabled.structured_content.expect("structured")["error"]["category"],
        "module_disabled"
    );

    let unknown = client
        .call_tool(call("nope", json!({})))
        .await
        .expect_err("not a tool");
    let text = format!("{unknown:?}");
    assert!(
        text.contains("-32602") || text.contains("InvalidParams") || text.contains("32602"),
        "{text}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_reaches_the_client() {
    let (client, handler) = connect().await;
    let mut params = call("count", json!({}));
    params.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    let result = client.call_tool(params).await.expect("answers");
    assert_eq!(result.structured_content.expect("structured")["data"], 3);
    let mut seen: Vec<f64> = handler
        .wait_for_progress(3)
        .await
        .into_iter()
        .map(|(progress, _)| progress)
        .collect();
    seen.sort_by(f64::total_cmp);
    assert_eq!(seen, [1.0, 2.0, 3.0]);
    client.cancel().await.expect("closes");
}

/// How `strict_pace` runs: the arguments are an enum, so its schema has no plain properties.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(tag = "pace", rename_all = "snake_case")]
enum PaceArgs {
    /// Quickly, this deep.
    Fast {
        /// How deep.
        depth: u32,
    },
    /// Slowly.
    Slow,
}

/// Runs at a pace, refusing unknown arguments.
#[tool(tier = lite, read_only, strict_args)]
fn strict_pace(args: PaceArgs) -> ToolResult<&'static str> {
    Ok(match args {
        PaceArgs::Fast { .. } => "fast",
        PaceArgs::Slow => "slow",
    })
}

/// Suggests `strict_pace` twice: with its own arguments, and with one it does not take.
#[tool(tier = lite, read_only)]
fn suggest_pace() -> ToolResult<Reply<&'static str>> {
    let runnable =
        NextAction::call::<strict_pace>("fast", Role::Retry, 0, PaceArgs::Fast { depth: 3 }, "go")?;
    let refused = NextAction::new(
        "loud",
        Role::Retry,
        0,
        "strict_pace",
        json!({"pace": "slow", "loud": true}),
        "a strict tool refuses `loud`",
    )?;
    Ok(Reply::new("suggested").next_actions([runnable, refused]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_strict_tool_taking_an_enum_keeps_the_actions_it_would_run() {
    let server = EnvelopeServer::new(
        toolset![strict_pace, suggest_pace],
        EnvelopeConfig::new("test-server", "1.2.3"),
    );
    // The tool itself accepts the enum's fields and refuses anything else.
    let ran = server
        .call("strict_pace", json!({"pace": "fast", "depth": 3}))
        .await
        .expect("served");
    assert_eq!(ran.structured["data"], "fast", "{}", ran.json);
    let refused = server
        .call("strict_pace", json!({"pace": "slow", "loud": true}))
        .await
        .expect("served");
    assert_eq!(refused.structured["error"]["category"], "validation");
    // So the server keeps the suggestion it would run and drops the one it would refuse.
    let suggested = server
        .call("suggest_pace", json!({}))
        .await
        .expect("served");
    let actions = suggested.structured["next_actions"]
        .as_array()
        .expect("actions");
    let ids: Vec<&str> = actions.iter().filter_map(|a| a["id"].as_str()).collect();
    assert_eq!(ids, ["fast"], "{}", suggested.json);
    assert_eq!(actions[0]["arguments"], json!({"pace": "fast", "depth": 3}));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn toon_is_the_text_channel_on_request() {
    let (client, _) = connect().await;
    let result = client
        .call_tool(call("echo", json!({"text": "x", "output_format": "toon"})))
        .await
        .expect("answers");
    let text = result.content[0].as_text().expect("text").text.clone();
    assert!(text.contains("ok: true"), "{text}");
    assert_eq!(result.structured_content.expect("structured")["ok"], true);
    client.cancel().await.expect("closes");
}

/// Answers from an index: empty, and says `stale_index` when the server reports that the index
/// predates the binary's schema.
#[tool(tier = lite, read_only)]
fn lookup(ctx: &ToolContext) -> ToolResult<Reply<Vec<String>>> {
    let reply = Reply::new(Vec::new());
    Ok(match ctx.index_status() {
        Some(status) if status.is_stale() => reply.empty(
            EmptyReason::StaleIndex,
            format!(
                "the index was written with schema {}, this server reads {}; reindex",
                status.schema_version_at_index(),
                status.running_version()
            ),
        ),
        _ => reply.empty(EmptyReason::NoMatch, "nothing matched"),
    })
}

/// Costs more than its declared baseline.
#[tool(tier = lite, read_only)]
fn expensive() -> ToolResult<Reply<Vec<String>>> {
    Ok(Reply::new(vec!["a long enough row".to_owned(); 20]).baseline("grep_recursive", 3))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reported_index_state_is_stamped_and_explains_stale_index() {
    // Regression test for #11: these fields could only be set from a hidden module.
    let stale = EnvelopeServer::new(
        toolset![lookup],
        EnvelopeConfig::new("indexed", "1")
            .with_index_status(|| Some(IndexStatus::new(1, SCHEMA_VERSION))),
    );
    let envelope = stale.call("lookup", json!({})).await.expect("served");
    let envelope = envelope.structured;
    assert_eq!(envelope["empty_reason"], "stale_index", "{envelope:#}");
    assert_eq!(envelope["meta"]["schema_version_at_index"], 1);
    assert!(envelope["meta"].get("binary_drift_warning").is_none());

    // Data newer than the binary: the drift warning, with the remediation.
    let newer = EnvelopeServer::new(
        toolset![lookup],
        EnvelopeConfig::new("indexed", "1").with_index_status(|| {
            Some(IndexStatus::new(SCHEMA_VERSION + 1, SCHEMA_VERSION).with_remediation("upgrade"))
        }),
    );
    let envelope = newer
        .call("lookup", json!({}))
        .await
        .expect("served")
        .structured;
    assert_eq!(envelope["empty_reason"], "no_match");
    assert_eq!(
        envelope["meta"]["binary_drift_warning"],
        json!({"stored_version": SCHEMA_VERSION + 1, "running_version": SCHEMA_VERSION, "remediation": "upgrade"})
    );

    // A server that reports nothing stamps nothing.
    let plain = EnvelopeServer::new(toolset![lookup], EnvelopeConfig::new("plain", "1"));
    let envelope = plain
        .call("lookup", json!({}))
        .await
        .expect("served")
        .structured;
    assert!(envelope["meta"].get("schema_version_at_index").is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn negative_savings_are_signed_and_validate_against_the_listed_schema() {
    // Regression test for #11: `tokens_saved: -988` failed the tool's own `uint64` schema.
    let server = EnvelopeServer::new(toolset![expensive], EnvelopeConfig::new("costly", "1"));
    let output = server.tools()[0]
        .output_schema
        .clone()
        .expect("an output schema");
    let validator = jsonschema::draft202012::new(&Value::Object((*output).clone()))
        .expect("the listed output schema compiles");
    let prepared = server
        .call("expensive", json!({"response_mode": "full"}))
        .await
        .expect("served");
    let meta = &prepared.structured["meta"];
    let saved = meta["tokens_saved"].as_i64().expect("an integer");
    assert!(saved < 0, "{meta}");
    assert!(
        meta["tokens_saved_pct"]
            .as_f64()
            .is_some_and(|pct| pct < 0.0),
        "{meta}"
    );
    let errors: Vec<String> = validator
        .iter_errors(&prepared.structured)
        .map(|error| format!("{} at {}", error, error.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_only_keeps_the_tier_in_the_result_meta() {
    // Regression test for #11: `compact_only` dropped the tier the MCP mapping promises.
    let (client, _) = connect().await;
    let result = client
        .call_tool(call("echo", json!({"text": "x", "compact_only": true})))
        .await
        .expect("answers");
    let meta = result.meta.expect("result meta");
    assert_eq!(
        meta.get(&format!("{META_PREFIX}tier")),
        Some(&json!("lite"))
    );
    assert!(meta.get(&format!("{META_PREFIX}request_id")).is_some());
    let envelope = result.structured_content.expect("structured");
    assert!(
        envelope["meta"].get("complexity_tier").is_none(),
        "{envelope}"
    );
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_meta_prefix_is_configurable_and_checked() {
    let config = EnvelopeConfig::new("prefixed", "1")
        .with_meta_prefix("com.example.search/")
        .expect("a reverse-DNS prefix");
    let server = EnvelopeServer::new(toolset![echo], config);
    let meta = server.tools()[0].meta.clone().expect("listed meta");
    assert_eq!(meta.get("com.example.search/tier"), Some(&json!("lite")));
    assert!(
        meta.keys()
            .all(|key| key.starts_with("com.example.search/"))
    );
    // Every `_meta` the server writes moves: the `initialize` result's and each result's.
    let (client, _) = connect_in_memory(server).await;
    let info = client.peer_info().expect("initialized");
    let info_meta = info.meta.as_ref().expect("initialize _meta");
    assert!(info_meta.get("com.example.search/capabilities").is_some());
    assert!(
        info_meta
            .keys()
            .all(|key| key.starts_with("com.example.search/"))
    );
    let result = client
        .call_tool(call("echo", json!({"text": "x"})))
        .await
        .expect("answers");
    let result_meta = result.meta.expect("result _meta");
    for key in ["request_id", "tier", "capabilities"] {
        assert!(
            result_meta
                .get(&format!("com.example.search/{key}"))
                .is_some(),
            "{key}"
        );
    }
    assert!(
        result_meta
            .keys()
            .all(|key| key.starts_with("com.example.search/"))
    );
    client.cancel().await.expect("closes");
    for refused in [
        "envelope/",
        "com.example",
        "io.modelcontextprotocol/",
        "modelcontextprotocol.io/",
        "dev.mcp/",
        "tools.MCP.com/",
        "com..example/",
        "com.-example/",
        "",
    ] {
        let error = EnvelopeConfig::new("x", "1")
            .with_meta_prefix(refused)
            .expect_err(refused);
        assert!(
            error.to_string().contains("invalid `_meta` prefix"),
            "{error}"
        );
    }
}

/// A tool written by hand, with the schemas schemars would write without the portable
/// transform: a `uint32` format, a `null` default and a type union.
struct HandWritten;

impl envelope_core::Tool for HandWritten {
    fn spec(&self) -> &envelope_core::ToolSpec {
        static SPEC: LazyLock<envelope_core::ToolSpec> = LazyLock::new(|| {
            let mut spec = envelope_core::ToolSpec::new(
                "hand_written",
                "Written by hand.",
                envelope_core::Tier::Lite,
            );
            spec.read_only = Some(true);
            spec
        });
        &SPEC
    }

    fn input_schema(&self) -> schemars::Schema {
        schemars::json_schema!({
            "type": "object",
            "properties": {
                "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "default": null}
            }
        })
    }

    fn call(
        &self,
        arguments: Value,
        ctx: ToolContext,
    ) -> envelope_core::BoxFuture<'static, envelope_core::stage::ToolOutput> {
        // What `#[tool]` does for its tools, a hand-written one does through `stage`: the
        // call's request id and the declaration stamped, a baseline declared beside the
        // envelope. The server's door split the per-call controls off the arguments: they are
        // in the context.
        assert!(
            arguments.get("response_mode").is_none(),
            "a control is not the tool's argument"
        );
        Box::pin(async move {
            use envelope_core::stage::{ToolOutput, meta_stamp, stamp_request_id};
            let mut envelope = envelope_core::Envelope::ok(json!(1));
            stamp_request_id(&mut envelope, *ctx.request_id());
            let spec = HandWritten.spec();
            meta_stamp(&mut envelope).tool(spec.name.clone(), spec.tier, spec.is_idempotent());
            let mut output = ToolOutput::from(envelope).with_baseline("by_hand", 100);
            output.controls = ctx.controls().clone();
            output
        })
    }
}

#[test]
fn a_hand_written_tool_is_listed_with_portable_schemas() {
    // Regression test for #11: the listing, not only `#[tool]`, makes every schema portable.
    let tools = envelope_core::Toolset::new(vec![Box::new(HandWritten)]).expect("one tool");
    let server = EnvelopeServer::new(tools, EnvelopeConfig::new("hand", "1"));
    let listed = &server.tools()[0];
    assert_eq!(
        Value::Object((*listed.input_schema).clone()),
        json!({
            "type": "object",
            "properties": {"limit": {"type": "integer", "minimum": 0}}
        })
    );
    // Read-only implies idempotent for a hand-written spec too.
    assert!(envelope_core::Tool::spec(&HandWritten).is_idempotent());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hand_written_tool_goes_through_the_whole_pipeline() {
    // `Tool` may be implemented by hand: the stages it needs are public in `envelope_core::stage`.
    let tools = envelope_core::Toolset::new(vec![Box::new(HandWritten)]).expect("one tool");
    let server = EnvelopeServer::new(tools, EnvelopeConfig::new("hand", "1"));
    let sent = server
        .call("hand_written", json!({"response_mode": "full"}))
        .await
        .expect("served");
    let envelope: envelope_core::Envelope<Value> =
        serde_json::from_value(sent.structured.clone()).expect("an envelope");
    assert!(envelope.is_ok());
    assert_eq!(envelope.data(), Some(&json!(1)));
    let meta = envelope.meta();
    assert_eq!(meta.tool(), Some("hand_written"));
    assert_eq!(meta.idempotent(), Some(true));
    assert!(
        meta.tokens_estimated().is_some(),
        "the budget stage stamped it"
    );
    // `response_mode: full`, read by the tool, keeps the savings against its baseline.
    assert_eq!(meta.baseline_method(), Some("by_hand"));
}

#[test]
fn the_derived_tags_follow_the_configuration() {
    let plain = EnvelopeConfig::new("plain", "1");
    assert!(plain.capabilities().contains(&Capability::BUDGET_TRIMMING));
    assert!(!plain.capabilities().contains(&Capability::CONTINUATIONS));
    assert!(!plain.capabilities().contains(&Capability::STREAMABLE_HTTP));
    // No budget: nothing is trimmed, so trimming is not promised.
    let unlimited = plain
        .clone()
        .with_budget(envelope_budget::BudgetPolicy::unlimited());
    assert!(
        !unlimited
            .capabilities()
            .contains(&Capability::BUDGET_TRIMMING)
    );
    // An author's own list stands as written, and none at all is possible.
    let listed = plain
        .clone()
        .with_capabilities(vec![Capability::REQUEST_IDS]);
    assert_eq!(listed.capabilities(), [Capability::REQUEST_IDS]);
    let server = EnvelopeServer::new(toolset![echo], plain.without_capabilities());
    assert!(server.capabilities().is_empty());
    assert!(rmcp::ServerHandler::get_info(&server).meta.is_none());
}

/// Whether the slow tool's leftover work saw the call cancelled.
static SLOW_SAW_CANCEL: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Whether the slow tool's leftover work was woken by the cancellation it awaited, and saw it.
static SLOW_WOKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Takes far longer than its deadline, leaving work behind that watches for cancellation.
#[tool(tier = heavy, read_only)]
async fn slow(ctx: &ToolContext) -> ToolResult<()> {
    let waiter = ctx
        .until_cancelled()
        .expect("the server's signal can wake a waiter");
    let woken = ctx.clone();
    tokio::spawn(async move {
        waiter.await;
        // Woken by the cancellation, not before it.
        SLOW_WOKEN.store(woken.is_cancelled(), std::sync::atomic::Ordering::SeqCst);
    });
    let watcher = ctx.clone();
    tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        SLOW_SAW_CANCEL.store(watcher.is_cancelled(), std::sync::atomic::Ordering::SeqCst);
    });
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_past_its_deadline_answers_transient_and_is_cancelled() {
    // Regression test for #12: a call that never finished was never answered.
    let server = EnvelopeServer::new(
        toolset![slow],
        EnvelopeConfig::new("deadline", "1")
            .with_call_timeout(Some(std::time::Duration::from_millis(100))),
    );
    let started = std::time::Instant::now();
    let prepared = server
        .call("slow", json!({"response_mode": "full"}))
        .await
        .expect("served");
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    let envelope = &prepared.structured;
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["category"], "transient");
    assert_eq!(envelope["error"]["retryable"], true);
    assert_eq!(envelope["error"]["code"], envelope_mcp::DEADLINE_EXCEEDED);
    assert_eq!(envelope["meta"]["tool"], "slow");
    assert_eq!(envelope["meta"]["complexity_tier"], "heavy");
    // What the tool left running is told to stop.
    tokio::time::sleep(std::time::Duration::from_millis(600)).await;
    assert!(SLOW_SAW_CANCEL.load(std::sync::atomic::Ordering::SeqCst));
    assert!(SLOW_WOKEN.load(std::sync::atomic::Ordering::SeqCst));
}

/// A linked chain that drops iteratively: only its serialization may recurse.
#[derive(serde::Serialize)]
struct Chain {
    next: Option<Box<Chain>>,
}

impl Drop for Chain {
    fn drop(&mut self) {
        let mut next = self.next.take();
        while let Some(mut node) = next {
            next = node.next.take();
        }
    }
}

/// Returns a chain 4,000 links deep.
#[tool(tier = lite)]
fn deep_chain() -> ToolResult<Chain> {
    let mut chain = Chain { next: None };
    for _ in 0..4_000 {
        chain = Chain {
            next: Some(Box::new(chain)),
        };
    }
    Ok(chain)
}

/// A `Value` that drops iteratively.
#[derive(serde::Serialize)]
#[serde(transparent)]
struct DeepValue(Value);

impl Drop for DeepValue {
    fn drop(&mut self) {
        envelope_core::stage::drop_deep(std::mem::take(&mut self.0));
    }
}

/// Returns a `serde_json::Value` nested 8,000 arrays deep.
#[tool(tier = lite)]
fn deep_value() -> ToolResult<DeepValue> {
    let mut value = json!("leaf");
    for _ in 0..8_000 {
        value = Value::Array(vec![value]);
    }
    Ok(DeepValue(value))
}

#[test]
fn deep_payloads_are_cut_without_overflowing_a_small_stack() {
    // Regression test for #12: the payload was turned into JSON recursively before the depth
    // cut ran, and the process aborted.
    for budget in [
        envelope_budget::BudgetPolicy::default(),
        envelope_budget::BudgetPolicy::unlimited(),
    ] {
        let answered = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(move || {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("a runtime");
                let server = EnvelopeServer::new(
                    toolset![deep_chain, deep_value],
                    EnvelopeConfig::new("deep", "1").with_budget(budget),
                );
                ["deep_chain", "deep_value"].map(|tool| {
                    let prepared = runtime
                        .block_on(server.call(tool, json!({})))
                        .expect("served");
                    let envelope = prepared.structured;
                    let text = prepared.json;
                    (envelope["ok"].clone(), envelope["meta"].clone(), text.len())
                })
            })
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        for (ok, meta, bytes) in answered {
            assert_eq!(ok, true, "{meta}");
            assert_eq!(meta["truncated"], true, "{meta}");
            assert_eq!(
                meta["truncated_depth"]["limit"],
                envelope_core::limits::MAX_PAYLOAD_DEPTH
            );
            assert!(bytes < 8_000, "{bytes}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_error_echoing_a_megabyte_obeys_the_response_budget() {
    // Regression test for #12: a decoder message quoting a 1 MB argument made a 2 MB answer.
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("echoes", "1"));
    let huge = "x".repeat(1 << 20);
    let prepared = server
        .call("echo", json!({"text": "hi", "times": huge}))
        .await
        .expect("served");
    let envelope = &prepared.structured;
    assert_eq!(
        envelope["error"]["category"],
        "validation",
        "{}",
        prepared.json.len()
    );
    assert_eq!(envelope["error"]["data"]["field"], "times");
    let message = envelope["error"]["message"].as_str().expect("a message");
    assert!(message.contains("invalid type: string \"xxx"), "{message}");
    assert!(message.ends_with("…[truncated]"), "{message}");
    assert_eq!(envelope["meta"]["truncated"], true);
    // The whole answer, text mirror included, is within the default budget.
    assert!(
        prepared.json.len() <= envelope_budget::AGENT_BUDGET_CHARS,
        "{} bytes",
        prepared.json.len()
    );
    assert_eq!(
        serde_json::from_str::<Value>(&prepared.json).expect("the mirror is JSON"),
        *envelope
    );
}

#[derive(serde::Serialize)]
struct Inventory {
    alpha: Vec<String>,
    zebra: Vec<String>,
}

/// Two long lists of items: the larger is `alpha`.
#[tool(tier = lite, read_only)]
fn inventory() -> ToolResult<Inventory> {
    let items = |list: &str, n: usize| -> Vec<String> {
        (0..n)
            .map(|i| format!("{list}-item-{i:04}-abcdef"))
            .collect()
    };
    Ok(Inventory {
        alpha: items("alpha", 150),
        zebra: items("zebra", 120),
    })
}

/// How many rows of each of `inventory`'s lists a server with `policy` sends.
async fn rows_sent(policy: envelope_mcp::BudgetPolicy) -> (usize, usize) {
    let server = EnvelopeServer::new(
        toolset![inventory],
        EnvelopeConfig::new("order", "1").with_budget(policy),
    );
    let prepared = server.call("inventory", json!({})).await.expect("served");
    let envelope = &prepared.structured;
    assert_eq!(envelope["meta"]["truncated"], true, "{envelope}");
    let len = |list: &str| envelope["data"][list].as_array().map_or(0, Vec::len);
    (len("alpha"), len("zebra"))
}

#[tokio::test]
async fn the_server_cuts_lists_in_its_policys_order() {
    let small = envelope_mcp::BudgetPolicy::default().with_agent_chars(Some(6_000));
    // Lists a policy does not name keep a common fraction of their rows.
    let (alpha, zebra) = rows_sent(small).await;
    assert!(alpha < 150 && zebra < 120, "{alpha} {zebra}");
    assert!(alpha.abs_diff(zebra * 150 / 120) <= 1, "{alpha} {zebra}");
    // A server that names `zebra` has it cut first: `alpha` goes out whole.
    const ORDER: &[&str] = &["zebra"];
    let (alpha, zebra) = rows_sent(small.with_list_order(ORDER)).await;
    assert_eq!(alpha, 150);
    assert!(zebra < 120);
}

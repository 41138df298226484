//! `#[tool]` behaviour, drilled through the JSON an agent reads.

mod common;

use std::collections::BTreeSet;
use std::io;
use std::sync::Arc;

use common::{YieldOnce, call, call_with, capture_log};
use envelope_core::{
    Completeness, EmptyReason, Notice, Reply, ToolContext, ToolError, ToolResult, Unit, Verdict,
    tool, toolset,
};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
struct SearchArgs {
    /// The literal to look for.
    query: String,
    /// At most this many hits.
    #[serde(default)]
    limit: Option<u32>,
}

#[derive(Serialize)]
struct Hits {
    query: String,
    count: u32,
}

/// Search for a literal.
#[tool(tier = lite, read_only, layer = "docs")]
async fn search(ctx: &ToolContext, args: SearchArgs) -> ToolResult<Hits> {
    let _ = ctx.request_id();
    YieldOnce::new().await;
    Ok(Hits {
        query: args.query,
        count: args.limit.unwrap_or(3),
    })
}

/// The same search, refusing unknown arguments.
#[tool(tier = lite, read_only, strict_args, name = "search.strict")]
fn strict_search(args: SearchArgs) -> ToolResult<u32> {
    Ok(args.limit.unwrap_or(0))
}

#[derive(Deserialize, schemars::JsonSchema)]
struct KindArgs {
    kind: String,
}

fn kind_named(name: &str) -> io::ErrorKind {
    use io::ErrorKind as K;
    match name {
        "NotFound" => K::NotFound,
        "PermissionDenied" => K::PermissionDenied,
        "TimedOut" => K::TimedOut,
        "ConnectionReset" => K::ConnectionReset,
        "ConnectionAborted" => K::ConnectionAborted,
        "Interrupted" => K::Interrupted,
        "WouldBlock" => K::WouldBlock,
        "InvalidInput" => K::InvalidInput,
        "InvalidData" => K::InvalidData,
        "Unsupported" => K::Unsupported,
        "IsADirectory" => K::IsADirectory,
        "NotADirectory" => K::NotADirectory,
        "InvalidFilename" => K::InvalidFilename,
        "FileTooLarge" => K::FileTooLarge,
        "AlreadyExists" => K::AlreadyExists,
        "DirectoryNotEmpty" => K::DirectoryNotEmpty,
        "UnexpectedEof" => K::UnexpectedEof,
        "ReadOnlyFilesystem" => K::ReadOnlyFilesystem,
        "StorageFull" => K::StorageFull,
        "QuotaExceeded" => K::QuotaExceeded,
        "ConnectionRefused" => K::ConnectionRefused,
        "ResourceBusy" => K::ResourceBusy,
        "BrokenPipe" => K::BrokenPipe,
        "Other" => K::Other,
        unknown => panic!("the test names no kind `{unknown}`"),
    }
}

/// Fail with an I/O error of the given kind.
#[tool(tier = standard)]
fn io_fail(args: KindArgs) -> ToolResult<()> {
    Err(io::Error::new(kind_named(&args.kind), "io trouble"))?;
    Ok(())
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PanicArgs {
    how: String,
}

/// Panic in several ways.
#[tool(tier = heavy)]
async fn panicky(args: PanicArgs) -> ToolResult<()> {
    let secret = "sk-live-0xDEADBEEF";
    match args.how.as_str() {
        "literal" => panic!("literal panic sk-live-0xDEADBEEF"),
        "format" => panic!("formatted panic {secret}"),
        "payload" => std::panic::panic_any(42_u64),
        "after-await" => {
            YieldOnce::new().await;
            panic!("late panic {secret}")
        }
        _ => Ok(()),
    }
}

/// Panic in a sync body.
#[tool(tier = lite)]
fn sync_panic() -> ToolResult<()> {
    let secret = "sk-live-0xDEADBEEF";
    panic!("sync panic {secret}")
}

/// Fail with an internal error carrying a secret.
#[tool(tier = lite)]
fn internal_fail() -> ToolResult<()> {
    Err(ToolError::internal("db password=sk-live-0xDEADBEEF"))
}

/// A tool behind the `billing` module.
#[tool(tier = lite, module = "billing")]
fn invoice() -> ToolResult<&'static str> {
    Ok("invoiced")
}

/// A richer answer.
#[tool(tier = standard)]
fn rich() -> ToolResult<Reply<Vec<u32>>> {
    Ok(Reply::new(vec![])
        .verdict(Verdict::NotFound)
        .empty(EmptyReason::NoMatch, "nothing matched in 3 files")
        .completeness(Completeness::complete(Unit::FILE, 0))
        .warning(Notice::warning("stale_cache", "cache is old")))
}

#[test]
fn ok_lands_in_data_with_meta_stamped() {
    let envelope = call(&search {}, json!({"query": "needle", "limit": 7}));
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["verdict"], "INFO");
    assert_eq!(envelope["data"], json!({"query": "needle", "count": 7}));
    assert!(envelope.get("error").is_none());
    let meta = &envelope["meta"];
    assert_eq!(meta["tool"], "search");
    assert_eq!(meta["complexity_tier"], "lite");
    assert_eq!(meta["idempotent"], true, "read_only implies idempotent");
    assert_eq!(meta["layer"], "docs");
    assert!(meta["latency_ms"].is_u64());
    assert_eq!(meta["schema_version"], envelope_core::SCHEMA_VERSION);
    assert_eq!(meta["request_id"].as_str().map(str::len), Some(26));
}

#[test]
fn the_original_function_stays_callable() {
    let hits = common::block_on(search(
        &ToolContext::new(),
        SearchArgs {
            query: "x".into(),
            limit: None,
        },
    ))
    .expect("ok");
    assert_eq!(hits.count, 3);
    assert_eq!(
        strict_search(SearchArgs {
            query: "x".into(),
            limit: Some(2)
        })
        .ok(),
        Some(2)
    );
}

#[test]
fn a_valid_client_request_id_is_echoed() {
    let ctx = ToolContext::new().with_client_request_id(Some("01HM3K2X9V7QY8R4PNZTH5W6BC"));
    let envelope = call_with(&search {}, json!({"query": "q"}), ctx);
    assert_eq!(envelope["meta"]["request_id"], "01HM3K2X9V7QY8R4PNZTH5W6BC");
    let ctx = ToolContext::new().with_client_request_id(Some("not a ulid"));
    let envelope = call_with(&search {}, json!({"query": "q"}), ctx);
    assert_ne!(envelope["meta"]["request_id"], "not a ulid");
}

#[test]
fn each_io_error_kind_maps_to_its_category() {
    for (kind, category, retryable) in [
        ("NotFound", "not_found", false),
        ("PermissionDenied", "permission", false),
        ("TimedOut", "transient", true),
        ("ConnectionReset", "transient", true),
        ("ConnectionAborted", "transient", true),
        ("Interrupted", "transient", true),
        ("WouldBlock", "transient", true),
        ("InvalidInput", "validation", false),
        ("InvalidData", "validation", false),
        ("Unsupported", "unavailable", true),
        ("IsADirectory", "validation", false),
        ("NotADirectory", "validation", false),
        ("InvalidFilename", "validation", false),
        ("FileTooLarge", "validation", false),
        ("AlreadyExists", "validation", false),
        ("DirectoryNotEmpty", "validation", false),
        ("UnexpectedEof", "validation", false),
        ("ReadOnlyFilesystem", "permission", false),
        ("StorageFull", "unavailable", true),
        ("QuotaExceeded", "unavailable", true),
        ("ConnectionRefused", "unavailable", true),
        ("ResourceBusy", "transient", true),
        ("BrokenPipe", "transient", true),
        ("Other", "internal", false),
    ] {
        let envelope = call(&io_fail {}, json!({"kind": kind}));
        assert_eq!(envelope["ok"], false, "{kind}");
        assert_eq!(envelope["verdict"], "ERROR", "{kind}");
        assert_eq!(envelope["error"]["category"], category, "{kind}");
        assert_eq!(envelope["error"]["retryable"], retryable, "{kind}");
        assert!(envelope.get("data").is_none(), "{kind}");
    }
}

#[derive(Deserialize, schemars::JsonSchema)]
struct PathArgs {
    path: String,
}

/// Read a file the way an author would, with `?` and nothing else.
#[tool(tier = lite, read_only)]
fn read_file(args: PathArgs) -> ToolResult<String> {
    Ok(std::fs::read_to_string(args.path)?)
}

#[test]
fn reading_a_directory_names_the_real_cause() {
    // Regression test for #11: this was a masked `internal` error.
    let dir = std::env::temp_dir();
    let envelope = call(&read_file {}, json!({"path": dir.to_string_lossy()}));
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["category"], "validation", "{envelope}");
    assert_eq!(envelope["error"]["retryable"], false);
    let message = envelope["error"]["message"].as_str().expect("a message");
    assert!(message.to_lowercase().contains("directory"), "{message}");

    let file = dir.join("envelope-no-such-file-for-read_file");
    let envelope = call(
        &read_file {},
        json!({"path": file.join("below").to_string_lossy()}),
    );
    assert_eq!(envelope["error"]["category"], "not_found", "{envelope}");
}

fn assert_masked_panic(envelope: &Value, log: &str, secret_in_log: &str) {
    let text = envelope.to_string();
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["category"], "internal");
    assert_eq!(envelope["error"]["retryable"], false);
    let request_id = envelope["meta"]["request_id"].as_str().expect("request id");
    let message = envelope["error"]["message"].as_str().expect("message");
    assert!(message.contains(request_id), "{message}");
    assert!(!text.contains("sk-live"), "secret leaked: {text}");
    let error = envelope["error"].to_string();
    assert!(!error.contains("panic"), "panic text leaked: {error}");
    assert!(
        log.contains(secret_in_log),
        "log lacks the panic text: {log}"
    );
    assert!(log.contains(request_id), "log lacks the request id: {log}");
    assert!(log.contains("tool panicked"), "{log}");
    assert!(
        log.contains(&format!("pid={}", std::process::id())),
        "{log}"
    );
    assert!(log.contains("thread="), "{log}");
    assert!(log.contains("backtrace="), "{log}");
    // Logged once, with where it happened, and not again as an internal error.
    assert_eq!(log.matches("tool panicked").count(), 1, "{log}");
    assert!(!log.contains("tool failed with an internal error"), "{log}");
    assert!(log.contains("location=tests/tests/behaviour.rs:"), "{log}");
}

/// Arguments whose `Deserialize` panics when `boom` is true.
#[derive(schemars::JsonSchema)]
struct PanickyArgs {
    boom: bool,
}

impl<'de> Deserialize<'de> for PanickyArgs {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Raw {
            boom: bool,
        }
        let raw = Raw::deserialize(deserializer)?;
        assert!(!raw.boom, "deserialize panic sk-live-0xDEADBEEF");
        Ok(PanickyArgs { boom: raw.boom })
    }
}

/// Decodes arguments that may panic.
#[tool(tier = lite)]
fn panicky_arguments(args: PanickyArgs) -> ToolResult<bool> {
    Ok(args.boom)
}

/// A payload whose `Serialize` panics.
struct PanickyPayload;

impl Serialize for PanickyPayload {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("serialize panic sk-live-0xDEADBEEF")
    }
}

/// Returns a payload that cannot be written.
#[tool(tier = lite)]
fn panicky_payload() -> ToolResult<PanickyPayload> {
    Ok(PanickyPayload)
}

/// An error whose conversion into `ToolError` panics.
#[derive(Debug)]
struct PanickyError;

impl From<PanickyError> for ToolError {
    fn from(_: PanickyError) -> Self {
        panic!("conversion panic sk-live-0xDEADBEEF")
    }
}

/// Fails with an error that cannot be converted.
#[tool(tier = lite)]
fn panicky_error() -> Result<(), PanickyError> {
    Err(PanickyError)
}

/// Panics on a thread of its own, caught there and re-raised in the body.
#[tool(tier = lite)]
fn worker_panic() -> ToolResult<()> {
    let worker = std::thread::spawn(|| {
        envelope_core::stage::catch_panic(|| -> ToolResult<()> {
            panic!("worker panic sk-live-0xDEADBEEF")
        })
    });
    match worker.join() {
        Ok(Ok(result)) => result,
        Ok(Err(payload)) | Err(payload) => std::panic::resume_unwind(payload),
    }
}

#[test]
fn a_panic_on_another_thread_is_logged_with_its_location() {
    // Regression test for #12: a panic on the blocking pool was logged at an unknown location.
    let (envelope, log) = capture_log(|| call(&worker_panic {}, json!({})));
    assert_masked_panic(&envelope, &log, "worker panic sk-live-0xDEADBEEF");
}

/// Says which thread it ran on; panics when asked.
#[tool(tier = lite, blocking)]
fn on_the_pool(ctx: &ToolContext, args: PanicArgs) -> ToolResult<String> {
    assert!(
        ctx.request_id().as_str().len() == 26,
        "the context came along"
    );
    if args.how == "blocking" {
        panic!("blocking panic sk-live-0xDEADBEEF");
    }
    Ok(std::thread::current().name().unwrap_or_default().to_owned())
}

/// Runs `tool` once on a current-thread runtime, whose blocking pool is other threads.
fn on_a_runtime(tool: &dyn envelope_core::Tool, arguments: Value) -> Value {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .thread_name("blocking-pool")
        .build()
        .expect("a runtime");
    let output = runtime.block_on(tool.call(arguments, ToolContext::new()));
    serde_json::to_value(output.envelope).expect("serializes")
}

#[test]
fn a_blocking_tool_runs_on_the_blocking_pool_with_its_panics_caught() {
    let ran_on = on_a_runtime(&on_the_pool {}, json!({"how": "fine"}));
    assert_eq!(ran_on["ok"], true, "{ran_on}");
    // The runtime runs on this thread; its blocking pool's threads get the runtime's name.
    let thread = ran_on["data"].as_str().expect("a thread name");
    assert_eq!(
        thread, "blocking-pool",
        "the body left the runtime's thread"
    );
    let (envelope, log) = capture_log(|| on_a_runtime(&on_the_pool {}, json!({"how": "blocking"})));
    assert_masked_panic(&envelope, &log, "blocking panic sk-live-0xDEADBEEF");
    // Without a runtime (a plain `block_on`), the body runs in place.
    assert_eq!(call(&on_the_pool {}, json!({"how": "fine"}))["ok"], true);
}

#[test]
fn a_panic_in_the_arguments_deserialize_is_caught() {
    // Regression test for #12: it escaped, and over MCP the call was never answered.
    let (envelope, log) = capture_log(|| call(&panicky_arguments {}, json!({"boom": true})));
    assert_masked_panic(&envelope, &log, "deserialize panic sk-live-0xDEADBEEF");
    let fine = call(&panicky_arguments {}, json!({"boom": false}));
    assert_eq!(fine["data"], false);
}

#[test]
fn a_panic_in_the_payloads_serialize_is_caught() {
    // Regression test for #12.
    let (envelope, log) = capture_log(|| call(&panicky_payload {}, json!({})));
    assert_masked_panic(&envelope, &log, "serialize panic sk-live-0xDEADBEEF");
}

#[test]
fn a_panic_in_the_errors_conversion_is_caught() {
    // Regression test for #12.
    let (envelope, log) = capture_log(|| call(&panicky_error {}, json!({})));
    assert_masked_panic(&envelope, &log, "conversion panic sk-live-0xDEADBEEF");
}

#[test]
fn a_literal_panic_is_masked_and_logged() {
    let (envelope, log) = capture_log(|| call(&panicky {}, json!({"how": "literal"})));
    assert_masked_panic(&envelope, &log, "literal panic sk-live-0xDEADBEEF");
}

#[test]
fn a_formatted_panic_is_masked_and_logged() {
    let (envelope, log) = capture_log(|| call(&panicky {}, json!({"how": "format"})));
    assert_masked_panic(&envelope, &log, "formatted panic sk-live-0xDEADBEEF");
}

#[test]
fn a_non_string_panic_payload_is_masked_and_logged() {
    let (envelope, log) = capture_log(|| call(&panicky {}, json!({"how": "payload"})));
    assert_masked_panic(&envelope, &log, "non-string payload");
}

#[test]
fn a_panic_in_a_later_poll_is_caught() {
    let (envelope, log) = capture_log(|| call(&panicky {}, json!({"how": "after-await"})));
    assert_masked_panic(&envelope, &log, "late panic sk-live-0xDEADBEEF");
}

#[test]
fn a_sync_panic_is_caught() {
    let (envelope, log) = capture_log(|| call(&sync_panic {}, json!({})));
    assert_masked_panic(&envelope, &log, "sync panic sk-live-0xDEADBEEF");
}

#[test]
fn internal_errors_are_masked_and_logged() {
    let (envelope, log) = capture_log(|| call(&internal_fail {}, Value::Null));
    assert_eq!(envelope["error"]["category"], "internal");
    assert!(!envelope.to_string().contains("sk-live"), "{envelope}");
    assert!(log.contains("db password=sk-live-0xDEADBEEF"), "{log}");
    assert!(log.contains("tool failed with an internal error"), "{log}");
}

#[test]
fn unknown_arguments_warn_with_the_sorted_accepted_list() {
    let envelope = call(
        &search {},
        json!({"query": "q", "limt": 3, "response_mode": "full"}),
    );
    assert_eq!(envelope["ok"], true);
    let warnings = envelope["warnings"].as_array().expect("a warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["code"], "unknown_arg");
    assert_eq!(warnings[0]["severity"], "warning");
    assert_eq!(warnings[0]["data"]["argument"], "limt");
    assert_eq!(
        warnings[0]["data"]["accepted"],
        json!([
            "compact_only",
            "continuation",
            "dialect",
            "limit",
            "output_format",
            "query",
            "response_mode"
        ])
    );
}

#[test]
fn strict_tools_reject_unknown_arguments() {
    let envelope = call(&strict_search {}, json!({"query": "q", "limt": 3}));
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["category"], "validation");
    assert_eq!(envelope["error"]["code"], "unknown_arg");
    assert_eq!(envelope["error"]["data"]["unknown"], json!(["limt"]));
    assert_eq!(envelope["meta"]["tool"], "search.strict");
}

#[test]
fn a_flood_of_unknown_arguments_gets_a_bounded_answer() {
    // Regression test for #12: 50,000 unknown keys made a response 41 times the request.
    let mut arguments = serde_json::Map::new();
    arguments.insert("query".to_owned(), json!("q"));
    for i in 0..50_000 {
        arguments.insert(format!("{i:05}{}", "k".repeat(200)), json!(1));
    }
    let request = Value::Object(arguments);
    let request_bytes = request.to_string().len();
    let envelope = call(&search {}, request.clone());
    assert_eq!(envelope["ok"], true);
    let warnings = envelope["warnings"].as_array().expect("warnings");
    assert_eq!(warnings.len(), envelope_core::limits::MAX_UNKNOWN_NAMED + 1);
    for warning in &warnings[..envelope_core::limits::MAX_UNKNOWN_NAMED] {
        let named = warning["data"]["argument"].as_str().expect("a name");
        assert_eq!(
            named.chars().count(),
            envelope_core::limits::MAX_ECHOED_KEY_CHARS + 1
        );
        assert!(named.ends_with('…'), "{named}");
    }
    let last = &warnings[envelope_core::limits::MAX_UNKNOWN_NAMED];
    assert_eq!(
        last["data"]["more"],
        50_000 - envelope_core::limits::MAX_UNKNOWN_NAMED
    );
    let answer_bytes = envelope.to_string().len();
    assert!(
        answer_bytes < 8_000,
        "{answer_bytes} bytes for {request_bytes}"
    );

    // A strict tool names as few, and counts the rest.
    let envelope = call(&strict_search {}, request);
    assert_eq!(envelope["error"]["code"], "unknown_arg");
    let data = &envelope["error"]["data"];
    assert_eq!(
        data["unknown"].as_array().map(Vec::len),
        Some(envelope_core::limits::MAX_UNKNOWN_NAMED)
    );
    assert_eq!(
        data["more"],
        50_000 - envelope_core::limits::MAX_UNKNOWN_NAMED
    );
    assert!(envelope.to_string().len() < 8_000);
}

#[test]
fn per_call_controls_are_accepted_by_every_tool() {
    let envelope = call(
        &strict_search {},
        json!({"query": "q", "response_mode": "full", "output_format": "toon", "compact_only": true}),
    );
    assert_eq!(envelope["ok"], true, "{envelope}");
    let envelope = call(&search {}, json!({"query": "q", "output_format": "yaml"}));
    assert_eq!(envelope["error"]["category"], "validation");
    assert_eq!(envelope["error"]["data"]["field"], "output_format");
}

#[test]
fn a_continuation_to_a_tool_that_does_not_page_is_flagged() {
    let envelope = call(&search {}, json!({"query": "q", "continuation": "abc"}));
    assert_eq!(envelope["ok"], true, "{envelope}");
    let warnings = envelope["warnings"].as_array().expect("a warning");
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    assert_eq!(warnings[0]["code"], "continuation_ignored");
    assert_eq!(warnings[0]["severity"], "warning");
}

#[test]
fn type_errors_are_validation_errors_naming_the_field() {
    let envelope = call(&search {}, json!({"query": "q", "limit": "ten"}));
    assert_eq!(envelope["error"]["category"], "validation");
    assert_eq!(envelope["error"]["data"]["field"], "limit");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .expect("message")
            .contains("`limit`")
    );
    let envelope = call(&search {}, json!({}));
    assert_eq!(envelope["error"]["category"], "validation");
    assert!(
        envelope["error"]["message"]
            .as_str()
            .expect("message")
            .contains("query")
    );
    let envelope = call(&search {}, json!([1, 2]));
    assert_eq!(envelope["error"]["code"], "arguments_not_object");
}

#[test]
fn a_disabled_module_answers_module_disabled() {
    let disabled = Arc::new(BTreeSet::from(["billing".to_owned()]));
    let envelope = call_with(
        &invoice {},
        json!({}),
        ToolContext::new().with_disabled_modules(disabled),
    );
    assert_eq!(envelope["ok"], false);
    assert_eq!(envelope["error"]["category"], "module_disabled");
    assert_eq!(envelope["error"]["retryable"], false);
    assert_eq!(envelope["error"]["data"]["module"], "billing");
    let envelope = call(&invoice {}, json!({}));
    assert_eq!(envelope["data"], "invoiced");
}

#[test]
fn a_reply_carries_verdict_empty_reason_completeness_and_warnings() {
    let envelope = call(&rich {}, json!({}));
    assert_eq!(envelope["verdict"], "NOT_FOUND");
    assert_eq!(envelope["empty_reason"], "no_match");
    assert_eq!(envelope["diagnosis"], "nothing matched in 3 files");
    assert_eq!(envelope["completeness"]["complete"], true);
    assert_eq!(envelope["warnings"][0]["code"], "stale_cache");
}

#[test]
fn tools_describe_themselves() {
    let tools = toolset![search, strict_search, io_fail, invoice];
    assert_eq!(
        tools.names().collect::<Vec<_>>(),
        ["invoice", "io_fail", "search", "search.strict"]
    );
    let search = tools.get("search").expect("registered");
    let spec = search.spec();
    assert_eq!(spec.description, "Search for a literal.");
    assert_eq!(
        (
            spec.read_only,
            spec.idempotent,
            spec.destructive,
            spec.open_world
        ),
        (Some(true), Some(true), None, None)
    );
    assert_eq!(spec.layer.as_deref(), Some("docs"));
    let schema = search.input_schema().to_value();
    for key in [
        "query",
        "limit",
        "response_mode",
        "output_format",
        "compact_only",
    ] {
        assert!(
            schema["properties"].get(key).is_some(),
            "{key} missing from {schema}"
        );
    }
    // Regression test for #11: `search` does not page, so it does not advertise `continuation`.
    assert!(
        schema["properties"].get("continuation").is_none(),
        "{schema}"
    );
    // Portable: `Option<u32>` is a plain optional integer, no `uint32` format, no null.
    assert_eq!(
        schema["properties"]["limit"],
        json!({"description": "At most this many hits.", "type": "integer", "minimum": 0}),
    );
    assert_eq!(
        tools.get("invoice").map(|t| t.spec().module.as_deref()),
        Some(Some("billing"))
    );
    // Self-contained: the controls' schemas resolve inside the tool's own schema, which is all
    // a client has.
    let validator =
        jsonschema::draft202012::new(&schema).expect("the input schema resolves on its own");
    assert!(
        validator
            .is_valid(&json!({"query": "x", "response_mode": "full", "output_format": "toon"}))
    );
    assert!(!validator.is_valid(&json!({"query": "x", "response_mode": "loud"})));
    let output = search.output_schema().to_value();
    assert!(output.get("oneOf").is_some());
    // `Hits` has no schema: its `data` is any JSON. A payload with one is typed.
    // (`{}`, not `true`: the portable form every client's validator reads.)
    assert_eq!(output["oneOf"][0]["properties"]["data"], json!({}));
    let typed = tools
        .get("search.strict")
        .expect("registered")
        .output_schema()
        .to_value();
    assert_eq!(
        typed["oneOf"][0]["properties"]["data"],
        json!({"type": "integer", "minimum": 0})
    );
}

#[test]
fn the_derive_accepts_exactly_the_core_tiers() {
    // `envelope-derive` cannot depend on core, so it mirrors `Tier::ALL`; this keeps them equal.
    let names: Vec<&str> = envelope_core::Tier::ALL
        .iter()
        .map(|t| t.as_str())
        .collect();
    assert_eq!(names, ["lite", "standard", "heavy"]);
}

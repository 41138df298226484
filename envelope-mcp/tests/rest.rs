//! The plain HTTP gateway (feature `rest`), read over the wire as a client that does not speak
//! MCP reads it: one status per error category with an RFC 9457 problem carrying the envelope,
//! the gateway's own refusals, the controls as query parameters and headers, the budget
//! opt-out under its ceiling, and the same envelope as over MCP.

mod common;

use std::time::Duration;

use common::raw_http::{header, http_exchange};
use common::tools::nap;
use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::{ToolContext, ToolError, ToolResult, Unit, tool, toolset};
use envelope_mcp::rest::{CATEGORY_STATUS, PROBLEM_JSON, PROBLEM_TYPE_PREFIX, category_status};
use envelope_mcp::{BudgetPolicy, EnvelopeConfig, EnvelopeServer, HttpConfig, RestConfig};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// How many rows to answer.
    rows: u32,
}

/// Answers `rows` numbered rows of text.
#[tool(tier = lite, read_only)]
async fn rows(args: RowsArgs) -> ToolResult<Vec<String>> {
    Ok((0..args.rows)
        .map(|row| format!("row {row:05} of a long answer"))
        .collect())
}

#[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
struct PagesArgs {
    /// How many numbers there are.
    count: usize,
    /// Numbers per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(PagesArgs);

/// Answers the numbers below `count`, ten a page.
#[tool(tier = lite, read_only)]
fn pages(ctx: &ToolContext, args: PagesArgs) -> ToolResult<envelope_core::Reply<Vec<usize>>> {
    let pager = Pager::<pages>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
    let page: Vec<usize> = (0..args.count)
        .filter(|index| pager.takes(*index))
        .collect();
    let count = PageCount::new(page.len(), args.count);
    pager.finish(ctx, &args, envelope_core::Reply::new(page), count)
}

/// Fails as a flaky downstream does, naming when to retry.
#[tool(tier = lite, read_only)]
async fn flaky() -> ToolResult<u32> {
    Err(ToolError::transient("the index is reloading")
        .with_retry_after(Duration::from_millis(2_500)))
}

/// Fails as a missing backend does, naming no wait.
#[tool(tier = lite, read_only)]
async fn offline() -> ToolResult<u32> {
    Err(ToolError::unavailable("no search backend is configured"))
}

/// Refuses the caller.
#[tool(tier = lite, read_only)]
async fn forbidden() -> ToolResult<u32> {
    Err(ToolError::permission("this workspace is not yours"))
}

/// Finds nothing of that name.
#[tool(tier = lite, read_only)]
async fn missing() -> ToolResult<u32> {
    Err(ToolError::not_found("no ticket 7"))
}

/// Fails with a detail no caller may see.
#[tool(tier = lite, read_only)]
async fn broken() -> ToolResult<u32> {
    Err(ToolError::internal("password=hunter2 at db.internal:5432"))
}

/// Lives in a module this server switches off.
#[tool(tier = lite, read_only, module = "extra")]
async fn gated() -> ToolResult<u32> {
    Ok(1)
}

/// Answers with a screenshot attached.
#[tool(tier = lite, read_only)]
async fn screenshot() -> ToolResult<envelope_core::Reply<u32>> {
    Ok(envelope_core::Reply::new(1)
        .attach(envelope_core::Attachment::image(&[1, 2, 3], "image/png")))
}

/// The server under test: a small agent budget, so that a long answer is cut.
fn server() -> EnvelopeServer {
    let config = EnvelopeConfig::new("gateway", "1")
        .with_budget(BudgetPolicy::default().with_agent_chars(Some(2_000)))
        .with_max_request_bytes(4_096)
        .with_continuations(Continuations::new(ContinuationKey::new(1, [9; 32])))
        .disable_module("extra");
    EnvelopeServer::new(
        toolset![
            rows, pages, flaky, offline, forbidden, missing, broken, gated, nap, screenshot
        ],
        config,
    )
}

/// `server()` served as `config` says (stateless JSON answers over MCP too), on a free port.
async fn serve(config: HttpConfig) -> std::net::SocketAddr {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let config = config.with_stateless(true).with_json_response(true);
    tokio::spawn(server().serve_http_with(addr, config));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}

/// One exchange: the status, the head, and the body as JSON (`Null` when it is none).
async fn exchange(addr: std::net::SocketAddr, request: String) -> (u16, String, Value) {
    let (head, body) = http_exchange(addr, request, |_| false).await;
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .expect("a status line");
    (
        status,
        head,
        serde_json::from_str(&body).unwrap_or(Value::Null),
    )
}

/// A request to the gateway, `extra` being more header lines.
fn request(
    addr: std::net::SocketAddr,
    method: &str,
    target: &str,
    extra: &str,
    body: &str,
) -> String {
    format!(
        "{method} {target} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{extra}\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

async fn call(addr: std::net::SocketAddr, tool: &str, arguments: Value) -> (u16, String, Value) {
    let target = format!("/tools/{tool}");
    exchange(
        addr,
        request(addr, "POST", &target, "", &arguments.to_string()),
    )
    .await
}

/// The same call over MCP: the envelope in `structuredContent`.
async fn call_over_mcp(
    addr: std::net::SocketAddr,
    tool: &str,
    arguments: Value,
    extra: &str,
) -> Value {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    })
    .to_string();
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         {extra}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (_, _, answer) = exchange(addr, request).await;
    answer["result"]["structuredContent"].clone()
}

/// Checks `body` is a problem with `status` that tells what its envelope tells.
fn assert_problem(status: u16, head: &str, body: &Value) {
    assert_eq!(header(head, "content-type"), Some(PROBLEM_JSON), "{head}");
    let envelope = &body["envelope"];
    assert_eq!(envelope["ok"], false, "{body}");
    let category = envelope["error"]["category"].as_str().expect("a category");
    assert_eq!(body["type"], format!("{PROBLEM_TYPE_PREFIX}{category}"));
    assert_eq!(body["status"], status);
    assert_eq!(body["detail"], envelope["error"]["message"]);
    assert!(
        body["title"]
            .as_str()
            .is_some_and(|title| !title.is_empty())
    );
    // The envelope's request id is the one echoed.
    assert_eq!(
        header(head, "x-request-id"),
        envelope["meta"]["request_id"].as_str()
    );
}

#[tokio::test]
async fn each_category_answers_its_status_with_a_problem_carrying_the_envelope() {
    let addr = serve(HttpConfig::default()).await;
    // Every category, each from a tool of its own (`validation` from arguments of the wrong type).
    let calls = [
        ("flaky", json!({}), "transient", Some("3")),
        ("rows", json!({ "rows": "many" }), "validation", None),
        ("forbidden", json!({}), "permission", None),
        ("missing", json!({}), "not_found", None),
        ("offline", json!({}), "unavailable", Some("1")),
        ("broken", json!({}), "internal", None),
        ("gated", json!({}), "module_disabled", None),
    ];
    let mut seen = std::collections::BTreeSet::new();
    for (tool, arguments, category, retry_after) in calls {
        let (status, head, body) = call(addr, tool, arguments).await;
        let row = CATEGORY_STATUS
            .iter()
            .find(|row| row.category.as_str() == category)
            .expect("a row");
        assert_eq!(status, row.status, "{tool}: {body}");
        assert_problem(status, &head, &body);
        assert_eq!(body["envelope"]["error"]["category"], category);
        assert_eq!(body["title"], row.title);
        assert_eq!(header(&head, "retry-after"), retry_after, "{tool}");
        seen.insert(row.category.as_str());
    }
    let every: std::collections::BTreeSet<&str> = envelope_core::Category::ALL
        .iter()
        .map(|category| category.as_str())
        .collect();
    assert_eq!(seen, every, "every category is shown");
    // An internal error stays masked: the detail names the request id, never the cause.
    let (_, _, body) = call(addr, "broken", json!({})).await;
    let text = body.to_string();
    assert!(!text.contains("hunter2"), "{text}");
    assert!(
        body["detail"]
            .as_str()
            .is_some_and(|detail| detail.contains("internal error"))
    );
}

#[tokio::test]
async fn truncated_and_empty_results_are_200_with_the_bare_envelope() {
    let addr = serve(HttpConfig::default()).await;
    let (status, head, body) = call(addr, "rows", json!({ "rows": 2_000 })).await;
    assert_eq!(status, 200);
    assert_eq!(header(&head, "content-type"), Some("application/json"));
    assert_eq!(body["ok"], true);
    assert_eq!(body["meta"]["truncated"], true, "cut to the agent budget");
    let (status, _, body) = call(addr, "rows", json!({ "rows": 0 })).await;
    assert_eq!(status, 200);
    assert_eq!(body["ok"], true);
    assert_eq!(body["data"], json!([]));
}

#[tokio::test]
async fn a_json_body_carries_no_media_and_says_each_was_dropped() {
    let addr = serve(HttpConfig::default()).await;
    let (status, _, body) = call(addr, "screenshot", json!({})).await;
    assert_eq!(status, 200);
    assert_eq!(body["data"], 1);
    assert_eq!(
        body["meta"]["attachments"],
        json!([{ "kind": "image", "mime_type": "image/png", "bytes": 3, "delivery": "dropped" }]),
        "{body}"
    );
    // Over MCP the same call sends it.
    let envelope = call_over_mcp(addr, "screenshot", json!({}), "").await;
    assert_eq!(
        envelope["meta"]["attachments"][0]["delivery"], "sent",
        "{envelope}"
    );
}

/// `envelope` without its latency, which differs between two calls, and with it the token
/// count, which counts the latency's digits: returned beside, to compare within a few tokens.
fn comparable(mut envelope: Value) -> (Value, Option<u64>) {
    let mut tokens = None;
    if let Some(meta) = envelope["meta"].as_object_mut()
        && meta.remove("latency_ms").is_some()
    {
        tokens = meta
            .remove("tokens_estimated")
            .and_then(|tokens| tokens.as_u64());
    }
    (envelope, tokens)
}

#[tokio::test]
async fn a_call_answers_the_same_envelope_over_mcp_and_over_the_gateway() {
    let addr = serve(HttpConfig::default()).await;
    let calls = [
        ("rows", json!({ "rows": 3 })),
        ("rows", json!({ "rows": 2_000 })),
        ("rows", json!({ "rows": "many" })),
        ("rows", json!({ "rows": 3, "response_mode": "full" })),
        ("flaky", json!({})),
        ("forbidden", json!({})),
        ("missing", json!({})),
        ("offline", json!({})),
        ("broken", json!({})),
        ("gated", json!({})),
    ];
    for (n, (tool, arguments)) in calls.into_iter().enumerate() {
        // One request id for both calls: the id's characters count in `tokens_estimated`.
        let id = format!("01KJ00000000000000000000{n:02}");
        let extra = format!("x-request-id: {id}\r\n");
        let over_mcp = call_over_mcp(addr, tool, arguments.clone(), &extra).await;
        let target = format!("/tools/{tool}");
        let (_, _, body) = exchange(
            addr,
            request(addr, "POST", &target, &extra, &arguments.to_string()),
        )
        .await;
        let over_rest = if body["ok"] == true {
            body
        } else {
            body["envelope"].clone()
        };
        assert_eq!(over_rest["meta"]["request_id"], id.as_str());
        let (over_mcp, mcp_tokens) = comparable(over_mcp);
        let (over_rest, rest_tokens) = comparable(over_rest);
        assert_eq!(over_mcp, over_rest, "{tool} {arguments}");
        let close = match (mcp_tokens, rest_tokens) {
            (Some(mcp), Some(rest)) => mcp.abs_diff(rest) <= 2,
            (mcp, rest) => mcp == rest,
        };
        assert!(close, "{tool}: {mcp_tokens:?} and {rest_tokens:?} tokens");
    }
}

#[tokio::test]
async fn the_gateway_refuses_what_no_tool_can_answer_as_problems() {
    let addr = serve(HttpConfig::default()).await;
    // No such tool: 404, naming the tools there are.
    let (status, head, body) = call(addr, "nope", json!({})).await;
    assert_eq!(status, 404);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "unknown_tool");
    assert!(
        body["envelope"]["error"]["data"]["available"]
            .as_array()
            .is_some_and(|tools| tools.contains(&json!("rows")))
    );
    // The wrong method: 405, with the methods the route takes.
    let (status, head, body) = exchange(addr, request(addr, "GET", "/tools/rows", "", "")).await;
    assert_eq!(status, 405);
    assert_problem(status, &head, &body);
    assert_eq!(header(&head, "allow"), Some("POST"));
    let (status, head, _) = exchange(addr, request(addr, "DELETE", "/tools", "", "")).await;
    assert_eq!(status, 405);
    assert_eq!(header(&head, "allow"), Some("GET, HEAD"));
    // Not JSON: 400.
    let (status, head, body) = exchange(
        addr,
        request(addr, "POST", "/tools/rows", "", "{\"rows\": "),
    )
    .await;
    assert_eq!(status, 400);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "malformed_json");
    // Over the server's size limit: 413, the body unread.
    let large = format!("{{\"rows\": 1, \"pad\": \"{}\"}}", "x".repeat(8_000));
    let (status, head, body) =
        exchange(addr, request(addr, "POST", "/tools/rows", "", &large)).await;
    assert_eq!(status, 413);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "request_too_large");
    // A body not declared JSON, as a page may post to any origin without asking: 415, and the
    // tool does not run.
    for content_type in ["text/plain", "application/x-www-form-urlencoded", ""] {
        let header_line = if content_type.is_empty() {
            String::new()
        } else {
            format!("content-type: {content_type}\r\n")
        };
        let posted = format!(
            "POST /tools/rows HTTP/1.1\r\nhost: {addr}\r\n{header_line}connection: close\r\n\
             content-length: 10\r\n\r\n{{\"rows\":1}}"
        );
        let (status, head, body) = exchange(addr, posted).await;
        assert_eq!(status, 415, "{content_type}");
        assert_problem(status, &head, &body);
        assert_eq!(body["envelope"]["error"]["code"], "unsupported_media_type");
    }
    let (status, _, _) = exchange(
        addr,
        request(addr, "POST", "/tools/rows", "", "{\"rows\":1}")
            .replace("application/json", "application/vnd.api+json"),
    )
    .await;
    assert_eq!(status, 200, "a +json type is JSON");
    // A path under `/tools/` that is no tool's: 404, as a problem.
    for path in ["/tools/", "/tools/rows/extra", "/tools/a/b/c"] {
        let (status, head, body) = exchange(addr, request(addr, "POST", path, "", "{}")).await;
        assert_eq!(status, 404, "{path}");
        assert_problem(status, &head, &body);
        assert_eq!(body["envelope"]["error"]["code"], "unknown_tool");
    }
    // A host the server does not answer to: 403, as the MCP endpoint refuses it.
    let foreign = "POST /tools/rows HTTP/1.1\r\nhost: evil.example\r\ncontent-type: application/json\r\n\
                   connection: close\r\ncontent-length: 2\r\n\r\n{}";
    let (status, head, body) = exchange(addr, foreign.to_owned()).await;
    assert_eq!(status, 403);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "host_not_allowed");
}

#[tokio::test]
async fn controls_come_as_query_parameters_or_headers_and_must_agree() {
    let addr = serve(HttpConfig::default()).await;
    let body = json!({ "rows": 2 }).to_string();
    // `response_mode: full` keeps `meta.capabilities`, which compact leaves out.
    let full = |target: &str, extra: &str| request(addr, "POST", target, extra, &body);
    let (status, _, compact) = exchange(addr, full("/tools/rows", "")).await;
    assert_eq!(status, 200);
    assert!(compact["meta"].get("capabilities").is_none(), "{compact}");
    let (_, _, by_query) = exchange(addr, full("/tools/rows?response_mode=full", "")).await;
    assert!(by_query["meta"].get("capabilities").is_some(), "{by_query}");
    let (_, _, by_header) = exchange(
        addr,
        full("/tools/rows", "envelope-response-mode: full\r\n"),
    )
    .await;
    assert!(
        by_header["meta"].get("capabilities").is_some(),
        "{by_header}"
    );
    // `compact_only` as a header reduces the answer to its control surface.
    let (_, _, reduced) =
        exchange(addr, full("/tools/rows", "envelope-compact-only: true\r\n")).await;
    assert_eq!(reduced["meta"].get("complexity_tier"), None, "{reduced}");
    // Two places, two values: refused.
    let (status, head, problem) = exchange(
        addr,
        full(
            "/tools/rows?response_mode=full",
            "envelope-response-mode: compact\r\n",
        ),
    )
    .await;
    assert_eq!(status, 400);
    assert_problem(status, &head, &problem);
    assert_eq!(problem["envelope"]["error"]["code"], "invalid_control");
    // An invalid value is the tool's to refuse, naming the control.
    let (status, _, problem) = exchange(addr, full("/tools/rows?output_format=yaml", "")).await;
    assert_eq!(status, 422);
    assert_eq!(
        problem["envelope"]["error"]["data"]["field"],
        "output_format"
    );
}

#[tokio::test]
async fn apply_budget_false_opts_out_of_trimming_up_to_the_ceiling() {
    let rest = RestConfig::default().with_unbudgeted_ceiling(60_000);
    let addr = serve(HttpConfig::default().with_rest(Some(rest))).await;
    let body = json!({ "rows": 1_000 }).to_string();
    let send = |target: &str, extra: &str| request(addr, "POST", target, extra, &body);
    // Budgeted: cut to the agent budget of 2,000 characters.
    let (_, _, budgeted) = exchange(addr, send("/tools/rows", "")).await;
    assert_eq!(budgeted["meta"]["truncated"], true);
    let kept = budgeted["data"].as_array().map_or(0, Vec::len);
    assert!(kept < 100, "{kept} rows within 2,000 characters");
    // Opted out, by query or by header: all 1,000 rows (some 33,000 characters) fit the ceiling.
    for (target, extra) in [
        ("/tools/rows?apply_budget=false", ""),
        ("/tools/rows", "envelope-apply-budget: false\r\n"),
    ] {
        let (status, _, whole) = exchange(addr, send(target, extra)).await;
        assert_eq!(status, 200);
        assert_eq!(
            whole["data"].as_array().map(Vec::len),
            Some(1_000),
            "{target}"
        );
        assert_ne!(whole["meta"]["truncated"], true);
    }
    // Past the ceiling, an opted-out answer is cut to it, and says so.
    let larger = json!({ "rows": 5_000 }).to_string();
    let (_, _, capped) = exchange(
        addr,
        request(addr, "POST", "/tools/rows?apply_budget=false", "", &larger),
    )
    .await;
    assert_eq!(capped["meta"]["truncated"], true);
    let rows = capped["data"].as_array().map_or(0, Vec::len);
    assert!(
        (1_000..5_000).contains(&rows),
        "{rows} rows under a 60,000-character ceiling"
    );
    // Anything but `true` or `false` is refused.
    let (status, _, problem) = exchange(addr, send("/tools/rows?apply_budget=maybe", "")).await;
    assert_eq!(status, 400);
    assert_eq!(problem["envelope"]["error"]["code"], "invalid_control");
}

#[tokio::test]
async fn opting_out_never_makes_an_answer_smaller() {
    // A ceiling below the agent budget of 2,000 characters: the budget still holds.
    let rest = RestConfig::default().with_unbudgeted_ceiling(500);
    let addr = serve(HttpConfig::default().with_rest(Some(rest))).await;
    let body = json!({ "rows": 1_000 }).to_string();
    let rows = |answer: &Value| answer["data"].as_array().map_or(0, Vec::len);
    // One request id for both: its characters count against the budget.
    let id = "x-request-id: 01KJ0000000000000000000077\r\n";
    let (_, _, budgeted) = exchange(addr, request(addr, "POST", "/tools/rows", id, &body)).await;
    let (_, _, opted_out) = exchange(
        addr,
        request(addr, "POST", "/tools/rows?apply_budget=false", id, &body),
    )
    .await;
    assert!(rows(&budgeted) > 10, "{budgeted}");
    assert_eq!(rows(&opted_out), rows(&budgeted), "{opted_out} {budgeted}");
}

#[tokio::test]
async fn the_request_id_and_the_limits_are_the_mcp_endpoints() {
    let config = HttpConfig::default().with_max_concurrent_requests(Some(1));
    let addr = serve(config).await;
    // A client's ULID is the envelope's request id, and is echoed.
    let id = "01KJ0000000000000000000000";
    let target = request(
        addr,
        "POST",
        "/tools/rows",
        &format!("x-request-id: {id}\r\n"),
        "{\"rows\":1}",
    );
    let (_, head, body) = exchange(addr, target).await;
    assert_eq!(header(&head, "x-request-id"), Some(id));
    assert_eq!(body["meta"]["request_id"], id);
    // One call at a time, over either endpoint: while a nap over MCP holds the only place, a
    // call to the gateway is refused at once.
    let over_mcp =
        tokio::spawn(async move { call_over_mcp(addr, "nap", json!({ "ms": 800 }), "").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, _, body) = call(addr, "rows", json!({ "rows": 1 })).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["envelope"]["error"]["code"], "overloaded");
    assert_eq!(over_mcp.await.expect("the nap answers")["data"], 800);
    // And while a nap through the gateway holds it, the next call is refused at once.
    let napping = tokio::spawn(async move { call(addr, "nap", json!({ "ms": 800 })).await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let (status, head, body) = call(addr, "rows", json!({ "rows": 1 })).await;
    assert_eq!(status, 503);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "overloaded");
    assert_eq!(header(&head, "retry-after"), Some("1"));
    assert_eq!(napping.await.expect("the nap answers").0, 200);
}

#[tokio::test]
async fn a_call_past_the_request_timeout_is_a_503_problem() {
    let config = HttpConfig::default().with_request_timeout(Some(Duration::from_millis(200)));
    let addr = serve(config).await;
    let (status, head, body) = call(addr, "nap", json!({ "ms": 2_000 })).await;
    assert_eq!(status, 503);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["category"], "transient");
    assert!(header(&head, "retry-after").is_some());
}

#[tokio::test]
async fn the_listing_and_the_document_describe_every_tool() {
    let addr = serve(HttpConfig::default()).await;
    let get = |path: &str| request(addr, "GET", path, "", "");
    let (status, _, listing) = exchange(addr, get("/tools")).await;
    assert_eq!(status, 200);
    let tools = listing["tools"].as_array().expect("tools");
    assert_eq!(tools.len(), 10);
    let gated = tools
        .iter()
        .find(|tool| tool["name"] == "gated")
        .expect("gated");
    assert_eq!(gated["module"], "extra");
    assert_eq!(gated["read_only"], true);
    assert!(gated["input_schema"].is_object() && gated["output_schema"].is_object());

    let (status, _, document) = exchange(addr, get("/openapi.json")).await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    let operation = &document["paths"]["/tools/rows"]["post"];
    assert_eq!(operation["operationId"], "rows");
    assert_eq!(operation["x-tier"], "lite");
    assert_eq!(operation["x-read-only"], true);
    assert_eq!(operation["x-idempotent"], true);
    let statuses: Vec<&str> = operation["responses"]
        .as_object()
        .expect("responses")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        statuses,
        [
            "200", "400", "403", "404", "408", "413", "415", "422", "500", "503"
        ]
    );
    for row in CATEGORY_STATUS {
        assert!(statuses.contains(&row.status.to_string().as_str()));
    }
    // No reference is left pointing into a tool's own `$defs`.
    assert!(!document.to_string().contains("#/$defs/"));
}

/// A validator for the schema at `pointer` in `document`, its references resolved there.
fn validator_at(document: &Value, pointer: &str) -> jsonschema::Validator {
    let mut root = document.clone();
    root["$ref"] = json!(format!("#{pointer}"));
    jsonschema::validator_for(&root).expect("the document's schemas compile")
}

#[tokio::test]
async fn answers_validate_against_the_document() {
    let addr = serve(HttpConfig::default()).await;
    let (_, _, document) = exchange(addr, request(addr, "GET", "/openapi.json", "", "")).await;
    let ok = validator_at(
        &document,
        "/paths/~1tools~1rows/post/responses/200/content/application~1json/schema",
    );
    let problem = validator_at(&document, "/components/schemas/Problem");
    let (_, _, body) = call(addr, "rows", json!({ "rows": 2_000 })).await;
    assert!(ok.is_valid(&body), "{body}");
    for tool in [
        "flaky",
        "offline",
        "forbidden",
        "missing",
        "broken",
        "gated",
        "nope",
    ] {
        let (status, _, body) = call(addr, tool, json!({})).await;
        assert!(problem.is_valid(&body), "{tool} {status}: {body}");
        assert!(
            document["paths"]["/tools/rows"]["post"]["responses"]
                .get(status.to_string())
                .is_some(),
            "{status} is documented"
        );
    }
    assert_eq!(
        category_status(envelope_core::Category::Internal).status,
        500
    );
}

#[tokio::test]
async fn origins_are_checked_as_the_mcp_endpoint_checks_them() {
    let config = HttpConfig::default().with_allowed_origins(["https://app.example:*"]);
    let addr = serve(config).await;
    let from = |origin: &str| {
        request(
            addr,
            "POST",
            "/tools/rows",
            &format!("origin: {origin}\r\n"),
            "{\"rows\":1}",
        )
    };
    let (status, _, _) = exchange(addr, from("https://app.example:5173")).await;
    assert_eq!(status, 200);
    let (status, head, body) = exchange(addr, from("https://evil.example")).await;
    assert_eq!(status, 403);
    assert_problem(status, &head, &body);
    assert_eq!(body["envelope"]["error"]["code"], "host_not_allowed");
    // A request without an `Origin` (not from a browser) passes, as over MCP.
    let (status, _, _) = call(addr, "rows", json!({ "rows": 1 })).await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_continuation_given_twice_with_two_values_is_refused_on_every_surface() {
    let addr = serve(HttpConfig::default()).await;
    // Two real tokens: the first page's and the second's, each from the `next-page` action.
    let next = |answer: &Value| {
        let actions = answer["next_actions"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let action = actions
            .into_iter()
            .find(|action| action["id"] == "next-page");
        action
            .map(|action| action["arguments"].clone())
            .unwrap_or_else(|| panic!("no next-page in {answer}"))
    };
    let (status, _, first) = call(addr, "pages", json!({ "count": 100 })).await;
    assert_eq!(status, 200, "{first}");
    let to_second = next(&first);
    let (_, _, second) = call(addr, "pages", to_second.clone()).await;
    let to_third = next(&second);
    let (a, b) = (
        to_second["continuation"].as_str().expect("a token"),
        to_third["continuation"].as_str().expect("a token"),
    );
    assert_ne!(a, b);
    let body = to_second.to_string();
    let query = |token: &str| format!("/tools/pages?continuation={token}");
    let header = |token: &str| format!("envelope-continuation: {token}\r\n");
    let bare = json!({ "count": 100 }).to_string();
    for (target, extra, body) in [
        (query(b), String::new(), body.clone()),
        ("/tools/pages".to_owned(), header(b), body.clone()),
        (query(a), header(b), bare.clone()),
        (
            format!("{}&continuation={b}", query(a)),
            String::new(),
            bare.clone(),
        ),
    ] {
        let (status, head, problem) =
            exchange(addr, request(addr, "POST", &target, &extra, &body)).await;
        assert_eq!(status, 400, "{target} {extra}: {problem}");
        assert_problem(status, &head, &problem);
        assert_eq!(problem["envelope"]["error"]["code"], "invalid_control");
    }
    // The same token in two places agrees, and is followed.
    let (status, _, agreed) = exchange(addr, request(addr, "POST", &query(a), "", &body)).await;
    assert_eq!(status, 200, "{agreed}");
    assert_eq!(agreed["data"], second["data"]);
}

//! The client against servers whose faults are known: envelope-mcp servers whose tools fail
//! transiently N times, rate-limit with `retry_after`, answer a stale target ref, and (through
//! a wrapper that spoils their answers) loop on a cursor, answer no envelope or a broken one, or
//! offer a next action to a tool that is not listed.
//!
//! Waits are observed on tokio's paused clock, never on the wall's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use envelope_client::{Client, ClientError, PageLimits, PagesEnd, RetryPolicy};
use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::paging::{NEXT_PAGE, STALE_TARGET_SNAPSHOT};
use envelope_core::{
    Category, Envelope, NextAction, Reply, Role, ToolContext, ToolError, ToolResult, Unit, tool,
    toolset,
};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::time::Instant;

/// What the fault tools are set to do, and how often each was called.
#[derive(Default)]
struct Faults {
    /// How many calls fail before one succeeds.
    fail_times: usize,
    /// The wait a rate-limited call asks for.
    retry_after: Duration,
    /// The first ref number `open` takes as fresh.
    fresh_from: usize,
    calls: Mutex<BTreeMap<&'static str, usize>>,
}

impl Faults {
    /// Counts a call of `tool`; its number, from 1.
    fn count(&self, tool: &'static str) -> usize {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let count = calls.entry(tool).or_default();
        *count += 1;
        *count
    }
}

/// Fails with a `transient` error the first `fail_times` times, then answers.
#[tool(tier = lite, read_only)]
async fn flaky(ctx: &ToolContext) -> ToolResult<Value> {
    let faults = ctx.state::<Faults>()?;
    let call = faults.count("flaky");
    if call <= faults.fail_times {
        return Err(ToolError::transient("the backend timed out"));
    }
    Ok(json!({ "attempt": call }))
}

/// Appends (not idempotent), and fails with a `transient` error every time.
#[tool(tier = lite)]
async fn append(ctx: &ToolContext) -> ToolResult<Value> {
    ctx.state::<Faults>()?.count("append");
    Err(ToolError::transient(
        "the write timed out; it may have landed",
    ))
}

/// Enqueues (not idempotent); refused before it ran, `data.ran: false`, the first
/// `fail_times` times.
#[tool(tier = lite)]
async fn enqueue(ctx: &ToolContext) -> ToolResult<Value> {
    let faults = ctx.state::<Faults>()?;
    let call = faults.count("enqueue");
    if call <= faults.fail_times {
        return Err(ToolError::transient("the queue is full").with_data(json!({ "ran": false })));
    }
    Ok(json!({ "queued": call }))
}

/// Rate-limited: asks to wait `retry_after` the first `fail_times` times.
#[tool(tier = lite, read_only)]
async fn limited(ctx: &ToolContext) -> ToolResult<Value> {
    let faults = ctx.state::<Faults>()?;
    let call = faults.count("limited");
    if call <= faults.fail_times {
        return Err(ToolError::transient("rate limited").with_retry_after(faults.retry_after));
    }
    Ok(json!({ "attempt": call }))
}

/// Resolves the target afresh: a new ref each call.
#[tool(tier = lite, read_only)]
async fn find(ctx: &ToolContext) -> ToolResult<Value> {
    let call = ctx.state::<Faults>()?.count("find");
    Ok(json!({ "target_ref": format!("ref-{call}") }))
}

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct OpenArgs {
    /// What `find` answered.
    target_ref: String,
}

/// Reads a target by its ref; a ref numbered below `fresh_from` is stale, and the answer
/// offers `find` again.
#[tool(tier = lite, read_only)]
async fn open(ctx: &ToolContext, args: OpenArgs) -> ToolResult<Value> {
    let faults = ctx.state::<Faults>()?;
    faults.count("open");
    let number: usize = args
        .target_ref
        .strip_prefix("ref-")
        .and_then(|number| number.parse().ok())
        .unwrap_or(0);
    if number < faults.fresh_from {
        let again = NextAction::call::<find>("find-again", Role::Retry, 0, (), "find it again")
            .map_err(ToolError::internal)?;
        return Err(
            ToolError::validation("the target changed since it was found")
                .with_code(STALE_TARGET_SNAPSHOT)
                .with_recovery(again),
        );
    }
    Ok(json!({ "read": args.target_ref }))
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// Rows per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(RowsArgs);

#[derive(Debug, Serialize, Deserialize, schemars::JsonSchema)]
struct Rows {
    rows: Vec<String>,
}

/// How many rows `rows` pages through.
const ROWS: usize = 30;

/// Thirty numbered rows, ten a page.
#[tool(tier = lite, read_only)]
fn rows(ctx: &ToolContext, args: RowsArgs) -> ToolResult<Reply<Rows>> {
    let pager = Pager::<rows>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
    let page: Vec<String> = (0..ROWS)
        .filter(|index| pager.takes(*index))
        .map(|index| format!("row {index:02}"))
        .collect();
    let count = PageCount::new(page.len(), ROWS);
    pager.finish(ctx, &args, Reply::new(Rows { rows: page }), count)
}

/// What the wrapper does to a tool's result.
type Spoil = dyn Fn(&str, &mut CallToolResult) + Send + Sync;

/// The fault tools, served by envelope-mcp, each answer passed through `spoil`; every call the
/// server receives is recorded.
#[derive(Clone)]
struct Faulty {
    inner: EnvelopeServer,
    spoil: Arc<Spoil>,
    received: Arc<Mutex<Vec<String>>>,
    kill: Arc<Mutex<Kill>>,
}

/// When the server dies: at its `at`-th call (1-based), in the middle of answering it, its
/// connection cancelled by `token` (set once it serves).
#[derive(Default)]
struct Kill {
    at: Option<usize>,
    token: Option<rmcp::service::RunningServiceCancellationToken>,
}

impl Faulty {
    fn new(faults: Faults) -> Self {
        Faulty::spoiled(faults, |_, _| {})
    }

    fn spoiled(
        faults: Faults,
        spoil: impl Fn(&str, &mut CallToolResult) + Send + Sync + 'static,
    ) -> Self {
        let key = ContinuationKey::new(1, [5; 32]);
        let config = EnvelopeConfig::new("faulty", "1")
            .with_continuations(Continuations::new(key))
            .with_call_timeout(None)
            .with_state(Arc::new(faults));
        Faulty {
            inner: EnvelopeServer::new(
                toolset![flaky, append, enqueue, limited, find, open, rows],
                config,
            ),
            spoil: Arc::new(spoil),
            received: Arc::default(),
            kill: Arc::default(),
        }
    }

    /// The same server, dying in the middle of its `at`-th call.
    fn dying_at(self, at: usize) -> Self {
        self.kill.lock().unwrap_or_else(PoisonError::into_inner).at = Some(at);
        self
    }

    /// The tools called, in order.
    fn received(&self) -> Vec<String> {
        self.received
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut listed = self.inner.list_tools(request, context).await?;
        listed.tools.extend(plain_tools());
        Ok(listed)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let tool = request.name.to_string();
        let call = {
            let mut received = self.received.lock().unwrap_or_else(PoisonError::into_inner);
            received.push(tool.clone());
            received.len()
        };
        let dying = {
            let mut kill = self.kill.lock().unwrap_or_else(PoisonError::into_inner);
            if kill.at == Some(call) {
                kill.token.take()
            } else {
                None
            }
        };
        if let Some(token) = dying {
            // The process dies mid-answer: the connection goes, and no answer ever comes.
            token.cancel();
            std::future::pending::<()>().await;
        }
        if let Some(answer) = plain_answer(&tool) {
            return Ok(answer.into());
        }
        Ok(match self.inner.call_tool(request, context).await? {
            CallToolResponse::Complete(mut result) => {
                (self.spoil)(&tool, &mut result);
                result.into()
            }
            other => other,
        })
    }
}

/// Two plain tools beside the envelope ones, as a server mixing both lists them: `weather`
/// with an output schema of its own, `motd` without one.
fn plain_tools() -> Vec<rmcp::model::Tool> {
    let schema = |value: Value| Arc::new(value.as_object().cloned().unwrap_or_default());
    vec![
        rmcp::model::Tool::new("weather", "the weather", schema(json!({"type": "object"})))
            .with_raw_output_schema(schema(json!({
                "type": "object",
                "properties": {"sky": {"type": "string"}},
                "required": ["sky"],
            }))),
        rmcp::model::Tool::new(
            "motd",
            "the message of the day",
            schema(json!({"type": "object"})),
        ),
    ]
}

/// A plain tool's answer: no envelope in it.
fn plain_answer(tool: &str) -> Option<CallToolResult> {
    match tool {
        "weather" => Some(CallToolResult::structured(json!({"sky": "clear"}))),
        "motd" => Some(CallToolResult::success(vec![
            rmcp::model::ContentBlock::text("hello"),
        ])),
        _ => None,
    }
}

/// A client of `server` over an in-memory connection.
async fn connect(server: Faulty) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let kill = Arc::clone(&server.kill);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            kill.lock().unwrap_or_else(PoisonError::into_inner).token =
                Some(running.cancellation_token());
            let _ = running.waiting().await;
        }
    });
    let service = ().serve(client_io).await.expect("connects");
    Client::new(service).await.expect("lists the tools")
}

/// A policy without jitter, so that the waits are known.
fn steady() -> RetryPolicy {
    RetryPolicy {
        max_attempts: 5,
        base_delay: Duration::from_millis(100),
        max_delay: Duration::from_secs(2),
        deadline: Duration::from_secs(30),
        jitter: false,
    }
}

fn faults(fail_times: usize) -> Faults {
    Faults {
        fail_times,
        ..Faults::default()
    }
}

#[tokio::test(start_paused = true)]
async fn a_transient_failure_is_retried_until_it_passes() {
    let server = Faulty::new(faults(3));
    let client = connect(server.clone()).await.with_policy(steady());
    let started = Instant::now();
    let envelope = client
        .call::<Value>("flaky", Value::Null)
        .await
        .expect("answers");
    let waited = started.elapsed();
    assert!(envelope.is_ok(), "{envelope:?}");
    assert_eq!(envelope.data(), Some(&json!({"attempt": 4})));
    assert_eq!(server.received(), ["flaky"; 4], "exactly N + 1 calls");
    // 100 + 200 + 400 ms of backoff, on the paused clock.
    assert!(waited >= Duration::from_millis(700), "{waited:?}");
    assert!(waited < Duration::from_millis(750), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn the_jittered_backoff_waits_no_longer_than_the_steps() {
    let server = Faulty::new(faults(3));
    let policy = RetryPolicy {
        jitter: true,
        ..steady()
    };
    let client = connect(server.clone()).await.with_policy(policy);
    let started = Instant::now();
    let envelope = client
        .call::<Value>("flaky", Value::Null)
        .await
        .expect("answers");
    assert!(envelope.is_ok());
    assert_eq!(server.received().len(), 4);
    assert!(
        started.elapsed() < Duration::from_millis(750),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn retries_end_at_max_attempts_with_the_last_failure_returned() {
    let server = Faulty::new(faults(10));
    let client = connect(server.clone()).await.with_policy(RetryPolicy {
        max_attempts: 3,
        ..steady()
    });
    // Attempts spent: the last failure is the answer, as any failure is.
    let envelope = client
        .call::<Value>("flaky", Value::Null)
        .await
        .expect("the last failure is returned");
    let last = envelope.error().expect("still failing");
    assert_eq!(last.category(), Category::Transient);
    assert!(last.retryable());
    assert_eq!(server.received().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_plain_call_is_never_retried() {
    let server = Faulty::new(faults(1));
    let client = connect(server.clone()).await.with_policy(steady());
    let envelope = client
        .call_once::<Value>("flaky", Value::Null)
        .await
        .expect("reads");
    let error = envelope.error().expect("failed");
    assert!(error.retryable());
    assert_eq!(server.received().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_is_not_idempotent_is_not_retried() {
    let server = Faulty::new(faults(0));
    let client = connect(server.clone()).await.with_policy(steady());
    assert!(!client.is_idempotent("append"));
    let envelope = client
        .call::<Value>("append", Value::Null)
        .await
        .expect("reads");
    let error = envelope.error().expect("the failure, as read");
    assert!(error.retryable(), "the server says a retry may help");
    assert_eq!(
        server.received(),
        ["append"],
        "but it may have run: one call"
    );
}

#[tokio::test(start_paused = true)]
async fn a_tool_that_is_not_idempotent_is_retried_when_nothing_ran() {
    let server = Faulty::new(faults(2));
    let client = connect(server.clone()).await.with_policy(steady());
    let envelope = client
        .call::<Value>("enqueue", Value::Null)
        .await
        .expect("answers");
    assert!(envelope.is_ok(), "{envelope:?}");
    assert_eq!(server.received().len(), 3);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured() {
    let server = Faulty::new(Faults {
        fail_times: 1,
        retry_after: Duration::from_millis(1_500),
        ..Faults::default()
    });
    let client = connect(server.clone()).await.with_policy(steady());
    let started = Instant::now();
    let envelope = client
        .call::<Value>("limited", Value::Null)
        .await
        .expect("answers");
    let waited = started.elapsed();
    assert!(envelope.is_ok());
    assert_eq!(server.received().len(), 2);
    assert!(waited >= Duration::from_millis(1_500), "{waited:?}");
    assert!(waited < Duration::from_millis(1_550), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_clamped_to_the_ceiling() {
    let server = Faulty::new(Faults {
        fail_times: 1,
        retry_after: Duration::from_secs(20),
        ..Faults::default()
    });
    let client = connect(server.clone()).await.with_policy(steady());
    let started = Instant::now();
    let envelope = client
        .call::<Value>("limited", Value::Null)
        .await
        .expect("answers");
    let waited = started.elapsed();
    assert!(envelope.is_ok());
    // The ceiling is 2 s: the 20 s asked for is not waited.
    assert!(waited >= Duration::from_secs(2), "{waited:?}");
    assert!(waited < Duration::from_millis(2_050), "{waited:?}");
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_of_a_year_is_refused_without_waiting() {
    let year = Duration::from_secs(365 * 24 * 3600);
    let server = Faulty::new(Faults {
        fail_times: 1,
        retry_after: year,
        ..Faults::default()
    });
    let client = connect(server.clone()).await.with_policy(steady());
    let started = Instant::now();
    let error = client
        .call::<Value>("limited", Value::Null)
        .await
        .expect_err("refused");
    assert!(
        started.elapsed() < Duration::from_millis(10),
        "{:?}",
        started.elapsed()
    );
    let ClientError::RetryAfterPastDeadline { retry_after, .. } = error else {
        panic!("{error:?}");
    };
    assert_eq!(retry_after, year);
    assert_eq!(server.received().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn the_deadline_bounds_the_backoff() {
    let server = Faulty::new(faults(100));
    let client = connect(server.clone()).await.with_policy(RetryPolicy {
        max_attempts: 100,
        deadline: Duration::from_millis(1_000),
        ..steady()
    });
    let started = Instant::now();
    let error = client
        .call::<Value>("flaky", Value::Null)
        .await
        .expect_err("gives up");
    assert!(
        matches!(error, ClientError::DeadlineExceeded { .. }),
        "{error:?}"
    );
    // 100 + 200 + 400 ms waited; the next 800 ms would pass the deadline.
    assert!(started.elapsed() < Duration::from_millis(1_000));
    assert_eq!(server.received().len(), 4);
}

#[tokio::test]
async fn a_stale_ref_is_re_resolved_once() {
    let server = Faulty::new(Faults {
        fresh_from: 2,
        ..Faults::default()
    });
    let client = connect(server.clone()).await;
    let found = client
        .call_once::<Value>("find", Value::Null)
        .await
        .expect("finds");
    let stale_ref = found.data().expect("data")["target_ref"].clone();
    assert_eq!(stale_ref, "ref-1");
    let envelope = client
        .read::<Value>("open", json!({ "target_ref": stale_ref }))
        .await
        .expect("re-resolved");
    assert_eq!(envelope.data(), Some(&json!({"read": "ref-2"})));
    assert_eq!(server.received(), ["find", "open", "find", "open"]);
}

#[tokio::test]
async fn a_ref_stale_again_gives_up_with_a_typed_error() {
    let server = Faulty::new(Faults {
        fresh_from: usize::MAX,
        ..Faults::default()
    });
    let client = connect(server.clone()).await;
    let error = client
        .read::<Value>("open", json!({ "target_ref": "ref-0" }))
        .await
        .expect_err("stale twice");
    let ClientError::StaleRef { code, .. } = &error else {
        panic!("{error:?}");
    };
    assert_eq!(code, STALE_TARGET_SNAPSHOT);
    assert_eq!(
        server.received(),
        ["open", "find", "open"],
        "once, not forever"
    );
}

/// Every next-page token after the first replaced by the first.
fn looping() -> impl Fn(&str, &mut CallToolResult) + Send + Sync + 'static {
    let first: Mutex<Option<Value>> = Mutex::new(None);
    move |_, result| {
        let Some(action) = result
            .structured_content
            .as_mut()
            .and_then(|envelope| envelope.get_mut("next_actions"))
            .and_then(Value::as_array_mut)
            .and_then(|actions| actions.iter_mut().find(|action| action["id"] == NEXT_PAGE))
        else {
            return;
        };
        let mut first = first.lock().unwrap_or_else(PoisonError::into_inner);
        let token = first.get_or_insert_with(|| action["arguments"]["continuation"].clone());
        action["arguments"]["continuation"] = token.clone();
    }
}

#[tokio::test]
async fn a_repeated_cursor_stops_paging_with_a_typed_error() {
    let server = Faulty::spoiled(Faults::default(), looping());
    let client = connect(server.clone()).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
    let first = pages.next().await.expect("a page").expect("ok");
    assert_eq!(first.data().expect("rows").rows.len(), 10);
    let second = pages.next().await.expect("a page").expect("ok");
    assert_eq!(second.data().expect("rows").rows[0], "row 10");
    let error = pages.next().await.expect("the error").expect_err("loops");
    assert!(
        matches!(error, ClientError::CursorRepeated { page: 2, .. }),
        "{error:?}"
    );
    assert!(pages.next().await.is_none());
    assert_eq!(pages.end(), Some(PagesEnd::Error));
    assert_eq!(
        server.received().len(),
        2,
        "the repeated page is not called"
    );
}

#[tokio::test]
async fn a_changing_total_stops_paging() {
    let server = Faulty::spoiled(Faults::default(), |_, result| {
        if let Some(completeness) = result
            .structured_content
            .as_mut()
            .and_then(|envelope| envelope.get_mut("completeness"))
            && completeness["offset"] == 10
        {
            completeness["total"] = json!(31);
        }
    });
    let client = connect(server).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
    pages.next().await.expect("a page").expect("ok");
    let error = pages.next().await.expect("the error").expect_err("changed");
    assert!(
        matches!(
            error,
            ClientError::TotalChanged {
                first: 30,
                now: 31,
                page: 2,
                ..
            }
        ),
        "{error:?}"
    );
}

#[tokio::test]
async fn a_page_that_starts_over_stops_paging() {
    // Each page alone is sound; the second says it starts at the first row again.
    let server = Faulty::spoiled(Faults::default(), |_, result| {
        if let Some(completeness) = result
            .structured_content
            .as_mut()
            .and_then(|envelope| envelope.get_mut("completeness"))
            .and_then(Value::as_object_mut)
        {
            completeness.remove("offset");
            completeness.insert("total".into(), json!(15));
        }
    });
    let client = connect(server).await;
    let mut pages = client.pages::<Value>("rows", json!({}), PageLimits::to_the_end());
    pages.next().await.expect("a page").expect("ok");
    let error = pages
        .next()
        .await
        .expect("the error")
        .expect_err("went back");
    assert!(
        matches!(
            error,
            ClientError::PageWentBack {
                page: 2,
                offset: 0,
                end: 10,
                ..
            }
        ),
        "{error:?}"
    );
    // A page that contradicts the ones before cannot be continued.
    assert!(pages.resume().is_none());
}

#[tokio::test]
async fn a_server_killed_at_any_page_fails_typed_and_keeps_the_pages_before() {
    // Thirty rows, ten a page: killed answering the first, the second or the last page.
    for at in 1..=3 {
        let server = Faulty::new(Faults::default()).dying_at(at);
        let client = connect(server).await;
        let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
        let mut rows = Vec::new();
        let error = loop {
            match pages.next().await.expect("a page or the error") {
                Ok(page) => rows.extend(page.data().expect("rows").rows.clone()),
                Err(error) => break error,
            }
        };
        assert!(
            matches!(error, ClientError::Service { .. }),
            "{at}: {error:?}"
        );
        assert_eq!(rows.len(), 10 * (at - 1), "the rows of the pages before");
        assert_eq!(pages.end(), Some(PagesEnd::Error));
        // The call that did not complete resumes (the first call is the caller's own).
        match pages.resume() {
            None => assert_eq!(at, 1),
            Some(action) => assert_eq!(action.id, NEXT_PAGE),
        }
        assert!(pages.next().await.is_none());
    }
}

#[tokio::test]
async fn a_continuation_that_grows_past_the_bound_is_not_sent() {
    // The second page's next-page token is one character past what the kit sends.
    let server = Faulty::spoiled(Faults::default(), |_, result| {
        let Some(envelope) = result.structured_content.as_mut() else {
            return;
        };
        let second = envelope["completeness"]["offset"] == 10;
        if let Some(action) = envelope
            .get_mut("next_actions")
            .and_then(Value::as_array_mut)
            .and_then(|actions| actions.iter_mut().find(|action| action["id"] == NEXT_PAGE))
            && second
        {
            action["arguments"]["continuation"] =
                json!("x".repeat(envelope_client::MAX_CONTINUATION_CHARS + 1));
        }
    });
    let client = connect(server.clone()).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
    pages.next().await.expect("a page").expect("ok");
    pages.next().await.expect("a page").expect("ok");
    let error = pages
        .next()
        .await
        .expect("the error")
        .expect_err("too long");
    assert!(
        matches!(error, ClientError::ContinuationTooLong { page: 3, .. }),
        "{error:?}"
    );
    assert_eq!(
        server.received().len(),
        2,
        "the third page is not asked for"
    );
    // Its call is offered to resume with, once the server is fixed.
    assert!(pages.resume().is_some());
}

#[tokio::test]
async fn paging_stops_at_the_callers_limits() {
    let server = Faulty::new(Faults::default());
    let client = connect(server.clone()).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::rows(15));
    let mut rows = Vec::new();
    while let Some(page) = pages.next().await {
        rows.extend(page.expect("ok").data().expect("rows").rows.clone());
    }
    assert_eq!(
        rows.len(),
        20,
        "the page that reaches the limit is kept whole"
    );
    assert_eq!(pages.end(), Some(PagesEnd::MaxRows));
    let limits = PageLimits {
        max_pages: 1,
        ..PageLimits::default()
    };
    let mut pages = client.pages::<Rows>("rows", json!({}), limits);
    assert!(pages.next().await.is_some());
    assert!(pages.next().await.is_none());
    assert_eq!(pages.end(), Some(PagesEnd::MaxPages));
    assert_eq!(server.received().len(), 3);
}

#[tokio::test]
async fn paging_to_the_end_checks_out() {
    use futures_util::StreamExt as _;
    let server = Faulty::new(Faults::default());
    let client = connect(server).await;
    let pages = client.pages::<Rows>("rows", json!({ "limit": 7 }), PageLimits::to_the_end());
    let pages: Vec<Envelope<Rows>> = pages
        .into_stream()
        .map(|page| page.expect("ok"))
        .collect()
        .await;
    let rows: Vec<String> = pages
        .iter()
        .flat_map(|page| page.data().expect("rows").rows.clone())
        .collect();
    let expected: Vec<String> = (0..ROWS).map(|index| format!("row {index:02}")).collect();
    assert_eq!(rows, expected);
    assert_eq!(pages.len(), 5);
}

#[tokio::test]
async fn an_answer_without_an_envelope_is_a_typed_error() {
    let server = Faulty::spoiled(Faults::default(), |tool, result| match tool {
        // No structured content, and a text channel that is no envelope.
        "flaky" => {
            result.structured_content = None;
            result.content = vec![rmcp::model::ContentBlock::text("hits: 3")];
        }
        // No structured content, but the text channel mirrors the envelope.
        "rows" => result.structured_content = None,
        "find" => result.structured_content = Some(json!({"hits": 3})),
        _ => {}
    });
    let client = connect(server).await;
    let error = client
        .call_once::<Value>("flaky", Value::Null)
        .await
        .expect_err("no envelope");
    assert!(matches!(error, ClientError::Read { .. }), "{error:?}");
    // The text channel is read when, and only when, structured content is absent.
    let mirrored = client
        .call_once::<Rows>("rows", json!({}))
        .await
        .expect("the envelope, read from its text mirror");
    assert_eq!(mirrored.data().expect("ok").rows.len(), 10);
    let error = client
        .call_once::<Value>("find", Value::Null)
        .await
        .expect_err("not an envelope");
    let decode = error.as_decode().expect("a decode error");
    assert_eq!(decode.field(), ".");
    assert!(decode.message.contains("`ok`"), "{decode}");
}

#[tokio::test]
async fn an_envelope_that_breaks_its_schema_names_the_field() {
    let server = Faulty::spoiled(Faults::default(), |tool, result| {
        let Some(envelope) = result.structured_content.as_mut() else {
            return;
        };
        match tool {
            "rows" => envelope["data"]["rows"][3] = json!(7),
            "find" => {
                envelope["completeness"] = json!({"unit": "items", "returned": 9, "total": 2,
                "complete": false, "truncated": false, "incomplete_reasons": ["walk_failure"]})
            }
            "flaky" => envelope["verdict"] = json!("ERROR"),
            _ => {}
        }
    });
    let client = connect(server).await;
    let error = client
        .call_once::<Rows>("rows", json!({}))
        .await
        .expect_err("a number among strings");
    assert_eq!(error.as_decode().expect("decode").field(), "data.rows[3]");
    let error = client
        .call_once::<Value>("find", Value::Null)
        .await
        .expect_err("more rows than the total");
    assert_eq!(error.as_decode().expect("decode").field(), "completeness");
    let error = client
        .call_once::<Value>("flaky", Value::Null)
        .await
        .expect_err("ok with the verdict ERROR");
    let decode = error.as_decode().expect("decode");
    assert!(decode.message.contains("verdict"), "{decode}");
}

#[tokio::test]
async fn a_next_action_to_an_unlisted_tool_is_refused_without_a_call() {
    let server = Faulty::spoiled(Faults::default(), |_, result| {
        let Some(envelope) = result.structured_content.as_mut() else {
            return;
        };
        envelope["next_actions"] = json!([
            {"id": "vanished", "role": "inspect", "tool": "no_such_tool", "arguments": {},
             "reason": "a tool that is not there"},
            {"id": "bad-args", "role": "inspect", "tool": "rows", "arguments": {"limit": "ten"},
             "reason": "arguments its schema refuses"},
            {"id": "fine", "role": "inspect", "tool": "rows", "arguments": {"limit": 5},
             "reason": "a call as it should be"}
        ]);
    });
    let client = connect(server.clone()).await;
    let envelope = client
        .call_once::<Value>("find", Value::Null)
        .await
        .expect("reads");
    let error = client
        .follow::<Value, _>(&envelope, "vanished")
        .await
        .expect_err("not listed");
    assert!(
        matches!(&error, ClientError::NotListed { tool } if tool == "no_such_tool"),
        "{error:?}"
    );
    let error = client
        .follow::<Value, _>(&envelope, "bad-args")
        .await
        .expect_err("fails the schema");
    assert!(
        matches!(&error, ClientError::ActionArguments { action, .. } if action == "bad-args"),
        "{error:?}"
    );
    let error = client
        .follow::<Value, _>(&envelope, "absent")
        .await
        .expect_err("no such action");
    assert!(
        matches!(error, ClientError::NoSuchAction { .. }),
        "{error:?}"
    );
    let error = client
        .call_once::<Value>("no_such_tool", Value::Null)
        .await
        .expect_err("not listed");
    assert!(matches!(error, ClientError::NotListed { .. }), "{error:?}");
    assert_eq!(server.received(), ["find"], "nothing else was sent");
    let followed = client
        .follow::<Rows, _>(&envelope, "fine")
        .await
        .expect("followed");
    assert_eq!(followed.data().expect("rows").rows.len(), 5);
    assert_eq!(server.received(), ["find", "rows"]);
}

/// A page call that does not complete ends paging with the error; the pages before it were
/// yielded, and `resume` is the call to make again to go on from there.
#[tokio::test]
async fn paging_stopped_by_a_fault_says_which_call_resumes_it() {
    let calls = Arc::new(Mutex::new(0usize));
    let counted = Arc::clone(&calls);
    let server = Faulty::spoiled(Faults::default(), move |tool, result| {
        if tool != "rows" {
            return;
        }
        let mut calls = counted.lock().unwrap_or_else(PoisonError::into_inner);
        *calls += 1;
        if *calls == 2 {
            // The second page comes back with no envelope at all.
            result.structured_content = None;
            result.content.clear();
        }
    });
    let client = connect(server.clone()).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
    let first = pages.next().await.expect("a page").expect("ok");
    let offered = first
        .next_actions()
        .iter()
        .find(|action| action.id == NEXT_PAGE)
        .cloned()
        .expect("a next page");
    assert!(pages.resume().is_none(), "paging goes on");
    let error = pages
        .next()
        .await
        .expect("the error")
        .expect_err("no envelope");
    assert!(matches!(error, ClientError::Read { .. }), "{error:?}");
    assert_eq!(pages.end(), Some(PagesEnd::Error));
    let resume = pages.resume().cloned().expect("the call to make again");
    assert_eq!(resume, offered);
    // Made again, it is the second page.
    let again: Envelope<Rows> = client.follow(&first, NEXT_PAGE).await.expect("the page");
    assert_eq!(again.data().expect("rows").rows[0], "row 10");
}

/// A limit leaves the next page unfollowed: `resume` is it.
#[tokio::test]
async fn a_limit_leaves_the_next_page_to_resume_with() {
    let client = connect(Faulty::new(Faults::default())).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::rows(10));
    let first = pages.next().await.expect("a page").expect("ok");
    assert!(pages.next().await.is_none());
    assert_eq!(pages.end(), Some(PagesEnd::MaxRows));
    let resume = pages.resume().expect("the next page");
    assert_eq!(
        Some(resume),
        first.next_actions().iter().find(|a| a.id == NEXT_PAGE)
    );
}

/// A server mixing plain and envelope tools works through the client: each plain tool is
/// handed back as it came, marked as no envelope, and called once; an envelope tool is read as
/// an envelope; `call_plain` refuses an envelope tool before sending anything.
#[tokio::test]
async fn plain_tools_pass_through_a_mixed_server() {
    let server = Faulty::new(Faults::default());
    let client = connect(server.clone()).await;
    let weather = client.tool("weather").expect("listed");
    assert!(envelope_client::read::is_plain(weather));
    assert!(!envelope_client::read::speaks_envelope(weather));
    let rows = client.tool("rows").expect("listed");
    assert!(envelope_client::read::speaks_envelope(rows));

    let sky = client
        .call_any::<Value>("weather", json!({}))
        .await
        .expect("answers");
    let plain = sky.plain().expect("a plain answer");
    assert_eq!(plain.structured_content, Some(json!({"sky": "clear"})));
    // Listed without an output schema: its answer says it is plain.
    let motd = client
        .call_any::<Value>("motd", json!({}))
        .await
        .expect("answers");
    assert!(motd.plain().is_some());
    // An envelope tool is read as one.
    let page = client
        .call_any::<Rows>("rows", json!({}))
        .await
        .expect("answers");
    assert_eq!(
        page.envelope()
            .expect("an envelope")
            .data()
            .expect("ok")
            .rows
            .len(),
        10
    );
    // `call` reads envelopes only.
    let error = client
        .call_once::<Value>("weather", json!({}))
        .await
        .expect_err("no envelope");
    assert!(matches!(error, ClientError::Decode { .. }), "{error:?}");
    let refused = client
        .call_plain("rows", json!({}))
        .await
        .expect_err("an envelope tool");
    assert!(
        matches!(refused, ClientError::EnvelopeTool { .. }),
        "{refused:?}"
    );
    let called = server.received();
    assert_eq!(
        called.iter().filter(|tool| *tool == "weather").count(),
        2,
        "{called:?}"
    );
    assert!(
        !called.contains(&"rows".to_owned()) || called.iter().filter(|t| *t == "rows").count() == 1
    );
}

/// A page whose token is in `completeness.continuation` (where the contract puts a token no
/// next action carries, and where Frigg's contract always has it) pages on: the last call again
/// with only `continuation` set, as the Python kit does.
#[tokio::test]
async fn a_token_in_the_completeness_pages_on_without_an_action() {
    let server = Faulty::spoiled(Faults::default(), |tool, result| {
        let Some(envelope) = result
            .structured_content
            .as_mut()
            .filter(|_| tool == "rows")
        else {
            return;
        };
        let token = envelope["next_actions"]
            .as_array()
            .and_then(|actions| actions.iter().find(|action| action["id"] == NEXT_PAGE))
            .map(|action| action["arguments"]["continuation"].clone());
        if let (Some(token), Some(envelope)) = (token, envelope.as_object_mut()) {
            envelope.remove("next_actions");
            envelope["completeness"]["continuation"] = token;
        }
    });
    let client = connect(server).await;
    let mut pages = client.pages::<Rows>("rows", json!({}), PageLimits::to_the_end());
    let mut rows = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.expect("a page");
        assert!(page.next_actions().is_empty());
        rows.extend(page.data().expect("rows").rows.clone());
    }
    assert_eq!(pages.end(), Some(PagesEnd::Last));
    let expected: Vec<String> = (0..ROWS).map(|index| format!("row {index:02}")).collect();
    assert_eq!(rows, expected);
}

//! Every call runs in a `tracing` span built from the envelope's own facts: a tool's own log
//! lines carry the call's `request_id` and `tool`, and the fields the span records on
//! completion are the envelope's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use envelope_core::{ToolError, ToolResult, tool, toolset};
use envelope_mcp::{BudgetPolicy, EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// Fields as text: what a log line or an exporter would show.
type Fields = BTreeMap<String, String>;

struct Collect(Fields);

impl Visit for Collect {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
}

/// What the test subscriber saw: each `tool_call` span's fields when it closed, and each event
/// with the fields of the spans it ran in.
#[derive(Default)]
struct Seen {
    spans: Vec<Fields>,
    events: Vec<(Fields, Fields)>,
}

#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Seen>>);

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Recorder {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut fields = Collect(Fields::new());
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields.0);
        }
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(fields) = span.extensions_mut().get_mut::<Fields>()
        {
            let mut more = Collect(std::mem::take(fields));
            values.record(&mut more);
            *fields = more.0;
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut own = Collect(Fields::new());
        event.record(&mut own);
        let mut around = Fields::new();
        if let Some(scope) = ctx.event_scope(event) {
            for span in scope.from_root() {
                if let Some(fields) = span.extensions().get::<Fields>() {
                    around.extend(fields.clone());
                }
            }
        }
        self.0
            .lock()
            .expect("not poisoned")
            .events
            .push((own.0, around));
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(&id)
            && span.name() == "tool_call"
            && let Some(fields) = span.extensions().get::<Fields>()
        {
            self.0
                .lock()
                .expect("not poisoned")
                .spans
                .push(fields.clone());
        }
    }
}

/// Logs a line of its own, then answers.
#[tool(tier = standard, read_only, layer = "search")]
async fn chatty(args: ChattyArgs) -> ToolResult<Vec<u32>> {
    tracing::info!(rows = args.rows, "chatty is working");
    if args.rows == 0 {
        return Err(ToolError::transient("the index is rebuilding"));
    }
    Ok((0..args.rows).collect())
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ChattyArgs {
    rows: u32,
}

fn server() -> EnvelopeServer {
    // A small budget, so that a long answer is cut.
    let budget = BudgetPolicy::default().with_agent_chars(Some(2_000));
    EnvelopeServer::new(
        toolset![chatty],
        EnvelopeConfig::new("observed", "1").with_budget(budget),
    )
}

/// Runs `calls` against a fresh server under the recording subscriber.
fn observe(calls: Vec<Value>) -> (Vec<Value>, Seen) {
    // One test observes at a time: tracing caches each callsite's interest across every live
    // subscriber, and two scoped subscribers coming and going in parallel can leave a callsite
    // disabled for both.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let recorder = Recorder::default();
    let subscriber = tracing_subscriber::registry().with(recorder.clone());
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = server();
    let answers = calls
        .into_iter()
        .map(|arguments| {
            let sent = runtime
                .block_on(server.call("chatty", arguments))
                .expect("a known tool");
            sent.structured
        })
        .collect();
    drop(_default);
    let seen = std::mem::take(&mut *recorder.0.lock().expect("not poisoned"));
    (answers, seen)
}

#[test]
fn a_tools_own_log_line_carries_the_calls_request_id_and_tool() {
    let (answers, seen) = observe(vec![json!({ "rows": 3 })]);
    let request_id = answers[0]["meta"]["request_id"].as_str().expect("an id");
    let (own, around) = seen
        .events
        .iter()
        .find(|(own, _)| own.get("message").is_some_and(|m| m == "chatty is working"))
        .expect("the tool's line was seen");
    assert_eq!(own["rows"], "3");
    assert_eq!(around["request_id"], request_id);
    assert_eq!(around["tool"], "chatty");
    assert_eq!(around["tier"], "standard");
    assert_eq!(around["layer"], "search");
    assert_eq!(around["idempotent"], "true");
}

#[test]
fn the_span_records_what_the_envelope_says() {
    let (answers, seen) = observe(vec![
        json!({ "rows": 3, "response_mode": "full" }),
        json!({ "rows": 0, "response_mode": "full" }),
        json!({ "rows": 5000, "response_mode": "full" }),
    ]);
    assert_eq!(seen.spans.len(), answers.len(), "one span per call");
    for (span, answer) in seen.spans.iter().zip(&answers) {
        let meta = &answer["meta"];
        // A field the envelope leaves out is left out of the span too.
        let text = |value: &Value| match value {
            Value::Null => None,
            Value::String(text) => Some(text.clone()),
            other => Some(other.to_string()),
        };
        let same = |field: &str, value: &Value| {
            assert_eq!(span.get(field).cloned(), text(value), "{field} of {answer}");
        };
        same("request_id", &meta["request_id"]);
        same("client_request_id", &meta["client_request_id"]);
        same("ok", &answer["ok"]);
        same("verdict", &answer["verdict"]);
        same("tokens_estimated", &meta["tokens_estimated"]);
        same("truncated", &meta["truncated"]);
        same("latency_ms", &meta["latency_ms"]);
        same("category", &answer["error"]["category"]);
        same("error.type", &answer["error"]["category"]);
        same("retryable", &answer["error"]["retryable"]);
        assert!(span.contains_key("latency_ms"), "{span:?}");
        assert_eq!(span["otel.name"], "tools/call chatty");
        assert_eq!(span["gen_ai.tool.name"], "chatty");
    }
    assert_eq!(answers[1]["error"]["category"], "transient");
    assert_eq!(answers[2]["meta"]["truncated"], true);
}

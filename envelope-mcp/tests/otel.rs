//! With feature `otel`, each call exports one OpenTelemetry server span, named for the tool,
//! carrying the GenAI/MCP semantic-convention attributes and the envelope's facts, in the
//! caller's trace when the request carries a W3C `traceparent`.
//!
//! Run with `cargo test -p envelope-mcp --features otel --test otel` (as `.ci/run` does).

mod common;

use std::time::Duration;

use common::raw_http::http_exchange;
use envelope_core::{ToolError, ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer, HttpConfig};
use opentelemetry::trace::{SpanKind, Status, TraceId, TracerProvider as _};
use opentelemetry::{Key, Value as OtelValue};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to answer; `fail` answers a transient error.
    word: String,
}

/// Answers `word`, or fails on `fail`.
#[tool(tier = lite, read_only, layer = "demo")]
async fn echo(args: EchoArgs) -> ToolResult<String> {
    if args.word == "fail" {
        return Err(ToolError::transient("asked to fail"));
    }
    Ok(args.word)
}

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_ID: &str = "00f067aa0ba902b7";

/// Where a call carries its trace context.
#[derive(Clone, Copy)]
enum Carried<'a> {
    Header(&'a str),
    Meta(&'a str),
    Nowhere,
}

fn call(host: &str, id: u32, word: &str, carried: Carried<'_>) -> String {
    // In full, the answer's `meta` carries what the span records (its token count among them).
    let mut params = json!({
        "name": "echo",
        "arguments": { "word": word, "response_mode": "full" }
    });
    if let Carried::Meta(traceparent) = carried {
        params["_meta"] = json!({ "traceparent": traceparent });
    }
    let body =
        json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params }).to_string();
    let trace = match carried {
        Carried::Header(value) => format!("traceparent: {value}\r\n"),
        _ => String::new(),
    };
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         {trace}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn attribute<'a>(span: &'a SpanData, key: &str) -> Option<&'a OtelValue> {
    span.attributes
        .iter()
        .find(|attribute| attribute.key == Key::from(key.to_owned()))
        .map(|attribute| &attribute.value)
}

fn text(span: &SpanData, key: &str) -> String {
    attribute(span, key)
        .map(|value| value.as_str().into_owned())
        .unwrap_or_default()
}

#[test]
fn each_call_exports_one_span_in_the_callers_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("otel-test")));
    // The runtime is this thread's, so the subscriber set here sees every span.
    let _default = tracing::subscriber::set_default(subscriber);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let answers: Vec<Value> = runtime.block_on(async {
        let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("traced", "1"));
        let config = HttpConfig::default()
            .with_stateless(true)
            .with_json_response(true);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, server.http_router_with(config)).await });
        let host = addr.to_string();
        let traceparent = format!("00-{TRACE_ID}-{PARENT_ID}-01");
        let mut answers = Vec::new();
        for (id, word, carried) in [
            (1, "hello", Carried::Header(&traceparent)),
            (2, "fail", Carried::Header(&traceparent)),
            (3, "untraced", Carried::Nowhere),
            (4, "garbled", Carried::Header("00-not-a-trace-01")),
            (5, "in meta", Carried::Meta(&traceparent)),
        ] {
            let (head, body) = http_exchange(addr, call(&host, id, word, carried), |_| false).await;
            assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
            let message: Value = serde_json::from_str(body.trim()).expect("a JSON answer");
            answers.push(message["result"]["structuredContent"].clone());
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        answers
    });
    provider.force_flush().expect("flushed");
    let spans: Vec<SpanData> = exporter
        .get_finished_spans()
        .expect("the spans")
        .into_iter()
        .filter(|span| span.name == "tools/call echo")
        .collect();
    assert_eq!(spans.len(), answers.len(), "one span per call: {spans:#?}");
    let request_id = |span: &SpanData| text(span, "request_id");
    for answer in &answers {
        let id = answer["meta"]["request_id"].as_str().expect("an id");
        let span = spans
            .iter()
            .find(|span| request_id(span) == id)
            .unwrap_or_else(|| panic!("no span for {id}"));
        assert_eq!(span.span_kind, SpanKind::Server);
        assert_eq!(text(span, "mcp.method.name"), "tools/call");
        assert_eq!(text(span, "gen_ai.operation.name"), "execute_tool");
        assert_eq!(text(span, "gen_ai.tool.name"), "echo");
        assert_eq!(text(span, "tool"), "echo");
        assert_eq!(text(span, "tier"), "lite");
        assert_eq!(text(span, "layer"), "demo");
        assert_eq!(
            attribute(span, "ok"),
            Some(&OtelValue::Bool(answer["ok"] == true))
        );
        assert_eq!(
            text(span, "verdict"),
            answer["verdict"].as_str().unwrap_or_default()
        );
        assert_eq!(
            attribute(span, "tokens_estimated"),
            answer["meta"]["tokens_estimated"]
                .as_i64()
                .map(OtelValue::I64)
                .as_ref()
        );
        if answer["ok"] == true {
            assert_eq!(span.status, Status::Unset);
        } else {
            assert_eq!(text(span, "error.type"), "transient");
            assert_eq!(attribute(span, "retryable"), Some(&OtelValue::Bool(true)));
            assert!(
                matches!(span.status, Status::Error { .. }),
                "{:?}",
                span.status
            );
        }
    }
    let caller = TraceId::from_hex(TRACE_ID).expect("a trace id");
    let in_callers_trace = |index: usize| {
        let id = answers[index]["meta"]["request_id"]
            .as_str()
            .unwrap_or_default();
        let span = spans
            .iter()
            .find(|span| request_id(span) == id)
            .expect("a span");
        (
            span.span_context.trace_id() == caller,
            span.parent_span_id.to_string() == PARENT_ID,
        )
    };
    assert_eq!(in_callers_trace(0), (true, true));
    assert_eq!(in_callers_trace(1), (true, true));
    // No trace context, or a malformed one: a trace of its own.
    assert!(!in_callers_trace(2).0);
    assert!(!in_callers_trace(3).0);
    // Where there are no headers (stdio), `params._meta` carries it.
    assert_eq!(in_callers_trace(4), (true, true));
}

//! With feature `otlp`, the example exports one span per call over OTLP/HTTP, in its caller's
//! trace: an in-process collector receives them.
//!
//! Run with `cargo test -p workspace-server --features otlp --test otlp` (as `.ci/run` does).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::routing::post;
use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::HttpConfig;
use opentelemetry::trace::TracerProvider as _;
use serde_json::{Value, json};
use tracing_subscriber::layer::SubscriberExt;

const TRACE_ID: &str = "0af7651916cd43dd8448eb211c80319c";

/// What the collector received: each export request's protobuf body.
type Received = Arc<Mutex<Vec<Bytes>>>;

fn contains(haystack: &[u8], needle: &[u8]) -> usize {
    haystack
        .windows(needle.len())
        .filter(|window| *window == needle)
        .count()
}

#[test]
fn an_otlp_collector_receives_one_span_per_call_in_the_callers_trace() {
    let received = Received::default();
    let collector = std::net::TcpListener::bind("127.0.0.1:0").expect("binds");
    let collector_addr = collector.local_addr().expect("an address");
    collector.set_nonblocking(true).expect("non-blocking");
    // The collector runs on a runtime of its own; the exporter's client blocks a thread.
    let collecting = tokio::runtime::Runtime::new().expect("a runtime");
    let traces = Arc::clone(&received);
    collecting.spawn(async move {
        let app = axum::Router::new().route(
            "/v1/traces",
            post(move |body: Bytes| {
                let traces = Arc::clone(&traces);
                async move {
                    traces.lock().expect("not poisoned").push(body);
                    ""
                }
            }),
        );
        let listener = tokio::net::TcpListener::from_std(collector).expect("a listener");
        axum::serve(listener, app).await
    });

    let provider =
        workspace_server::cli::otlp_provider(&format!("http://{collector_addr}/v1/traces"))
            .expect("an exporter");
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    let _default = tracing::subscriber::set_default(subscriber);

    let serving = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let answers: Vec<Value> = serving.block_on(async {
        let workspace = workspace_server::Workspace::open(root).expect("opens");
        let key = ContinuationKey::generate(1).expect("a key");
        let server = workspace_server::server(workspace, Continuations::new(key), &[]);
        let config = HttpConfig::default()
            .with_stateless(true)
            .with_json_response(true);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binds");
        let addr = listener.local_addr().expect("an address");
        tokio::spawn(async move { axum::serve(listener, server.http_router_with(config)).await });
        let http = reqwest_free_post(addr);
        let mut answers = Vec::new();
        for (id, path) in [(1, "Cargo.toml"), (2, "src/lib.rs"), (3, "no/such/file")] {
            answers.push(http(id, path).await);
        }
        answers
    });
    provider.shutdown().expect("flushed");
    drop(_default);
    let bodies = received.lock().expect("not poisoned").clone();
    let all: Vec<u8> = bodies.iter().flat_map(|body| body.to_vec()).collect();
    assert_eq!(
        contains(&all, b"tools/call read_file"),
        answers.len(),
        "one span per call"
    );
    let trace: Vec<u8> = (0..16)
        .map(|i| u8::from_str_radix(&TRACE_ID[2 * i..2 * i + 2], 16).expect("hex"))
        .collect();
    assert_eq!(
        contains(&all, &trace),
        answers.len(),
        "every span in the caller's trace"
    );
    for answer in &answers {
        let id = answer["meta"]["request_id"].as_str().expect("an id");
        assert!(contains(&all, id.as_bytes()) >= 1, "no span of {id}");
    }
    assert!(contains(&all, b"gen_ai.tool.name") >= answers.len());
    assert_eq!(answers[2]["error"]["category"], "not_found");
    assert!(
        contains(&all, b"not_found") >= 2,
        "error.type and category of the failed call"
    );
    collecting.shutdown_timeout(Duration::from_secs(1));
}

/// A `tools/call` of `read_file` over raw HTTP/1.1 with a `traceparent`: its envelope.
fn reqwest_free_post(
    addr: std::net::SocketAddr,
) -> impl Fn(u32, &'static str) -> std::pin::Pin<Box<dyn std::future::Future<Output = Value>>> {
    move |id, path| {
        Box::pin(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let body = json!({
                "jsonrpc": "2.0", "id": id, "method": "tools/call",
                "params": { "name": "read_file", "arguments": { "path": path, "end_line": 2 } }
            })
            .to_string();
            let request = format!(
                "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
                 accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
                 traceparent: 00-{TRACE_ID}-b7ad6b7169203331-01\r\nconnection: close\r\n\
                 content-length: {}\r\n\r\n{body}",
                body.len()
            );
            let mut stream = tokio::net::TcpStream::connect(addr)
                .await
                .expect("connects");
            stream.write_all(request.as_bytes()).await.expect("sent");
            let mut raw = String::new();
            stream.read_to_string(&mut raw).await.expect("read");
            let (_, body) = raw.split_once("\r\n\r\n").expect("a body");
            let message: Value = serde_json::from_str(body.trim()).expect("JSON");
            message["result"]["structuredContent"].clone()
        })
    }
}

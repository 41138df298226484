//! The streamable HTTP endpoint as [`HttpConfig`] sets it up: health and readiness, the hosts
//! it accepts, JSON answers, stateless calls, the concurrency limit and the request timeout,
//! CORS only when configured, and a graceful shutdown that drains calls in flight.

mod common;

use std::time::Duration;

use common::raw_http::{header, http_exchange};
use common::tools::nap;
use envelope_core::toolset;
use envelope_mcp::{CancellationToken, EnvelopeConfig, EnvelopeServer, HttpConfig, OVERLOADED};
use serde_json::{Value, json};

fn server() -> EnvelopeServer {
    EnvelopeServer::new(toolset![nap], EnvelopeConfig::new("configured", "1"))
}

/// `server` served as `config` says on a free loopback port, once it accepts connections; the
/// task serving it ends when the config's shutdown token is cancelled.
async fn serve(
    config: HttpConfig,
) -> (
    std::net::SocketAddr,
    tokio::task::JoinHandle<Result<(), envelope_mcp::McpError>>,
) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let serving = tokio::spawn(server().serve_http_with(addr, config));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    (addr, serving)
}

/// A stateless `tools/call` of `nap`, as a client of protocol `2025-06-18` sends it.
fn nap_call(host: &str, ms: u64) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "nap", "arguments": { "ms": ms } }
    })
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\nconnection: close\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// A `nap` of `ms` sent to `addr` on a task of its own: its answer's head and body once the
/// result has arrived.
fn nap_in_background(
    addr: std::net::SocketAddr,
    ms: u64,
) -> tokio::task::JoinHandle<(String, String)> {
    tokio::spawn(async move {
        let host = addr.to_string();
        http_exchange(addr, nap_call(&host, ms), |body| body.contains("result")).await
    })
}

/// A nap of 1.5 s holding a place at `addr`, and, once it runs, one more call's answer: the
/// nap's task, and that answer's head and body.
async fn one_more_while_napping(
    addr: std::net::SocketAddr,
) -> (tokio::task::JoinHandle<(String, String)>, String, String) {
    let slow = nap_in_background(addr, 1_500);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let (head, body) = http_exchange(addr, nap_call(&addr.to_string(), 0), |_| false).await;
    (slow, head, body)
}

fn get(host: &str, path: &str, extra: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nhost: {host}\r\n{extra}connection: close\r\n\r\n")
}

fn status(head: &str) -> u16 {
    head.split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// The JSON body of a complete answer, or the first SSE event's data.
fn json_body(body: &str) -> Value {
    serde_json::from_str(body.trim()).unwrap_or_else(|_| {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .find_map(|data| serde_json::from_str(data.trim()).ok())
            .unwrap_or(Value::Null)
    })
}

fn stateless() -> HttpConfig {
    HttpConfig::default()
        .with_stateless(true)
        .with_json_response(true)
}

#[tokio::test]
async fn health_and_readiness_answer_and_readiness_turns_off_at_shutdown() {
    let shutdown = CancellationToken::new();
    let router = server().http_router_with(stateless().with_shutdown(shutdown.clone()));
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let listener = tokio::net::TcpListener::bind(addr).await.expect("binds");
    // Served without graceful shutdown, so readiness can be read while shutting down.
    tokio::spawn(async move { axum::serve(listener, router).await });
    let host = addr.to_string();
    let (head, body) = http_exchange(addr, get(&host, "/healthz", ""), |_| false).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(json_body(&body)["status"], "ok");
    let (head, body) = http_exchange(addr, get(&host, "/readyz", ""), |_| false).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(
        json_body(&body),
        json!({"ready": true, "tools": 1, "continuations": false})
    );
    shutdown.cancel();
    let (head, body) = http_exchange(addr, get(&host, "/readyz", ""), |_| false).await;
    assert_eq!(status(&head), 503, "{head}");
    assert_eq!(json_body(&body)["ready"], false);
}

#[tokio::test]
async fn only_the_configured_hosts_are_served() {
    let shutdown = CancellationToken::new();
    // By default only loopback names: a server behind a proxy refuses the proxy's Host.
    let (addr, _) = serve(stateless().with_shutdown(shutdown.clone())).await;
    let (head, _) = http_exchange(addr, nap_call("mcp.example.com", 0), |_| false).await;
    assert_eq!(status(&head), 403, "{head}");
    let (head, body) = http_exchange(addr, nap_call(&addr.to_string(), 0), |body| {
        body.contains("result")
    })
    .await;
    assert_eq!(status(&head), 200, "{head}\n{body}");
    shutdown.cancel();

    let shutdown = CancellationToken::new();
    let config = stateless()
        .with_allowed_hosts(["mcp.example.com"])
        .with_shutdown(shutdown.clone());
    let (addr, _) = serve(config).await;
    let (head, body) = http_exchange(addr, nap_call("mcp.example.com", 0), |body| {
        body.contains("result")
    })
    .await;
    assert_eq!(status(&head), 200, "{head}\n{body}");
    assert!(
        header(&head, "content-type").is_some_and(|kind| kind.starts_with("application/json")),
        "{head}"
    );
    assert_eq!(json_body(&body)["result"]["structuredContent"]["data"], 0);
    shutdown.cancel();

    let shutdown = CancellationToken::new();
    let (addr, _) = serve(stateless().with_any_host().with_shutdown(shutdown.clone())).await;
    let (head, _) = http_exchange(addr, nap_call("anything.example", 0), |body| {
        body.contains("result")
    })
    .await;
    assert_eq!(status(&head), 200, "{head}");
    shutdown.cancel();
}

#[tokio::test]
async fn past_the_concurrency_limit_a_request_is_refused_at_once() {
    let shutdown = CancellationToken::new();
    let config = stateless()
        .with_max_concurrent_requests(Some(1))
        .with_shutdown(shutdown.clone());
    let (addr, _) = serve(config).await;
    let host = addr.to_string();
    let started = std::time::Instant::now();
    let (slow, head, body) = one_more_while_napping(addr).await;
    assert!(
        started.elapsed() < Duration::from_millis(1_300),
        "refused, not queued"
    );
    assert_eq!(status(&head), 503, "{head}");
    assert_eq!(header(&head, "retry-after"), Some("1"));
    let answer = json_body(&body);
    assert_eq!(answer["error"]["code"], OVERLOADED, "{answer}");
    // Health checks do not count against the limit.
    let (head, _) = http_exchange(addr, get(&host, "/healthz", ""), |_| false).await;
    assert_eq!(status(&head), 200);
    let (head, body) = slow.await.expect("joins");
    assert_eq!(
        status(&head),
        200,
        "the call in flight finishes: {head}\n{body}"
    );
    shutdown.cancel();
}

#[tokio::test]
async fn a_streamed_answer_holds_its_place_until_its_last_event() {
    // Without `json_response` the answer is an event stream, whose headers go out at once:
    // the call still counts until its result is sent.
    let shutdown = CancellationToken::new();
    let config = HttpConfig::default()
        .with_stateless(true)
        .with_max_concurrent_requests(Some(1))
        .with_shutdown(shutdown.clone());
    let (addr, _) = serve(config).await;
    let host = addr.to_string();
    let (slow, head, body) = one_more_while_napping(addr).await;
    assert_eq!(status(&head), 503, "{head}\n{body}");
    assert_eq!(json_body(&body)["error"]["code"], OVERLOADED);
    let (head, body) = slow.await.expect("joins");
    assert_eq!(status(&head), 200, "{head}");
    assert!(
        header(&head, "content-type").is_some_and(|kind| kind.starts_with("text/event-stream")),
        "{head}"
    );
    assert_eq!(
        json_body(&body)["result"]["structuredContent"]["data"],
        1_500
    );
    // Its place is free again once the stream has ended.
    let (head, _) = http_exchange(addr, nap_call(&host, 0), |body| body.contains("result")).await;
    assert_eq!(status(&head), 200, "{head}");
    shutdown.cancel();
}

#[tokio::test]
async fn a_request_past_the_timeout_answers_503_with_retry_after() {
    let shutdown = CancellationToken::new();
    let config = stateless()
        .with_request_timeout(Some(Duration::from_millis(200)))
        .with_shutdown(shutdown.clone());
    let (addr, _) = serve(config).await;
    let started = std::time::Instant::now();
    let (head, _) = http_exchange(addr, nap_call(&addr.to_string(), 5_000), |_| false).await;
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "not a hung connection"
    );
    assert_eq!(status(&head), 503, "{head}");
    assert!(header(&head, "retry-after").is_some(), "{head}");
    shutdown.cancel();
}

#[tokio::test]
async fn cors_headers_only_when_configured() {
    let preflight = |host: &str| {
        format!(
            "OPTIONS /mcp HTTP/1.1\r\nhost: {host}\r\norigin: https://app.example\r\n\
             access-control-request-method: POST\r\n\
             access-control-request-headers: content-type, mcp-protocol-version\r\n\
             connection: close\r\n\r\n"
        )
    };
    let shutdown = CancellationToken::new();
    let (addr, _) = serve(stateless().with_shutdown(shutdown.clone())).await;
    let (head, _) = http_exchange(addr, preflight(&addr.to_string()), |_| false).await;
    assert_eq!(header(&head, "access-control-allow-origin"), None, "{head}");
    shutdown.cancel();

    let shutdown = CancellationToken::new();
    let config = stateless()
        .with_cors_origins(["https://app.example"])
        .with_shutdown(shutdown.clone());
    let (addr, _) = serve(config).await;
    let (head, _) = http_exchange(addr, preflight(&addr.to_string()), |_| false).await;
    assert_eq!(status(&head), 200, "{head}");
    assert_eq!(
        header(&head, "access-control-allow-origin"),
        Some("https://app.example"),
        "{head}"
    );
    shutdown.cancel();
}

#[tokio::test]
async fn shutdown_drains_the_calls_in_flight_then_stops() {
    let shutdown = CancellationToken::new();
    let (addr, serving) = serve(stateless().with_shutdown(shutdown.clone())).await;
    let in_flight = nap_in_background(addr, 800);
    tokio::time::sleep(Duration::from_millis(200)).await;
    shutdown.cancel();
    let (head, body) = in_flight.await.expect("joins");
    assert_eq!(status(&head), 200, "{head}\n{body}");
    assert_eq!(json_body(&body)["result"]["structuredContent"]["data"], 800);
    let served = tokio::time::timeout(Duration::from_secs(5), serving)
        .await
        .expect("serving ends once drained")
        .expect("joins");
    assert!(served.is_ok(), "{served:?}");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no new connection after shutdown"
    );
}

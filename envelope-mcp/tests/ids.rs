//! JSON-RPC request ids: a request reusing an id still in flight is refused at once, over stdio
//! and over HTTP, and a cancelled request keeps its id until its handler ends.

mod common;

use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};

use common::lines::serve_lines_in_memory;
use common::raw_http::{http_exchange, open_session, post, serve_on_loopback, sse_result};
use common::tools::echo;

/// Holds its request id until the deadline answers for it.
#[tool(tier = heavy, read_only)]
async fn sleepy() -> ToolResult<()> {
    tokio::time::sleep(std::time::Duration::from_secs(30)).await;
    Ok(())
}

/// A client of `serve_lines` over an in-memory pipe, initialized: one JSON-RPC line out, one
/// in, as an MCP client over stdio speaks.
struct LineClient {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    answers: tokio::io::Lines<tokio::io::BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>>,
    serving: tokio::task::JoinHandle<Result<(), envelope_mcp::McpError>>,
}

impl LineClient {
    async fn connect(server: EnvelopeServer) -> LineClient {
        use tokio::io::AsyncBufReadExt;
        let (client_read, write, serving) = serve_lines_in_memory(server);
        let answers = tokio::io::BufReader::new(client_read).lines();
        let mut client = LineClient {
            write,
            answers,
            serving,
        };
        client
            .send(json!({
                "jsonrpc": "2.0", "id": 1, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "raw", "version": "0"}}
            }))
            .await;
        assert!(client.next_answer().await["result"].is_object());
        client
            .send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        client
    }

    async fn send(&mut self, message: Value) {
        use tokio::io::AsyncWriteExt;
        let line = format!("{message}\n");
        self.write
            .write_all(line.as_bytes())
            .await
            .expect("written");
    }

    async fn next_answer(&mut self) -> Value {
        let line =
            tokio::time::timeout(std::time::Duration::from_secs(20), self.answers.next_line())
                .await
                .expect("answered in time")
                .expect("reads")
                .expect("the server answers");
        serde_json::from_str(&line).expect("answers are JSON")
    }
}

impl Drop for LineClient {
    fn drop(&mut self) {
        self.serving.abort();
    }
}

/// A `tools/call` of `tool` under `id`: `echo` says "hi", any other tool takes nothing.
fn call_with_id(tool: &str, id: impl Into<Value>) -> Value {
    let id = id.into();
    let arguments = if tool == "echo" {
        json!({"text": "hi"})
    } else {
        json!({})
    };
    json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    })
}

/// A server of `echo` and `sleepy` whose calls end after a second.
fn ids_server() -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![echo, sleepy],
        EnvelopeConfig::new("ids", "1").with_call_timeout(Some(std::time::Duration::from_secs(1))),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reusing_an_id_in_flight_is_refused_at_once_over_stdio() {
    // Regression test for #12: the second request waited 300 s for nothing.
    let mut client = LineClient::connect(ids_server()).await;
    // The sleepy call holds id 20 for a second; the echo reusing it is refused first.
    client.send(call_with_id("sleepy", 20)).await;
    client.send(call_with_id("echo", 20)).await;
    let refused = client.next_answer().await;
    assert_eq!(refused["id"], 20, "{refused}");
    assert_eq!(
        refused["error"]["code"],
        envelope_mcp::DUPLICATE_ID,
        "{refused}"
    );
    let slow = client.next_answer().await;
    assert_eq!(slow["id"], 20, "{slow}");
    assert_eq!(
        slow["result"]["structuredContent"]["error"]["code"],
        envelope_mcp::DEADLINE_EXCEEDED
    );
    // Answered, the id is free again.
    client.send(call_with_id("echo", 20)).await;
    let echoed = client.next_answer().await;
    assert_eq!(echoed["id"], 20, "{echoed}");
    assert_eq!(
        echoed["result"]["structuredContent"]["ok"], true,
        "{echoed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_id_stays_in_flight_until_its_handler_ends() {
    // Regression test for #12 (review): freeing the id at the cancellation let a reused id take
    // over rmcp's routing while the first handler still ran.
    let mut client = LineClient::connect(ids_server()).await;
    client.send(call_with_id("sleepy", 30)).await;
    client
        .send(json!({
            "jsonrpc": "2.0", "method": "notifications/cancelled",
            "params": {"requestId": 30, "reason": "changed my mind"}
        }))
        .await;
    // Cancelled, but its handler runs on until the deadline: the id is still taken.
    client.send(call_with_id("echo", 30)).await;
    let refused = client.next_answer().await;
    assert_eq!(
        refused["error"]["code"],
        envelope_mcp::DUPLICATE_ID,
        "{refused}"
    );
    // Once the handler has ended, the id is free.
    tokio::time::sleep(std::time::Duration::from_millis(1_500)).await;
    client.send(call_with_id("echo", 30)).await;
    loop {
        let answer = client.next_answer().await;
        assert_eq!(answer["id"], 30, "{answer}");
        if answer["result"]["structuredContent"]["data"]["echo"] == "hi" {
            break;
        }
        // What rmcp says of the cancelled call, if anything, comes first.
        assert_ne!(
            answer["error"]["code"],
            envelope_mcp::DUPLICATE_ID,
            "{answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_reusing_an_id_in_flight_is_refused_at_once_over_http() {
    // Regression test for #12: the second request waited 300 s for nothing.
    let server = ids_server();
    let addr = serve_on_loopback(server).await;
    let session = open_session(addr).await;
    let call = call_with_id;

    // The sleepy call holds id "x" for a second; an echo reusing it is refused while it does.
    let holding = tokio::spawn(http_exchange(
        addr,
        post(addr, Some(&session), "", &call("sleepy", json!("x"))),
        |body| body.contains("structuredContent"),
    ));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let (head, body) = http_exchange(
        addr,
        post(addr, Some(&session), "", &call("echo", json!("x"))),
        |body| body.contains("error"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let refused: Value = serde_json::from_str(&body).expect("a JSON-RPC answer");
    assert_eq!(refused["id"], "x", "{refused}");
    assert_eq!(
        refused["error"]["code"],
        envelope_mcp::DUPLICATE_ID,
        "{refused}"
    );
    // Another id is no duplicate.
    let (_, body) = http_exchange(
        addr,
        post(addr, Some(&session), "", &call("echo", json!(7))),
        |body| body.contains("structuredContent"),
    )
    .await;
    assert_eq!(sse_result(&body)["structuredContent"]["ok"], true, "{body}");

    let (_, body) = holding.await.expect("the held call ends");
    assert_eq!(
        sse_result(&body)["structuredContent"]["error"]["code"],
        envelope_mcp::DEADLINE_EXCEEDED
    );
    // Answered, the id is free again.
    let (_, body) = http_exchange(
        addr,
        post(addr, Some(&session), "", &call("echo", json!("x"))),
        |body| body.contains("structuredContent"),
    )
    .await;
    assert_eq!(sse_result(&body)["structuredContent"]["ok"], true, "{body}");
}

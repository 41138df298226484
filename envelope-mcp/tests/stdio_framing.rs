//! Framing over stdio: every line a client sends to `serve_lines` (newline-delimited JSON-RPC)
//! gets an answer, however malformed, oversized or deeply nested it is.

mod common;

use envelope_core::toolset;
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};

use common::lines::serve_lines_in_memory;
use common::tools::echo;

/// Sends `lines` to a server reading newline-delimited JSON-RPC, and reads one answer line per
/// expected answer.
async fn exchange_lines(server: EnvelopeServer, lines: &[Vec<u8>], answers: usize) -> Vec<Value> {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let (client_read, mut client_write, serving) = serve_lines_in_memory(server);
    let writing = {
        let lines = lines.to_vec();
        tokio::spawn(async move {
            for line in lines {
                client_write.write_all(&line).await.expect("written");
                client_write.write_all(b"\n").await.expect("written");
            }
            client_write
        })
    };
    let mut reader = BufReader::new(client_read).lines();
    let mut found = Vec::new();
    while found.len() < answers {
        let line = tokio::time::timeout(std::time::Duration::from_secs(20), reader.next_line())
            .await
            .expect("every line is answered in time")
            .expect("reads")
            .expect("the server answers");
        found.push(serde_json::from_str(&line).expect("answers are JSON"));
    }
    drop(writing.await);
    serving.abort();
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_line_over_stdio_gets_an_answer() {
    // Regression test for #12: these lines got no response at all, and the client waited
    // forever.
    let server = EnvelopeServer::new(
        toolset![echo],
        EnvelopeConfig::new("lines", "1").with_max_request_bytes(64 * 1024),
    );
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "raw", "version": "0"}}
    });
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"x","params":"{}"}}"#,
        "a".repeat(100_000)
    );
    let bad_arguments = json!({
        "jsonrpc": "2.0", "id": 10, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"text": 5}}
    });
    let mut lines: Vec<Vec<u8>> = vec![
        initialize.to_string().into_bytes(),
        initialized.to_string().into_bytes(),
    ];
    let bad: Vec<Vec<u8>> = vec![
        b"not json".to_vec(),
        br#"{"jsonrpc":"2.0","id":2,"method":"tools/li"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":3,"x":NaN}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":4,"x":1e400}"#.to_vec(),
        br#"{"jsonrpc":"2.0","id":5,"x":"\ud800"}"#.to_vec(),
        b"{\"jsonrpc\":\"2.0\",\"id\":6,\"x\":\"\xff\"}".to_vec(),
        deep.into_bytes(),
        huge.into_bytes(),
        br#"{"jsonrpc":"2.0","id":7,"method":42}"#.to_vec(),
    ];
    lines.extend(bad.iter().cloned());
    lines.push(bad_arguments.to_string().into_bytes());
    let answers = exchange_lines(server, &lines, 2 + bad.len()).await;
    // Answered here or by rmcp, in whichever order they finish.
    let by_id = |id: i64| {
        answers
            .iter()
            .find(|answer| answer["id"] == id && answer.get("result").is_some())
            .unwrap_or_else(|| panic!("no result for id {id}: {answers:?}"))
    };
    assert!(by_id(1)["result"]["serverInfo"].is_object());
    let mut codes: Vec<(String, i64)> = answers
        .iter()
        .filter(|answer| answer.get("error").is_some())
        .map(|answer| {
            (
                answer["id"].to_string(),
                answer["error"]["code"].as_i64().expect("a code"),
            )
        })
        .collect();
    codes.sort();
    let mut expected = vec![("null".to_owned(), envelope_mcp::PARSE_ERROR); 7];
    expected.push(("null".to_owned(), envelope_mcp::INVALID_REQUEST));
    expected.push(("7".to_owned(), envelope_mcp::INVALID_REQUEST));
    expected.sort();
    assert_eq!(codes, expected);
    // A readable call with bad arguments is a validation envelope, and the session lives on.
    let last = by_id(10);
    assert_eq!(last["result"]["isError"], true, "{last}");
    assert_eq!(
        last["result"]["structuredContent"]["error"]["category"],
        "validation"
    );
}

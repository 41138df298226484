//! A JSON-RPC client over newline-delimited messages on an in-memory pipe: what an MCP client
//! sends over stdio, one request at a time.

use envelope_core::serde_json::{self, Value, json};
use envelope_mcp::tokio::io::{
    AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream, Lines, ReadHalf, WriteHalf,
};

/// The client's end of the pipe.
pub struct LineClient {
    answers: Lines<BufReader<ReadHalf<DuplexStream>>>,
    requests: WriteHalf<DuplexStream>,
    next_id: u64,
}

impl LineClient {
    /// A client on `pipe`, the other end of the server's.
    pub fn new(pipe: DuplexStream) -> Self {
        let (read, write) = envelope_mcp::tokio::io::split(pipe);
        LineClient {
            answers: BufReader::new(read).lines(),
            requests: write,
            next_id: 0,
        }
    }

    async fn send(&mut self, message: Value) {
        self.requests
            .write_all(format!("{message}\n").as_bytes())
            .await
            .expect("written");
    }

    /// Initializes the session, as a client without capabilities; the server's `initialize`
    /// result.
    pub async fn initialize(&mut self) -> Value {
        let info = self
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "downstream", "version": "0"}}),
            )
            .await;
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        info
    }

    /// The result of calling `tool` with `arguments`.
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        self.request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await
    }

    /// The answer to one request: its `result`, or the whole message when it is an error.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        loop {
            let line = self
                .answers
                .next_line()
                .await
                .expect("reads")
                .expect("an answer");
            let answer: Value = serde_json::from_str(&line).expect("JSON");
            // Notifications (logging, list changes) may come first.
            if answer.get("id").is_none() {
                continue;
            }
            assert_eq!(answer["id"], id, "{answer}");
            return answer.get("result").cloned().unwrap_or(answer);
        }
    }
}

//! Raw HTTP/1.1 against a server on loopback, for the tests that check what goes over the wire
//! byte for byte (status lines, headers, SSE framing), which a client library would hide.

// Each test binary uses its own share of these.
#![allow(dead_code)]

use std::time::Duration;

use envelope_core::{ToolResult, tool};
use envelope_mcp::EnvelopeServer;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct NapArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

/// Sleeps, then answers how long it slept: a call that holds its place as long as a test
/// needs.
#[tool(tier = lite, read_only)]
pub(crate) async fn nap(args: NapArgs) -> ToolResult<u64> {
    tokio::time::sleep(Duration::from_millis(args.ms)).await;
    Ok(args.ms)
}

/// `server` on a free loopback port, once it accepts connections. The port is found by
/// binding, reading it and releasing it for the server.
pub(crate) async fn serve_on_loopback(server: EnvelopeServer) -> std::net::SocketAddr {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    tokio::spawn(server.serve_http(addr));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}

/// Reads one HTTP/1.1 response from `stream`: its head, and its body until `done` says the
/// body so far holds what the test waits for (an SSE stream may stay open).
pub(crate) async fn http_exchange(
    addr: std::net::SocketAddr,
    request: impl AsRef<[u8]>,
    done: impl Fn(&str) -> bool,
) -> (String, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .expect("the server listens");
    stream
        .write_all(request.as_ref())
        .await
        .expect("request sent");
    let mut raw = Vec::new();
    let mut buffer = [0u8; 8192];
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&raw).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n")
                && (done(body) || head.contains(" 202 "))
            {
                return (head.to_owned(), body.to_owned());
            }
            let n = stream.read(&mut buffer).await.expect("reads");
            if n == 0 {
                let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
                return (head.to_owned(), body.to_owned());
            }
            raw.extend_from_slice(&buffer[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(20), read)
        .await
        .expect("the server answers in time")
}

pub(crate) fn post(
    addr: std::net::SocketAddr,
    session: Option<&str>,
    extra: &str,
    body: &Value,
) -> String {
    let body = body.to_string();
    let session = session
        .map(|id| format!("mcp-session-id: {id}\r\n"))
        .unwrap_or_default();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\n{session}{extra}\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

pub(crate) fn header<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.trim()
            .eq_ignore_ascii_case(name)
            .then_some(value.trim())
    })
}

/// The `result` of the first SSE event in `body` that carries one.
pub(crate) fn sse_result(body: &str) -> Value {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find_map(|message| message.get("result").cloned())
        .expect("the call's result arrives as an SSE event")
}

/// Sends `initialize` to the server at `addr`, which must answer `200` with a session: the
/// session's id and the answer's body.
pub(crate) async fn initialize(addr: std::net::SocketAddr) -> (String, String) {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 0, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "raw-http-test", "version": "0"}
        }
    });
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let session = header(&head, "mcp-session-id").expect("a session");
    (session.to_owned(), body)
}

/// Sends `notifications/initialized` in `session`, which the server must accept (`202`).
pub(crate) async fn initialized(addr: std::net::SocketAddr, session: &str) {
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) =
        http_exchange(addr, post(addr, Some(session), "", &initialized), |_| false).await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
}

/// Opens an MCP session on the server at `addr`: [`initialize`], then [`initialized`]. Its id.
pub(crate) async fn open_session(addr: std::net::SocketAddr) -> String {
    let (session, _) = initialize(addr).await;
    initialized(addr, &session).await;
    session
}

/// One progress notification: how far, out of how much.
pub(crate) type ProgressReport = (f64, Option<f64>);

/// An rmcp client that records the progress notifications it receives.
#[derive(Clone, Default)]
pub(crate) struct ProgressClient {
    progress: std::sync::Arc<std::sync::Mutex<Vec<ProgressReport>>>,
}

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress
            .lock()
            .expect("no poisoning")
            .push((params.progress, params.total));
    }
}

impl ProgressClient {
    /// The progress reports seen, once there are `count` of them or 5 s have passed.
    /// Notifications are sent as the tool runs; the last may arrive just after the result.
    /// rmcp's client runs each notification's handler as a task of its own, so they may be
    /// seen out of order; the order on the wire is checked by the interop suites.
    pub(crate) async fn wait_for_progress(&self, count: usize) -> Vec<ProgressReport> {
        for _ in 0..500 {
            if self.progress.lock().expect("no poisoning").len() >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.progress.lock().expect("no poisoning").clone()
    }
}

/// `server` and rmcp's own client over an in-memory duplex: the client's running service, and
/// its handler to read the progress it saw.
pub(crate) async fn connect_in_memory(
    server: EnvelopeServer,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>,
    ProgressClient,
) {
    use rmcp::ServiceExt as _;
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ProgressClient::default();
    let running = client
        .clone()
        .serve(client_io)
        .await
        .expect("client connects");
    (running, client)
}

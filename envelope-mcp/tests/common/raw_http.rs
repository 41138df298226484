//! Raw HTTP/1.1 against a server on loopback, for the tests that check what goes over the wire
//! byte for byte (status lines, headers, SSE framing), which a client library would hide.

use std::time::Duration;

use envelope_mcp::{EnvelopeServer, HttpConfig};
use serde_json::{Value, json};

/// `server` on a free loopback port, once it accepts connections. The port is found by
/// binding, reading it and releasing it for the server.
pub(crate) async fn serve_on_loopback(server: EnvelopeServer) -> std::net::SocketAddr {
    serve_on_loopback_with(server, HttpConfig::default()).await
}

/// [`serve_on_loopback`], serving as `http` says.
pub(crate) async fn serve_on_loopback_with(
    server: EnvelopeServer,
    http: HttpConfig,
) -> std::net::SocketAddr {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    tokio::spawn(server.serve_http_with(addr, http));
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

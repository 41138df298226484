//! HTTP/2 cleartext (prior knowledge) on the same listener as HTTP/1.1, read with clients
//! nobody here wrote: curl (`--http2-prior-knowledge`) and hyperium's `h2`. `/mcp`, its event
//! streams and the REST gateway answer over it; one connection carries many calls at once, up to
//! the announced stream limit; and what a hostile HTTP/2 client sends (rapid resets, SETTINGS
//! and CONTINUATION floods, oversized headers, a stream it never reads) gets a clear refusal at
//! a bounded cost while other callers are answered. The write deadline holds over HTTP/1.1
//! too: a reader that stops mid-answer or mid-stream loses its connection and its slot.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::tools::nap;
use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{
    BudgetPolicy, EnvelopeConfig, EnvelopeServer, HttpConfig, MAX_HEADER_LIST_BYTES,
    MAX_UNSENT_BYTES_PER_STREAM, RestConfig,
};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Calls of `crowd` running now, and the most seen at once.
static RUNNING: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

/// Holds its place for a moment, counting how many calls of it run at once.
#[tool(tier = lite, read_only)]
async fn crowd() -> ToolResult<usize> {
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    MOST.fetch_max(now, Ordering::SeqCst);
    tokio::time::sleep(Duration::from_millis(300)).await;
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    Ok(now)
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// How many rows to answer.
    rows: u32,
}

/// Answers `rows` rows of text: as large an answer as a test needs.
#[tool(tier = lite, read_only)]
async fn rows(args: RowsArgs) -> ToolResult<Vec<String>> {
    Ok((0..args.rows)
        .map(|row| format!("row {row:07} of a long answer that a slow reader leaves unread"))
        .collect())
}

fn server() -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![nap, crowd, rows],
        EnvelopeConfig::new("h2", "1")
            .with_budget(BudgetPolicy::default().with_agent_chars(Some(100_000_000))),
    )
}

/// `server()` served as `config` says (stateless), on a free loopback port.
async fn serve(config: HttpConfig) -> SocketAddr {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let rest = RestConfig::default().with_unbudgeted_ceiling(100_000_000);
    let config = config.with_stateless(true).with_rest(Some(rest));
    tokio::spawn(server().serve_http_with(addr, config));
    for _ in 0..100 {
        if TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}

/// An `h2` client connection to `addr`, with a connection window large enough that one stream
/// left unread does not hold up the others.
async fn h2_client(addr: SocketAddr) -> h2::client::SendRequest<Bytes> {
    let tcp = TcpStream::connect(addr).await.expect("connects");
    let (client, connection) = h2::client::Builder::new()
        .initial_connection_window_size(64 << 20)
        .handshake(tcp)
        .await
        .expect("an HTTP/2 handshake");
    tokio::spawn(async move {
        let _ = connection.await;
    });
    client
}

/// A request to `path` on `addr`: a POST of `body` as JSON, or a GET without one.
fn request(addr: SocketAddr, path: &str, body: Option<&Value>) -> http::Request<()> {
    let builder = http::Request::builder()
        .uri(format!("http://{addr}{path}"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18");
    match body {
        Some(_) => builder
            .method("POST")
            .header("content-type", "application/json"),
        None => builder.method("GET"),
    }
    .body(())
    .expect("a request")
}

/// Sends one request on `client` and reads its answer whole: the status, the content type
/// and the body.
async fn exchange(
    client: &mut h2::client::SendRequest<Bytes>,
    addr: SocketAddr,
    path: &str,
    body: Option<Value>,
) -> (u16, String, String) {
    let ready = client.clone().ready().await.expect("room for a stream");
    *client = ready;
    let end = body.is_none();
    let (answer, mut send) = client
        .send_request(request(addr, path, body.as_ref()), end)
        .expect("sent");
    if let Some(body) = body {
        send.send_data(Bytes::from(body.to_string()), true)
            .expect("body sent");
    }
    let answer = answer.await.expect("an answer");
    let status = answer.status().as_u16();
    let content_type = answer
        .headers()
        .get("content-type")
        .and_then(|value| value.to_str().ok())
        .unwrap_or_default()
        .to_owned();
    let mut body = answer.into_body();
    let mut read = Vec::new();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.expect("a chunk");
        body.flow_control()
            .release_capacity(chunk.len())
            .expect("released");
        read.extend_from_slice(&chunk);
    }
    (
        status,
        content_type,
        String::from_utf8_lossy(&read).into_owned(),
    )
}

fn call(tool: &str, arguments: Value) -> Value {
    json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments },
    })
}

/// The envelope of an MCP answer, plain JSON or one event.
fn envelope(content_type: &str, body: &str) -> Value {
    let json = if content_type.starts_with("text/event-stream") {
        body.lines()
            .filter_map(|line| line.strip_prefix("data:"))
            .map(str::trim)
            .find(|data| data.contains("\"result\""))
            .unwrap_or_default()
            .to_owned()
    } else {
        body.to_owned()
    };
    let message: Value = serde_json::from_str(&json).unwrap_or(Value::Null);
    message["result"]["structuredContent"].clone()
}

/// The body of one `curl --http2-prior-knowledge` exchange, its head first.
async fn curl(args: &[&str]) -> String {
    let output = tokio::process::Command::new("curl")
        .args(["--http2-prior-knowledge", "-sS", "-i", "--max-time", "20"])
        .args(args)
        .output()
        .await
        .expect("curl runs (the tests need curl with HTTP/2 on PATH)");
    assert!(
        output.status.success(),
        "curl failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test]
async fn curl_speaks_http2_to_mcp_its_event_streams_and_the_gateway() {
    // Event streams: the MCP answer comes as server-sent events.
    let addr = serve(HttpConfig::default()).await;
    let mcp = format!("http://{addr}/mcp");
    let body = call("rows", json!({ "rows": 3 })).to_string();
    let answered = curl(&[
        "-X",
        "POST",
        &mcp,
        "-H",
        "content-type: application/json",
        "-H",
        "accept: application/json, text/event-stream",
        "-H",
        "mcp-protocol-version: 2025-06-18",
        "--data-binary",
        &body,
    ])
    .await;
    let (head, rest) = answered.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("HTTP/2 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert_eq!(
        envelope("text/event-stream", rest)["data"][2],
        "row 0000002 of a long answer that a slow reader leaves unread"
    );
    // The REST gateway.
    let answered = curl(&[
        "-X",
        "POST",
        &format!("http://{addr}/tools/rows"),
        "-H",
        "content-type: application/json",
        "--data-binary",
        r#"{"rows":2}"#,
    ])
    .await;
    let (head, rest) = answered.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("HTTP/2 200"), "{head}");
    let envelope: Value = serde_json::from_str(rest).expect("JSON");
    assert_eq!(envelope["ok"], true, "{envelope}");
    // HTTP/1.1 on the same listener, as before.
    let output = tokio::process::Command::new("curl")
        .args(["-sS", "-i", "--http1.1", &format!("http://{addr}/healthz")])
        .output()
        .await
        .expect("curl runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
}

/// The status of a POST of `body` to `path` whose `host` header is `host`, beside the
/// `:authority` the client names (`addr`).
async fn status_with_host(addr: SocketAddr, path: &str, host: &str, body: &Value) -> u16 {
    let mut client = h2_client(addr).await;
    let mut request = request(addr, path, Some(body));
    request.headers_mut().insert(
        http::header::HOST,
        http::HeaderValue::from_str(host).expect("a header value"),
    );
    let (answer, mut send) = client.send_request(request, false).expect("sent");
    send.send_data(Bytes::from(body.to_string()), true)
        .expect("body sent");
    answer.await.expect("an answer").status().as_u16()
}

#[tokio::test]
async fn a_host_naming_another_server_than_the_authority_is_malformed() {
    // RFC 9113 §8.3.1: the one host judge refuses it on MCP and on the gateway alike.
    let addr = serve(HttpConfig::default()).await;
    let nap = json!({ "ms": 1 });
    let mcp = call("nap", nap.clone());
    for host in ["evil.example", "localhost:1", &format!("{}:1", addr.ip())] {
        assert_eq!(
            status_with_host(addr, "/tools/nap", host, &nap).await,
            400,
            "{host}"
        );
        assert_eq!(
            status_with_host(addr, "/mcp", host, &mcp).await,
            400,
            "{host}"
        );
    }
    // The same server, named as the authority names it: answered.
    let same = addr.to_string();
    assert_eq!(status_with_host(addr, "/tools/nap", &same, &nap).await, 200);
    assert_eq!(status_with_host(addr, "/mcp", &same, &mcp).await, 200);
}

#[tokio::test]
async fn one_connection_carries_many_calls_at_once_up_to_its_stream_limit() {
    let addr = serve(
        HttpConfig::default()
            .with_json_response(true)
            .with_max_streams_per_connection(4),
    )
    .await;
    let mut client = h2_client(addr).await;
    // The server's SETTINGS have arrived once it has answered.
    let (status, _, _) = exchange(&mut client, addr, "/healthz", None).await;
    assert_eq!(status, 200);
    assert_eq!(
        client.current_max_send_streams(),
        4,
        "the limit is announced"
    );
    MOST.store(0, Ordering::SeqCst);
    let calls = (0..12).map(|_| {
        let mut client = client.clone();
        async move {
            let (status, content_type, body) =
                exchange(&mut client, addr, "/mcp", Some(call("crowd", json!({})))).await;
            assert_eq!(status, 200, "{body}");
            assert_eq!(envelope(&content_type, &body)["ok"], true, "{body}");
        }
    });
    futures::future::join_all(calls).await;
    let most = MOST.load(Ordering::SeqCst);
    assert!(
        (2..=4).contains(&most),
        "{most} calls at once on one connection of four streams"
    );
}

#[tokio::test]
async fn a_stream_never_read_is_given_up_and_frees_its_slot() {
    // One call at a time: the unread answer holds the only place until the write deadline.
    let addr = serve(
        HttpConfig::default()
            .with_json_response(true)
            .with_max_concurrent_requests(Some(1))
            .with_write_timeout(Some(Duration::from_millis(500))),
    )
    .await;
    let mut client = h2_client(addr).await;
    // An answer far larger than a stream's window and its unsent buffer together.
    let large = 20 * MAX_UNSENT_BYTES_PER_STREAM as u32 / 64;
    let stalled = {
        let ready = client.clone().ready().await.expect("ready");
        let (answer, mut send) = ready
            .clone()
            .send_request(
                request(addr, "/tools/rows?apply_budget=false", Some(&json!({}))),
                false,
            )
            .expect("sent");
        send.send_data(Bytes::from(json!({ "rows": large }).to_string()), true)
            .expect("body sent");
        let answer = answer.await.expect("an answer");
        assert_eq!(answer.status(), 200);
        // Never read: its window stays shut.
        answer
    };
    // A fresh call, on the same connection and on another, is answered once the unread one
    // is given up.
    let fresh = async {
        loop {
            let (status, _, _) =
                exchange(&mut client, addr, "/tools/nap", Some(json!({ "ms": 1 }))).await;
            if status == 200 {
                break;
            }
            assert_eq!(status, 503, "refused only for room");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut other = h2_client(addr).await;
        let (status, _, _) =
            exchange(&mut other, addr, "/tools/nap", Some(json!({ "ms": 1 }))).await;
        assert_eq!(status, 200);
    };
    tokio::time::timeout(Duration::from_secs(20), fresh)
        .await
        .expect("fresh calls are answered while a stream stays unread");
    drop(stalled);
}

/// A raw HTTP/2 frame: its 9-byte header, then `payload`.
fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let length = u32::try_from(payload.len()).expect("a frame's length");
    let mut frame = length.to_be_bytes()[1..].to_vec();
    frame.extend([kind, flags]);
    frame.extend(stream.to_be_bytes());
    frame.extend_from_slice(payload);
    frame
}

const HEADERS: u8 = 0x1;
const SETTINGS: u8 = 0x4;
const GOAWAY: u8 = 0x7;
const CONTINUATION: u8 = 0x9;
const END_STREAM: u8 = 0x1;
const END_HEADERS: u8 = 0x4;

/// A raw HTTP/2 connection: the preface and an empty SETTINGS sent.
async fn raw_h2(addr: SocketAddr) -> TcpStream {
    let mut tcp = TcpStream::connect(addr).await.expect("connects");
    tcp.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n")
        .await
        .expect("preface");
    tcp.write_all(&frame(SETTINGS, 0, 0, &[]))
        .await
        .expect("settings");
    tcp
}

/// An HPACK literal header field without indexing, new name (RFC 7541 §6.2.2), its lengths
/// as 7-bit prefixed integers.
fn literal(name: &[u8], value: &[u8]) -> Vec<u8> {
    fn integer(out: &mut Vec<u8>, mut value: usize) {
        if value < 127 {
            out.push(u8::try_from(value).expect("small"));
            return;
        }
        out.push(127);
        value -= 127;
        while value >= 128 {
            out.push(u8::try_from(value % 128).expect("small") | 0x80);
            value /= 128;
        }
        out.push(u8::try_from(value).expect("small"));
    }
    let mut out = vec![0x00];
    integer(&mut out, name.len());
    out.extend_from_slice(name);
    integer(&mut out, value.len());
    out.extend_from_slice(value);
    out
}

/// A GET of `/healthz` as an HPACK block (`:method GET`, `:scheme http`, `:path /healthz`,
/// `:authority`), and `extra` fields after it.
fn get_block(addr: SocketAddr, extra: &[u8]) -> Vec<u8> {
    let mut block = vec![0x82, 0x86]; // :method GET, :scheme http (static table)
    block.extend(literal(b":path", b"/healthz"));
    block.extend(literal(b":authority", addr.to_string().as_bytes()));
    block.extend_from_slice(extra);
    block
}

/// What a raw connection read: the GOAWAY error codes, the answers' statuses (`200`, as
/// HPACK's static index 8, or another), and whether the connection ended.
struct Read {
    goaways: Vec<u32>,
    ok: usize,
    refused: usize,
    ended: bool,
}

/// Reads frames until the connection ends or `within` passes.
async fn frames_until_end(tcp: &mut TcpStream, within: Duration) -> Read {
    let (mut goaways, mut ok, mut refused) = (Vec::new(), 0, 0);
    let mut buffer = Vec::new();
    let read = async {
        let mut chunk = [0u8; 16 * 1024];
        loop {
            while buffer.len() >= 9 {
                let length = usize::from(buffer[0]) << 16
                    | usize::from(buffer[1]) << 8
                    | usize::from(buffer[2]);
                if buffer.len() < 9 + length {
                    break;
                }
                let kind = buffer[3];
                let payload = buffer[9..9 + length].to_vec();
                buffer.drain(..9 + length);
                match kind {
                    GOAWAY if payload.len() >= 8 => goaways.push(u32::from_be_bytes([
                        payload[4], payload[5], payload[6], payload[7],
                    ])),
                    // `:status: 200` is the static table's entry 8 (RFC 7541, appendix A).
                    HEADERS if payload.first() == Some(&0x88) => ok += 1,
                    HEADERS => refused += 1,
                    _ => {}
                }
            }
            match tcp.read(&mut chunk).await {
                Ok(0) | Err(_) => return true,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
    };
    let ended = tokio::time::timeout(within, read).await.unwrap_or(false);
    Read {
        goaways,
        ok,
        refused,
        ended,
    }
}

/// `ENHANCE_YOUR_CALM`, the error code a server tells an abusive peer to go away with.
const ENHANCE_YOUR_CALM: u32 = 0xb;

/// Whether `addr` still answers a plain call on a connection of its own.
async fn still_answers(addr: SocketAddr) {
    let mut client = h2_client(addr).await;
    let (status, _, body) = tokio::time::timeout(
        Duration::from_secs(10),
        exchange(&mut client, addr, "/tools/nap", Some(json!({ "ms": 1 }))),
    )
    .await
    .expect("answered in time");
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn rapid_resets_cost_little_and_others_are_answered() {
    let addr = serve(HttpConfig::default().with_json_response(true)).await;
    // CVE-2023-44487: open a stream, reset it at once, thousands of times.
    let client = h2_client(addr).await;
    let (mut sent, mut refusal) = (0, None);
    for _ in 0..5_000 {
        let mut ready = match client.clone().ready().await {
            Ok(ready) => ready,
            Err(error) => {
                refusal = Some(error);
                break;
            }
        };
        match ready.send_request(request(addr, "/tools/nap", Some(&json!({}))), false) {
            Ok((_, mut stream)) => stream.send_reset(h2::Reason::CANCEL),
            Err(error) => {
                refusal = Some(error);
                break;
            }
        }
        sent += 1;
    }
    // The connection is told to go away long before the flood ends: its cost is bounded by
    // the resets h2 lets a client have pending, not by how many it sends.
    // What the flood had queued reaches the server after the loop: its answer may come then.
    for _ in 0..50 {
        if refusal.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        let mut ready = match client.clone().ready().await {
            Ok(ready) => ready,
            Err(error) => {
                refusal = Some(error);
                break;
            }
        };
        if let Err(error) = ready.send_request(request(addr, "/healthz", None), true) {
            refusal = Some(error);
        }
    }
    let refusal = refusal.unwrap_or_else(|| panic!("{sent} resets taken without a word"));
    assert_eq!(
        refusal.reason(),
        Some(h2::Reason::ENHANCE_YOUR_CALM),
        "after {sent} resets: {refusal}"
    );
    // Others are answered, during and after.
    still_answers(addr).await;
}

#[tokio::test]
async fn a_settings_flood_from_a_client_that_never_reads_is_cut_off() {
    let addr = serve(
        HttpConfig::default()
            .with_json_response(true)
            .with_write_timeout(Some(Duration::from_millis(500))),
    )
    .await;
    let mut tcp = raw_h2(addr).await;
    // Each SETTINGS wants an ACK, which a client that never reads never takes.
    let one = frame(SETTINGS, 0, 0, &[0x00, 0x03, 0, 0, 0, 100]);
    let flood: Vec<u8> = one
        .iter()
        .copied()
        .cycle()
        .take(one.len() * 10_000)
        .collect();
    let mut written = 0usize;
    let writing = async {
        for _ in 0..1_000 {
            if tcp.write_all(&flood).await.is_err() {
                break;
            }
            written += flood.len();
        }
    };
    let _ = tokio::time::timeout(Duration::from_secs(15), writing).await;
    // Cut off before it could send more than a few megabytes' worth.
    assert!(
        written < 1_000 * flood.len(),
        "{written} bytes of SETTINGS taken without an end"
    );
    still_answers(addr).await;
}

#[tokio::test]
async fn a_continuation_flood_is_told_to_go_away() {
    let addr = serve(HttpConfig::default()).await;
    let mut tcp = raw_h2(addr).await;
    // A header block that never ends: HEADERS without END_HEADERS, then CONTINUATION after
    // CONTINUATION, each a small piece of one more header.
    tcp.write_all(&frame(HEADERS, END_STREAM, 1, &get_block(addr, &[])))
        .await
        .expect("headers");
    let piece = literal(b"x-flood", &[b'a'; 64]);
    let mut sent = 0;
    for _ in 0..100_000 {
        if tcp
            .write_all(&frame(CONTINUATION, 0, 1, &piece))
            .await
            .is_err()
        {
            break;
        }
        sent += 1;
    }
    let read = frames_until_end(&mut tcp, Duration::from_secs(10)).await;
    assert!(
        read.goaways.contains(&ENHANCE_YOUR_CALM) || read.ended,
        "after {sent} CONTINUATION frames: GOAWAY {:?}, ended {}",
        read.goaways,
        read.ended
    );
    assert_eq!(read.ok, 0, "no answer to a header block that never ended");
    still_answers(addr).await;
}

#[tokio::test]
async fn oversized_headers_are_refused_without_reading_them_all() {
    let addr = serve(HttpConfig::default()).await;
    let mut tcp = raw_h2(addr).await;
    // One header of a megabyte, in frames of 16 KiB (the largest a server must take).
    let block = get_block(addr, &literal(b"x-large", &vec![b'a'; 1 << 20]));
    let pieces: Vec<&[u8]> = block.chunks(16 * 1024).collect();
    let last = pieces.len() - 1;
    let mut written = 0;
    for (index, piece) in pieces.iter().enumerate() {
        let (kind, flags) = match index {
            0 => (HEADERS, END_STREAM),
            _ => (CONTINUATION, 0),
        };
        let flags = if index == last {
            flags | END_HEADERS
        } else {
            flags
        };
        if tcp.write_all(&frame(kind, flags, 1, piece)).await.is_err() {
            break;
        }
        written += piece.len();
    }
    let read = frames_until_end(&mut tcp, Duration::from_secs(10)).await;
    // Refused: the stream answered `431`, reset, or the connection told to go away; never a
    // `200` for a request past the limit.
    assert_eq!(read.ok, 0, "a request past the limit was answered");
    assert!(
        read.refused > 0 || !read.goaways.is_empty() || read.ended,
        "{written} bytes of headers sent past a limit of {MAX_HEADER_LIST_BYTES}: no refusal"
    );
    still_answers(addr).await;
    // A request within the limit is answered.
    let mut tcp = raw_h2(addr).await;
    let block = get_block(addr, &literal(b"x-small", &[b'a'; 1024]));
    tcp.write_all(&frame(HEADERS, END_STREAM | END_HEADERS, 1, &block))
        .await
        .expect("headers");
    let read = frames_until_end(&mut tcp, Duration::from_secs(2)).await;
    assert_eq!(read.ok, 1, "answered");
}

/// Sends `request` over HTTP/1.1 on a socket with a small receive buffer, reads `keep` bytes
/// of the answer, then stops reading: the socket it returns is held open, unread.
async fn stop_reading_after(addr: SocketAddr, request: String, keep: usize) -> TcpStream {
    let socket = tokio::net::TcpSocket::new_v4().expect("a socket");
    socket.set_recv_buffer_size(4096).expect("a small buffer");
    let mut tcp = socket.connect(addr).await.expect("connects");
    tcp.write_all(request.as_bytes()).await.expect("sent");
    let mut read = vec![0u8; keep];
    tcp.read_exact(&mut read)
        .await
        .expect("the start of an answer");
    assert!(
        read.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&read)
    );
    tcp
}

/// Whether `tcp` is closed by the server: its buffered bytes read, then the end.
async fn closed_by_server(tcp: &mut TcpStream) -> bool {
    let drained = async {
        let mut sink = vec![0u8; 64 * 1024];
        loop {
            match tcp.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(20), drained)
        .await
        .is_ok()
}

/// A fresh call over HTTP/1.1, retried while it is refused for room, is answered within 20s.
async fn fresh_call_answered(addr: SocketAddr) {
    let fresh = async {
        loop {
            let (head, _) = common::raw_http::http_exchange(
                addr,
                format!(
                    "POST /tools/nap HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
                     connection: close\r\ncontent-length: 8\r\n\r\n{{\"ms\":1}}"
                ),
                |body| body.ends_with('}'),
            )
            .await;
            if head.starts_with("HTTP/1.1 200") {
                return;
            }
            assert!(head.starts_with("HTTP/1.1 503"), "{head}");
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), fresh)
        .await
        .expect("a fresh call is answered while a reader has stopped");
}

/// Serves one call at a time with a write deadline of half a second (answers as SSE unless
/// `json`), sends the request `request(addr)` makes, reads the start of its answer and stops:
/// fresh calls are answered, and the stalled connection is closed.
async fn a_stopped_reader_loses_its_connection_and_slot(
    json: bool,
    request: impl FnOnce(SocketAddr) -> String,
) {
    let addr = serve(
        HttpConfig::default()
            .with_json_response(json)
            .with_max_concurrent_requests(Some(1))
            .with_write_timeout(Some(Duration::from_millis(500))),
    )
    .await;
    let mut stalled = stop_reading_after(addr, request(addr), 1024).await;
    fresh_call_answered(addr).await;
    assert!(
        closed_by_server(&mut stalled).await,
        "the stalled connection is closed"
    );
}

#[tokio::test]
async fn a_reader_that_stops_mid_answer_loses_its_connection_and_slot() {
    let body = json!({ "rows": 100_000 }).to_string();
    a_stopped_reader_loses_its_connection_and_slot(true, |addr| {
        format!(
            "POST /tools/rows?apply_budget=false HTTP/1.1\r\nhost: {addr}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    })
    .await;
}

#[tokio::test]
async fn a_reader_that_stops_mid_stream_loses_its_connection_and_slot() {
    // Event streams: the answer is an SSE event, a large one.
    let body = call("rows", json!({ "rows": 100_000 })).to_string();
    a_stopped_reader_loses_its_connection_and_slot(false, |addr| {
        format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             content-length: {}\r\n\r\n{body}",
            body.len()
        )
    })
    .await;
}

#[tokio::test]
async fn a_megabyte_bearer_token_is_refused_before_it_is_read_whole() {
    // A token whose scope list runs to a megabyte: HTTP/1.1 refuses the head past hyper's
    // buffer (`431`, or the connection closed), HTTP/2 past its header list limit.
    let addr = serve(HttpConfig::default().with_json_response(true)).await;
    let token = format!("Bearer {}", "a".repeat(1 << 20));
    let request = format!(
        "POST /tools/nap HTTP/1.1\r\nhost: {addr}\r\nauthorization: {token}\r\n\
         content-type: application/json\r\nconnection: close\r\ncontent-length: 8\r\n\r\n{{\"ms\":1}}"
    );
    let mut tcp = TcpStream::connect(addr).await.expect("connects");
    // The server may stop reading, and close, before the whole head is written.
    let _ = tcp.write_all(request.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tcp.read_to_end(&mut answer)).await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(
        answer.is_empty() || answer.starts_with("HTTP/1.1 431"),
        "{}",
        &answer[..answer.len().min(200)]
    );
    // Over HTTP/2 the header list limit refuses it.
    let mut tcp = raw_h2(addr).await;
    let block = get_block(addr, &literal(b"authorization", token.as_bytes()));
    for (index, piece) in block.chunks(16 * 1024).enumerate() {
        let (kind, flags) = if index == 0 {
            (HEADERS, END_STREAM)
        } else {
            (CONTINUATION, 0)
        };
        let last = (index + 1) * 16 * 1024 >= block.len();
        let flags = if last { flags | END_HEADERS } else { flags };
        if tcp.write_all(&frame(kind, flags, 1, piece)).await.is_err() {
            break;
        }
    }
    let read = frames_until_end(&mut tcp, Duration::from_secs(10)).await;
    assert_eq!(read.ok, 0, "a megabyte of headers was answered");
    assert!(
        read.refused > 0 || !read.goaways.is_empty() || read.ended,
        "no refusal"
    );
    still_answers(addr).await;
}

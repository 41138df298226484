//! What a hostile or broken client cannot do to a server on streamable HTTP: hold connections
//! open for nothing (idle, trickling a head, trickling a body), hold places under the
//! concurrency limit with uploads, exhaust the file limit, stretch an answer with a huge
//! progress token or id, or be judged by two rules where there is one (`Host` on `/mcp` and on
//! the plain HTTP API, unknown paths under `/tools/`).
//!
//! Every deadline here is short (a second or two) and every assertion an outcome (answered,
//! closed) with generous slack, never a timing: the machines that run this are small and busy.

mod common;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::tools::nap;
use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{CancellationToken, EnvelopeConfig, EnvelopeServer, HttpConfig};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// How long a connection the server should have closed may take to read as closed, past its
/// deadline.
const SLACK: Duration = Duration::from_secs(8);

fn server() -> EnvelopeServer {
    EnvelopeServer::new(toolset![nap], EnvelopeConfig::new("hardened", "1"))
}

/// Calls of [`held`] started so far (only
/// [`past_the_connection_cap_idle_connections_make_room_and_busy_ones_refuse`] calls it).
static HELD_STARTED: AtomicUsize = AtomicUsize::new(0);

/// What lets calls of [`held`] answer: a permit each.
static HELD_RELEASE: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(0);

/// Counts itself started, then answers once the test lets it (or after a minute, so that a
/// failing test does not hang): a call in flight for exactly as long as a test needs.
#[tool(tier = lite, read_only)]
async fn held() -> ToolResult<u32> {
    HELD_STARTED.fetch_add(1, Ordering::SeqCst);
    if let Ok(Ok(permit)) =
        tokio::time::timeout(Duration::from_secs(60), HELD_RELEASE.acquire()).await
    {
        permit.forget();
    }
    Ok(1)
}

/// A stateless server with JSON answers, as `config` adds, on a free loopback port once it
/// accepts connections; it stops when the returned token is cancelled (or dropped with the
/// test's runtime).
async fn serve(server: EnvelopeServer, config: HttpConfig) -> (SocketAddr, CancellationToken) {
    let shutdown = CancellationToken::new();
    let config = config
        .with_stateless(true)
        .with_json_response(true)
        .with_shutdown(shutdown.clone());
    let addr = free_port();
    tokio::spawn(server.serve_http_with(addr, config));
    wait_until_listening(addr).await;
    (addr, shutdown)
}

fn free_port() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
}

async fn wait_until_listening(addr: SocketAddr) {
    for _ in 0..500 {
        if TcpStream::connect(addr).await.is_ok() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("nothing listens on {addr}");
}

/// A `tools/call` of `nap` posted to `/mcp` with `host`, closing the connection after.
fn nap_call(host: &str, ms: u64) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "nap", "arguments": { "ms": ms } }
    })
    .to_string();
    mcp_post(host, "", &body)
}

/// `body` posted to `/mcp` with `host` and `extra` header lines, closing the connection after.
fn mcp_post(host: &str, extra: &str, body: &str) -> String {
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {host}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         {extra}connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Sends `request` on a fresh connection and reads the answer to its end (every request here
/// asks for `connection: close`), up to `most` bytes: the status, the head and the body.
async fn exchange_bounded(addr: SocketAddr, request: &[u8], most: usize) -> (u16, String, String) {
    let exchange = async {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(request).await.expect("sends");
        let mut raw = Vec::new();
        let mut buffer = vec![0u8; 64 * 1024];
        while raw.len() <= most {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => raw.extend_from_slice(&buffer[..n]),
            }
        }
        raw
    };
    let raw = tokio::time::timeout(Duration::from_secs(60), exchange)
        .await
        .expect("answered in time");
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    (status, head.to_owned(), body.to_owned())
}

async fn exchange(addr: SocketAddr, request: &str) -> (u16, String, String) {
    exchange_bounded(addr, request.as_bytes(), 16 << 20).await
}

/// Whether the server closes `stream` within `within`: reads hit the end (or a reset) in time.
/// Whatever the server sent before closing (a `408`, say) is read and dropped.
async fn closed_within(stream: &mut TcpStream, within: Duration) -> bool {
    let mut buffer = [0u8; 4096];
    let closing = async {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => return,
                Ok(_) => {}
            }
        }
    };
    tokio::time::timeout(within, closing).await.is_ok()
}

/// A call answered `200` with the nap's result.
async fn assert_answered(addr: SocketAddr) {
    let (status, head, body) = exchange(addr, &nap_call(&addr.to_string(), 0)).await;
    assert_eq!(status, 200, "{head}\n{body}");
    assert!(body.contains("\"result\""), "{body}");
}

/// Sends `head` a byte every `every` on a new connection, for as long as the server lets it:
/// how long it was let trickle before being cut off, or `None` if it never was.
fn trickle(
    addr: SocketAddr,
    head: String,
    every: Duration,
) -> tokio::task::JoinHandle<Option<Duration>> {
    tokio::spawn(async move {
        let stream = TcpStream::connect(addr).await.expect("connects");
        trickle_on(stream, &head, every).await
    })
}

/// Sends `head` a byte every `every` on `stream`, as [`trickle`] does.
async fn trickle_on(mut stream: TcpStream, head: &str, every: Duration) -> Option<Duration> {
    let started = Instant::now();
    for byte in head.bytes() {
        if stream.write_all(&[byte]).await.is_err() {
            // Cut off: how long it was let trickle.
            return Some(started.elapsed());
        }
        let mut probe = [0u8; 64];
        let probe = stream.read(&mut probe);
        if let Ok(Ok(0) | Err(_)) = tokio::time::timeout(every, probe).await {
            return Some(started.elapsed());
        }
    }
    None
}

#[tokio::test]
async fn idle_and_trickling_connections_are_closed_while_calls_are_answered() {
    let header = Duration::from_secs(1);
    // The idle timeout far past the header timeout and the slack: only the header timeout can
    // close these connections in time.
    let (addr, _stop) = serve(
        server(),
        HttpConfig::default()
            .with_header_timeout(Some(header))
            .with_idle_timeout(Some(Duration::from_secs(600))),
    )
    .await;
    // Connections that send nothing at all.
    let mut idle = Vec::new();
    for _ in 0..100 {
        idle.push(TcpStream::connect(addr).await.expect("connects"));
    }
    // Connections that trickle a request head, a byte every 200 ms, for as long as they may.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-padding: {}",
        "a".repeat(1000)
    );
    let mut trickling: Vec<_> = (0..20)
        .map(|_| trickle(addr, head.clone(), Duration::from_millis(200)))
        .collect();
    // And some that trickle HTTP/2's preface, a byte every 500 ms: never idle, and twelve
    // seconds in the sending, unless the header timeout holds from the first byte.
    let preface = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_owned();
    trickling.extend((0..5).map(|_| trickle(addr, preface.clone(), Duration::from_millis(500))));
    tokio::time::sleep(Duration::from_millis(300)).await;
    // A fresh call is answered while all of them are held.
    assert_answered(addr).await;
    for stream in &mut idle {
        assert!(
            closed_within(stream, header + SLACK).await,
            "a connection that sent nothing is closed after the header timeout"
        );
    }
    for trickler in trickling {
        let cut = trickler.await.expect("joins");
        assert!(
            cut.is_some_and(|cut| cut < header + SLACK),
            "a trickled head is cut at the header timeout: {cut:?}"
        );
    }
    assert_answered(addr).await;
}

/// A call of `nap` that keeps its connection alive.
fn kept_alive_call(addr: SocketAddr) -> String {
    let body = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "nap", "arguments": { "ms": 0 } }
    })
    .to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// Reads one answer from a kept-alive `stream`: its status, once its head and body (of a
/// `content-length`, or chunked to its last chunk) are in.
async fn read_answer(stream: &mut TcpStream) -> u16 {
    let mut raw = Vec::new();
    let mut buffer = [0u8; 8192];
    let read = async {
        loop {
            let text = String::from_utf8_lossy(&raw).into_owned();
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let lower = head.to_ascii_lowercase();
                let length = lower
                    .lines()
                    .find_map(|line| line.strip_prefix("content-length: "))
                    .and_then(|length| length.trim().parse::<usize>().ok());
                let whole = match length {
                    Some(length) => body.len() >= length,
                    None => body.ends_with("0\r\n\r\n"),
                };
                if whole {
                    return head
                        .split(' ')
                        .nth(1)
                        .and_then(|code| code.parse().ok())
                        .unwrap_or(0);
                }
            }
            let n = stream.read(&mut buffer).await.expect("reads");
            assert!(n > 0, "the connection closed mid-answer: {text}");
            raw.extend_from_slice(&buffer[..n]);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), read)
        .await
        .expect("answered in time")
}

#[tokio::test]
async fn an_idle_kept_alive_connection_is_closed_and_a_busy_one_is_not() {
    // The header timeout off: the idle timeout alone closes a connection between requests.
    let idle = Duration::from_secs(1);
    let (addr, _stop) = serve(
        server(),
        HttpConfig::default()
            .with_header_timeout(None)
            .with_idle_timeout(Some(idle)),
    )
    .await;
    // A call three times the idle timeout: its connection is busy, never idle.
    let slow =
        tokio::spawn(async move { exchange(addr, &nap_call(&addr.to_string(), 3_000)).await });
    // A connection that is answered one call, kept alive, then goes quiet.
    let mut quiet = TcpStream::connect(addr).await.expect("connects");
    quiet
        .write_all(kept_alive_call(addr).as_bytes())
        .await
        .expect("sends");
    assert_eq!(read_answer(&mut quiet).await, 200);
    let answered = Instant::now();
    assert!(
        closed_within(&mut quiet, idle + SLACK).await,
        "a kept-alive connection quiet past the idle timeout is closed"
    );
    assert!(
        answered.elapsed() >= idle / 2,
        "closed at the idle deadline, not at the answer's end: {:?}",
        answered.elapsed()
    );
    let (status, head, body) = slow.await.expect("joins");
    assert_eq!(
        status, 200,
        "a call in flight is never idle: {head}\n{body}"
    );
}

/// A call to `nap` whose head and first body byte are sent, the rest a byte every 500 ms: the
/// connection, once the server has answered (`408`) or closed it, and how long that took.
fn trickled_body(addr: SocketAddr, path: &'static str) -> tokio::task::JoinHandle<(u16, Duration)> {
    tokio::spawn(async move {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "nap", "arguments": { "ms": 0 } }
        })
        .to_string();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        );
        let started = Instant::now();
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        stream.write_all(head.as_bytes()).await.expect("sends");
        let mut answer = Vec::new();
        let mut buffer = [0u8; 4096];
        for byte in body.bytes() {
            if stream.write_all(&[byte]).await.is_err() {
                break;
            }
            match tokio::time::timeout(Duration::from_millis(500), stream.read(&mut buffer)).await {
                Ok(Ok(0) | Err(_)) => break,
                Ok(Ok(n)) => answer.extend_from_slice(&buffer[..n]),
                Err(_) => {}
            }
            if !answer.is_empty() {
                break;
            }
        }
        let text = String::from_utf8_lossy(&answer).into_owned();
        let status = text
            .split(' ')
            .nth(1)
            .and_then(|code| code.parse().ok())
            .unwrap_or(0);
        (status, started.elapsed())
    })
}

#[tokio::test]
async fn trickled_bodies_hold_no_place_under_the_concurrency_limit_and_are_cut_off() {
    let body = Duration::from_secs(2);
    let (addr, _stop) = serve(
        server(),
        HttpConfig::default()
            .with_max_concurrent_requests(Some(4))
            .with_body_timeout(Some(body)),
    )
    .await;
    let tricklers: Vec<_> = (0..8).map(|_| trickled_body(addr, "/mcp")).collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // Eight uploads on their way, four places: a fresh call still gets one.
    assert_answered(addr).await;
    for trickler in tricklers {
        let (status, took) = trickler.await.expect("joins");
        assert_eq!(status, 408, "a body past the body timeout is answered 408");
        assert!(took < body + SLACK, "{took:?}");
    }
    assert_answered(addr).await;
}

#[tokio::test]
async fn the_request_timeout_bounds_a_stalled_upload() {
    let limit = Duration::from_secs(1);
    // The body timeout is the default (30 s): the request timeout is the nearer deadline.
    let (addr, _stop) = serve(
        server(),
        HttpConfig::default().with_request_timeout(Some(limit)),
    )
    .await;
    for path in ["/mcp", "/tools/nap"] {
        let started = Instant::now();
        let stalled = format!(
            "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
             content-length: 100\r\n\r\n{{\"jsonrpc\""
        );
        let (status, head, body) = exchange(addr, &stalled).await;
        assert_eq!(status, 408, "{path}: {head}\n{body}");
        assert!(
            started.elapsed() < limit + SLACK,
            "{path}: {:?}",
            started.elapsed()
        );
        if path == "/tools/nap" {
            let problem: Value = serde_json::from_str(&body).expect("a problem");
            assert_eq!(problem["status"], 408);
            assert_eq!(problem["envelope"]["error"]["code"], "request_timeout");
        }
    }
}

#[tokio::test]
async fn past_the_connection_cap_idle_connections_make_room_and_busy_ones_refuse() {
    let max = 6;
    let (addr, _stop) = serve(
        EnvelopeServer::new(toolset![nap, held], EnvelopeConfig::new("hardened", "1")),
        HttpConfig::default()
            // Long enough that only the cap closes the idle connections here.
            .with_header_timeout(Some(Duration::from_secs(60)))
            .with_max_connections(Some(max)),
    )
    .await;
    let (made_room, mut made_room_seen) = tokio::sync::mpsc::unbounded_channel();
    let mut idle = Vec::new();
    for k in 0..max {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        let made_room = made_room.clone();
        idle.push(tokio::spawn(async move {
            if closed_within(&mut stream, Duration::from_secs(120)).await {
                let _ = made_room.send(k);
            }
        }));
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    // The cap is full of idle connections: a fresh call makes room and is answered, and an
    // idle one is closed for it within the eviction's grace.
    assert_answered(addr).await;
    let closed = tokio::time::timeout(Duration::from_secs(1) + SLACK, made_room_seen.recv()).await;
    assert!(
        matches!(closed, Ok(Some(_))),
        "an idle connection made room"
    );
    for watcher in idle {
        watcher.abort();
    }
    // Every place held by a call in flight: a new connection is refused cleanly.
    let call = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "held", "arguments": {} }
    })
    .to_string();
    let holding: Vec<_> = (0..max)
        .map(|_| {
            let call = mcp_post(&addr.to_string(), "", &call);
            tokio::spawn(async move { exchange(addr, &call).await })
        })
        .collect();
    // Every held call started: each of their connections has a request in flight.
    let waiting = Instant::now();
    while HELD_STARTED.load(Ordering::SeqCst) < max {
        assert!(
            waiting.elapsed() < Duration::from_secs(60),
            "only {} of {max} held calls started",
            HELD_STARTED.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, head, _) = exchange(addr, &nap_call(&addr.to_string(), 0)).await;
    assert_eq!(status, 503, "{head}");
    assert!(
        head.to_ascii_lowercase().contains("retry-after: 1"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase().contains("connection: close"),
        "{head}"
    );
    HELD_RELEASE.add_permits(max);
    for held in holding {
        let (status, head, _) = held.await.expect("joins");
        assert_eq!(
            status, 200,
            "a call in flight is never closed for room: {head}"
        );
    }
    assert_answered(addr).await;
}

#[tokio::test]
async fn connections_evicted_while_trickling_a_head_are_gone_within_the_grace() {
    // Neither deadline near: only the cap can close the tricklers.
    let (addr, _stop) = serve(
        server(),
        HttpConfig::default()
            .with_header_timeout(Some(Duration::from_secs(600)))
            .with_idle_timeout(Some(Duration::from_secs(600)))
            .with_max_connections(Some(1)),
    )
    .await;
    // A head a byte every 100 ms: a hundred seconds in the sending, never idle.
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\nx-padding: {}",
        "a".repeat(1000)
    );
    // One trickling its first head, then one its second after an answered call: each holds
    // the one place with no request in flight, until a fresh call takes it.
    for after_a_call in [false, true] {
        let mut stream = TcpStream::connect(addr).await.expect("connects");
        if after_a_call {
            stream
                .write_all(kept_alive_call(addr).as_bytes())
                .await
                .expect("sends");
            assert_eq!(read_answer(&mut stream).await, 200);
        }
        let head = head.clone();
        let trickler =
            tokio::spawn(
                async move { trickle_on(stream, &head, Duration::from_millis(100)).await },
            );
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert_answered(addr).await;
        let cut = tokio::time::timeout(Duration::from_secs(1) + SLACK, trickler)
            .await
            .expect("a trickler is cut off within the eviction's grace")
            .expect("joins");
        assert!(
            cut.is_some(),
            "the trickler is cut off (after a call: {after_a_call})"
        );
    }
}

/// Set in the child of [`the_connection_cap_follows_the_file_limit`]: the address to serve.
const CHILD_ADDR: &str = "ENVELOPE_HARDENING_CHILD_ADDR";

/// Not a test on its own: the server of [`the_connection_cap_follows_the_file_limit`], run in
/// a child process of this binary whose file limit is lowered. Without the variable it returns
/// at once.
#[test]
fn serves_under_a_lowered_file_limit() {
    let Ok(addr) = std::env::var(CHILD_ADDR) else {
        return;
    };
    let addr: SocketAddr = addr.parse().expect("an address");
    let runtime = tokio::runtime::Runtime::new().expect("a runtime");
    // The connection cap is the default, from the file limit.
    let config = HttpConfig::default()
        .with_stateless(true)
        .with_json_response(true)
        .with_header_timeout(Some(Duration::from_secs(120)));
    let _ = runtime.block_on(server().serve_http_with(addr, config));
}

#[tokio::test]
async fn the_connection_cap_follows_the_file_limit() {
    let addr = free_port();
    let this = std::env::current_exe().expect("the test binary");
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg("ulimit -n 256 && exec \"$0\" \"$@\"")
        .arg(this)
        .args([
            "--exact",
            "serves_under_a_lowered_file_limit",
            "--nocapture",
        ])
        .env(CHILD_ADDR, addr.to_string())
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the child starts");
    wait_until_listening(addr).await;
    // More idle connections than the child has descriptors: without a cap below the file
    // limit, accepting fails and no new call is ever answered.
    let mut held = Vec::new();
    for _ in 0..300 {
        match TcpStream::connect(addr).await {
            Ok(stream) => held.push(stream),
            Err(error) => panic!("the kernel takes the connection: {error}"),
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_answered(addr).await;
    let mut closed = 0;
    for stream in &mut held {
        if closed_within(stream, Duration::from_millis(50)).await {
            closed += 1;
        }
    }
    // 256 descriptors less a headroom of 64: at most 192 held open.
    assert!(
        closed >= 300 - 192,
        "{closed} of 300 idle connections were closed for room"
    );
    assert_answered(addr).await;
    child.kill().await.expect("the child stops");
}

/// A tree of `files` small text files under the system's temp dir, removed when dropped.
struct Tree(PathBuf);

impl Tree {
    fn new(files: usize) -> Tree {
        let root = std::env::temp_dir().join(format!("envelope-hardening-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for k in 0..files {
            let dir = root.join(format!("d{}", k / 100));
            std::fs::create_dir_all(&dir).expect("the temp dir is writable");
            std::fs::write(dir.join(format!("f{k}.txt")), "x\n").expect("writable");
        }
        Tree(root)
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[tokio::test]
async fn a_huge_progress_token_is_never_echoed() {
    let tree = Tree::new(2_000);
    let workspace = workspace_server::Workspace::open(&tree.0).expect("a directory");
    let stats = EnvelopeServer::new(
        toolset![workspace_server::tools::workspace_stats],
        EnvelopeConfig::new("stats", "1").with_state(Arc::new(workspace)),
    );
    // Event streams, so that progress is sent at all.
    let shutdown = CancellationToken::new();
    let addr = free_port();
    tokio::spawn(
        stats.serve_http_with(
            addr,
            HttpConfig::default()
                .with_stateless(true)
                .with_shutdown(shutdown.clone()),
        ),
    );
    wait_until_listening(addr).await;
    let call = |token: Value| {
        let body = json!({
            "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {
                "name": "workspace_stats", "arguments": {},
                "_meta": { "progressToken": token }
            }
        })
        .to_string();
        mcp_post(&addr.to_string(), "", &body)
    };
    // A short token: progress is reported under it.
    let (status, _, body) = exchange(addr, &call(json!("short"))).await;
    assert_eq!(status, 200);
    assert!(body.contains("notifications/progress"), "{body}");
    // A megabyte token: no progress at all, and the answer stays small.
    let huge = "t".repeat(1 << 20);
    let (status, head, body) = exchange_bounded(addr, call(json!(huge)).as_bytes(), 4 << 20).await;
    assert_eq!(status, 200, "{head}");
    assert!(
        body.contains("\"result\""),
        "{}",
        &body[..body.len().min(500)]
    );
    assert!(!body.contains("notifications/progress"));
    assert!(body.len() < 1 << 20, "{} bytes answered", body.len());
    shutdown.cancel();
}

#[tokio::test]
async fn a_huge_id_or_tool_name_is_never_echoed() {
    let (addr, _stop) = serve(server(), HttpConfig::default()).await;
    let long = "i".repeat(10_000);
    let ping = json!({"jsonrpc": "2.0", "id": long, "method": "ping"}).to_string();
    let (status, _, body) = exchange(addr, &mcp_post(&addr.to_string(), "", &ping)).await;
    assert_eq!(status, 400);
    let answer: Value = serde_json::from_str(&body).expect("a JSON-RPC answer");
    assert_eq!(answer["id"], Value::Null);
    assert_eq!(answer["error"]["code"], envelope_mcp::INVALID_REQUEST);
    let unknown = json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": { "name": "n".repeat(10_000), "arguments": {} }
    })
    .to_string();
    let (status, _, body) = exchange(addr, &mcp_post(&addr.to_string(), "", &unknown)).await;
    assert_eq!(status, 200);
    assert!(body.len() < 2_000, "{body}");
}

/// A `GET` of `path` with exactly these header lines.
fn get_with(path: &str, headers: &str) -> String {
    format!("GET {path} HTTP/1.1\r\n{headers}connection: close\r\n\r\n")
}

/// A request of `method` to `path` with these host lines and a JSON body (a `ping` over MCP;
/// arguments `nap` refuses over the plain HTTP API).
fn with_hosts(method: &str, path: &str, hosts: &str) -> String {
    let body = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    format!(
        "{method} {path} HTTP/1.1\r\n{hosts}content-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[tokio::test]
async fn hosts_are_judged_by_one_rule_on_mcp_and_the_gateway() {
    let (addr, _stop) = serve(server(), HttpConfig::default()).await;
    let port = addr.port();
    let local = format!("host: localhost:{port}\r\n");
    // The target's authority (absolute form) before each path, if any; the host lines; the
    // status expected (`0`: not refused for its host).
    let cases = [
        (
            String::new(),
            format!("host: evil@localhost:{port}\r\n"),
            400,
        ),
        (
            String::new(),
            format!("host: localhost:{port}\r\nhost: evil.example\r\n"),
            400,
        ),
        (String::new(), String::new(), 400),
        (String::new(), "host: local host\r\n".to_owned(), 400),
        (String::new(), "host: evil.example\r\n".to_owned(), 403),
        (String::new(), local.clone(), 0),
        // A single trailing dot names the same host.
        (String::new(), format!("host: localhost.:{port}\r\n"), 0),
        // RFC 9112 §3.2.2: an absolute target's authority is the one judged, not the `Host`.
        (
            format!("http://localhost:{port}"),
            "host: evil.example\r\n".to_owned(),
            0,
        ),
        ("http://evil.example".to_owned(), local.clone(), 403),
        // Userinfo in the target is malformed, with a `Host` or without.
        (format!("http://evil@localhost:{port}"), local.clone(), 400),
        (format!("http://evil@localhost:{port}"), String::new(), 400),
        (
            format!("http://localhost:{port}"),
            format!("{local}{local}"),
            400,
        ),
    ];
    for (target, hosts, expected) in &cases {
        let mcp_path = format!("{target}/mcp");
        let rest_path = format!("{target}/tools/nap");
        let (mcp, head, body) = exchange(addr, &with_hosts("POST", &mcp_path, hosts)).await;
        let (rest, _, problem) = exchange(addr, &with_hosts("POST", &rest_path, hosts)).await;
        // Named in the failures: the target and the host lines.
        let hosts = &format!("{target} {hosts}");
        if *expected == 0 {
            // Allowed: neither refuses it for its host.
            assert!(![400, 403].contains(&mcp), "{hosts:?}: {head}\n{body}");
            assert!(![400, 403].contains(&rest), "{hosts:?}: {problem}");
            continue;
        }
        assert_eq!(mcp, *expected, "/mcp, {hosts:?}: {head}\n{body}");
        assert_eq!(rest, *expected, "/tools/nap, {hosts:?}: {problem}");
        let problem: Value = serde_json::from_str(&problem).expect("a problem");
        let code = if *expected == 400 {
            "invalid_host"
        } else {
            "host_not_allowed"
        };
        assert_eq!(problem["envelope"]["error"]["code"], code, "{hosts:?}");
    }
    // Health is probed by any name, but still held to RFC 9112.
    let (status, _, _) = exchange(addr, &get_with("/healthz", "host: lb.internal\r\n")).await;
    assert_eq!(status, 200);
    let doubled = format!("host: localhost:{port}\r\nhost: localhost:{port}\r\n");
    let (status, _, _) = exchange(addr, &get_with("/readyz", &doubled)).await;
    assert_eq!(status, 400);
}

#[tokio::test]
async fn every_path_under_tools_that_names_no_tool_is_unknown_tool() {
    let (addr, _stop) = serve(server(), HttpConfig::default()).await;
    let host = format!("host: {addr}\r\n");
    // (`GET /tools/nope` is a `405`: `/tools/{name}` takes `POST`.)
    let cases = [
        "/tools/nap/",
        "/tools//",
        "/tools/a/b",
        "/tools/",
        "/tools/nope",
    ]
    .into_iter()
    .flat_map(|path| ["POST", "GET"].map(|method| (method, path)))
    .filter(|&(method, path)| !(method == "GET" && path == "/tools/nope"));
    for (method, path) in cases {
        {
            let (status, head, body) = exchange(addr, &with_hosts(method, path, &host)).await;
            assert_eq!(status, 404, "{method} {path}: {head}");
            let problem: Value = serde_json::from_str(&body).expect("a problem");
            assert_eq!(
                problem["envelope"]["error"]["code"], "unknown_tool",
                "{path}"
            );
            assert_eq!(
                problem["envelope"]["error"]["data"]["available"],
                json!(["nap"]),
                "{path}"
            );
        }
    }
}

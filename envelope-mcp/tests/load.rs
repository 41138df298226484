//! A bounded load test over streamable HTTP on loopback: the `workspace_server` example's tools,
//! plus one that panics, called N times at concurrency 64 and then 256, mixing good, bad,
//! missing, outside-root, paged, heavy and panicking calls. Every call must get exactly one
//! answer, the right one for its kind, within [`CALL_TIMEOUT`]; no two answers share a
//! `meta.request_id`; the server still answers afterwards; and RSS may not grow by more than
//! [`MAX_RSS_GROWTH_KB`]. Latency (p50, p99) and RSS are printed, never asserted: the machines
//! that run this are shared and noisy.
//!
//! The short version ([`DEFAULT_CALLS`] calls per level) runs with the other tests. The full
//! one, whose figures the README records:
//!
//! ```text
//! ENVELOPE_LOAD_CALLS=10000 cargo test -p envelope-mcp --test load -- --nocapture
//! ```
//!
//! The server runs in this process, on the same two worker threads as its clients: RSS
//! (`VmRSS` from `/proc/self/status`, so Linux only) is server and clients together, and a
//! latency includes the clients' share of the CPU. The clients speak raw HTTP/1.1, one
//! connection per call, so what is measured is the server, not a client library.
//!
//! Growth is measured from after a warm-up of one call of each kind, not from the cold start:
//! with `RUST_BACKTRACE` set, the first panic alone adds about 100 MiB in a debug build (its
//! backtrace is symbolized, and the test binary's debug info stays mapped and cached), once per
//! process.

mod common;

use std::collections::{BTreeMap, HashSet};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use envelope_core::ToolResult;
use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use workspace_server::tools;

use common::raw_http::{header, open_session, post, serve_on_loopback};

/// Calls per concurrency level unless `ENVELOPE_LOAD_CALLS` says otherwise.
const DEFAULT_CALLS: usize = 600;
/// The levels, run one after the other on the same server.
const CONCURRENCY: [usize; 2] = [64, 256];
/// A call without an answer by then counts as hung and fails the test.
const CALL_TIMEOUT: Duration = Duration::from_secs(60);
/// Workers sharing one MCP session: a few sessions, far below the default cap of 1,000.
const WORKERS_PER_SESSION: usize = 32;
/// RSS may grow this much over both levels (in KiB); more suggests something is kept per call.
const MAX_RSS_GROWTH_KB: u64 = 200 * 1024;
/// Text files in the fixture, each with its own marker and a few `needle`s.
const TEXT_FILES: usize = 200;
/// Rust and Python modules in the fixture, which import each other in a ring.
const MODULES: usize = 30;

/// Always panics: a tool with a bug, which must come back as a masked `internal` error.
#[envelope_core::tool(tier = lite, read_only)]
async fn panics() -> ToolResult<()> {
    panic!("the load test's deliberate panic")
}

/// A fixture tree under the system's temp dir, removed when dropped.
struct Tree {
    root: PathBuf,
}

impl Tree {
    /// Enough files that a search walks a few hundred of them and `needle` fills many pages,
    /// and enough Rust and Python that `graph_export` has edges to resolve.
    fn new() -> Tree {
        let root = std::env::temp_dir().join(format!("envelope-load-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let tree = Tree { root };
        for k in 0..TEXT_FILES {
            tree.write(
                &format!("docs/file-{k:03}.txt"),
                &format!("file {k}\nneedle one\nmarker{k:03} here\nneedle two\n"),
            );
        }
        let mods: String = (0..MODULES).map(|k| format!("mod m{k};\n")).collect();
        tree.write("src/lib.rs", &mods);
        tree.write("py/pkg/__init__.py", "");
        for k in 0..MODULES {
            let next = (k + 1) % MODULES;
            tree.write(
                &format!("src/m{k}.rs"),
                &format!("use crate::m{next}::Item;\npub struct Item;\n// needle\n"),
            );
            tree.write(
                &format!("py/pkg/mod{k}.py"),
                &format!("from . import mod{next}\nNEEDLE = 'needle'\n"),
            );
        }
        tree
    }

    fn write(&self, rel: &str, contents: &str) {
        let path = self.root.join(rel);
        let dir = path.parent().expect("fixture paths have a parent");
        std::fs::create_dir_all(dir).expect("the temp dir is writable");
        std::fs::write(path, contents).expect("the temp dir is writable");
    }

    /// The example's tools and the panicking one, configured as the example configures them.
    fn server(&self) -> EnvelopeServer {
        let workspace =
            workspace_server::Workspace::open(&self.root).expect("the fixture is a directory");
        EnvelopeServer::new(
            envelope_core::toolset![
                tools::search_text,
                tools::read_file,
                tools::list_files,
                tools::workspace_stats,
                tools::graph_export,
                panics
            ],
            EnvelopeConfig::new("load", "1")
                .with_state(Arc::new(workspace))
                .with_continuations(Continuations::new(ContinuationKey::new(1, [7; 32]))),
        )
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// What a call tries, and so which answer it must get.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Search,
    List,
    Read,
    BadArguments,
    Missing,
    OutsideRoot,
    /// A first page and the page its continuation names: two calls.
    Paged,
    /// `graph_export` or `workspace_stats`, each walking and reading the whole tree.
    Heavy,
    Panicking,
}

/// The mix, dealt round robin.
const KINDS: [Kind; 9] = [
    Kind::Search,
    Kind::List,
    Kind::Read,
    Kind::BadArguments,
    Kind::Missing,
    Kind::OutsideRoot,
    Kind::Paged,
    Kind::Heavy,
    Kind::Panicking,
];

impl Kind {
    fn calls(self) -> usize {
        if self == Kind::Paged { 2 } else { 1 }
    }
}

/// One unit of work: `calls()` tool calls of one kind; `index` varies the arguments.
#[derive(Debug, Clone, Copy)]
struct Job {
    kind: Kind,
    index: usize,
}

/// Jobs adding up to exactly `calls` tool calls.
fn plan(calls: usize) -> Vec<Job> {
    let mut jobs = Vec::new();
    let mut planned = 0;
    for index in 0.. {
        if planned == calls {
            break;
        }
        let mut kind = KINDS[index % KINDS.len()];
        // A paged job is two calls; when only one is left, it is a plain search instead.
        if planned + kind.calls() > calls {
            kind = Kind::Search;
        }
        planned += kind.calls();
        jobs.push(Job { kind, index });
    }
    jobs
}

/// One answered call, as the tallies need it.
#[derive(Debug)]
struct Answered {
    kind: Kind,
    latency: Duration,
    request_id: String,
}

/// One answer as read off the wire, before its kind is checked.
struct Answer {
    envelope: Value,
    request_id: String,
    latency: Duration,
}

/// A client bound to one MCP session. JSON-RPC ids come from one counter shared by every
/// client, so they are unique within each session (and across them).
#[derive(Clone)]
struct Client {
    addr: SocketAddr,
    session: Arc<str>,
    rpc_ids: Arc<AtomicU64>,
}

impl Client {
    /// Calls `tool` and checks that what comes back is exactly one answer, and this call's:
    /// HTTP 200, one JSON-RPC response with our id, an envelope from `tool`, its `request_id`
    /// echoed in `X-Request-ID`. A timeout is a hung call.
    async fn call(&self, tool: &str, mut arguments: Value) -> Result<Answer, String> {
        let id = self.rpc_ids.fetch_add(1, Ordering::Relaxed);
        // In full, each answer names the tool that gave it (`meta.tool`).
        if let Some(object) = arguments.as_object_mut() {
            object.insert("response_mode".to_owned(), json!("full"));
        }
        let request = json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        });
        let started = Instant::now();
        let exchanged = tokio::time::timeout(
            CALL_TIMEOUT,
            exchange(
                self.addr,
                post(self.addr, Some(&self.session), "", &request),
            ),
        )
        .await;
        let latency = started.elapsed();
        let what = format!("`{tool}` {arguments} (JSON-RPC id {id})");
        let (head, body) = exchanged
            .map_err(|_| format!("hung: {what} got no answer in {CALL_TIMEOUT:?}"))?
            .map_err(|error| format!("{what}: {error}"))?;
        if !head.starts_with("HTTP/1.1 200") {
            return Err(format!("{what}: {head}\n{body}"));
        }
        let responses = sse_responses(&body);
        let [response] = responses.as_slice() else {
            return Err(format!(
                "{what}: {} responses instead of one: {body}",
                responses.len()
            ));
        };
        if response["id"] != id {
            return Err(format!("{what}: answered for id {}", response["id"]));
        }
        let envelope = response["result"]["structuredContent"].clone();
        let Some(request_id) = envelope["meta"]["request_id"].as_str() else {
            return Err(format!("{what}: no envelope with a request id: {response}"));
        };
        if header(&head, "x-request-id") != Some(request_id) {
            return Err(format!("{what}: X-Request-ID differs from {request_id}"));
        }
        if envelope["meta"]["tool"] != tool {
            return Err(format!("{what}: answered by {}", envelope["meta"]["tool"]));
        }
        Ok(Answer {
            request_id: request_id.to_owned(),
            envelope,
            latency,
        })
    }
}

/// Runs `job` and checks each answer against what its kind must get.
async fn run_job(client: &Client, job: Job) -> Result<Vec<Answered>, String> {
    let i = job.index;
    let (tool, arguments, expected) = match job.kind {
        Kind::Search => (
            "search_text",
            json!({"query": format!("marker{:03}", i % TEXT_FILES)}),
            None,
        ),
        Kind::List => ("list_files", json!({"glob": "*.rs", "limit": 10}), None),
        Kind::Read => (
            "read_file",
            json!({"path": format!("docs/file-{:03}.txt", i % TEXT_FILES)}),
            None,
        ),
        // Alternately a value the tool refuses and a type decoding refuses.
        Kind::BadArguments if i.is_multiple_of(2) => (
            "search_text",
            json!({"query": "x", "limit": 0}),
            Some("validation"),
        ),
        Kind::BadArguments => ("search_text", json!({"query": 5}), Some("validation")),
        Kind::Missing => (
            "read_file",
            json!({"path": format!("docs/missing-{i}.txt")}),
            Some("not_found"),
        ),
        Kind::OutsideRoot => (
            "read_file",
            json!({"path": "../../etc/passwd"}),
            Some("permission"),
        ),
        Kind::Paged => ("search_text", json!({"query": "needle", "limit": 5}), None),
        Kind::Heavy if i.is_multiple_of(2) => ("graph_export", json!({}), None),
        Kind::Heavy => ("workspace_stats", json!({}), None),
        Kind::Panicking => ("panics", json!({}), Some("internal")),
    };
    let answer = client.call(tool, arguments.clone()).await?;
    let envelope = &answer.envelope;
    let wrong = |why: &str| format!("{:?} `{tool}` {arguments}: {why}: {envelope}", job.kind);
    match expected {
        None if envelope["ok"] != true => return Err(wrong("expected ok")),
        Some(category) if envelope["ok"] != false || envelope["error"]["category"] != category => {
            return Err(wrong(&format!("expected a `{category}` error")));
        }
        _ => {}
    }
    // A panic is masked: the message names the request id, so the log can be searched for it.
    if job.kind == Kind::Panicking {
        let message = envelope["error"]["message"].as_str().unwrap_or_default();
        if !message.contains(&answer.request_id) || message.contains("deliberate") {
            return Err(wrong("the panic is not masked"));
        }
    }
    let mut answered = vec![Answered {
        kind: job.kind,
        latency: answer.latency,
        request_id: answer.request_id,
    }];
    if job.kind == Kind::Paged {
        // The next page is the `next-page` action, called exactly as given.
        let next = envelope["next_actions"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|action| action["id"] == "next-page")
            .map(|action| action["arguments"].clone())
            .filter(|arguments| arguments["continuation"].is_string());
        let Some(next) = next else {
            return Err(wrong("the first page has no next-page action"));
        };
        let page = client.call(tool, next.clone()).await?;
        let rows = page.envelope["data"]["occurrences"]
            .as_array()
            .map(Vec::len);
        if page.envelope["ok"] != true || rows != Some(5) {
            return Err(format!(
                "Paged `{tool}` {next}: expected five more rows: {}",
                page.envelope
            ));
        }
        answered.push(Answered {
            kind: job.kind,
            latency: page.latency,
            request_id: page.request_id,
        });
    }
    Ok(answered)
}

/// What one concurrency level gave.
struct Level {
    answered: Vec<Answered>,
    failures: Vec<String>,
    elapsed: Duration,
    /// Connections the kernel dropped from full listen queues meanwhile, on the whole machine.
    listen_overflows: Option<u64>,
}

/// Runs `jobs` with `concurrency` workers taking the next job as each finishes, so that
/// `concurrency` calls are in flight until the jobs run out. Worker `w` uses session
/// `w / WORKERS_PER_SESSION`.
async fn run_level(clients: &[Client], concurrency: usize, jobs: Arc<Vec<Job>>) -> Level {
    let next = Arc::new(AtomicUsize::new(0));
    let overflows_before = listen_overflows();
    let started = Instant::now();
    let workers: Vec<_> = (0..concurrency)
        .map(|worker| {
            let client = clients[worker / WORKERS_PER_SESSION].clone();
            let jobs = Arc::clone(&jobs);
            let next = Arc::clone(&next);
            tokio::spawn(async move {
                let mut results = Vec::new();
                while let Some(&job) = jobs.get(next.fetch_add(1, Ordering::Relaxed)) {
                    results.push(run_job(&client, job).await);
                }
                results
            })
        })
        .collect();
    let mut level = Level {
        answered: Vec::new(),
        failures: Vec::new(),
        elapsed: Duration::ZERO,
        listen_overflows: None,
    };
    for worker in workers {
        for result in worker
            .await
            .expect("a worker reports failures, never panics")
        {
            match result {
                Ok(answered) => level.answered.extend(answered),
                Err(failure) => level.failures.push(failure),
            }
        }
    }
    level.elapsed = started.elapsed();
    level.listen_overflows = listen_overflows()
        .zip(overflows_before)
        .map(|(after, before)| after.saturating_sub(before));
    level
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_call_under_load_gets_exactly_one_right_answer() {
    let calls: usize = std::env::var("ENVELOPE_LOAD_CALLS")
        .ok()
        .map(|calls| {
            calls
                .parse()
                .expect("ENVELOPE_LOAD_CALLS is a number of calls")
        })
        .unwrap_or(DEFAULT_CALLS);
    let tree = Tree::new();
    let addr = serve_on_loopback(tree.server()).await;
    let rpc_ids = Arc::new(AtomicU64::new(1));
    let sessions = CONCURRENCY
        .iter()
        .max()
        .expect("levels")
        .div_ceil(WORKERS_PER_SESSION);
    let mut clients = Vec::new();
    for _ in 0..sessions {
        clients.push(Client {
            addr,
            session: open_session(addr).await.into(),
            rpc_ids: Arc::clone(&rpc_ids),
        });
    }
    let jobs = Arc::new(plan(calls));

    let rss_cold = rss_kb();
    let mut request_ids = HashSet::new();
    // One call of each kind first, so one-time costs do not count as growth under load.
    for kind in KINDS {
        let answered = run_job(&clients[0], Job { kind, index: 0 })
            .await
            .expect("every kind is answered right when called alone");
        for answered in answered {
            record(&mut request_ids, answered.request_id);
        }
    }
    let rss_before = rss_kb();

    for concurrency in CONCURRENCY {
        let level = run_level(&clients, concurrency, Arc::clone(&jobs)).await;
        report(concurrency, &level);
        // Hung, wrong and lost calls all fail here; the first few say which and why.
        assert!(
            level.failures.is_empty(),
            "{} of {calls} calls failed at concurrency {concurrency}; the first:\n{}",
            level.failures.len(),
            level.failures[..level.failures.len().min(5)].join("\n")
        );
        assert_eq!(level.answered.len(), calls, "a call was lost");
        for answered in level.answered {
            record(&mut request_ids, answered.request_id);
        }
    }
    let rss_after = rss_kb();

    // Still alive: a new session opens, and a call on an old one is answered.
    let fresh = Client {
        addr,
        session: open_session(addr).await.into(),
        rpc_ids: Arc::clone(&rpc_ids),
    };
    for client in [&fresh, &clients[0]] {
        let answer = client
            .call("list_files", json!({"limit": 1}))
            .await
            .expect("the server answers after the load");
        assert_eq!(answer.envelope["ok"], true, "{}", answer.envelope);
        record(&mut request_ids, answer.request_id);
    }

    println!(
        "load: RSS cold {}, before the load (after warm-up) {}, after {}; {} distinct request ids",
        mib(rss_cold),
        mib(rss_before),
        mib(rss_after),
        request_ids.len()
    );
    if let (Some(before), Some(after)) = (rss_before, rss_after) {
        assert!(
            after.saturating_sub(before) <= MAX_RSS_GROWTH_KB,
            "RSS grew from {before} KiB to {after} KiB"
        );
    }
}

/// Adds a `meta.request_id` to those seen, failing on one seen before.
fn record(request_ids: &mut HashSet<String>, request_id: String) {
    assert!(
        !request_ids.contains(&request_id),
        "request id {request_id} answered twice"
    );
    request_ids.insert(request_id);
}

/// Prints one line of figures for a level, and one of latencies by kind: whether the heavy
/// calls are slower than the rest or all wait in the same queue.
fn report(concurrency: usize, level: &Level) {
    let mut latencies: Vec<Duration> = level.answered.iter().map(|a| a.latency).collect();
    latencies.sort();
    println!(
        "load: concurrency {concurrency}: {} calls answered, {} failed, {:.1} s ({:.0} calls/s), \
         p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms, RSS {}, listen queue overflows {}",
        level.answered.len(),
        level.failures.len(),
        level.elapsed.as_secs_f64(),
        level.answered.len() as f64 / level.elapsed.as_secs_f64(),
        millis(percentile(&latencies, 50)),
        millis(percentile(&latencies, 99)),
        millis(latencies.last().copied().unwrap_or_default()),
        mib(rss_kb()),
        level
            .listen_overflows
            .map_or_else(|| "n/a".to_owned(), |count| count.to_string()),
    );
    let mut by_kind: BTreeMap<Kind, Vec<Duration>> = BTreeMap::new();
    for answered in &level.answered {
        by_kind
            .entry(answered.kind)
            .or_default()
            .push(answered.latency);
    }
    let by_kind: Vec<String> = by_kind
        .into_iter()
        .map(|(kind, mut latencies)| {
            latencies.sort();
            format!(
                "{kind:?} {} p50 {:.0}/p99 {:.0} ms",
                latencies.len(),
                millis(percentile(&latencies, 50)),
                millis(percentile(&latencies, 99))
            )
        })
        .collect();
    println!(
        "load: concurrency {concurrency}: by kind: {}",
        by_kind.join(", ")
    );
}

/// The nearest-rank percentile of sorted `latencies`.
fn percentile(latencies: &[Duration], percent: usize) -> Duration {
    if latencies.is_empty() {
        return Duration::ZERO;
    }
    let rank = (latencies.len() * percent).div_ceil(100).max(1);
    latencies[rank - 1]
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1_000.0
}

/// This process's resident set in KiB; `None` where `/proc` is not Linux's.
fn rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// The kernel's count of connections dropped because a listen queue was full (`TcpExt:
/// ListenOverflows`, machine-wide); `None` where `/proc` is not Linux's. `serve_http` listens
/// with tokio's backlog of 128, so when more connections arrive at once than the server accepts,
/// their SYNs are dropped and the clients retry a second later: such a call's latency includes
/// that second, which is what a p99 above 1 s at concurrency 256 shows.
fn listen_overflows() -> Option<u64> {
    let netstat = std::fs::read_to_string("/proc/net/netstat").ok()?;
    let mut tcp_ext = netstat.lines().filter(|line| line.starts_with("TcpExt:"));
    let (names, values) = (tcp_ext.next()?, tcp_ext.next()?);
    let at = names
        .split_whitespace()
        .position(|name| name == "ListenOverflows")?;
    values.split_whitespace().nth(at)?.parse().ok()
}

fn mib(kb: Option<u64>) -> String {
    kb.map_or_else(
        || "n/a".to_owned(),
        |kb| format!("{:.1} MiB", kb as f64 / 1024.0),
    )
}

// ---------------------------------------------------------------------------------------------
// Raw HTTP/1.1
// ---------------------------------------------------------------------------------------------

/// Sends `request` on a new connection and reads the whole response: its head and its body,
/// de-chunked. Reading to the end of the body (the SSE stream of one request closes after its
/// response) is what lets the test count every message the server sent for the call.
async fn exchange(addr: SocketAddr, request: String) -> std::io::Result<(String, String)> {
    let mut stream = tokio::net::TcpStream::connect(addr).await?;
    stream.write_all(request.as_bytes()).await?;
    let mut reader = BufReader::new(stream);
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).await? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        if line == "\r\n" {
            break;
        }
        head.push_str(&line);
    }
    let mut body = Vec::new();
    if let Some(length) = header(&head, "content-length") {
        let length = length.parse().map_err(std::io::Error::other)?;
        body.resize(length, 0);
        reader.read_exact(&mut body).await?;
    } else if header(&head, "transfer-encoding").is_some_and(|coding| coding.contains("chunked")) {
        loop {
            let mut size = String::new();
            reader.read_line(&mut size).await?;
            let size = size.trim().split(';').next().unwrap_or_default();
            let size = usize::from_str_radix(size, 16).map_err(std::io::Error::other)?;
            if size == 0 {
                // No trailers are sent: what is left is the final CRLF.
                let mut end = String::new();
                reader.read_line(&mut end).await?;
                break;
            }
            let mut chunk = vec![0; size + 2];
            reader.read_exact(&mut chunk).await?;
            body.extend_from_slice(&chunk[..size]);
        }
    }
    Ok((head, String::from_utf8_lossy(&body).into_owned()))
}

/// The JSON-RPC responses among the SSE events of `body`; priming events (empty data) and
/// notifications are not responses.
fn sse_responses(body: &str) -> Vec<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .filter(|message| message.get("result").is_some() || message.get("error").is_some())
        .collect()
}

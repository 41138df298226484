//! An in-process MCP round trip (client and server over an in-memory duplex) of an envelope
//! tool against a plain rmcp `#[tool]` returning the same payload, side by side in one process.
//!
//! Target: the envelope tool's round trip is at most 1.1× the plain one. Payloads of three
//! sizes, all under the default budget so both sides send the same rows: one entry (about
//! 200 bytes, where the envelope's own fields weigh most), a 20-entry page (about 6.5 KB, a
//! typical search page) and 60 entries (about 19 KB). After criterion's report, the summary
//! interleaves rounds of both servers and compares medians, so both see the same machine load.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RunningService;
use rmcp::{ErrorData, RoleClient, ServerHandler, ServiceExt, tool_handler, tool_router};
use serde_json::{Map, Value, json};

/// Entries per payload, smallest first.
const SIZES: [usize; 3] = [1, 20, 60];

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupArgs {
    /// The key to look up.
    key: String,
    /// How many entries to return.
    entries: usize,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Entry {
    key: String,
    value: String,
    tags: Vec<String>,
    score: f64,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Page {
    entries: Vec<Entry>,
}

fn page(args: &LookupArgs) -> Page {
    let entries = (0..args.entries)
        .map(|index| {
            let key = format!("{}/{index}", args.key);
            Entry {
                value: format!(
                    "the value stored under {key}, with a little text to make it realistic"
                ),
                key,
                tags: vec!["alpha".into(), "beta".into(), "gamma".into()],
                score: 0.87,
            }
        })
        .collect();
    Page { entries }
}

/// Look up entries.
#[tool(tier = lite, read_only)]
fn lookup(args: LookupArgs) -> ToolResult<Page> {
    Ok(page(&args))
}

#[derive(Clone)]
struct Plain {
    // rmcp's `#[tool_handler]` in 3.11 builds its router itself; the field is the documented
    // pattern, kept so the comparison server looks like rmcp's own examples.
    #[allow(dead_code)]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl Plain {
    fn new() -> Self {
        Plain {
            tool_router: Self::tool_router(),
        }
    }

    #[rmcp::tool(name = "lookup", description = "Look up entries.")]
    async fn lookup(
        &self,
        Parameters(args): Parameters<LookupArgs>,
    ) -> Result<Json<Page>, ErrorData> {
        Ok(Json(page(&args)))
    }
}

#[tool_handler]
impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plain", "0.1.0"))
    }
}

type Client = RunningService<RoleClient, ()>;

async fn connect<S: ServerHandler>(server: S) -> Client {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    ().serve(client_io)
        .await
        .unwrap_or_else(|error| panic!("client connects: {error}"))
}

fn request(entries: usize) -> CallToolRequestParams {
    let mut arguments = Map::new();
    arguments.insert("key".into(), json!("user:42"));
    arguments.insert("entries".into(), json!(entries));
    CallToolRequestParams::new("lookup").with_arguments(arguments)
}

/// `calls` round trips; their total time.
async fn calls(client: &Client, entries: usize, calls: u64) -> Duration {
    let start = Instant::now();
    for _ in 0..calls {
        let result = client
            .call_tool(request(entries))
            .await
            .unwrap_or_else(|error| panic!("call: {error}"));
        black_box(result);
    }
    start.elapsed()
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// Both servers must send the same rows, untrimmed, or the comparison means nothing.
async fn check_same_payload(envelope: &Client, plain: &Client, entries: usize) {
    let ours = envelope
        .call_tool(request(entries))
        .await
        .unwrap_or_else(|error| panic!("call: {error}"));
    let theirs = plain
        .call_tool(request(entries))
        .await
        .unwrap_or_else(|error| panic!("call: {error}"));
    let ours = ours.structured_content.unwrap_or_default();
    assert_eq!(ours["ok"], Value::Bool(true));
    assert_eq!(ours["meta"]["truncated"], Value::Bool(false));
    assert_eq!(Some(&ours["data"]), theirs.structured_content.as_ref());
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("runtime: {error}"));
    let (envelope, plain) = runtime.block_on(async {
        let envelope = connect(EnvelopeServer::new(
            toolset![lookup],
            EnvelopeConfig::new("envelope", "0.1.0"),
        ))
        .await;
        let plain = connect(Plain::new()).await;
        for entries in SIZES {
            check_same_payload(&envelope, &plain, entries).await;
        }
        (envelope, plain)
    });

    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    for entries in SIZES {
        let mut group = criterion.benchmark_group(format!("round trip, {entries} entries"));
        for (name, client) in [("plain rmcp", &plain), ("envelope", &envelope)] {
            group.bench_function(name, |bencher| {
                bencher.iter_custom(|iters| runtime.block_on(calls(client, entries, iters)));
            });
        }
        group.finish();
    }
    criterion.final_summary();

    println!();
    runtime.block_on(async {
        for entries in SIZES {
            // Warm both up, then interleave rounds so both see the same machine load.
            calls(&envelope, entries, 300).await;
            calls(&plain, entries, 300).await;
            let (mut ours, mut theirs) = (Vec::new(), Vec::new());
            for _ in 0..21 {
                ours.push(calls(&envelope, entries, 200).await / 200);
                theirs.push(calls(&plain, entries, 200).await / 200);
            }
            let (ours, theirs) = (median(ours), median(theirs));
            let ratio = ours.as_secs_f64() / theirs.as_secs_f64();
            let verdict = if ratio <= 1.1 { "meets" } else { "MISSES" };
            println!(
                "round trip, {entries:>2} entries: plain rmcp #[tool] {:>6.1} µs, envelope tool {:>6.1} µs; ratio {ratio:.2} ({verdict} target <= 1.1)",
                theirs.as_secs_f64() * 1e6,
                ours.as_secs_f64() * 1e6,
            );
        }
    });
    runtime.block_on(async {
        let _ = envelope.cancel().await;
        let _ = plain.cancel().await;
    });
}

//! An in-process MCP round trip (client and server over an in-memory duplex) of an envelope
//! tool against a plain rmcp `#[tool]` returning the same payload, side by side in one process.
//!
//! Target: the envelope tool's round trip is at most 1.1× the plain one.

use std::hint::black_box;
use std::time::{Duration, Instant};

use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::{Json, Parameters};
use rmcp::model::{CallToolRequestParams, Implementation, ServerCapabilities, ServerConfig};
use rmcp::service::RunningService;
use rmcp::{ErrorData, RoleClient, ServerHandler, ServiceExt, tool_handler, tool_router};
use serde_json::{Map, Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct LookupArgs {
    /// The key to look up.
    key: String,
}

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Entry {
    key: String,
    value: String,
    tags: Vec<String>,
    score: f64,
}

fn entry(key: String) -> Entry {
    Entry {
        value: format!("the value stored under {key}, with a little text to make it realistic"),
        key,
        tags: vec!["alpha".into(), "beta".into(), "gamma".into()],
        score: 0.87,
    }
}

/// Look up an entry.
#[tool(tier = lite, read_only)]
fn lookup(args: LookupArgs) -> ToolResult<Entry> {
    Ok(entry(args.key))
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

    #[rmcp::tool(name = "lookup", description = "Look up an entry.")]
    async fn lookup(
        &self,
        Parameters(args): Parameters<LookupArgs>,
    ) -> Result<Json<Entry>, ErrorData> {
        Ok(Json(entry(args.key)))
    }
}

#[tool_handler]
impl ServerHandler for Plain {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("plain", "0.1.0"))
    }
}

async fn connect<S: ServerHandler>(server: S) -> RunningService<RoleClient, ()> {
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

fn request() -> CallToolRequestParams {
    let mut arguments = Map::new();
    arguments.insert("key".into(), json!("user:42"));
    CallToolRequestParams::new("lookup").with_arguments(arguments)
}

async fn round(client: &RunningService<RoleClient, ()>, calls: u32) -> Duration {
    let start = Instant::now();
    for _ in 0..calls {
        let result = client
            .call_tool(request())
            .await
            .unwrap_or_else(|error| panic!("call: {error}"));
        black_box(result);
    }
    start.elapsed() / calls
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap_or_else(|error| panic!("runtime: {error}"));
    runtime.block_on(async {
        let envelope = connect(EnvelopeServer::new(
            toolset![lookup],
            EnvelopeConfig::new("envelope", "0.1.0"),
        ))
        .await;
        let plain = connect(Plain::new()).await;
        let sample = envelope.call_tool(request()).await.unwrap_or_else(|error| panic!("call: {error}"));
        assert_eq!(sample.structured_content.as_ref().map(|v| v["ok"].clone()), Some(Value::Bool(true)));
        // Warm both up, then interleave rounds so both see the same machine load.
        round(&envelope, 500).await;
        round(&plain, 500).await;
        let (mut envelope_times, mut plain_times) = (Vec::new(), Vec::new());
        for _ in 0..31 {
            envelope_times.push(round(&envelope, 300).await);
            plain_times.push(round(&plain, 300).await);
        }
        let (e, p) = (median(envelope_times), median(plain_times));
        let ratio = e.as_secs_f64() / p.as_secs_f64();
        let verdict = if ratio <= 1.1 { "meets" } else { "MISSES" };
        println!(
            "round trip: plain rmcp #[tool] {:.1} µs, envelope tool {:.1} µs; ratio {ratio:.2} ({verdict} target <= 1.1)",
            p.as_secs_f64() * 1e6,
            e.as_secs_f64() * 1e6
        );
        let _ = envelope.cancel().await;
        let _ = plain.cancel().await;
    });
}

//! What `#[tool]` and the server cost: a trivial tool called through the generated entry, and
//! through the whole server path (`EnvelopeServer::call`: the entry, then the budget stage's
//! check, token stamp and text mirror, without rmcp), against the plain function plus
//! `serde_json::to_vec` of its payload, side by side in one process.
//!
//! Targets for a 200-byte payload: the generated entry (module gate, argument decoding,
//! unknown-key check, panic capture, payload serialization, envelope building and meta stamp)
//! adds at most 1 µs (median); the whole server path takes at most 2 µs and 3× the plain path. Besides criterion's own report, `main` prints the medians of interleaved
//! rounds and their ratios, so all sides share whatever load the machine is under.
//!
//! The arguments arrive as a `serde_json::Value`, as a transport hands them over; copying them
//! for each iteration happens outside the timed region.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use criterion::{BatchSize, Criterion};
use envelope_core::{Tool, ToolContext, ToolResult, tool};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// The line to repeat.
    line: String,
}

#[derive(Serialize)]
struct Echo {
    line: String,
    words: usize,
    tags: [&'static str; 3],
}

/// Echo a line with a little analysis: the 200-byte payload the target is stated for.
#[tool(tier = lite, read_only)]
fn echo(args: EchoArgs) -> ToolResult<Echo> {
    Ok(Echo {
        words: args.line.split_whitespace().count(),
        line: args.line,
        tags: ["benchmark", "envelope", "wrapper"],
    })
}

fn line() -> String {
    "the quick brown fox jumps over the lazy dog while the envelope wrapper stamps a request id, \
     a tier and a latency on every single answer"
        .to_owned()
}

fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

fn plain() -> Vec<u8> {
    let payload = echo(EchoArgs { line: line() }).ok();
    serde_json::to_vec(&payload).unwrap_or_default()
}

/// The entry, and the payload encoded as a transport without a budget encodes it.
fn entry(arguments: Value) -> envelope_core::Envelope<Value> {
    let output = block_on(echo {}.call(arguments, ToolContext::new()));
    let (output, ()) = output.encode_payload(|payload| Ok((serde_json::to_value(payload)?, ())));
    output.envelope
}

fn entry_to_bytes(arguments: Value) -> Vec<u8> {
    serde_json::to_vec(&entry(arguments)).unwrap_or_default()
}

/// What any server path sends, without sizing or stamping anything: the entry, then the
/// envelope as `structuredContent` (a `Value`) and as text. The floor under the server path.
fn entry_to_both(arguments: Value) -> (Value, String) {
    let envelope = entry(arguments);
    let structured = serde_json::to_value(&envelope).unwrap_or_default();
    let text = serde_json::to_string(&structured).unwrap_or_default();
    (structured, text)
}

/// The server's own path for one call: entry, budget stage, mirror; what rmcp then sends.
fn server_path(
    runtime: &tokio::runtime::Runtime,
    server: &envelope_mcp::EnvelopeServer,
    arguments: Value,
) -> String {
    runtime
        .block_on(server.call("echo", arguments))
        .map(|prepared| prepared.json)
        .unwrap_or_default()
}

fn median_ns(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Per-iteration nanoseconds of `body` over fresh copies of `arguments`, copied before timing.
fn time_round(arguments: &Value, per_round: usize, mut body: impl FnMut(Value)) -> f64 {
    let inputs: Vec<Value> = (0..per_round).map(|_| arguments.clone()).collect();
    let start = Instant::now();
    for input in inputs {
        body(input);
    }
    start.elapsed().as_nanos() as f64 / per_round as f64
}

fn interleaved_report(
    arguments: &Value,
    runtime: &tokio::runtime::Runtime,
    server: &envelope_mcp::EnvelopeServer,
) {
    const ROUNDS: usize = 41;
    const PER_ROUND: usize = 2_000;
    let (mut plain_ns, mut entry_ns, mut full_ns) = (Vec::new(), Vec::new(), Vec::new());
    let (mut server_ns, mut both_ns) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        server_ns.push(time_round(arguments, PER_ROUND, |input| {
            black_box(server_path(runtime, server, input));
        }));
        plain_ns.push(time_round(arguments, PER_ROUND, |_| {
            black_box(plain());
        }));
        entry_ns.push(time_round(arguments, PER_ROUND, |input| {
            black_box(entry(input));
        }));
        full_ns.push(time_round(arguments, PER_ROUND, |input| {
            black_box(entry_to_bytes(input));
        }));
        both_ns.push(time_round(arguments, PER_ROUND, |input| {
            black_box(entry_to_both(input));
        }));
    }
    let (plain, entry, full) = (median_ns(plain_ns), median_ns(entry_ns), median_ns(full_ns));
    println!(
        "wrapper: plain fn + to_vec {plain:.0} ns; generated entry {entry:.0} ns, adds {:.0} ns \
         (ratio {:.2}; target: adds <= 1000 ns)",
        entry - plain,
        entry / plain
    );
    println!(
        "full path: entry + to_vec of the whole envelope {full:.0} ns, adds {:.0} ns (ratio {:.2})",
        full - plain,
        full / plain
    );
    let both = median_ns(both_ns);
    println!(
        "floor: entry + the envelope as a Value and as text, nothing sized {both:.0} ns \
         (ratio {:.2})",
        both / plain
    );
    let server = median_ns(server_ns);
    println!(
        "server path: EnvelopeServer::call (entry, budget stage, mirror) {server:.0} ns \
         (ratio {:.2}; target: <= 2000 ns and <= 3x)",
        server / plain
    );
}

fn main() {
    let arguments = json!({ "line": line() });
    let payload = serde_json::to_vec(&echo(EchoArgs { line: line() }).ok()).unwrap_or_default();
    println!("payload: {} bytes", payload.len());

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("wrapper");
    group.bench_function("plain_fn_plus_to_vec", |b| b.iter(plain));
    group.bench_function("tool_entry", |b| {
        b.iter_batched(|| arguments.clone(), entry, BatchSize::SmallInput)
    });
    group.bench_function("tool_entry_plus_envelope_to_vec", |b| {
        b.iter_batched(|| arguments.clone(), entry_to_bytes, BatchSize::SmallInput)
    });
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let server = envelope_mcp::EnvelopeServer::new(
        envelope_core::toolset![echo],
        envelope_mcp::EnvelopeConfig::new("bench", "1"),
    );
    group.bench_function("server_path", |b| {
        b.iter_batched(
            || arguments.clone(),
            |input| server_path(&runtime, &server, input),
            BatchSize::SmallInput,
        )
    });
    group.finish();
    criterion.final_summary();

    interleaved_report(&arguments, &runtime, &server);
}

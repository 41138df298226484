//! What trimming costs, as ratios to one `serde_json::to_vec` of the same payload, measured side
//! by side in one process (medians of interleaved rounds).
//!
//! Targets (issue 4): trimming a 40 MB search result (200k hits) to 32,000 and to 5,000,000
//! chars ≤ 0.5×; the whole boundary, typed tool result → bytes sent, ≤ 2×; a 100k-node,
//! 400k-edge subgraph trimmed to 5 MB ≤ 5×. Cloning the input and freeing the cut rows happen
//! outside the timed region.

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::sync::Arc;

use envelope_budget::{BudgetPolicy, Counts, Estimator, prepare, trim};
use envelope_core::{Envelope, Tool, ToolContext, ToolResult, tool};
use serde::Serialize;
use serde_json::{Value, json};

#[path = "../tests/support/mod.rs"]
mod support;

use support::block_on;

#[derive(Serialize, Clone)]
struct Hit {
    path: String,
    line: u32,
    column: u32,
    text: String,
    score: f64,
    kind: &'static str,
}

#[derive(Serialize, Clone)]
struct SearchResult {
    query: &'static str,
    total: usize,
    results: Vec<Hit>,
}

/// A typed result shared with the tool, so that handing it over costs nothing.
struct Shared(Arc<SearchResult>);

impl Serialize for Shared {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.0.serialize(serializer)
    }
}

/// Answers with the search result the benchmark put in the server state.
#[tool(tier = heavy, read_only)]
fn search(ctx: &ToolContext) -> ToolResult<Shared> {
    let result = ctx.state::<Arc<SearchResult>>()?;
    Ok(Shared(Arc::clone(result)))
}

fn search_result(hits: usize) -> SearchResult {
    let results = (0..hits)
        .map(|i| Hit {
            path: format!("src/module_{}/nested/path/file_{i}.rs", i % 500),
            line: (i % 5000) as u32,
            column: 4 + (i % 17) as u32,
            text: format!(
                "    let result = compute_something(input, &config)?; // matched line {i} of the workspace search"
            ),
            score: 0.5 + (i % 100) as f64 / 200.0,
            kind: "occurrence",
        })
        .collect();
    SearchResult {
        query: "compute_something",
        total: hits,
        results,
    }
}

fn graph(nodes: usize, edges: usize) -> Value {
    let node_list: Vec<Value> = (0..nodes)
        .map(|i| json!({"id": format!("node-{i}"), "kind": "function", "label": format!("crate::module_{}::function_{i}", i % 300)}))
        .collect();
    let edge_list: Vec<Value> = (0..edges)
        .map(|i| {
            // A skewed degree distribution: a few hubs, a long tail.
            let source = (i * 7919) % nodes;
            let target = ((i % 1000) * (i % 1000)) % nodes;
            json!({"source": format!("node-{source}"), "target": format!("node-{target}"), "kind": "calls"})
        })
        .collect();
    json!({ "nodes": node_list, "edges": edge_list })
}

/// Frees `value` and lets the allocator settle outside the clock: glibc merges freed small
/// chunks on the next large request, and that bill belongs to whoever freed them.
fn settle<T>(value: T) {
    drop(value);
    drop(black_box(Vec::<u8>::with_capacity(1 << 16)));
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One timed case: its name, its target ratio, and what it runs.
type Case<'a, I, O> = (&'a str, f64, &'a dyn Fn(I) -> O);

/// Medians of `rounds` interleaved runs of the baseline and each case. Each case gets a fresh
/// input from `input` (untimed) and its output is dropped after the clock stops.
fn compare<I, O>(
    label: &str,
    rounds: usize,
    input: impl Fn() -> I,
    baseline: impl Fn(&I) -> Vec<u8>,
    cases: &[Case<'_, I, O>],
) {
    // `cargo bench --bench trim -- subgraph` runs only the comparisons whose label matches.
    let filter: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    if !filter.is_empty() && !filter.iter().any(|f| label.contains(f.as_str())) {
        return;
    }
    let mut base = Vec::new();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); cases.len()];
    for _ in 0..rounds {
        let value = input();
        settle(());
        let start = Instant::now();
        let bytes = black_box(baseline(&value));
        base.push(start.elapsed());
        settle((bytes, value));
        for (index, (_, _, run)) in cases.iter().enumerate() {
            let value = input();
            settle(());
            let start = Instant::now();
            let output = black_box(run(value));
            times[index].push(start.elapsed());
            settle(output);
        }
    }
    let base = median(base);
    println!("{label}: one to_vec {:.1} ms", base.as_secs_f64() * 1e3);
    for ((name, target, _), samples) in cases.iter().zip(times) {
        let time = median(samples);
        let ratio = time.as_secs_f64() / base.as_secs_f64();
        let verdict = if target.is_infinite() {
            "no target".to_owned()
        } else if ratio <= *target {
            format!("meets target <= {target}x")
        } else {
            format!("MISSES target <= {target}x")
        };
        println!(
            "  {name}: {:.1} ms = {ratio:.2}x one serialization ({verdict})",
            time.as_secs_f64() * 1e3
        );
    }
}

fn main() {
    let typed = search_result(200_000);
    let value = serde_json::to_value(&typed).unwrap_or_default();
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    println!(
        "search payload: {} hits, {:.1} MB",
        typed.results.len(),
        bytes.len() as f64 / 1e6
    );
    let fixed = Counts::of(
        r#"{"ok":true,"verdict":"INFO","meta":{"request_id":"01HM3K2X9V7QY8R4PNZTH5W6BC","schema_version":2}}"#,
    );

    let to_32k = |data: Value| trim(data, fixed, 32_000, Estimator::default(), &[]);
    let to_5m = |data: Value| trim(data, fixed, 5_000_000, Estimator::default(), &[]);
    compare(
        "trim a 40 MB search result",
        7,
        || value.clone(),
        |value: &Value| serde_json::to_vec(value).unwrap_or_default(),
        &[
            ("to 32,000 chars", 0.5, &to_32k),
            ("to 5,000,000 chars", 0.5, &to_5m),
        ],
    );

    // Through the generated entry, as a transport calls it: the budget-aware encoder converts
    // only rows that could be kept, then `prepare` trims and stamps.
    let shared = Arc::new(typed);
    let budget = BudgetPolicy::default().for_call(None);
    let bounded = |ctx: ToolContext| {
        let output = block_on(search {}.call(Value::Null, ctx));
        let prepared = prepare(output, &budget);
        (prepared.json.into_bytes(), prepared.leftovers)
    };
    // The payload converted whole first, as a hand-written tool hands over JSON.
    let send = |ctx: ToolContext| {
        let output = block_on(search {}.call(Value::Null, ctx));
        let wire = serde_json::to_value(&output.envelope).unwrap_or_default();
        let envelope: Envelope<Value> =
            serde_json::from_value(wire).unwrap_or_else(|_| Envelope::ok(Value::Null));
        let prepared = prepare(envelope, &budget);
        (prepared.json.into_bytes(), prepared.leftovers)
    };
    // The cases must measure real answers, not a quick error.
    let (bytes, _) = bounded(ToolContext::new().with_state(Arc::new(Arc::clone(&shared))));
    let sample: Value = serde_json::from_slice(&bytes).unwrap_or_default();
    assert_eq!(sample["ok"], true, "the benchmark tool failed: {sample}");
    assert_eq!(sample["meta"]["truncated_results_from"], 200_000);
    compare(
        "the whole boundary, typed result -> bytes sent",
        7,
        || ToolContext::new().with_state(Arc::new(Arc::clone(&shared))),
        |_: &ToolContext| serde_json::to_vec(&*shared).unwrap_or_default(),
        &[
            (
                "#[tool] entry + prepare, budget-aware encoder, 32,000 chars",
                2.0,
                &bounded,
            ),
            (
                "#[tool] entry, to_value and back, then prepare (reference)",
                f64::INFINITY,
                &send,
            ),
        ],
    );

    boundary_sweep();
    subgraph_sweep(fixed);

    let graph = graph(100_000, 400_000);
    let graph_bytes = serde_json::to_vec(&graph).unwrap_or_default();
    println!(
        "graph payload: 100k nodes, 400k edges, {:.1} MB",
        graph_bytes.len() as f64 / 1e6
    );
    let subgraph = |data: Value| trim(data, fixed, 5_000_000, Estimator::default(), &[]);
    compare(
        "subgraph trim",
        5,
        || graph.clone(),
        |value: &Value| serde_json::to_vec(value).unwrap_or_default(),
        &[("to 5,000,000 chars", 5.0, &subgraph)],
    );
    envelope_core::stage::drop_deep(graph);
}

/// The whole boundary (typed result → `#[tool]` entry → encoder → `prepare` → the bytes sent)
/// at every budget from 1 KB to 5 MB, on search results of about 1, 10 and 45 MB. Target: ≤ 2×
/// one serialization of the typed result; ≤ 1.2× where little or nothing is cut (the budget
/// holds at least 90% of the result).
fn boundary_sweep() {
    const BUDGETS: [usize; 5] = [1_000, 32_000, 1_000_000, 5_000_000, 50_000_000];
    // About 225 bytes a hit.
    for hits in [4_500, 45_000, 200_000] {
        let shared = Arc::new(search_result(hits));
        let bytes = serde_json::to_vec(&*shared).unwrap_or_default().len();
        for budget in BUDGETS {
            let policy = BudgetPolicy::default().with_agent_chars(Some(budget));
            let send = |ctx: ToolContext| {
                let output = block_on(search {}.call(Value::Null, ctx));
                let prepared = prepare(output, &policy.for_call(None));
                (prepared.json.into_bytes(), prepared.leftovers)
            };
            let fits = budget as f64 >= 0.9 * bytes as f64;
            let target = if fits { 1.2 } else { 2.0 };
            compare(
                &format!(
                    "boundary sweep: {:.1} MB result, budget {budget} chars",
                    bytes as f64 / 1e6
                ),
                5,
                || ToolContext::new().with_state(Arc::new(Arc::clone(&shared))),
                |_: &ToolContext| serde_json::to_vec(&*shared).unwrap_or_default(),
                &[("#[tool] entry + encoder + prepare", target, &send)],
            );
        }
    }
}

/// Subgraph trimming at every size from 10k to 300k nodes (three edges a node) and every budget
/// from 32 KB to 5 MB. Target: ≤ 5× one serialization of the graph.
fn subgraph_sweep(fixed: Counts) {
    for nodes in [10_000, 30_000, 100_000, 300_000] {
        let graph = graph(nodes, 3 * nodes);
        let bytes = serde_json::to_vec(&graph).unwrap_or_default().len();
        for budget in [32_000, 1_000_000, 5_000_000] {
            let trim_to = |data: Value| trim(data, fixed, budget, Estimator::default(), &[]);
            compare(
                &format!(
                    "subgraph sweep: {nodes} nodes, {:.1} MB, budget {budget} chars",
                    bytes as f64 / 1e6
                ),
                3,
                || graph.clone(),
                |value: &Value| serde_json::to_vec(value).unwrap_or_default(),
                &[("trim", 5.0, &trim_to)],
            );
        }
        envelope_core::stage::drop_deep(graph);
    }
}

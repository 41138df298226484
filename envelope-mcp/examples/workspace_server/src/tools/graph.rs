//! `graph_export`: the import graph of the workspace's source files, in the `graph` module.

use std::collections::{BTreeSet, HashMap};

use envelope_core::{
    Completeness, EmptyReason, IncompleteReason, Reply, ToolContext, ToolError, ToolResult,
    TruncationReason, Unit, Verdict, tool,
};
use serde::{Deserialize, Serialize};

use crate::errors::{cancelled, invalid};
use crate::imports::{Language, Reference};
use crate::progress::Progress;
use crate::walk::{Candidate, walk};
use crate::workspace::{Contents, Workspace};

/// The arguments of `graph_export`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct GraphExportArgs {
    /// Keep at most this many nodes, the best connected first (at least 1). Default: all.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub(crate) max_nodes: Option<usize>,
}

/// What `graph_export` answers: the files and the imports between them.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Graph {
    /// Sorted by id.
    pub(crate) nodes: Vec<Node>,
    /// Sorted by source, target, kind; only between nodes present.
    pub(crate) edges: Vec<Edge>,
}

/// One source file of the graph.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Node {
    /// The file's relative path.
    pub(crate) id: String,
    /// Always `file`.
    pub(crate) kind: &'static str,
    /// `rust`, `python`, `javascript` or `typescript`.
    pub(crate) language: &'static str,
    pub(crate) lines: usize,
}

/// One import: `source` refers to `target`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub struct Edge {
    pub(crate) source: String,
    pub(crate) target: String,
    /// `mod` (Rust `mod x;`), `use` (Rust `use crate::…`) or `import` (Python, JS/TS).
    pub(crate) kind: &'static str,
}

/// Export the workspace's source files (Rust, Python, JavaScript, TypeScript) as a graph:
/// files are nodes; edges are Rust `mod x;` and `use crate::…`, Python `import x` and
/// `from x import y`, and JS/TS relative imports, each resolved to a file of the workspace
/// (references that resolve to no file are left out). `max_nodes` keeps the best connected
/// files.
#[tool(
    tier = heavy,
    read_only,
    open_world = false,
    title = "Import graph",
    module = "graph",
    scopes = ["workspace:read", "workspace:heavy"],
    blocking
)]
pub fn graph_export(ctx: &ToolContext, args: GraphExportArgs) -> ToolResult<Reply<Graph>> {
    if args.max_nodes == Some(0) {
        return Err(invalid("max_nodes", "`max_nodes` must be at least 1"));
    }
    export_graph(ctx.state::<Workspace>()?, ctx, args.max_nodes)
}

pub(crate) fn export_graph(
    workspace: &Workspace,
    ctx: &ToolContext,
    max_nodes: Option<usize>,
) -> ToolResult<Reply<Graph>> {
    let walk = walk(workspace);
    let sources: Vec<(&Candidate, Language)> = walk
        .files
        .iter()
        .filter_map(|file| Language::of(&file.rel).map(|language| (file, language)))
        .collect();

    // Pass 1: read each source file once, keep its node and its raw references.
    let progress = Progress::start(ctx, sources.len(), "source files");
    let mut nodes = Vec::new();
    let mut references = Vec::new();
    let mut unreadable = 0;
    for (index, (file, language)) in sources.iter().enumerate() {
        if ctx.is_cancelled() {
            return Err(cancelled("graph_export"));
        }
        match workspace.read_text(&file.rel) {
            Contents::Text(text) => {
                nodes.push(Node {
                    id: file.rel.clone(),
                    kind: "file",
                    language: language.name(),
                    lines: text.lines().count(),
                });
                references.push((file.rel.as_str(), language.references(&text)));
            }
            Contents::Binary => {}
            Contents::Unreadable(_) => unreadable += 1,
        }
        progress.step(index + 1);
    }
    progress.finish();

    // Pass 2: resolve references against the files that are nodes.
    let mut edges = resolve_edges(&nodes, &references);

    let total = nodes.len();
    if let Some(max) = max_nodes
        && max < total
    {
        keep_best_connected(&mut nodes, &mut edges, max);
    }
    let completeness = graph_completeness(nodes.len(), total, walk.failures, unreadable)?;
    let next_step = completeness.next_step("raise `max_nodes`, or leave it out for every file");
    let summary = format!("{} files, {} edges", nodes.len(), edges.len());
    let empty = nodes.is_empty();
    let mut reply = Reply::new(Graph { nodes, edges })
        .summary_line(summary)
        .completeness(completeness);
    if let Some(step) = next_step {
        reply = reply.next_step(step);
    }
    if empty {
        reply = reply.verdict(Verdict::NotFound).empty(
            EmptyReason::NoMatch,
            "the workspace has no Rust, Python, JavaScript or TypeScript files",
        );
    }
    Ok(reply)
}

/// The edges the `references` of each source file resolve to among `nodes`, sorted and without
/// duplicates; a file's references to itself are left out.
fn resolve_edges(nodes: &[Node], references: &[(&str, Vec<Reference>)]) -> Vec<Edge> {
    let ids: BTreeSet<&str> = nodes.iter().map(|node| node.id.as_str()).collect();
    let mut edges = BTreeSet::new();
    for (source, found) in references {
        for reference in found {
            for (target, kind) in reference.resolve(source, &ids) {
                if target != *source {
                    edges.insert(Edge {
                        source: (*source).to_owned(),
                        target,
                        kind,
                    });
                }
            }
        }
    }
    edges.into_iter().collect()
}

/// How complete a graph of `kept` of the `total` source files is: cut by `max_nodes` when it
/// keeps fewer, and unproven when the walk failed somewhere or a file could not be read.
fn graph_completeness(
    kept: usize,
    total: usize,
    walk_failures: usize,
    unreadable: usize,
) -> ToolResult<Completeness> {
    let mut reasons = Vec::new();
    if walk_failures > 0 {
        reasons.push(IncompleteReason::WalkFailure);
    }
    if unreadable > 0 {
        reasons.push(IncompleteReason::UnreadableCandidate);
    }
    // What could not be read leaves the total unproven.
    let proven = reasons.is_empty().then_some(total);
    if kept < total {
        Completeness::truncated_page(Unit::FILE, kept, proven, TruncationReason::TopKLimit, None)
            .and_then(|page| page.with_incomplete_reasons(reasons))
    } else if reasons.is_empty() {
        Ok(Completeness::complete(Unit::FILE, total))
    } else {
        Completeness::incomplete(Unit::FILE, total, None, reasons)
    }
    .map_err(ToolError::internal)
}

/// Keeps the `max` nodes of highest degree (ties by id) and the edges between them.
fn keep_best_connected(nodes: &mut Vec<Node>, edges: &mut Vec<Edge>, max: usize) {
    let mut degree: HashMap<&str, usize> = HashMap::new();
    for edge in edges.iter() {
        *degree.entry(edge.source.as_str()).or_default() += 1;
        *degree.entry(edge.target.as_str()).or_default() += 1;
    }
    let mut ranked: Vec<(usize, &str)> = nodes
        .iter()
        .map(|node| {
            (
                degree.get(node.id.as_str()).copied().unwrap_or(0),
                node.id.as_str(),
            )
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let kept: BTreeSet<String> = ranked
        .into_iter()
        .take(max)
        .map(|(_, id)| id.to_owned())
        .collect();
    nodes.retain(|node| kept.contains(&node.id));
    edges.retain(|edge| kept.contains(&edge.source) && kept.contains(&edge.target));
}

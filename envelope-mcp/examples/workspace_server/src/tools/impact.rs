//! `change_impact`: the risk of changing one file, graded `SAFE` to `UNSAFE` from the import
//! graph, in the `graph` module.

use std::collections::{BTreeSet, HashMap};

use envelope_core::{Reply, ToolContext, ToolError, ToolResult, Verdict, tool};
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::paths::resolve;
use crate::tools::graph::export_graph;
use crate::workspace::Workspace;

/// The arguments of `change_impact`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub struct ChangeImpactArgs {
    /// The file about to change, relative to the workspace root.
    path: String,
}

/// What `change_impact` answers: who imports the file, directly and in all.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Impact {
    /// The file about to change.
    path: String,
    /// Files that import it directly, sorted.
    direct: Vec<String>,
    /// Files that reach it through imports, directly or not: its blast radius.
    transitive: usize,
}

/// How many files may reach a change before it needs review, and before it is a blocker.
const REVIEW_AT: usize = 4;
const UNSAFE_AT: usize = 11;

/// Grade the risk of changing one source file from the import graph: `SAFE` when nothing
/// imports it, `CAUTION` for a few dependents, `REVIEW` for more, `UNSAFE` when a large part of
/// the workspace reaches it. `data.direct` lists the direct importers.
#[tool(
    tier = standard,
    read_only,
    open_world = false,
    title = "Change impact",
    module = "graph",
    scopes = ["workspace:read"],
    blocking
)]
pub fn change_impact(ctx: &ToolContext, args: ChangeImpactArgs) -> ToolResult<Reply<Impact>> {
    let workspace = ctx.state::<Workspace>()?;
    let rel = resolve(workspace.root(), &args.path)?;
    let graph = export_graph(workspace, ctx, None)?.into_envelope();
    let Some(graph) = graph.data() else {
        return Err(ToolError::internal(
            "the import graph came back without data",
        ));
    };
    if !graph.nodes.iter().any(|node| node.id == rel) {
        return Err(ToolError::not_found(format!(
            "`{rel}` is not a Rust, Python, JavaScript or TypeScript file of the workspace"
        ))
        .with_code("not_a_source_file")
        .with_data(json!({ "field": "path" })));
    }
    // Importers of each file, then everyone who reaches `rel` through them.
    let mut importers: HashMap<&str, Vec<&str>> = HashMap::new();
    for edge in &graph.edges {
        importers
            .entry(edge.target.as_str())
            .or_default()
            .push(edge.source.as_str());
    }
    let mut direct: Vec<String> = importers
        .get(rel.as_str())
        .map(|sources| sources.iter().map(|source| (*source).to_owned()).collect())
        .unwrap_or_default();
    direct.sort();
    direct.dedup();
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut pending = vec![rel.as_str()];
    while let Some(file) = pending.pop() {
        for importer in importers.get(file).into_iter().flatten() {
            if *importer != rel && reached.insert(importer) {
                pending.push(importer);
            }
        }
    }
    let transitive = reached.len();
    let verdict = match transitive {
        0 => Verdict::Safe,
        n if n < REVIEW_AT => Verdict::Caution,
        n if n < UNSAFE_AT => Verdict::Review,
        _ => Verdict::Unsafe,
    };
    let summary = format!(
        "`{rel}`: {} direct and {transitive} transitive importers",
        direct.len()
    );
    let step = match verdict {
        Verdict::Safe => "nothing imports it; change it and run its own tests".to_owned(),
        Verdict::Caution => "read the direct importers before changing its interface".to_owned(),
        _ => format!(
            "{transitive} files reach it: inspect the importers in `data.direct` before acting"
        ),
    };
    Ok(Reply::new(Impact {
        path: rel,
        direct,
        transitive,
    })
    .verdict(verdict)
    .summary_line(summary)
    .next_step(step))
}

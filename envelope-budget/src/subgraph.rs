//! Coherent subgraph trimming: a `{nodes, edges}` payload keeps its top-K nodes by
//! degree and only the edges between kept nodes, with K the largest that fits, found by binary
//! search over prefix sums. Nodes and edges are measured only as far as they could be kept.

use std::borrow::Cow;
use std::collections::HashMap;

use envelope_core::meta_keys as keys;

use serde_json::{Value, json};

use crate::cut::{Leftovers, ListCut, largest};
use crate::size::{Scratch, member_key_counts, value_counts, value_counts_until};
use crate::tokens::{Counts, Estimator};

/// What the subgraph trimmer needs of a job.
pub(crate) struct SubgraphJob {
    pub(crate) fixed: Counts,
    pub(crate) budget: u64,
    pub(crate) estimator: Estimator,
}

/// A node or endpoint id: a string, or a number compared by its JSON text.
fn id_of(value: Option<&Value>) -> Option<Cow<'_, str>> {
    match value? {
        Value::String(id) => Some(Cow::Borrowed(id.as_str())),
        other @ Value::Number(_) => Some(Cow::Owned(other.to_string())),
        _ => None,
    }
}

fn endpoints(edge: &Value) -> Option<(Cow<'_, str>, Cow<'_, str>)> {
    let source = id_of(edge.get("source").or_else(|| edge.get("from")))?;
    let target = id_of(edge.get("target").or_else(|| edge.get("to")))?;
    Some((source, target))
}

/// Whether `data` is a graph payload: an object with `nodes` and `edges` arrays.
pub(crate) fn is_graph(data: &Value) -> bool {
    data.get("nodes").is_some_and(Value::is_array) && data.get("edges").is_some_and(Value::is_array)
}

/// What a subgraph trim did.
#[derive(Debug)]
pub(crate) struct SubgraphCut {
    /// The `truncated_subgraph`, `truncated_nodes_*` and `truncated_edges_*` markers.
    pub(crate) markers: Vec<(String, Value)>,
    /// The node and edge lists cut.
    pub(crate) list_cuts: Vec<ListCut>,
    /// The counts of the payload as cut, when known without counting it again.
    pub(crate) kept: Option<Counts>,
}

/// Prefix sums over items in a given order, measured until hopeless.
fn bounded_prefix(
    items: &[Value],
    order: &[usize],
    job: &SubgraphJob,
    base: Counts,
) -> Vec<Counts> {
    let hopeless =
        |c: &Counts| job.estimator.normalized_size(&(job.fixed + base + *c)) > job.budget;
    let mut prefix = vec![Counts::default()];
    let mut running = Counts::default();
    let mut stack = Scratch::default();
    for (position, &index) in order.iter().enumerate() {
        let start = running;
        let Some(item) = value_counts_until(&items[index], &mut stack, |c| hopeless(&(start + *c)))
        else {
            break;
        };
        running += item;
        if position > 0 {
            running.punct += 1;
        }
        if hopeless(&running) {
            break;
        }
        prefix.push(running);
    }
    prefix
}

/// Trims a graph payload in place to fit. `None` when it is not a graph.
pub(crate) fn trim_subgraph(
    data: &mut Value,
    leftovers: &mut Leftovers,
    job: &SubgraphJob,
) -> Option<SubgraphCut> {
    if !is_graph(data) {
        return None;
    }
    let (k, kept_edges, markers, keep_nodes, keep_edges, node_total, edge_total, kept) =
        plan(data, job)?;
    let map = data.as_object_mut()?;
    leftovers.reserve((node_total - k) + (edge_total - kept_edges));
    for (key, keep) in [("nodes", keep_nodes), ("edges", keep_edges)] {
        let Some(Value::Array(items)) = map.get_mut(key) else {
            continue;
        };
        let all = std::mem::take(items);
        items.reserve(keep.iter().filter(|k| **k).count());
        for (item, keep) in all.into_iter().zip(keep) {
            if keep {
                items.push(item);
            } else {
                leftovers.push(item);
            }
        }
    }
    Some(SubgraphCut {
        markers,
        kept,
        list_cuts: vec![
            ListCut {
                key: "nodes".to_owned(),
                from: node_total,
                to: k,
            },
            ListCut {
                key: "edges".to_owned(),
                from: edge_total,
                to: kept_edges,
            },
        ],
    })
}

/// K, the edges kept, the markers, which nodes and edges stay, the original lengths, and the
/// counts of the payload as cut.
type Plan = (
    usize,
    usize,
    Vec<(String, Value)>,
    Vec<bool>,
    Vec<bool>,
    usize,
    usize,
    Option<Counts>,
);

/// Decides the cut without touching the payload.
fn plan(data: &Value, job: &SubgraphJob) -> Option<Plan> {
    let map = data.as_object()?;
    let nodes = map.get("nodes")?.as_array()?;
    let edges = map.get("edges")?.as_array()?;
    let (node_total, edge_total) = (nodes.len(), edges.len());

    // Everything but the two lists: braces, keys, commas, other fields.
    let mut base = Counts {
        punct: 2 + map.len().saturating_sub(1) as u64 + 4,
        ..Counts::default()
    };
    for (key, value) in map {
        base += member_key_counts(key, false);
        if key != "nodes" && key != "edges" {
            base += value_counts(value);
        }
    }

    // Node index by id (the first node wins a duplicated id); degree per node; then rank
    // nodes by degree, highest first, ties by original position.
    // foldhash, seeded per map: several times faster than the standard SipHash on short ids,
    // and still not a hash a workspace could pick colliding ids for in advance.
    let mut index_of: HashMap<Cow<'_, str>, u32, foldhash::fast::RandomState> =
        HashMap::with_capacity_and_hasher(node_total, Default::default());
    for (index, node) in nodes.iter().enumerate() {
        if let Some(id) = id_of(node.get("id")) {
            index_of.entry(id).or_insert(index as u32);
        }
    }
    let ends: Vec<Option<(u32, u32)>> = edges
        .iter()
        .map(|edge| {
            let (source, target) = endpoints(edge)?;
            Some((*index_of.get(&source)?, *index_of.get(&target)?))
        })
        .collect();
    drop(index_of);
    let mut degree = vec![0_u32; node_total];
    for (source, target) in ends.iter().flatten() {
        degree[*source as usize] += 1;
        degree[*target as usize] += 1;
    }
    let mut order: Vec<usize> = (0..node_total).collect();
    // Ties break by position, so the unstable sort is deterministic.
    order.sort_unstable_by(|&a, &b| degree[b].cmp(&degree[a]).then(a.cmp(&b)));
    let mut rank = vec![0_usize; node_total];
    for (position, &index) in order.iter().enumerate() {
        rank[index] = position;
    }
    // An edge survives a cut to K nodes iff both endpoints rank below K: it needs K ≥ the larger
    // rank plus one. An edge naming an unknown node needs every node and one more.
    let need: Vec<usize> = ends
        .iter()
        .map(|ends| match ends {
            Some((source, target)) => rank[*source as usize].max(rank[*target as usize]) + 1,
            None => node_total + 1,
        })
        .collect();
    let mut edges_by_need: Vec<usize> = (0..edge_total).collect();
    edges_by_need.sort_unstable_by_key(|&index| (need[index], index));

    let nodes_prefix = bounded_prefix(nodes, &order, job, base);
    let edges_prefix = bounded_prefix(edges, &edges_by_need, job, base);
    let edges_kept = |k: usize| edges_by_need.partition_point(|&index| need[index] <= k);
    let markers_for = |k: usize| -> Vec<(String, Value)> {
        vec![
            (keys::TRUNCATED_SUBGRAPH.to_owned(), json!(true)),
            (keys::list_cut_from("nodes"), json!(node_total)),
            (keys::list_cut_to("nodes"), json!(k)),
            (keys::list_cut_from("edges"), json!(edge_total)),
            (keys::list_cut_to("edges"), json!(edges_kept(k))),
        ]
    };
    let marker_counts = |markers: &[(String, Value)]| {
        markers.iter().fold(Counts::default(), |acc, (key, value)| {
            acc + member_key_counts(key, true) + value_counts(value)
        })
    };
    let ok = |k: usize| {
        let (Some(kept_nodes), Some(kept_edges)) =
            (nodes_prefix.get(k), edges_prefix.get(edges_kept(k)))
        else {
            return false;
        };
        let total = job.fixed + base + *kept_nodes + *kept_edges + marker_counts(&markers_for(k));
        job.estimator.normalized_size(&total) <= job.budget
    };
    // Largest K that fits; zero nodes when nothing does.
    let k = largest(0, node_total.min(nodes_prefix.len() - 1), ok).unwrap_or(0);
    let kept_edges = edges_kept(k);
    let markers = markers_for(k);
    let keep_nodes: Vec<bool> = rank.iter().map(|&r| r < k).collect();
    let keep_edges: Vec<bool> = need.iter().map(|&n| n <= k).collect();
    // Both prefixes reach K and its edges whenever K fit; `None` only when nothing did.
    let kept = match (nodes_prefix.get(k), edges_prefix.get(kept_edges)) {
        (Some(nodes), Some(edges)) => Some(base + *nodes + *edges),
        _ => None,
    };
    Some((
        k, kept_edges, markers, keep_nodes, keep_edges, node_total, edge_total, kept,
    ))
}

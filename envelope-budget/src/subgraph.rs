//! Coherent subgraph trimming (DESIGN §9): a `{nodes, edges}` payload keeps its top-K nodes by
//! degree and only the edges between kept nodes, with K the largest that fits, found by binary
//! search over prefix sums.

use std::collections::HashMap;

use serde_json::{Value, json};

use crate::size::{sub, value_counts};
use crate::tokens::{Counts, Estimator};
use crate::trim::{Leftovers, ListCut};

/// The id of a node: its `id` field (string or number), compared by its JSON text.
fn node_id(node: &Value) -> Option<String> {
    match node.get("id")? {
        Value::String(id) => Some(id.clone()),
        other @ Value::Number(_) => Some(other.to_string()),
        _ => None,
    }
}

/// The endpoints of an edge: `source`/`target`, or `from`/`to`.
fn endpoints(edge: &Value) -> Option<(String, String)> {
    let end = |a: &str, b: &str| -> Option<String> {
        match edge.get(a).or_else(|| edge.get(b))? {
            Value::String(id) => Some(id.clone()),
            other @ Value::Number(_) => Some(other.to_string()),
            _ => None,
        }
    };
    Some((end("source", "from")?, end("target", "to")?))
}

/// Whether `data` is a graph payload: an object with `nodes` and `edges` arrays.
pub fn is_graph(data: &Value) -> bool {
    data.get("nodes").is_some_and(Value::is_array) && data.get("edges").is_some_and(Value::is_array)
}

/// What a subgraph trim did.
#[derive(Debug)]
pub(crate) struct SubgraphCut {
    /// The `truncated_subgraph`, `truncated_nodes_*` and `truncated_edges_*` markers.
    pub(crate) markers: Vec<(String, Value)>,
    /// The node and edge lists cut.
    pub(crate) list_cuts: Vec<ListCut>,
    /// The counts removed from the payload.
    pub(crate) removed: Counts,
}

/// Trims a graph payload in place so that `fixed + data` fits `budget`; `data_counts` are the
/// counts of `data` as it is. `None` when it already fits or is not a graph.
pub(crate) fn trim_subgraph(
    data: &mut Value,
    data_counts: Counts,
    fixed: Counts,
    budget: u64,
    estimator: Estimator,
    leftovers: &mut Leftovers,
) -> Option<SubgraphCut> {
    let fits = |counts: Counts| estimator.normalized_size(&(fixed + counts)) <= budget;
    if fits(data_counts) || !is_graph(data) {
        return None;
    }
    let map = data.as_object_mut()?;
    let nodes = map.get("nodes")?.as_array()?;
    let edges = map.get("edges")?.as_array()?;

    // Degree per node id; rank nodes by degree (highest first), ties by original position.
    let ids: Vec<Option<String>> = nodes.iter().map(node_id).collect();
    let mut degree: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    let edge_ends: Vec<Option<(String, String)>> = edges.iter().map(endpoints).collect();
    for (source, target) in edge_ends.iter().flatten() {
        *degree.entry(source.as_str()).or_default() += 1;
        *degree.entry(target.as_str()).or_default() += 1;
    }
    let mut order: Vec<usize> = (0..nodes.len()).collect();
    let degree_of = |index: usize| {
        ids[index]
            .as_deref()
            .and_then(|id| degree.get(id))
            .copied()
            .unwrap_or(0)
    };
    order.sort_by(|&a, &b| degree_of(b).cmp(&degree_of(a)).then(a.cmp(&b)));
    let mut rank = vec![0_usize; nodes.len()];
    let mut rank_of_id: HashMap<&str, usize> = HashMap::with_capacity(nodes.len());
    for (position, &index) in order.iter().enumerate() {
        rank[index] = position;
        if let Some(id) = ids[index].as_deref() {
            rank_of_id.entry(id).or_insert(position);
        }
    }
    // An edge survives a cut to K nodes iff both endpoints rank below K: its "need" is the
    // larger rank plus one. Edges naming unknown nodes need every node.
    let need: Vec<usize> = edge_ends
        .iter()
        .map(|ends| match ends {
            Some((source, target)) => match (
                rank_of_id.get(source.as_str()),
                rank_of_id.get(target.as_str()),
            ) {
                (Some(a), Some(b)) => a.max(b) + 1,
                _ => usize::MAX,
            },
            None => usize::MAX,
        })
        .collect();

    // Prefix sums: nodes by rank, edges by need.
    let node_counts: Vec<Counts> = nodes.iter().map(value_counts).collect();
    let edge_counts: Vec<Counts> = edges.iter().map(value_counts).collect();
    let mut nodes_prefix = vec![Counts::default(); nodes.len() + 1];
    for (position, &index) in order.iter().enumerate() {
        nodes_prefix[position + 1] = nodes_prefix[position] + node_counts[index];
    }
    let mut edges_by_need: Vec<usize> = (0..edges.len()).collect();
    edges_by_need.sort_by_key(|&index| need[index]);
    let mut edges_prefix = vec![Counts::default(); edges.len() + 1];
    for (position, &index) in edges_by_need.iter().enumerate() {
        edges_prefix[position + 1] = edges_prefix[position] + edge_counts[index];
    }
    let commas = |n: usize| Counts {
        punct: n.saturating_sub(1) as u64,
        ..Counts::default()
    };
    let (node_total, edge_total) = (nodes.len(), edges.len());
    let all_nodes = nodes_prefix[node_total] + commas(node_total);
    let all_edges = edges_prefix[edge_total] + commas(edge_total);
    let edges_kept = |k: usize| edges_by_need.partition_point(|&index| need[index] <= k);
    let markers_for = |k: usize| -> Vec<(String, Value)> {
        vec![
            ("truncated_subgraph".to_owned(), json!(true)),
            ("truncated_nodes_from".to_owned(), json!(node_total)),
            ("truncated_nodes_to".to_owned(), json!(k)),
            ("truncated_edges_from".to_owned(), json!(edge_total)),
            ("truncated_edges_to".to_owned(), json!(edges_kept(k))),
        ]
    };
    let marker_counts = |markers: &[(String, Value)]| {
        markers.iter().fold(Counts::default(), |acc, (key, value)| {
            acc + crate::size::member_key_counts(key, true) + value_counts(value)
        })
    };
    let removed_at = |k: usize| {
        let e = edges_kept(k);
        let kept = nodes_prefix[k] + commas(k) + edges_prefix[e] + commas(e);
        sub(all_nodes + all_edges, kept)
    };
    let ok = |k: usize| fits(sub(data_counts, removed_at(k)) + marker_counts(&markers_for(k)));
    // Largest K that fits; zero nodes when nothing does.
    let (mut good, mut bad) = (0_usize, node_total + 1);
    if ok(0) {
        while bad - good > 1 {
            let mid = good + (bad - good) / 2;
            if ok(mid) {
                good = mid;
            } else {
                bad = mid;
            }
        }
    }
    let k = good;
    let kept_edges = edges_kept(k);
    let removed = removed_at(k);
    let markers = markers_for(k);

    // Keep nodes ranked below K and edges needing at most K, in their original order.
    let keep_nodes: Vec<bool> = rank.iter().map(|&r| r < k).collect();
    let keep_edges: Vec<bool> = need.iter().map(|&n| n <= k).collect();
    drop(rank_of_id);
    drop(degree);
    for (key, keep, kept) in [("nodes", keep_nodes, k), ("edges", keep_edges, kept_edges)] {
        let Some(Value::Array(items)) = map.get_mut(key) else {
            continue;
        };
        let all = std::mem::take(items);
        for (item, keep) in all.into_iter().zip(keep) {
            if keep {
                items.push(item);
            } else {
                leftovers.push(item);
            }
        }
        debug_assert_eq!(items.len(), kept);
    }
    Some(SubgraphCut {
        markers,
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
        removed,
    })
}

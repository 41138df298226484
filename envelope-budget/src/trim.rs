//! The trimming ladder: cut a payload until the whole response fits its budget,
//! and name every cut.
//!
//! Sizes come from the sized view ([`crate::size`]): every candidate row is counted once, and
//! each rung finds its cut by arithmetic over prefix sums, so nothing is re-serialized per probe.
//! Cut rows are moved into [`Leftovers`], not freed, so the caller decides when to pay for
//! freeing them (after sending, or on another thread).

use envelope_core::meta_keys as keys;
use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::cut::{Leftovers, ListCut, ROOT_LIST_KEY, TRUNCATION_SUFFIX, largest};
use crate::encode::MeasuredLists;
use crate::size::{
    Scratch, member_key_counts, string_counts, sub, value_counts, value_counts_until,
};
use crate::subgraph::{SubgraphJob, is_graph};
use crate::tokens::{Counts, Estimator};

mod depth;
mod model;
mod nested;
mod strings;

pub(crate) use crate::nesting::nested_deeper_than;
use depth::cut_too_deep;
use model::*;
use nested::{Nesting, nested_lists};
use strings::long_strings;

/// The agent-context budget, in characters (token-normalized).
pub const AGENT_BUDGET_CHARS: usize = 32_000;
/// The ceiling for `{nodes, edges}` payloads: an out-of-memory safety net, not a context budget.
pub const GRAPH_SUBGRAPH_BUDGET_CHARS: usize = 5_000_000;
/// Strings shorter than this are never cut: cutting them recovers little and destroys signal.
/// Core's constant, since the output schemas it writes keep the constraints of such strings.
pub const LONG_STRING_CHARS: usize = envelope_core::schema::LONG_STRING_CHARS;
/// Nested member lists and buckets are never cut below this many items by their rungs.
pub const NESTED_FLOOR: usize = 3;
/// Containers nested deeper than this inside the payload are cut, within budget or not. Most
/// JSON parsers (serde_json's included) refuse more than 128 levels, and the payload sits a few
/// levels down in the envelope and the JSON-RPC message; 64 leaves room and keeps every later
/// serializer's recursion shallow. Core's constant: its bounded conversion stops just below.
pub const MAX_DEPTH: usize = envelope_core::limits::MAX_PAYLOAD_DEPTH;
/// The default [`BudgetPolicy::list_order`](crate::BudgetPolicy): top-level list keys cut
/// first, one at a time in this order, each to its longest prefix that fits. The lists of code
/// intelligence tools. Other arrays then keep a common fraction of their rows (the balanced
/// pass), and what is still over is cut largest first.
pub const TRIMMABLE_LIST_KEYS: &[&str] = &[
    "results",
    "neighbours",
    "references",
    "edges",
    "nodes",
    "processes",
    "call_sites",
    "import_sites",
    "doc_references",
    "test_references",
    "string_literals",
    "external_targets",
    "branches",
    "steps",
    "http_routes",
    "mcp_tools",
    "grpc_endpoints",
    "event_handlers",
    "websocket",
    "nodes_top",
    "samples",
    "rows",
    "entries",
    "cycles",
    "untested",
    "dead",
];

/// What trimming did.
#[derive(Debug)]
pub struct Trimmed {
    /// The payload as it will be sent.
    pub data: Value,
    /// The `truncated_*` markers for `meta`.
    pub markers: BTreeMap<String, Value>,
    /// Whether anything was cut.
    pub cut_any: bool,
    /// Still over budget after every rung.
    pub unshrinkable: bool,
    /// The top-level lists cut, to reconcile `completeness`.
    pub list_cuts: Vec<ListCut>,
    /// The counts of `data`'s serialization.
    pub data_counts: Counts,
    /// The cut parts, not yet freed.
    pub leftovers: Leftovers,
}

/// The running size of one trimming job.
struct Job {
    estimator: Estimator,
    /// Which top-level lists the last rung cuts first, in order.
    list_order: &'static [&'static str],
    budget: u64,
    /// Everything in the response except `data` and this job's markers.
    fixed: Counts,
    /// The counts of `data`, once it is small enough to have been counted whole.
    data: Counts,
    markers: BTreeMap<String, Value>,
    marker_counts: Counts,
    leftovers: Leftovers,
    list_cuts: Vec<ListCut>,
}

fn marker_counts(key: &str, value: &Value) -> Counts {
    member_key_counts(key, true) + value_counts(value)
}

impl Job {
    fn size_with(&self, data: Counts, extra_markers: Counts) -> u64 {
        self.estimator
            .normalized_size(&(self.fixed + data + self.marker_counts + extra_markers))
    }

    fn over(&self) -> bool {
        self.size_with(self.data, Counts::default()) > self.budget
    }

    fn fits(&self, data: Counts, extra_markers: Counts) -> bool {
        self.size_with(data, extra_markers) <= self.budget
    }

    /// Whether `counts` alone, with the fixed part, is already past the budget: nothing that
    /// contains them can be kept, so sizing can stop there.
    fn hopeless(&self, counts: &Counts) -> bool {
        self.estimator.normalized_size(&(self.fixed + *counts)) > self.budget
    }

    fn set_marker(&mut self, key: String, value: Value) {
        if let Some(old) = self.markers.get(&key) {
            self.marker_counts = sub(self.marker_counts, marker_counts(&key, old));
        }
        self.marker_counts += marker_counts(&key, &value);
        self.markers.insert(key, value);
    }

    fn record_cut(&mut self, key: &str, from: usize, to: usize) {
        for (marker, value) in list_markers(key, from, to) {
            self.set_marker(marker, value);
        }
        match self.list_cuts.iter_mut().find(|cut| cut.key == key) {
            Some(cut) => cut.to = to,
            None => self.list_cuts.push(ListCut {
                key: key.to_owned(),
                from,
                to,
            }),
        }
    }
}

/// Cuts only what no budget excuses: nesting deeper than [`MAX_DEPTH`]. For callers that opted
/// out of trimming, whose payload must still serialize without deep recursion.
pub fn cut_depth(mut data: Value) -> Trimmed {
    let mut job = Job {
        estimator: Estimator::default(),
        // Nothing is cut by rank here.
        list_order: &[],
        budget: u64::MAX,
        fixed: Counts::default(),
        data: Counts::default(),
        markers: BTreeMap::new(),
        marker_counts: Counts::default(),
        leftovers: Leftovers::default(),
        list_cuts: Vec::new(),
    };
    cut_too_deep(&mut data, &mut job);
    job.data = value_counts(&data);
    Trimmed {
        data,
        cut_any: !job.markers.is_empty(),
        markers: job.markers,
        unshrinkable: false,
        list_cuts: Vec::new(),
        data_counts: job.data,
        leftovers: job.leftovers,
    }
}

/// Trims `data` so that `fixed + data + markers` fits `budget` (token-normalized chars).
///
/// `fixed` is the counts of everything else the response will carry, reserved stamps included.
///
/// `precut` names top-level lists that a budget-aware encoder already cut short, with their
/// full lengths; their markers and `completeness` report the full numbers.
pub fn trim(
    data: Value,
    fixed: Counts,
    budget: usize,
    estimator: Estimator,
    precut: &[(String, usize)],
) -> Trimmed {
    trim_measured(
        data,
        fixed,
        budget,
        estimator,
        TRIMMABLE_LIST_KEYS,
        precut,
        None,
    )
}

/// [`trim`], reusing the row sizes the budget-aware encoder took while encoding `data`.
pub(crate) fn trim_measured(
    mut data: Value,
    fixed: Counts,
    budget: usize,
    estimator: Estimator,
    list_order: &'static [&'static str],
    precut: &[(String, usize)],
    measured: Option<&MeasuredLists>,
) -> Trimmed {
    // The encoder wrote the payload whole and it fits: nothing to measure or cut.
    if let Some(whole) = measured.and_then(MeasuredLists::whole)
        && precut.is_empty()
        && estimator.normalized_size(&(fixed + whole.counts)) <= budget as u64
        && !nested_deeper_than(&data, MAX_DEPTH)
    {
        return Trimmed {
            data,
            markers: BTreeMap::new(),
            cut_any: false,
            unshrinkable: false,
            list_cuts: Vec::new(),
            data_counts: whole.counts,
            leftovers: Leftovers::default(),
        };
    }
    let mut job = Job {
        estimator,
        list_order,
        budget: budget as u64,
        fixed,
        data: Counts::default(),
        markers: BTreeMap::new(),
        marker_counts: Counts::default(),
        leftovers: Leftovers::default(),
        list_cuts: Vec::new(),
    };
    // Graphs are sized whole first: they take the subgraph path only when over budget.
    let graph_over = is_graph(&data) && {
        let mut stack = Scratch::default();
        value_counts_until(&data, &mut stack, |c| job.hopeless(c)).is_none()
    };
    match graph_over {
        true => {
            let kept = crate::subgraph::trim_subgraph(
                &mut data,
                &mut job.leftovers,
                &SubgraphJob {
                    fixed: job.fixed,
                    budget: job.budget,
                    estimator,
                },
            )
            .map(|cut| {
                for (key, value) in cut.markers {
                    job.set_marker(key, value);
                }
                job.list_cuts.extend(cut.list_cuts);
                cut.kept
            });
            job.data = kept.flatten().unwrap_or_else(|| value_counts(&data));
        }
        false => job.data = ladder(&mut data, &mut job, precut, measured),
    }
    if job.over() {
        long_strings(&mut data, &mut job);
    }
    if cut_too_deep(&mut data, &mut job) {
        job.data = value_counts(&data);
        if job.over() {
            long_strings(&mut data, &mut job);
        }
    }
    let unshrinkable = job.over();
    Trimmed {
        data,
        cut_any: !job.markers.is_empty(),
        markers: job.markers,
        unshrinkable,
        list_cuts: job.list_cuts,
        data_counts: job.data,
        leftovers: job.leftovers,
    }
}

/// Rungs 1–5 over the sized view; the payload is cut once, at the end. Returns the counts of
/// the payload as cut.
fn ladder(
    data: &mut Value,
    job: &mut Job,
    precut: &[(String, usize)],
    measured: Option<&MeasuredLists>,
) -> Counts {
    let mut model = Model::build(data, job, precut, measured);
    let keeps = model.keeps();
    if let Some(total) = model.total(&keeps, &model.caps())
        && job.fits(total, model.cut_markers(&keeps))
    {
        // Within budget: nothing more to cut. Lists the encoder cut short still get markers.
        apply(data, job, &model);
        return total;
    }
    if model.over {
        // A part too large to measure: only strings can shrink it, and they come last. The
        // list rungs still run, so lists are cut before strings, as the ladder orders.
        for slot in &mut model.lists {
            slot.keep = 0;
        }
        for slot in &mut model.buckets {
            slot.cap = 0;
        }
        apply(data, job, &model);
        return value_counts(data);
    }
    let fits = |model: &Model, keeps: &[usize], caps: &[usize], job: &Job| {
        model
            .total(keeps, caps)
            .is_some_and(|total| job.fits(total, model.cut_markers(keeps)))
    };
    if !fits(&model, &model.keeps(), &model.caps(), job) {
        nested_lists(data, job, &mut model, Nesting::Members);
    }
    if !fits(&model, &model.keeps(), &model.caps(), job) {
        nested_lists(data, job, &mut model, Nesting::Buckets);
    }

    let caps = model.caps();
    // The position of `key` in the policy's order; lists it does not name rank after all.
    let rank = |key: &str| {
        job.list_order
            .iter()
            .position(|known| *known == key)
            .unwrap_or(job.list_order.len())
    };
    let named = |slot: &ListSlot| rank(&slot.key) < job.list_order.len();
    // Each list in turn keeps the longest prefix with which the response fits.
    let cut_in_turn = |model: &mut Model, order: &[usize]| {
        for &index in order {
            let keeps = model.keeps();
            if fits(model, &keeps, &caps, job) {
                break;
            }
            let current = model.lists[index].keep;
            let keep = largest(0, current, |keep| {
                let mut trial = keeps.clone();
                trial[index] = keep;
                fits(model, &trial, &caps, job)
            })
            .unwrap_or(0);
            model.lists[index].keep = keep;
        }
    };

    // Rung 3: the lists the policy names, one at a time in its order.
    let mut order: Vec<usize> = (0..model.lists.len())
        .filter(|&i| named(&model.lists[i]))
        .collect();
    order.sort_by_key(|&i| rank(&model.lists[i].key));
    cut_in_turn(&mut model, &order);

    // Rung 4: the other lists keep the same fraction of their rows.
    let live: Vec<usize> = (0..model.lists.len())
        .filter(|&i| model.lists[i].keep > 0 && !named(&model.lists[i]))
        .collect();
    if live.len() >= 2 && !fits(&model, &model.keeps(), &caps, job) {
        const STEPS: usize = 10_000;
        let keeps_at = |step: usize| -> Vec<usize> {
            model
                .lists
                .iter()
                .enumerate()
                .map(|(i, slot)| match live.contains(&i) {
                    true => (slot.keep * step).div_ceil(STEPS).min(slot.keep),
                    false => slot.keep,
                })
                .collect()
        };
        if let Some(step) = largest(0, STEPS, |step| fits(&model, &keeps_at(step), &caps, job)) {
            let keeps = keeps_at(step);
            for (slot, keep) in model.lists.iter_mut().zip(keeps) {
                slot.keep = keep;
            }
        }
    }

    // Rung 5: whatever is still over, largest list first.
    let mut order: Vec<usize> = (0..model.lists.len()).collect();
    order.sort_by(|&a, &b| model.lists[b].original.cmp(&model.lists[a].original));
    cut_in_turn(&mut model, &order);

    // Rung 6: buckets of each dict-of-lists capped to one uniform length.
    for index in 0..model.buckets.len() {
        let keeps = model.keeps();
        let caps = model.caps();
        let bucket_marker = |model: &Model, cap: usize| {
            let slot = &model.buckets[index];
            marker_counts(&keys::buckets(&slot.key), &bucket_summary(slot, cap))
        };
        if fits(&model, &keeps, &caps, job) {
            break;
        }
        let longest = model.buckets[index].cap;
        let cap = largest(0, longest, |cap| {
            let mut trial = caps.clone();
            trial[index] = cap;
            model.total(&keeps, &trial).is_some_and(|total| {
                job.fits(
                    total,
                    model.cut_markers(&keeps) + bucket_marker(&model, cap),
                )
            })
        })
        .unwrap_or(0);
        model.buckets[index].cap = cap;
    }
    apply(data, job, &model);
    // Every kept row was measured, unless nothing fits at all; then count what is left.
    model
        .total(&model.keeps(), &model.caps())
        .unwrap_or_else(|| value_counts(data))
}

fn bucket_summary(slot: &BucketSlot, cap: usize) -> Value {
    let mut out = Map::new();
    for (bucket, len, _) in &slot.buckets {
        if *len > cap {
            out.insert(bucket.clone(), json!({ "from": len, "to": cap }));
        }
    }
    Value::Object(out)
}

/// Cuts the payload to the model's keeps and caps, moving cut rows to the leftovers.
fn apply(data: &mut Value, job: &mut Job, model: &Model) {
    for slot in &model.lists {
        if slot.keep >= slot.original {
            continue;
        }
        if let Some(items) = list_mut(data, &slot.key)
            && items.len() > slot.keep
        {
            let tail = items.split_off(slot.keep);
            job.leftovers.extend(tail);
        }
        job.record_cut(&slot.key, slot.original, slot.keep);
    }
    for slot in &model.buckets {
        if slot.cap >= slot.longest() {
            continue;
        }
        if let Value::Object(map) = data
            && let Some(Value::Object(buckets)) = map.get_mut(&slot.key)
        {
            for items in buckets.values_mut().filter_map(Value::as_array_mut) {
                if items.len() > slot.cap {
                    let tail = items.split_off(slot.cap);
                    job.leftovers.extend(tail);
                }
            }
        }
        let marker = bucket_summary(slot, slot.cap);
        job.set_marker(keys::buckets(&slot.key), marker);
    }
}

//! The trimming ladder (DESIGN §9): cut a payload until the whole response fits its budget,
//! and name every cut.
//!
//! Sizes come from the sized view ([`crate::size`]): every candidate row is counted once, and
//! each rung finds its cut by arithmetic over prefix sums, so nothing is re-serialized per probe.
//! Cut rows are moved into [`Leftovers`], not freed, so the caller decides when to pay for
//! freeing them (after sending, or on another thread).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

use crate::size::{member_key_counts, string_counts, sub, value_counts};
use crate::tokens::{Counts, Estimator};

/// The agent-context budget, in characters (token-normalized).
pub const AGENT_BUDGET_CHARS: usize = 32_000;
/// The ceiling for `{nodes, edges}` payloads: an out-of-memory safety net, not a context budget.
pub const GRAPH_SUBGRAPH_BUDGET_CHARS: usize = 5_000_000;
/// Strings shorter than this are never cut: cutting them recovers little and destroys signal.
pub const LONG_STRING_CHARS: usize = 200;
/// Nested member lists and buckets are never cut below this many items by their rungs.
pub const NESTED_FLOOR: usize = 3;
/// Containers nested deeper than this inside the payload are cut, within budget or not. Most
/// JSON parsers (serde_json's included) refuse more than 128 levels, and the payload sits a few
/// levels down in the envelope and the JSON-RPC message; 64 leaves room and keeps every later
/// serializer's recursion shallow.
pub const MAX_DEPTH: usize = 64;
/// What a cut string ends with.
pub const TRUNCATION_SUFFIX: &str = "…[truncated]";
/// Top-level list keys cut first, in this order, by the per-key rung. Other arrays follow,
/// largest first (the generic rung).
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
/// The list key used in markers when the payload itself is an array.
pub const ROOT_LIST_KEY: &str = "data";

/// Cut parts of a payload, kept alive until the caller drops them. Dropping dismantles them
/// iteratively, so a deeply nested cut cannot overflow the stack.
#[derive(Debug, Default)]
pub struct Leftovers(Vec<Value>);

impl Leftovers {
    pub(crate) fn push(&mut self, value: Value) {
        self.0.push(value);
    }

    fn extend(&mut self, values: impl IntoIterator<Item = Value>) {
        self.0.extend(values);
    }

    /// Takes over another bag's parts.
    pub fn absorb(&mut self, mut other: Leftovers) {
        self.0.append(&mut other.0);
    }

    /// How many cut parts are held.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nothing was cut.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

impl Drop for Leftovers {
    fn drop(&mut self) {
        // A deep value's own drop recurses once per level.
        crate::deep::drop_deep(Value::Array(std::mem::take(&mut self.0)));
    }
}

/// One top-level list cut by the ladder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListCut {
    /// The key (or [`ROOT_LIST_KEY`]).
    pub key: String,
    /// Rows before.
    pub from: usize,
    /// Rows kept.
    pub to: usize,
}

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
    budget: u64,
    /// Everything in the response except `data` and this job's markers.
    fixed: Counts,
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

    fn set_marker(&mut self, key: String, value: Value) {
        if let Some(old) = self.markers.get(&key) {
            self.marker_counts = sub(self.marker_counts, marker_counts(&key, old));
        }
        self.marker_counts += marker_counts(&key, &value);
        self.markers.insert(key, value);
    }
}

/// Counts of rows, with prefix sums: `prefix[k]` is the counts of the first `k` rows plus the
/// commas between them.
struct Rows {
    prefix: Vec<Counts>,
}

impl Rows {
    fn of(items: &[Value]) -> Rows {
        let mut prefix = Vec::with_capacity(items.len() + 1);
        let mut running = Counts::default();
        prefix.push(running);
        for (index, item) in items.iter().enumerate() {
            running += value_counts(item);
            if index > 0 {
                running.punct += 1;
            }
            prefix.push(running);
        }
        Rows { prefix }
    }

    fn len(&self) -> usize {
        self.prefix.len() - 1
    }

    /// Counts removed by keeping only the first `keep` rows: the cut rows and one comma each
    /// (`prefix[k]` holds `k - 1` commas, `prefix[n]` holds `n - 1`).
    fn removed(&self, keep: usize) -> Counts {
        sub(self.prefix[self.len()], self.prefix[keep.min(self.len())])
    }
}

/// Largest `k` in `lo..=hi` with `ok(k)`, for `ok` monotone (true then false as `k` grows).
/// `None` when even `lo` fails.
fn largest(lo: usize, hi: usize, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
    if !ok(lo) {
        return None;
    }
    let (mut good, mut bad) = (lo, hi + 1);
    while bad - good > 1 {
        let mid = good + (bad - good) / 2;
        if ok(mid) {
            good = mid;
        } else {
            bad = mid;
        }
    }
    Some(good)
}

fn list_markers(key: &str, from: usize, to: usize) -> [(String, Value); 2] {
    [
        (format!("truncated_{key}_from"), json!(from)),
        (format!("truncated_{key}_to"), json!(to)),
    ]
}

fn list_marker_counts(key: &str, from: usize, to: usize) -> Counts {
    list_markers(key, from, to)
        .iter()
        .fold(Counts::default(), |acc, (k, v)| acc + marker_counts(k, v))
}

/// The top-level lists of a payload: `(key, items)`; the payload itself when it is an array.
fn top_lists(data: &mut Value) -> Vec<(String, &mut Vec<Value>)> {
    match data {
        Value::Array(items) => vec![(ROOT_LIST_KEY.to_owned(), items)],
        Value::Object(map) => map
            .iter_mut()
            .filter_map(|(key, value)| match value {
                Value::Array(items) => Some((key.clone(), items)),
                _ => None,
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Cuts only what no budget excuses: nesting deeper than [`MAX_DEPTH`]. For callers that opted
/// out of trimming, whose payload must still serialize without deep recursion.
pub fn cut_depth(mut data: Value) -> Trimmed {
    let mut job = Job {
        estimator: Estimator::default(),
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
pub fn trim(mut data: Value, fixed: Counts, budget: usize, estimator: Estimator) -> Trimmed {
    let mut job = Job {
        estimator,
        budget: budget as u64,
        fixed,
        data: Counts::default(),
        markers: BTreeMap::new(),
        marker_counts: Counts::default(),
        leftovers: Leftovers::default(),
        list_cuts: Vec::new(),
    };
    cut_too_deep(&mut data, &mut job);
    job.data = value_counts(&data);

    if job.over()
        && let Some(cut) = crate::subgraph::trim_subgraph(
            &mut data,
            job.data,
            job.fixed + job.marker_counts,
            job.budget,
            job.estimator,
            &mut job.leftovers,
        )
    {
        job.data = sub(job.data, cut.removed);
        for (key, value) in cut.markers {
            job.set_marker(key, value);
        }
        job.list_cuts.extend(cut.list_cuts);
    }

    if job.over() {
        nested_lists(&mut data, &mut job, Nesting::Members);
    }
    if job.over() {
        nested_lists(&mut data, &mut job, Nesting::Buckets);
    }
    if job.over() {
        balanced_lists(&mut data, &mut job);
    }
    if job.over() {
        per_key_lists(&mut data, &mut job);
    }
    if job.over() {
        root_buckets(&mut data, &mut job);
    }
    if job.over() {
        long_strings(&mut data, &mut job);
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

/// Rung 0: containers nested deeper than [`MAX_DEPTH`] become a marker string.
fn cut_too_deep(data: &mut Value, job: &mut Job) {
    let mut cut = 0_u64;
    let mut stack: Vec<(&mut Value, usize)> = vec![(data, 0)];
    while let Some((node, depth)) = stack.pop() {
        let is_container = matches!(node, Value::Array(_) | Value::Object(_));
        if depth >= MAX_DEPTH && is_container {
            let removed = std::mem::replace(
                node,
                Value::String(format!(
                    "{TRUNCATION_SUFFIX} nested deeper than {MAX_DEPTH} levels"
                )),
            );
            job.leftovers.push(removed);
            cut += 1;
            continue;
        }
        match node {
            Value::Array(items) => stack.extend(items.iter_mut().map(|item| (item, depth + 1))),
            Value::Object(map) => stack.extend(map.values_mut().map(|item| (item, depth + 1))),
            _ => {}
        }
    }
    if cut > 0 {
        job.set_marker(
            "truncated_depth".to_owned(),
            json!({ "limit": MAX_DEPTH, "cut": cut }),
        );
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Nesting {
    /// Arrays that are fields of rows: `results[].members`.
    Members,
    /// Arrays inside object fields of rows: `results[].by_kind.<bucket>`.
    Buckets,
}

/// Rungs 1 and 2: cap nested lists inside the rows of top-level lists to one uniform length,
/// never below [`NESTED_FLOOR`], so kept rows keep some of their members.
fn nested_lists(data: &mut Value, job: &mut Job, nesting: Nesting) {
    // (marker label, the nested list, its rows)
    let mut nested: Vec<(String, &mut Vec<Value>, Rows)> = Vec::new();
    for (key, items) in top_lists(data) {
        for row in items.iter_mut() {
            let Value::Object(fields) = row else { continue };
            for (field, value) in fields.iter_mut() {
                if nesting == Nesting::Members {
                    if let Value::Array(inner) = value
                        && inner.len() > NESTED_FLOOR
                    {
                        let rows = Rows::of(inner);
                        nested.push((format!("{key}[].{field}"), inner, rows));
                    }
                } else if let Value::Object(buckets) = value {
                    for value in buckets.values_mut() {
                        if let Value::Array(inner) = value
                            && inner.len() > NESTED_FLOOR
                        {
                            let rows = Rows::of(inner);
                            nested.push((format!("{key}[].{field}.*"), inner, rows));
                        }
                    }
                }
            }
        }
    }
    if nested.is_empty() {
        return;
    }
    let longest = nested
        .iter()
        .map(|(_, _, rows)| rows.len())
        .max()
        .unwrap_or(0);
    let removed_at = |cap: usize| {
        nested.iter().fold(Counts::default(), |acc, (_, _, rows)| {
            acc + rows.removed(cap)
        })
    };
    let marker_key = match nesting {
        Nesting::Members => "truncated_nested_lists",
        Nesting::Buckets => "truncated_nested_buckets",
    };
    let summary = |cap: usize| -> Value {
        let mut by_label: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
        for (label, _, rows) in &nested {
            if rows.len() > cap {
                let entry = by_label.entry(label.as_str()).or_default();
                entry.0 += 1;
                entry.1 += rows.len();
                entry.2 += cap;
            }
        }
        let mut out = Map::new();
        for (label, (lists, from, to)) in by_label {
            out.insert(
                label.to_owned(),
                json!({ "cap": cap, "lists": lists, "from": from, "to": to }),
            );
        }
        Value::Object(out)
    };
    // Larger caps keep more; find the largest cap that fits, or settle on the floor.
    let fits = |cap: usize| {
        let marker = summary(cap);
        job.fits(
            sub(job.data, removed_at(cap)),
            marker_counts(marker_key, &marker),
        )
    };
    let cap = largest(NESTED_FLOOR, longest, fits).unwrap_or(NESTED_FLOOR);
    if cap >= longest {
        return;
    }
    let removed = removed_at(cap);
    let marker = summary(cap);
    for (_, inner, _) in nested.iter_mut() {
        if inner.len() > cap {
            let tail = inner.split_off(cap);
            job.leftovers.extend(tail);
        }
    }
    job.data = sub(job.data, removed);
    job.set_marker(marker_key.to_owned(), marker);
}

/// Rung 3: several top-level lists keep the same fraction of their rows.
fn balanced_lists(data: &mut Value, job: &mut Job) {
    let mut lists: Vec<(String, &mut Vec<Value>, Rows)> = top_lists(data)
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .map(|(key, items)| {
            let rows = Rows::of(items);
            (key, items, rows)
        })
        .collect();
    if lists.len() < 2 {
        return;
    }
    const STEPS: usize = 10_000;
    let keep_at = |len: usize, step: usize| (len * step).div_ceil(STEPS).min(len);
    let cost = |step: usize, lists: &[(String, &mut Vec<Value>, Rows)]| {
        let mut removed = Counts::default();
        let mut markers = Counts::default();
        for (key, _, rows) in lists {
            let keep = keep_at(rows.len(), step);
            removed += rows.removed(keep);
            if keep < rows.len() {
                markers += list_marker_counts(key, rows.len(), keep);
            }
        }
        (removed, markers)
    };
    let Some(step) = largest(0, STEPS, |step| {
        let (removed, markers) = cost(step, &lists);
        job.fits(sub(job.data, removed), markers)
    }) else {
        return;
    };
    if step == STEPS {
        return;
    }
    let (removed, _) = cost(step, &lists);
    for (key, items, rows) in lists.iter_mut() {
        let keep = keep_at(rows.len(), step);
        if keep < rows.len() {
            let tail = items.split_off(keep);
            job.leftovers.extend(tail);
            for (marker, value) in list_markers(key, rows.len(), keep) {
                job.set_marker(marker, value);
            }
            job.list_cuts.push(ListCut {
                key: key.clone(),
                from: rows.len(),
                to: keep,
            });
        }
    }
    job.data = sub(job.data, removed);
}

/// Rung 4: the per-key ladder. Known keys in [`TRIMMABLE_LIST_KEYS`] order, then every other
/// array, largest first; each keeps the longest prefix that fits.
fn per_key_lists(data: &mut Value, job: &mut Job) {
    let mut lists: Vec<(String, &mut Vec<Value>)> = top_lists(data)
        .into_iter()
        .filter(|(_, items)| !items.is_empty())
        .collect();
    let rank = |key: &str| {
        TRIMMABLE_LIST_KEYS
            .iter()
            .position(|known| *known == key)
            .unwrap_or(TRIMMABLE_LIST_KEYS.len())
    };
    let mut sized: Vec<(String, &mut Vec<Value>, Rows)> = lists
        .drain(..)
        .map(|(key, items)| {
            let rows = Rows::of(items);
            (key, items, rows)
        })
        .collect();
    sized.sort_by(|a, b| {
        let total = |rows: &Rows| rows.prefix[rows.len()].chars();
        rank(&a.0)
            .cmp(&rank(&b.0))
            .then(total(&b.2).cmp(&total(&a.2)))
    });
    for (key, items, rows) in sized.iter_mut() {
        if !job.over() {
            break;
        }
        // Earlier rungs may have cut this list already: its "from" stays the original length.
        let original = job
            .list_cuts
            .iter()
            .find(|cut| cut.key == *key)
            .map_or(rows.len(), |cut| cut.from);
        let keep = largest(0, rows.len(), |keep| {
            job.fits(
                sub(job.data, rows.removed(keep)),
                list_marker_counts(key, original, keep),
            )
        })
        .unwrap_or(0);
        if keep >= rows.len() {
            continue;
        }
        job.data = sub(job.data, rows.removed(keep));
        let tail = items.split_off(keep);
        job.leftovers.extend(tail);
        for (marker, value) in list_markers(key, original, keep) {
            job.set_marker(marker, value);
        }
        match job.list_cuts.iter_mut().find(|cut| cut.key == *key) {
            Some(cut) => cut.to = keep,
            None => job.list_cuts.push(ListCut {
                key: key.clone(),
                from: original,
                to: keep,
            }),
        }
    }
}

/// Rung 5: top-level dict-of-lists (`edges_by_type: {kind: [...]}`): every bucket capped to one
/// uniform length. Marker `truncated_<key>: {bucket: {from, to}}`.
fn root_buckets(data: &mut Value, job: &mut Job) {
    let Value::Object(map) = data else { return };
    for (key, value) in map.iter_mut() {
        if !job.over() {
            return;
        }
        let Value::Object(buckets) = value else {
            continue;
        };
        let mut lists: Vec<(String, &mut Vec<Value>, Rows)> = buckets
            .iter_mut()
            .filter_map(|(bucket, value)| match value {
                Value::Array(items) if !items.is_empty() => {
                    let rows = Rows::of(items);
                    Some((bucket.clone(), items, rows))
                }
                _ => None,
            })
            .collect();
        if lists.is_empty() {
            continue;
        }
        let longest = lists
            .iter()
            .map(|(_, _, rows)| rows.len())
            .max()
            .unwrap_or(0);
        let marker_key = format!("truncated_{key}");
        let summary = |cap: usize, lists: &[(String, &mut Vec<Value>, Rows)]| {
            let mut out = Map::new();
            for (bucket, _, rows) in lists {
                if rows.len() > cap {
                    out.insert(bucket.clone(), json!({ "from": rows.len(), "to": cap }));
                }
            }
            Value::Object(out)
        };
        let removed_at = |cap: usize, lists: &[(String, &mut Vec<Value>, Rows)]| {
            lists.iter().fold(Counts::default(), |acc, (_, _, rows)| {
                acc + rows.removed(cap)
            })
        };
        let cap = largest(0, longest, |cap| {
            job.fits(
                sub(job.data, removed_at(cap, &lists)),
                marker_counts(&marker_key, &summary(cap, &lists)),
            )
        })
        .unwrap_or(0);
        if cap >= longest {
            continue;
        }
        let removed = removed_at(cap, &lists);
        let marker = summary(cap, &lists);
        for (_, items, _) in lists.iter_mut() {
            if items.len() > cap {
                let tail = items.split_off(cap);
                job.leftovers.extend(tail);
            }
        }
        job.data = sub(job.data, removed);
        job.set_marker(marker_key, marker);
    }
}

/// JSON-pointer escaping of one path segment.
fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Rung 6: strings of at least [`LONG_STRING_CHARS`] characters, longest first, cut on a char
/// boundary and suffixed with [`TRUNCATION_SUFFIX`]. Marker `truncated_string_fields` lists their
/// JSON pointers.
fn long_strings(data: &mut Value, job: &mut Job) {
    let mut strings: Vec<(String, &mut String, usize)> = Vec::new();
    let mut stack: Vec<(String, &mut Value)> = vec![(String::new(), data)];
    while let Some((path, node)) = stack.pop() {
        match node {
            Value::String(text) => {
                let chars = text.chars().count();
                if chars >= LONG_STRING_CHARS {
                    strings.push((path, text, chars));
                }
            }
            Value::Array(items) => stack.extend(
                items
                    .iter_mut()
                    .enumerate()
                    .map(|(index, item)| (format!("{path}/{index}"), item)),
            ),
            Value::Object(map) => stack.extend(
                map.iter_mut()
                    .map(|(key, item)| (format!("{path}/{}", pointer_segment(key)), item)),
            ),
            _ => {}
        }
    }
    strings.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut cut_paths: Vec<String> = job
        .markers
        .get("truncated_string_fields")
        .and_then(Value::as_array)
        .map(|paths| {
            paths
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let suffix = Counts::of(TRUNCATION_SUFFIX);
    for (path, text, chars) in strings {
        if !job.over() {
            break;
        }
        let before = string_counts(text);
        let mut paths_after = cut_paths.clone();
        paths_after.push(path.clone());
        let marker = json!(paths_after);
        let marker_delta = marker_counts("truncated_string_fields", &marker);
        let existing = job
            .markers
            .get("truncated_string_fields")
            .map(|old| marker_counts("truncated_string_fields", old))
            .unwrap_or_default();
        // Keep the longest prefix (in chars) whose cut string fits.
        let prefix_counts = |keep: usize| -> Counts {
            let end = text
                .char_indices()
                .nth(keep)
                .map_or(text.len(), |(at, _)| at);
            string_counts(&text[..end]) + suffix
        };
        let keep = largest(0, chars.saturating_sub(1), |keep| {
            let data = sub(job.data, before) + prefix_counts(keep);
            job.fits(data, sub(marker_delta, existing))
        })
        .unwrap_or(0);
        let end = text
            .char_indices()
            .nth(keep)
            .map_or(text.len(), |(at, _)| at);
        let after = prefix_counts(keep);
        text.truncate(end);
        text.push_str(TRUNCATION_SUFFIX);
        job.data = sub(job.data, before) + after;
        cut_paths.push(path);
        job.set_marker("truncated_string_fields".to_owned(), json!(cut_paths));
    }
}

//! What the ladder decides on: each cuttable list's rows sized once, and how many of each the
//! budget keeps.

use envelope_core::meta_keys as keys;
use serde_json::{Value, json};

use super::*;

pub(super) fn brackets() -> Counts {
    Counts {
        punct: 2,
        ..Counts::default()
    }
}

/// Prefix sums over the first rows of a list, measured only as far as rows could ever be kept:
/// `prefix[k]` is the counts of the first `k` rows and the `k - 1` commas between them. Rows
/// past the horizon (`prefix.len() - 1`) are unmeasured, so they can only be cut.
#[derive(Debug, Clone)]
pub(super) struct Rows {
    pub(super) prefix: Vec<Counts>,
}

impl Rows {
    /// Measures rows until their sum alone is past the budget.
    pub(super) fn measure(items: &[Value], job: &Job) -> Rows {
        let mut rows = Rows {
            prefix: vec![Counts::default()],
        };
        rows.extend(items, job);
        rows
    }

    /// Rows the payload encoder already measured: its prefix sums, up to where this job would
    /// have stopped measuring.
    pub(super) fn premeasured(prefix: &[Counts], job: &Job) -> Rows {
        let horizon = prefix
            .iter()
            .position(|running| job.hopeless(running))
            .unwrap_or(prefix.len());
        Rows {
            prefix: prefix[..horizon.max(1)].to_vec(),
        }
    }

    /// Measures `items` under `key`, reusing the encoder's sizes when it measured that list.
    pub(super) fn measure_list(
        items: &[Value],
        key: &str,
        job: &Job,
        measured: Option<&MeasuredLists>,
    ) -> Rows {
        match measured.and_then(|measured| measured.prefix(key, items.len())) {
            Some(prefix) => Rows::premeasured(prefix, job),
            None => Rows::measure(items, job),
        }
    }

    /// Measures rows from the horizon on, until their sum alone is past the budget.
    pub(super) fn extend(&mut self, items: &[Value], job: &Job) {
        let mut stack = Scratch::default();
        for item in items.iter().skip(self.horizon()) {
            if !self.push_row(item, job, &mut stack) {
                return;
            }
        }
    }

    /// Measures `row`, the row at the horizon, and moves the horizon past it; `false`, leaving
    /// the rows as they were, when the sum with it is past the budget.
    pub(super) fn push_row<'a>(
        &mut self,
        row: &'a Value,
        job: &Job,
        stack: &mut Scratch<'a>,
    ) -> bool {
        let before = *self.prefix.last().unwrap_or(&Counts::default());
        let Some(counts) = value_counts_until(row, stack, |c| job.hopeless(&(before + *c))) else {
            return false;
        };
        let mut running = before + counts;
        // The comma before every row but the first.
        if self.horizon() > 0 {
            running.punct += 1;
        }
        if job.hopeless(&running) {
            return false;
        }
        self.prefix.push(running);
        true
    }

    pub(super) fn horizon(&self) -> usize {
        self.prefix.len() - 1
    }

    /// Counts of the first `keep` rows in brackets; `None` past the horizon.
    pub(super) fn kept(&self, keep: usize) -> Option<Counts> {
        self.prefix.get(keep).map(|rows| *rows + brackets())
    }
}

/// A top-level list: the payload itself when it is an array, or an array field of it.
pub(super) struct ListSlot {
    pub(super) key: String,
    /// Length before this job, for markers and `completeness`.
    pub(super) original: usize,
    pub(super) rows: Rows,
    pub(super) keep: usize,
}

/// A top-level dict-of-lists: an object field whose values are all arrays.
pub(super) struct BucketSlot {
    pub(super) key: String,
    /// Per bucket: its name, its length, its rows.
    pub(super) buckets: Vec<(String, usize, Rows)>,
    /// Braces, bucket keys, colons and commas.
    pub(super) frame: Counts,
    pub(super) cap: usize,
}

impl BucketSlot {
    pub(super) fn longest(&self) -> usize {
        self.buckets
            .iter()
            .map(|(_, len, _)| *len)
            .max()
            .unwrap_or(0)
    }

    pub(super) fn kept(&self, cap: usize) -> Option<Counts> {
        let mut total = self.frame;
        for (_, len, rows) in &self.buckets {
            total += rows.kept(cap.min(*len))?;
        }
        Some(total)
    }
}

/// The sized view of a payload, by part, bounded by the budget.
pub(super) struct Model {
    /// Everything whose size no rung changes: punctuation and keys of the root object and its
    /// fields that are neither lists nor buckets.
    pub(super) base: Counts,
    /// A part too large to measure within the budget; only the string rung can help it.
    pub(super) over: bool,
    pub(super) lists: Vec<ListSlot>,
    pub(super) buckets: Vec<BucketSlot>,
}

pub(super) fn is_buckets(value: &Value) -> bool {
    matches!(value, Value::Object(map) if !map.is_empty() && map.values().all(Value::is_array))
}

impl Model {
    pub(super) fn build(
        data: &Value,
        job: &Job,
        precut: &[(String, usize)],
        measured: Option<&MeasuredLists>,
    ) -> Model {
        let list_slot = |key: &str, items: &[Value]| ListSlot {
            key: key.to_owned(),
            // A list the payload encoder cut short keeps its full length for markers.
            original: precut
                .iter()
                .find(|(cut, _)| cut == key)
                .map_or(items.len(), |(_, full)| (*full).max(items.len())),
            rows: Rows::measure_list(items, key, job, measured),
            // Kept whole until a rung cuts it.
            keep: items.len(),
        };
        let mut model = Model {
            base: Counts::default(),
            over: false,
            lists: Vec::new(),
            buckets: Vec::new(),
        };
        let mut stack = Scratch::default();
        match data {
            Value::Array(items) => model.lists.push(list_slot(ROOT_LIST_KEY, items)),
            Value::Object(map) => {
                model.base.punct += 2 + map.len().saturating_sub(1) as u64;
                for (key, value) in map {
                    model.base += member_key_counts(key, false);
                    match value {
                        Value::Array(items) => model.lists.push(list_slot(key, items)),
                        Value::Object(buckets) if is_buckets(value) => {
                            let mut frame = Counts {
                                punct: 2 + buckets.len().saturating_sub(1) as u64,
                                ..Counts::default()
                            };
                            let mut measured = Vec::new();
                            for (bucket, items) in buckets {
                                frame += member_key_counts(bucket, false);
                                let items = items.as_array().map(Vec::as_slice).unwrap_or_default();
                                measured.push((
                                    bucket.clone(),
                                    items.len(),
                                    Rows::measure(items, job),
                                ));
                            }
                            let slot = BucketSlot {
                                key: key.clone(),
                                buckets: measured,
                                frame,
                                cap: 0,
                            };
                            let cap = slot.longest();
                            model.buckets.push(BucketSlot { cap, ..slot });
                        }
                        other => match value_counts_until(other, &mut stack, |c| job.hopeless(c)) {
                            Some(counts) => model.base += counts,
                            None => model.over = true,
                        },
                    }
                }
            }
            scalar => match value_counts_until(scalar, &mut stack, |c| job.hopeless(c)) {
                Some(counts) => model.base += counts,
                None => model.over = true,
            },
        }
        model
    }

    /// The payload's counts with lists kept to `keeps` and buckets capped to `caps`; `None`
    /// when that keeps something unmeasured.
    pub(super) fn total(&self, keeps: &[usize], caps: &[usize]) -> Option<Counts> {
        if self.over {
            return None;
        }
        let mut total = self.base;
        for (slot, keep) in self.lists.iter().zip(keeps) {
            total += slot.rows.kept(*keep)?;
        }
        for (slot, cap) in self.buckets.iter().zip(caps) {
            total += slot.kept(*cap)?;
        }
        Some(total)
    }

    pub(super) fn keeps(&self) -> Vec<usize> {
        self.lists.iter().map(|slot| slot.keep).collect()
    }

    pub(super) fn caps(&self) -> Vec<usize> {
        self.buckets.iter().map(|slot| slot.cap).collect()
    }

    /// The markers the current cuts would write, for sizing them before they are written.
    pub(super) fn cut_markers(&self, keeps: &[usize]) -> Counts {
        self.lists
            .iter()
            .zip(keeps)
            .filter(|(slot, keep)| **keep < slot.original)
            .fold(Counts::default(), |acc, (slot, keep)| {
                acc + list_marker_counts(&slot.key, slot.original, *keep)
            })
    }
}

pub(super) fn list_markers(key: &str, from: usize, to: usize) -> [(String, Value); 2] {
    [
        (keys::list_cut_from(key), json!(from)),
        (keys::list_cut_to(key), json!(to)),
    ]
}

pub(super) fn list_marker_counts(key: &str, from: usize, to: usize) -> Counts {
    list_markers(key, from, to)
        .iter()
        .fold(Counts::default(), |acc, (k, v)| acc + marker_counts(k, v))
}

/// The list a slot stands for, in `data`.
pub(super) fn list_mut<'a>(data: &'a mut Value, key: &str) -> Option<&'a mut Vec<Value>> {
    match data {
        Value::Array(items) if key == ROOT_LIST_KEY => Some(items),
        Value::Object(map) => map.get_mut(key).and_then(Value::as_array_mut),
        _ => None,
    }
}

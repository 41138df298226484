//! Rungs 4 and 5: lists nested in rows (`results[].members`) and in object fields of rows
//! (`results[].by_kind.<bucket>`), capped to a common length.

use envelope_core::meta_keys as keys;
use serde_json::{Map, Value, json};

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Nesting {
    /// Arrays that are fields of rows: `results[].members`.
    Members,
    /// Arrays inside object fields of rows: `results[].by_kind.<bucket>`.
    Buckets,
}

/// The nested lists of one row, by marker label.
fn nested_of<'a>(
    row: &'a mut Value,
    key: &str,
    nesting: Nesting,
    out: &mut Vec<(String, &'a mut Vec<Value>)>,
) {
    let Value::Object(fields) = row else { return };
    for (field, value) in fields.iter_mut() {
        if nesting == Nesting::Members {
            if let Value::Array(inner) = value
                && inner.len() > NESTED_FLOOR
            {
                out.push((format!("{key}[].{field}"), inner));
            }
        } else if let Value::Object(buckets) = value {
            for inner in buckets.values_mut().filter_map(Value::as_array_mut) {
                if inner.len() > NESTED_FLOOR {
                    out.push((format!("{key}[].{field}.*"), inner));
                }
            }
        }
    }
}

/// Rungs 1 and 2: nested lists inside measured rows are capped to one uniform length, never
/// below [`NESTED_FLOOR`], so kept rows keep some of their members. Rows past a list's horizon
/// are not touched: they can only be cut whole.
pub(super) fn nested_lists(data: &mut Value, job: &mut Job, model: &mut Model, nesting: Nesting) {
    // (list slot index, row index, label, the nested list's rows)
    struct Nested {
        slot: usize,
        row: usize,
        label: String,
        len: usize,
        prefix: Vec<Counts>,
    }
    let mut nested: Vec<Nested> = Vec::new();
    for (slot_index, slot) in model.lists.iter().enumerate() {
        let Some(items) = list_mut(data, &slot.key) else {
            continue;
        };
        for (row_index, row) in items.iter_mut().take(slot.rows.horizon()).enumerate() {
            let mut found = Vec::new();
            nested_of(row, &slot.key, nesting, &mut found);
            for (label, inner) in found {
                let mut prefix = Vec::with_capacity(inner.len() + 1);
                let mut running = Counts::default();
                prefix.push(running);
                for (index, item) in inner.iter().enumerate() {
                    running += value_counts(item);
                    if index > 0 {
                        running.punct += 1;
                    }
                    prefix.push(running);
                }
                nested.push(Nested {
                    slot: slot_index,
                    row: row_index,
                    label,
                    len: inner.len(),
                    prefix,
                });
            }
        }
    }
    if nested.is_empty() {
        return;
    }
    let longest = nested.iter().map(|n| n.len).max().unwrap_or(0);
    let removed = |n: &Nested, cap: usize| sub(n.prefix[n.len], n.prefix[cap.min(n.len)]);
    let marker_key = match nesting {
        Nesting::Members => keys::TRUNCATED_NESTED_LISTS,
        Nesting::Buckets => keys::TRUNCATED_NESTED_BUCKETS,
    };
    let summary = |cap: usize| -> Value {
        let mut by_label: BTreeMap<&str, (usize, usize, usize)> = BTreeMap::new();
        for n in &nested {
            if n.len > cap {
                let entry = by_label.entry(n.label.as_str()).or_default();
                entry.0 += 1;
                entry.1 += n.len;
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
    // Row counts after capping: the old row minus what its nested lists lose.
    let rows_at = |cap: usize| -> Vec<Rows> {
        model
            .lists
            .iter()
            .enumerate()
            .map(|(slot_index, slot)| {
                let mut saved = vec![Counts::default(); slot.rows.horizon()];
                for n in nested.iter().filter(|n| n.slot == slot_index) {
                    saved[n.row] += removed(n, cap);
                }
                let mut prefix = Vec::with_capacity(slot.rows.prefix.len());
                let mut lost = Counts::default();
                prefix.push(Counts::default());
                for (row, saved) in saved.iter().enumerate() {
                    lost += *saved;
                    prefix.push(sub(slot.rows.prefix[row + 1], lost));
                }
                Rows { prefix }
            })
            .collect()
    };
    let keeps = model.keeps();
    let caps = model.caps();
    let fits = |cap: usize| {
        let rows = rows_at(cap);
        let mut total = model.base;
        for ((slot, rows), keep) in model.lists.iter().zip(&rows).zip(&keeps) {
            let _ = slot;
            match rows.kept(*keep) {
                Some(kept) => total += kept,
                None => return false,
            }
        }
        for (slot, cap) in model.buckets.iter().zip(&caps) {
            match slot.kept(*cap) {
                Some(kept) => total += kept,
                None => return false,
            }
        }
        job.fits(total, marker_counts(marker_key, &summary(cap)))
    };
    let cap = largest(NESTED_FLOOR, longest, fits).unwrap_or(NESTED_FLOOR);
    if cap >= longest {
        return;
    }
    let new_rows = rows_at(cap);
    let marker = summary(cap);
    for (slot_index, slot) in model.lists.iter().enumerate() {
        let Some(items) = list_mut(data, &slot.key) else {
            continue;
        };
        for (row_index, row) in items.iter_mut().enumerate().take(slot.rows.horizon()) {
            if !nested
                .iter()
                .any(|n| n.slot == slot_index && n.row == row_index)
            {
                continue;
            }
            let mut found = Vec::new();
            nested_of(row, &slot.key, nesting, &mut found);
            for (_, inner) in found {
                if inner.len() > cap {
                    let tail = inner.split_off(cap);
                    job.leftovers.extend(tail);
                }
            }
        }
    }
    for (slot, rows) in model.lists.iter_mut().zip(new_rows) {
        slot.rows = rows;
    }
    // Capped rows are smaller, so more of them may fit: measure further rows, capping each one
    // first, so that every row that can be kept is capped and counted in the marker.
    let mut stats: BTreeMap<String, (usize, usize, usize)> = BTreeMap::new();
    if let Value::Object(counted) = &marker {
        for (label, entry) in counted {
            let number = |key: &str| entry[key].as_u64().unwrap_or(0) as usize;
            stats.insert(
                label.clone(),
                (number("lists"), number("from"), number("to")),
            );
        }
    }
    let mut cut = Vec::new();
    for slot in model.lists.iter_mut() {
        let Some(items) = list_mut(data, &slot.key) else {
            continue;
        };
        let horizon = slot.rows.horizon();
        for item in items.iter_mut().skip(horizon) {
            let mut found = Vec::new();
            nested_of(item, &slot.key, nesting, &mut found);
            let mut row_stats = Vec::new();
            for (label, inner) in found {
                if inner.len() > cap {
                    row_stats.push((label, inner.len()));
                    cut.extend(inner.split_off(cap));
                }
            }
            // A scratch of its own: the next row is capped, so mutably borrowed, before it is
            // measured.
            let mut stack = Scratch::default();
            if !slot.rows.push_row(item, job, &mut stack) {
                break;
            }
            for (label, len) in row_stats {
                let entry = stats.entry(label).or_default();
                entry.0 += 1;
                entry.1 += len;
                entry.2 += cap;
            }
        }
    }
    job.leftovers.extend(cut);
    let mut marker = Map::new();
    for (label, (lists, from, to)) in stats {
        marker.insert(
            label,
            json!({ "cap": cap, "lists": lists, "from": from, "to": to }),
        );
    }
    job.set_marker(marker_key.to_owned(), Value::Object(marker));
}

//! The vocabulary every cutting stage shares: what a cut list is called and records, the bag
//! that keeps cut parts alive until the response is sent, and the search the rungs use to
//! find how much fits. The encoder, the ladder and the subgraph rung all build on it; none of
//! them on each other's internals.

use serde_json::Value;

/// The list key used in markers when the payload itself is an array.
pub const ROOT_LIST_KEY: &str = envelope_core::fields::envelope::DATA;

/// What a cut string ends with.
pub const TRUNCATION_SUFFIX: &str = "…[truncated]";

/// Cut parts of a payload, kept alive until the caller drops them. Dropping dismantles them
/// iteratively, so a deeply nested cut cannot overflow the stack.
#[derive(Debug, Default)]
pub struct Leftovers(Vec<Value>);

impl Leftovers {
    pub(crate) fn push(&mut self, value: Value) {
        self.0.push(value);
    }

    pub(crate) fn extend(&mut self, values: impl IntoIterator<Item = Value>) {
        self.0.extend(values);
    }

    pub(crate) fn reserve(&mut self, additional: usize) {
        self.0.reserve(additional);
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
        envelope_core::stage::drop_deep(Value::Array(std::mem::take(&mut self.0)));
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

/// Largest `k` in `lo..=hi` with `ok(k)`, for `ok` monotone (true then false as `k` grows).
/// `None` when even `lo` fails.
pub(crate) fn largest(lo: usize, hi: usize, mut ok: impl FnMut(usize) -> bool) -> Option<usize> {
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

//! The result store: the whole answer of a tool that is not declared read-only, held so that
//! its pages are served without calling the tool again.
//!
//! An answer is kept under its call (the caller, the tool and the arguments), beside the
//! digest the page's continuation is sealed with; a `next-page` is opened against each answer
//! kept for its call, newest first, and the one whose digest the token was sealed with serves
//! the page. So a token is bound to the caller as every continuation is (another caller's is
//! refused `continuation_scope_mismatch`, an edited one `invalid_continuation`), and one
//! presented after its answer was evicted is refused `stale_continuation`, with a `rerun`.
//!
//! Bounded twice: all answers together at most [`MemoryStore::max_bytes`] (the oldest evicted
//! first), one answer at most [`MemoryStore::max_answer_bytes`] (the rows after the bound are
//! not kept, and the last stored page says so).
//!
//! Kept in this process ([`MemoryStore`], the default), or in Redis
//! ([`RedisStore`](crate::RedisStore)), which replicas behind one address share: a page one
//! proxy issued, another serves ([`ResultStore`](crate::result_store::ResultStore) is either).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use envelope_core::Unit;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::pages::Rows;

/// How many bytes all answers kept take together, unless configured: 32 MiB.
pub const DEFAULT_STORE_BYTES: usize = 32 << 20;
/// How many bytes of one answer are kept, unless configured: 8 MiB.
pub const DEFAULT_STORED_ANSWER_BYTES: usize = 8 << 20;
/// How many answers of one call (one caller, tool and arguments) are kept: the newest.
pub const ANSWERS_PER_CALL: usize = 4;

/// One answer kept.
#[derive(Debug)]
pub(crate) struct Stored {
    /// The digest its continuations are sealed with.
    pub(crate) snapshot: String,
    /// The rows kept, from the first.
    pub(crate) rows: Vec<Value>,
    /// What one row is.
    pub(crate) unit: Unit,
    /// How many rows the answer had, kept or not.
    pub(crate) total: usize,
    /// The bytes the rows kept take.
    bytes: usize,
}

impl Stored {
    /// `rows` (the answer digested as `snapshot`) as kept: cut after the last row that fits
    /// in `max_bytes`.
    pub(crate) fn cut(rows: Rows, snapshot: String, max_bytes: usize) -> Stored {
        let total = rows.rows.len();
        let mut bytes = 0;
        let mut kept = Vec::new();
        for row in rows.rows {
            let size = serde_json::to_string(&row).map_or(0, |text| text.len());
            if bytes + size > max_bytes {
                break;
            }
            bytes += size;
            kept.push(row);
        }
        Stored {
            snapshot,
            rows: kept,
            unit: rows.unit,
            total,
            bytes,
        }
    }

    /// As written to a shared store: the digest, the unit's name, the total and the rows.
    pub(crate) fn to_json(&self) -> Value {
        serde_json::json!({
            "snapshot": self.snapshot,
            "unit": self.unit.as_str(),
            "total": self.total,
            "rows": self.rows,
        })
    }

    /// One written by [`Stored::to_json`]; `None` for anything else.
    pub(crate) fn from_json(value: Value) -> Option<Stored> {
        let Value::Object(mut fields) = value else {
            return None;
        };
        let snapshot = fields.remove("snapshot")?.as_str()?.to_owned();
        let unit = Unit::custom(fields.remove("unit")?.as_str()?).ok()?;
        let total = usize::try_from(fields.remove("total")?.as_u64()?).ok()?;
        let Value::Array(rows) = fields.remove("rows")? else {
            return None;
        };
        let bytes = rows
            .iter()
            .map(|row| serde_json::to_string(row).map_or(0, |text| text.len()))
            .sum();
        Some(Stored {
            snapshot,
            rows,
            unit,
            total,
            bytes,
        })
    }
}

/// Answers kept in this process's memory: the default store.
#[derive(Debug)]
pub struct MemoryStore {
    max_bytes: usize,
    max_answer_bytes: usize,
    kept: Mutex<Kept>,
}

#[derive(Debug, Default)]
struct Kept {
    /// By call, newest last.
    by_call: HashMap<String, VecDeque<Arc<Stored>>>,
    /// Every answer kept, by call, oldest first: what is evicted next.
    order: VecDeque<(String, Arc<Stored>)>,
    bytes: usize,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new(DEFAULT_STORE_BYTES, DEFAULT_STORED_ANSWER_BYTES)
    }
}

impl MemoryStore {
    /// A store of at most `max_bytes` in all and `max_answer_bytes` of one answer.
    pub fn new(max_bytes: usize, max_answer_bytes: usize) -> MemoryStore {
        MemoryStore {
            max_bytes: max_bytes.max(1),
            max_answer_bytes: max_answer_bytes.clamp(1, max_bytes.max(1)),
            kept: Mutex::default(),
        }
    }

    /// The most all answers kept take together.
    pub fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    /// The most one answer kept takes.
    pub fn max_answer_bytes(&self) -> usize {
        self.max_answer_bytes
    }

    /// Keeps `rows` (the answer digested as `snapshot`) for `call`, cut to the per-answer
    /// bound, evicting the oldest answers to make room.
    pub(crate) fn keep(&self, call: String, rows: Rows, snapshot: String) -> Arc<Stored> {
        self.keep_cut(call, Stored::cut(rows, snapshot, self.max_answer_bytes))
    }

    /// Keeps `stored`, an answer already cut, for `call`, evicting the oldest answers to make
    /// room.
    pub(crate) fn keep_cut(&self, call: String, stored: Stored) -> Arc<Stored> {
        let stored = Arc::new(stored);
        let mut state = self
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let answers = state.by_call.entry(call.clone()).or_default();
        answers.push_back(Arc::clone(&stored));
        let dropped = (answers.len() > ANSWERS_PER_CALL)
            .then(|| answers.pop_front())
            .flatten();
        if let Some(dropped) = dropped {
            state.order.retain(|(_, kept)| !Arc::ptr_eq(kept, &dropped));
            state.bytes -= dropped.bytes;
        }
        state.order.push_back((call, Arc::clone(&stored)));
        state.bytes += stored.bytes;
        while state.bytes > self.max_bytes {
            let Some((call, oldest)) = state.order.pop_front() else {
                break;
            };
            state.bytes -= oldest.bytes;
            if let Some(answers) = state.by_call.get_mut(&call) {
                answers.retain(|kept| !Arc::ptr_eq(kept, &oldest));
                if answers.is_empty() {
                    state.by_call.remove(&call);
                }
            }
        }
        stored
    }

    /// The answers kept for `call`, newest first.
    pub(crate) fn answers(&self, call: &str) -> Vec<Arc<Stored>> {
        let state = self
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        state
            .by_call
            .get(call)
            .map(|answers| answers.iter().rev().cloned().collect())
            .unwrap_or_default()
    }

    /// How many bytes the answers kept take now.
    pub fn bytes(&self) -> usize {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .bytes
    }
}

/// The key of one call: who called (the caller binding), which tool, with what arguments.
pub(crate) fn call_key(caller: &str, tool: &str, request: &Value) -> String {
    let mut digest = Sha256::new();
    for part in [caller, tool, &envelope_core::canonical_json(request)] {
        digest.update(part.len().to_be_bytes());
        digest.update(part.as_bytes());
    }
    digest
        .finalize()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn rows(count: usize, width: usize) -> Rows {
        Rows {
            rows: (0..count).map(|i| json!(format!("{i:0width$}"))).collect(),
            unit: Unit::ITEM,
            member: None,
        }
    }

    #[test]
    fn an_answer_over_its_bound_is_cut_and_says_so() {
        let store = MemoryStore::new(1_000, 100);
        // Each row is 12 bytes of JSON: eight fit in 100.
        let stored = store.keep("call".to_owned(), rows(20, 10), "s".to_owned());
        assert_eq!((stored.rows.len(), stored.total), (8, 20));
        assert!(store.bytes() <= 100);
    }

    #[test]
    fn the_oldest_answers_are_evicted_to_stay_within_the_bound() {
        let store = MemoryStore::new(250, 100);
        for call in 0..10 {
            store.keep(format!("call {call}"), rows(8, 10), format!("s{call}"));
            assert!(store.bytes() <= 250, "{}", store.bytes());
        }
        assert!(store.answers("call 0").is_empty());
        assert_eq!(store.answers("call 9").len(), 1);
    }

    #[test]
    fn one_call_keeps_its_newest_answers() {
        let store = MemoryStore::default();
        for answer in 0..6 {
            store.keep("call".to_owned(), rows(1, 1), format!("s{answer}"));
        }
        let kept: Vec<_> = store
            .answers("call")
            .iter()
            .map(|stored| stored.snapshot.clone())
            .collect();
        assert_eq!(kept, ["s5", "s4", "s3", "s2"]);
    }

    #[test]
    fn an_answer_written_for_redis_reads_back_the_same() {
        let stored = Stored::cut(rows(5, 3), "digest".to_owned(), 100);
        let read = Stored::from_json(stored.to_json()).expect("reads back");
        assert_eq!(
            (
                &read.snapshot,
                &read.rows,
                &read.unit,
                read.total,
                read.bytes
            ),
            (
                &stored.snapshot,
                &stored.rows,
                &stored.unit,
                stored.total,
                stored.bytes
            )
        );
        assert!(Stored::from_json(json!({"snapshot": "s"})).is_none());
        assert!(
            Stored::from_json(
                json!({"snapshot": "s", "unit": "Not A Unit", "total": 1, "rows": []})
            )
            .is_none()
        );
    }

    #[test]
    fn a_call_is_its_caller_tool_and_arguments() {
        let request = json!({"b": 1, "a": 2});
        let same = json!({"a": 2, "b": 1});
        assert_eq!(
            call_key("alice", "t", &request),
            call_key("alice", "t", &same)
        );
        assert_ne!(
            call_key("alice", "t", &request),
            call_key("bob", "t", &request)
        );
        assert_ne!(
            call_key("alice", "t", &request),
            call_key("alice", "u", &request)
        );
    }
}

//! The JSON-RPC ids of the requests a connection has in flight, so that a second request
//! reusing one is refused at once.
//!
//! JSON-RPC matches an answer to its request by id alone. A second request under an id that is
//! still in flight cannot be told apart from the first: rmcp routes both answers to one of
//! them, and the other caller waited for nothing until its own timeout (300 s, as reported).
//! Each transport registers a request's id before rmcp sees it and answers a duplicate with
//! [`DUPLICATE_ID`] instead.
//!
//! An id is in flight until rmcp's handler for it has finished: the registration is a
//! [`Flight`] that travels in the request's extensions into the handler's context and frees the
//! id when dropped. Neither a cancellation nor a client that hung up frees it earlier, since the
//! handler may still run and rmcp still routes by that id.

use std::collections::HashSet;
use std::hash::Hash;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use crate::jsonrpc::INVALID_REQUEST;

/// The JSON-RPC error code a request reusing an id in flight is answered with: `-32600`,
/// invalid request.
pub const DUPLICATE_ID: i64 = INVALID_REQUEST;

/// The ids in flight on one connection (stdio) or across sessions (HTTP, keyed by session).
#[derive(Debug)]
pub(crate) struct InFlight<K> {
    keys: Mutex<HashSet<K>>,
}

impl<K> Default for InFlight<K> {
    fn default() -> Self {
        InFlight {
            keys: Mutex::new(HashSet::new()),
        }
    }
}

impl<K: Hash + Eq> InFlight<K> {
    /// Registers `key`; `false` when it is already in flight.
    pub(crate) fn begin(&self, key: K) -> bool {
        // The set stays consistent even if a holder panicked: insert and remove are atomic.
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(key)
    }

    /// The request under `key` is done with: the id may be used again.
    fn end(&self, key: &K) {
        self.keys
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(key);
    }
}

/// Ends `key`'s flight when dropped. Put in the request's extensions, it lives exactly as long
/// as rmcp's handler for the request.
pub(crate) struct Flight<K: Hash + Eq> {
    set: Arc<InFlight<K>>,
    key: Option<K>,
}

impl<K: Hash + Eq> Flight<K> {
    /// Registers `key` in `set`; `None` when it is already in flight.
    pub(crate) fn begin(set: &Arc<InFlight<K>>, key: K) -> Option<Flight<K>>
    where
        K: Clone,
    {
        set.begin(key.clone()).then(|| Flight {
            set: Arc::clone(set),
            key: Some(key),
        })
    }
}

impl<K: Hash + Eq> Drop for Flight<K> {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.set.end(&key);
        }
    }
}

/// The JSON-RPC answer to a request reusing the in-flight `id`.
pub(crate) fn duplicate_answer(id: &Value) -> Value {
    json!({
        "jsonrpc": "2.0",
        "id": id,
        // wire: JSON-RPC's error member, not an envelope's
        "error": {
            "code": DUPLICATE_ID,
            "message": format!(
                "invalid request: a request with id {id} is still in flight; use a new id"
            ),
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_id_is_in_flight_until_its_flight_ends() {
        let set = Arc::new(InFlight::default());
        let first = Flight::begin(&set, 7).expect("a new id");
        assert!(
            Flight::begin(&set, 7).is_none(),
            "the same id, still in flight"
        );
        let other = Flight::begin(&set, 8).expect("another id");
        drop(first);
        assert!(
            Flight::begin(&set, 7).is_some(),
            "answered: the id is free again"
        );
        drop(other);
    }
}

//! [`ResultStore`]: where the proxy keeps the answers of tools that are not read-only, this
//! process's memory or Redis, behind one interface the fronted tools page from.

use std::sync::Arc;

use envelope_core::ToolError;

use crate::pages::Rows;
use crate::redis_store::RedisStore;
use crate::store::{MemoryStore, Stored};

/// Where the answers are kept: this process's memory, or Redis.
#[derive(Debug)]
pub(crate) enum ResultStore {
    Memory(MemoryStore),
    Redis(RedisStore),
}

impl ResultStore {
    /// Keeps `rows` (the answer digested as `snapshot`) for `call`, cut to the per-answer
    /// bound. Never fails: an answer Redis cannot take is kept in this process.
    pub(crate) async fn keep(&self, call: String, rows: Rows, snapshot: String) -> Arc<Stored> {
        match self {
            ResultStore::Memory(store) => store.keep(call, rows, snapshot),
            ResultStore::Redis(store) => store.keep(&call, rows, snapshot).await,
        }
    }

    /// The answers kept for `call`, newest first.
    pub(crate) async fn answers(&self, call: &str) -> Result<Vec<Arc<Stored>>, ToolError> {
        match self {
            ResultStore::Memory(store) => Ok(store.answers(call)),
            ResultStore::Redis(store) => store.answers(call).await,
        }
    }
}

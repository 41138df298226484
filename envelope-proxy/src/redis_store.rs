//! [`RedisStore`]: the result store in Redis, shared by replicas of the proxy behind one
//! address, so that a page one replica issued is served by another.
//!
//! Each call's answers are one Redis list under `envelope-proxy:answers:` and the call's key,
//! newest first, trimmed to the newest [`ANSWERS_PER_CALL`], each entry one answer as JSON (its
//! digest, unit, row count and the rows kept). The list expires [`RedisStore::ttl`] after its
//! last answer. The bound on all answers together is Redis's own: run it with a `maxmemory`
//! and an eviction policy (`allkeys-lru`), and an evicted answer's page is refused as stale,
//! with a `rerun`, as the memory store's is. One answer is cut to the per-answer bound here,
//! before it is written.

use std::sync::Arc;
use std::time::Duration;

use envelope_core::ToolError;
use redis::AsyncCommands as _;
use redis::aio::ConnectionManager;

use crate::pages::Rows;
use crate::store::{ANSWERS_PER_CALL, Stored};

/// What every key this store writes starts with.
pub const REDIS_KEY_PREFIX: &str = "envelope-proxy:answers:";

/// How long a call's answers are kept after its last, unless configured: one hour.
pub const DEFAULT_REDIS_TTL: Duration = Duration::from_secs(3_600);

/// Answers kept in Redis.
pub struct RedisStore {
    connection: ConnectionManager,
    max_answer_bytes: usize,
    ttl: Duration,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// The store at `url` (`redis://host:port/db`), connected now: an error naming why when
    /// it cannot be reached. The connection is made again by itself when it drops.
    pub async fn connect(
        url: &str,
        max_answer_bytes: usize,
        ttl: Duration,
    ) -> Result<RedisStore, String> {
        let client = redis::Client::open(url)
            .map_err(|error| format!("`{url}` is not a Redis URL: {error}"))?;
        let connection = ConnectionManager::new(client)
            .await
            .map_err(|error| format!("cannot reach Redis at `{url}`: {error}"))?;
        Ok(RedisStore {
            connection,
            max_answer_bytes: max_answer_bytes.max(1),
            ttl: ttl.max(Duration::from_secs(1)),
        })
    }

    /// The most one answer kept takes.
    pub fn max_answer_bytes(&self) -> usize {
        self.max_answer_bytes
    }

    /// How long a call's answers are kept after its last.
    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    /// Keeps `rows` for `call`, cut to the per-answer bound.
    pub(crate) async fn keep(
        &self,
        call: &str,
        rows: Rows,
        snapshot: String,
    ) -> Result<Arc<Stored>, ToolError> {
        let stored = Stored::cut(rows, snapshot, self.max_answer_bytes);
        let key = format!("{REDIS_KEY_PREFIX}{call}");
        let last = isize::try_from(ANSWERS_PER_CALL).unwrap_or(isize::MAX) - 1;
        let mut connection = self.connection.clone();
        let written: redis::RedisResult<()> = redis::pipe()
            .atomic()
            .lpush(&key, stored.to_json().to_string())
            .ltrim(&key, 0, last)
            .expire(&key, i64::try_from(self.ttl.as_secs()).unwrap_or(i64::MAX))
            .query_async(&mut connection)
            .await;
        written.map_err(|error| unreachable_store(&error, true))?;
        Ok(Arc::new(stored))
    }

    /// The answers kept for `call`, newest first; an entry that does not read is skipped.
    pub(crate) async fn answers(&self, call: &str) -> Result<Vec<Arc<Stored>>, ToolError> {
        let key = format!("{REDIS_KEY_PREFIX}{call}");
        let mut connection = self.connection.clone();
        let entries: Vec<String> = connection
            .lrange(&key, 0, -1)
            .await
            .map_err(|error| unreachable_store(&error, false))?;
        Ok(entries
            .into_iter()
            .filter_map(|entry| serde_json::from_str::<serde_json::Value>(&entry).ok())
            .filter_map(Stored::from_json)
            .map(Arc::new)
            .collect())
    }
}

/// The error of a call whose answer could not be kept (`ran`: the tool ran, and its answer is
/// lost) or whose page could not be read: Redis unreachable, a retry may help.
fn unreachable_store(error: &redis::RedisError, ran: bool) -> ToolError {
    tracing::warn!(%error, "the result store (Redis) failed");
    let message = if ran {
        "the tool ran, but its answer could not be kept for paging: the result store (Redis) \
         is unreachable"
    } else {
        "the result store (Redis) is unreachable: the page cannot be read now"
    };
    crate::errors::upstream_error(crate::errors::RESULT_STORE_UNAVAILABLE, message).with_hint(
        if ran {
            "retry later; the retry runs the tool again"
        } else {
            "retry the same page later"
        },
    )
}

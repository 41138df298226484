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
//!
//! An answer Redis cannot take when it is kept (Redis down, or out of memory) is not lost: the
//! tool already ran, and a retry would run it again. It is kept in this replica's memory
//! instead (bounded as the memory store is), and its pages are served from there by this
//! replica, by Redis's answers or without them; another replica refuses them as stale, with a
//! `rerun`, as it does an evicted answer.

use std::sync::Arc;
use std::time::Duration;

use envelope_core::ToolError;
use redis::AsyncCommands as _;
use redis::aio::ConnectionManager;

use crate::pages::Rows;
use crate::store::{ANSWERS_PER_CALL, MemoryStore, Stored};

/// What every key this store writes starts with.
pub const REDIS_KEY_PREFIX: &str = "envelope-proxy:answers:";

/// How long a call's answers are kept after its last, unless configured: one hour.
pub const DEFAULT_REDIS_TTL: Duration = Duration::from_secs(3_600);

/// Answers kept in Redis.
pub struct RedisStore {
    connection: ConnectionManager,
    max_answer_bytes: usize,
    ttl: Duration,
    /// The answers Redis could not take, kept here.
    fallback: MemoryStore,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("max_answer_bytes", &self.max_answer_bytes)
            .field("ttl", &self.ttl)
            .field("fallback_bytes", &self.fallback.bytes())
            .finish_non_exhaustive()
    }
}

impl RedisStore {
    /// The store at `url` (`redis://host:port/db`), connected now: an error naming why when
    /// it cannot be reached. The connection is made again by itself when it drops. The
    /// answers Redis cannot take are kept in this process, at most `fallback_bytes` together.
    pub async fn connect(
        url: &str,
        max_answer_bytes: usize,
        ttl: Duration,
        fallback_bytes: usize,
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
            fallback: MemoryStore::new(fallback_bytes, max_answer_bytes),
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

    /// Keeps `rows` for `call`, cut to the per-answer bound: in Redis, else in this process.
    pub(crate) async fn keep(&self, call: &str, rows: Rows, snapshot: String) -> Arc<Stored> {
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
        match written {
            Ok(()) => Arc::new(stored),
            Err(error) => {
                tracing::warn!(
                    %error,
                    "the result store (Redis) did not take an answer: kept in this process"
                );
                self.fallback.keep_cut(call.to_owned(), stored)
            }
        }
    }

    /// The answers kept for `call`: Redis's, newest first (an entry that does not read is
    /// skipped), then this process's. An error only when Redis cannot be read and this
    /// process keeps none.
    pub(crate) async fn answers(&self, call: &str) -> Result<Vec<Arc<Stored>>, ToolError> {
        let key = format!("{REDIS_KEY_PREFIX}{call}");
        let mut connection = self.connection.clone();
        let entries: redis::RedisResult<Vec<String>> = connection.lrange(&key, 0, -1).await;
        let kept_here = self.fallback.answers(call);
        let entries = match entries {
            Ok(entries) => entries,
            Err(error) if kept_here.is_empty() => return Err(unreachable_store(&error)),
            Err(error) => {
                tracing::warn!(%error, "the result store (Redis) failed: paging from this process");
                Vec::new()
            }
        };
        Ok(entries
            .into_iter()
            .filter_map(|entry| serde_json::from_str::<serde_json::Value>(&entry).ok())
            .filter_map(Stored::from_json)
            .map(Arc::new)
            .chain(kept_here)
            .collect())
    }
}

/// The error of a page that could not be read: Redis unreachable, a retry may help.
fn unreachable_store(error: &redis::RedisError) -> ToolError {
    tracing::warn!(%error, "the result store (Redis) failed");
    crate::errors::upstream_error(
        crate::errors::RESULT_STORE_UNAVAILABLE,
        "the result store (Redis) is unreachable: the page cannot be read now",
    )
    .with_hint("retry the same page later")
}

//! How long a client has left what it was given untaken: a socket it stopped reading, an
//! answer's frame it did not come back for. The moment it started is kept in an atomic, so the
//! task serving the client sets it on every write or poll, without a lock, and a watchdog waits
//! on it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

// Tokio's clock, so that a test with time paused sees a stall last.
use tokio::time::Instant;

/// Milliseconds from `epoch` to now.
pub(crate) fn millis_since(epoch: Instant) -> u64 {
    u64::try_from(epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
}

/// Since when a client has left something untaken, if it has.
pub(crate) struct Stall {
    epoch: Instant,
    /// Milliseconds from `epoch` (plus one, so that `0` means none) to the moment it started.
    since: AtomicU64,
}

impl Stall {
    /// No stall, its moments counted from `epoch`.
    pub(crate) fn new(epoch: Instant) -> Self {
        Stall {
            epoch,
            since: AtomicU64::new(0),
        }
    }

    /// A stall from now on, unless one has already started.
    pub(crate) fn start(&self) {
        let now = millis_since(self.epoch).saturating_add(1);
        let _ = self
            .since
            .compare_exchange(0, now, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// A stall from now on, whether or not one had started.
    pub(crate) fn restart(&self) {
        let now = millis_since(self.epoch).saturating_add(1);
        self.since.store(now, Ordering::Relaxed);
    }

    /// No stall: the client took what it was given.
    pub(crate) fn end(&self) {
        self.since.store(0, Ordering::Relaxed);
    }

    /// Whether a stall has lasted `limit` by now.
    pub(crate) fn has_lasted(&self, limit: Duration) -> bool {
        let since = self.since.load(Ordering::Relaxed);
        since != 0 && (self.epoch + Duration::from_millis(since - 1)).elapsed() >= limit
    }

    /// Waits until a stall has lasted `limit`. Checked every half `limit` at most while there
    /// is none, so it ends within one and a half `limit` of the stall's start.
    pub(crate) async fn lasted(&self, limit: Duration) {
        loop {
            let since = self.since.load(Ordering::Relaxed);
            let wake = if since == 0 {
                Instant::now() + limit / 2
            } else {
                let since = self.epoch + Duration::from_millis(since - 1);
                if since.elapsed() >= limit {
                    return;
                }
                since + limit
            };
            tokio::time::sleep_until(wake).await;
        }
    }
}

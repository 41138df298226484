//! Turns for a blocking tool's calls: at most so many run at once, the rest wait, so that a
//! flood of one tool's heavy calls cannot hold every thread of the blocking pool and starve
//! other callers of the cores.
//!
//! A tool whose calls are quick takes no turns: its calls, however many, each hold a thread
//! for too short a time to starve anyone, and making them wait their turn would cost more than
//! it protects (each would idle a thread of the pool between calls). So a tool takes turns
//! until its calls are seen to be quick: while the typical time of its recent calls (a moving
//! average) is at least [`QUICK`], or before any has finished.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::{Semaphore, SemaphorePermit};

/// A call typically shorter than this takes no turn.
pub(crate) const QUICK: Duration = Duration::from_millis(2);

/// The typical time before any call has finished: not quick.
const UNKNOWN: u64 = u64::MAX;

/// One blocking tool's turns.
pub(crate) struct Turns {
    permits: Semaphore,
    /// A moving average of its calls' times, in microseconds ([`UNKNOWN`] before the first).
    typical_micros: AtomicU64,
}

impl Turns {
    /// At most `calls` at once (at least one).
    pub(crate) fn new(calls: usize) -> Turns {
        Turns {
            permits: Semaphore::new(calls.max(1)),
            typical_micros: AtomicU64::new(UNKNOWN),
        }
    }

    /// Waits for a turn unless the tool's calls are quick: the turn is held until dropped.
    pub(crate) async fn take(&self) -> Option<SemaphorePermit<'_>> {
        if self.typical_micros.load(Ordering::Relaxed) < micros(QUICK) {
            return None;
        }
        // Never closed: a turn always comes.
        self.permits.acquire().await.ok()
    }

    /// Records how long a call took. Calls racing here may lose one another's sample; the
    /// average only steers, it counts nothing.
    pub(crate) fn took(&self, time: Duration) {
        let sample = micros(time);
        let typical = self.typical_micros.load(Ordering::Relaxed);
        let next = if typical == UNKNOWN {
            sample
        } else {
            // An eighth of the way to the newest: a few slow calls in a row make it slow.
            typical - typical / 8 + sample / 8
        };
        self.typical_micros.store(next, Ordering::Relaxed);
    }
}

fn micros(time: Duration) -> u64 {
    u64::try_from(time.as_micros()).unwrap_or(u64::MAX - 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_tool_takes_turns_until_its_calls_are_seen_quick_and_again_once_slow() {
        let turns = Turns::new(1);
        let first = turns.take().await;
        assert!(first.is_some(), "nothing known: a turn");
        drop(first);
        turns.took(Duration::from_micros(50));
        assert!(turns.take().await.is_none(), "quick: no turn");
        for _ in 0..40 {
            turns.took(Duration::from_millis(30));
        }
        assert!(turns.take().await.is_some(), "slow again: a turn");
    }
}

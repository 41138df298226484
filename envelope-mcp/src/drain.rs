//! Calls in flight, counted so that a server shutting down can wait for them to finish.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

/// How many calls a server is running, and a signal when that reaches zero.
#[derive(Debug, Default)]
pub(crate) struct Calls {
    running: AtomicUsize,
    idle: Notify,
}

/// One call in flight: counted from [`Calls::begin`] until dropped.
#[derive(Debug)]
pub(crate) struct Running(Arc<Calls>);

impl Calls {
    /// Counts a call until the returned guard is dropped.
    pub(crate) fn begin(self: &Arc<Self>) -> Running {
        self.running.fetch_add(1, Ordering::SeqCst);
        Running(Arc::clone(self))
    }

    /// How many calls are running now.
    pub(crate) fn running(&self) -> usize {
        self.running.load(Ordering::SeqCst)
    }

    /// Waits until no call runs, or `limit` has passed; `true` when every call finished.
    #[cfg_attr(not(feature = "http"), allow(dead_code))]
    pub(crate) async fn drained(&self, limit: Duration) -> bool {
        let wait = async {
            loop {
                // Registered before the count is read, so a call ending in between still
                // wakes this waiter.
                let idle = self.idle.notified();
                tokio::pin!(idle);
                idle.as_mut().enable();
                if self.running() == 0 {
                    return;
                }
                idle.await;
            }
        };
        tokio::time::timeout(limit, wait).await.is_ok()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        if self.0.running.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn draining_waits_for_the_last_call() {
        let calls = Arc::new(Calls::default());
        assert!(calls.drained(Duration::from_millis(1)).await);
        let first = calls.begin();
        let second = calls.begin();
        assert_eq!(calls.running(), 2);
        assert!(!calls.drained(Duration::from_millis(20)).await);
        let waiter = tokio::spawn({
            let calls = Arc::clone(&calls);
            async move { calls.drained(Duration::from_secs(10)).await }
        });
        drop(first);
        tokio::time::sleep(Duration::from_millis(10)).await;
        assert!(!waiter.is_finished());
        drop(second);
        assert!(waiter.await.expect("joins"));
    }
}

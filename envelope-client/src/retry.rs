//! When a failed call is sent again, and how long the client waits first: decided by the
//! envelope's error, paced by its `retry_after_ms` or a jittered exponential backoff, bounded by
//! a ceiling on every wait and a deadline on the whole.

use std::time::Duration;

use envelope_core::{Category, ToolError};

/// How [`Client::call`](crate::Client::call) retries.
///
/// A failed call is sent again only when all of these hold:
///
/// - its error says `retryable: true`, and its category is one a repeat of the same call can
///   get past (not `validation`, `permission` or `module_disabled`, which need other arguments,
///   other rights or another server configuration, whatever `retryable` says);
/// - the tool may run twice: the server's listing annotates it `idempotentHint: true` or
///   `readOnlyHint: true`, or the error says the body never ran (its code is one of
///   [`NOT_RUN_CODES`](envelope_core::NOT_RUN_CODES), or `error.data.ran` is `false`);
/// - attempts are left ([`max_attempts`](Self::max_attempts)), and the wait ends before the
///   [`deadline`](Self::deadline).
///
/// The wait is the error's `retry_after_ms` when it gives one, else a full-jitter exponential
/// backoff (a uniformly random wait up to `base_delay × 2^(attempt − 1)`); either is clamped to
/// [`max_delay`](Self::max_delay). A `retry_after` that ends past the deadline is not waited
/// for: the call stops at once with
/// [`ClientError::RetryAfterPastDeadline`](crate::ClientError::RetryAfterPastDeadline).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Calls made at most, the first included. 1 never retries.
    pub max_attempts: u32,
    /// The backoff's first step.
    pub base_delay: Duration,
    /// The ceiling of every wait, `retry_after` included.
    pub max_delay: Duration,
    /// How long the whole may take, waits and calls together.
    pub deadline: Duration,
    /// Whether the backoff is jittered (full jitter). Off, it waits its whole step: for tests
    /// and for callers that pace themselves.
    pub jitter: bool,
}

impl Default for RetryPolicy {
    /// 4 attempts, a backoff from 200 ms, waits of at most 10 s, 60 s in all, jittered.
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base_delay: Duration::from_millis(200),
            max_delay: Duration::from_secs(10),
            deadline: Duration::from_secs(60),
            jitter: true,
        }
    }
}

impl RetryPolicy {
    /// One attempt, never a retry; the deadline still bounds the call.
    pub fn never() -> Self {
        RetryPolicy {
            max_attempts: 1,
            ..RetryPolicy::default()
        }
    }

    /// What follows the failed attempt `attempt` (1-based) that answered `error`, for a tool
    /// that may run twice (`idempotent`) or not, with `remaining` left of the deadline: the
    /// one decision [`Client::call`](crate::Client::call) makes after each failure, and the
    /// one the kits' shared cases (`clients/cases/retry.json`) hold both kits to.
    ///
    /// ```
    /// use std::time::Duration;
    /// use envelope_client::{RetryDecision, RetryPolicy};
    /// use envelope_core::ToolError;
    ///
    /// let policy = RetryPolicy { jitter: false, ..RetryPolicy::default() };
    /// let busy = ToolError::transient("busy").with_retry_after(Duration::from_millis(1500));
    /// let decided = policy.decide(&busy, true, 1, Duration::from_secs(60));
    /// assert_eq!(decided, RetryDecision::Retry(Duration::from_millis(1500)));
    /// ```
    pub fn decide(
        &self,
        error: &ToolError,
        idempotent: bool,
        attempt: u32,
        remaining: Duration,
    ) -> RetryDecision {
        if !retryable(error) {
            return RetryDecision::Return(NotRetried::NotRetryable);
        }
        if !(idempotent || error.did_not_run()) {
            return RetryDecision::Return(NotRetried::Unsafe);
        }
        if attempt >= self.max_attempts {
            return RetryDecision::Return(NotRetried::Exhausted);
        }
        if let Some(asked) = error.retry_after()
            && asked >= remaining
        {
            return RetryDecision::RetryAfterPastDeadline(asked);
        }
        let wait = self.wait(error, attempt);
        if wait >= remaining {
            return RetryDecision::PastDeadline;
        }
        RetryDecision::Retry(wait)
    }

    /// The backoff before attempt `attempt + 1`, after `attempt` failed ones (1-based):
    /// `base_delay × 2^(attempt − 1)`, clamped to `max_delay`, then jittered.
    pub fn backoff(&self, attempt: u32) -> Duration {
        let step = self
            .base_delay
            .saturating_mul(2u32.saturating_pow(attempt.saturating_sub(1)))
            .min(self.max_delay);
        if self.jitter { full_jitter(step) } else { step }
    }

    /// The wait `error` asks for, or the backoff after `attempt` failed attempts; clamped to
    /// `max_delay`.
    pub fn wait(&self, error: &ToolError, attempt: u32) -> Duration {
        match error.retry_after() {
            Some(asked) => asked.min(self.max_delay),
            None => self.backoff(attempt),
        }
    }
}

/// Whether `error` lets a repeat of the same call succeed at all: it says `retryable`, and its
/// category is not one the same call can never get past (other arguments, other rights or
/// another server configuration are needed), whatever `retryable` says.
fn retryable(error: &ToolError) -> bool {
    error.retryable() && !NEVER_RETRIED.contains(&error.category())
}

/// The categories a repeat of the same call can never get past.
pub const NEVER_RETRIED: [Category; 3] = [
    Category::Validation,
    Category::Permission,
    Category::ModuleDisabled,
];

/// What follows a failed attempt: [`RetryPolicy::decide`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryDecision {
    /// Call again after this wait.
    Retry(Duration),
    /// Return the failed envelope as it is: a tool's failure is data.
    Return(NotRetried),
    /// The error asks to wait this long, past the deadline: stop at once rather than sleep
    /// past it ([`ClientError::RetryAfterPastDeadline`](crate::ClientError::RetryAfterPastDeadline)).
    RetryAfterPastDeadline(Duration),
    /// The backoff would end past the deadline
    /// ([`ClientError::DeadlineExceeded`](crate::ClientError::DeadlineExceeded)).
    PastDeadline,
}

/// Why a failed envelope is returned rather than retried.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum NotRetried {
    /// The error says `retryable: false`, or its category is in [`NEVER_RETRIED`].
    NotRetryable,
    /// The tool is not annotated idempotent or read-only, and the error does not say nothing
    /// ran: a repeat could run its effect twice.
    Unsafe,
    /// The policy's attempts are spent.
    Exhausted,
}

/// A uniformly random duration from zero to `step`. The operating system's random source
/// failing (it does not, in practice) waits the whole step.
fn full_jitter(step: Duration) -> Duration {
    let Ok(random) = getrandom::u64() else {
        return step;
    };
    let nanos = u64::try_from(step.as_nanos()).unwrap_or(u64::MAX);
    if nanos == 0 {
        return step;
    }
    Duration::from_nanos(random % nanos.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_up_to_the_ceiling() {
        let policy = RetryPolicy {
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(500),
            jitter: false,
            ..RetryPolicy::default()
        };
        let steps: Vec<u128> = (1..=5).map(|n| policy.backoff(n).as_millis()).collect();
        assert_eq!(steps, [100, 200, 400, 500, 500]);
        assert_eq!(policy.backoff(u32::MAX), Duration::from_millis(500));
    }

    #[test]
    fn the_jitter_stays_within_the_step() {
        let policy = RetryPolicy::default();
        for attempt in 1..20 {
            let step = RetryPolicy {
                jitter: false,
                ..policy.clone()
            }
            .backoff(attempt);
            assert!(policy.backoff(attempt) <= step);
        }
    }

    #[test]
    fn retry_after_is_honoured_up_to_the_ceiling() {
        let policy = RetryPolicy::default();
        let soon = ToolError::transient("busy").with_retry_after(Duration::from_millis(1500));
        assert_eq!(policy.wait(&soon, 1), Duration::from_millis(1500));
        let late = ToolError::transient("busy").with_retry_after(Duration::from_secs(3600));
        assert_eq!(policy.wait(&late, 1), policy.max_delay);
    }

    #[test]
    fn the_envelope_and_the_listing_decide() {
        let policy = RetryPolicy::default();
        // Whether a first failure is sent again, the deadline far off.
        let may_retry = |error: &ToolError, idempotent: bool| {
            matches!(
                policy.decide(error, idempotent, 1, Duration::from_secs(60)),
                RetryDecision::Retry(_)
            )
        };
        let transient = ToolError::transient("flaky");
        assert!(may_retry(&transient, true));
        assert!(!may_retry(&transient, false), "not idempotent");
        let said = ToolError::transient("queued").with_data(serde_json::json!({"ran": false}));
        assert!(may_retry(&said, false), "the body never ran");
        assert!(!may_retry(&ToolError::validation("bad"), true));
        let odd = ToolError::validation("bad").with_retryable(true);
        assert!(!may_retry(&odd, true), "the same arguments fail again");
        let no = ToolError::transient("gave up").with_retryable(false);
        assert!(!may_retry(&no, true));
    }
}

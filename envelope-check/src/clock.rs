//! A run's clock: how long the next request may wait, so that no wait outlasts the call
//! timeout or the run's time budget.

use std::time::{Duration, Instant};

use super::CheckConfig;

/// When the run started, and what bounds its waits.
pub(super) struct Clock {
    started: Instant,
    budget: Option<Duration>,
    call_timeout: Duration,
}

impl Clock {
    /// Starts the clock of a run configured by `config`.
    pub(super) fn start(config: &CheckConfig) -> Self {
        Clock {
            started: Instant::now(),
            budget: config.time_budget,
            call_timeout: config.call_timeout,
        }
    }

    /// The time left of the budget; `None` without one.
    fn time_left(&self) -> Option<Duration> {
        self.budget
            .map(|budget| budget.saturating_sub(self.started.elapsed()))
    }

    /// Whether the budget is spent.
    pub(super) fn out_of_time(&self) -> bool {
        self.time_left().is_some_and(|left| left.is_zero())
    }

    /// How long the next request may wait: the call timeout, within the time left.
    pub(super) fn wait(&self) -> Duration {
        self.time_left()
            .map_or(self.call_timeout, |left| left.min(self.call_timeout))
    }
}

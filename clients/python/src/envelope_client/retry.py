"""The retry policy (the same as the Rust kit's).

- **Whether**: the error's `retryable` and its category decide. Only a `retryable: true` error
  of a category that describes the server's state (`transient`, `unavailable`, `internal`) is
  retried; `validation`, `permission`, `not_found` and `module_disabled` never are (the same
  call cannot succeed), whatever `retryable` says.
- **Safety**: a tool whose listing does not annotate it `idempotentHint: true` or
  `readOnlyHint: true` is retried only when its error says nothing ran: an `error.code` the
  library emits only before a tool body runs (`NOTHING_RAN_CODES`), or `error.data.ran` false.
- **Pacing**: `retry_after_ms` when the error gives one, else jittered exponential backoff
  (`base_delay_s * multiplier ** (attempt - 1)`, full jitter over its upper `jitter` fraction);
  every wait is clamped to `max_delay_s`, the ceiling.
- **Bounds**: at most `max_attempts` calls; the whole call (calls and waits) within
  `deadline_s`. A `retry_after_ms` that reaches past the deadline stops at once with
  `RetryAfterTooLong` instead of sleeping; a backoff that would is `DeadlineExceeded`.

`sleep` and `clock` are injectable (a fake clock in tests: nothing sleeps for real); `random`
draws the jitter.
"""

from __future__ import annotations

import random as _random
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import anyio

from .envelope import ToolError

# `error.code`s the library emits only before a tool body runs: nothing ran, so a retry is safe
# even for a tool that is not idempotent.
# `envelope_core::NOT_RUN_CODES`, as `docs/CONTRACT.md` lists them (a test holds the two equal).
NOTHING_RAN_CODES = frozenset(
    {
        "MODULE_DISABLED",
        "arguments_not_object",
        "unknown_arg",
        "invalid_arguments",
        "invalid_argument",
        "invalid_control",
        "insufficient_scope",
        "INVALID_CONTINUATION",
        "CONTINUATION_SCOPE_MISMATCH",
        "STALE_CONTINUATION",
        "MIXED_CONTINUATION_FORMS",
        "INVALID_LIMIT",
    }
)

# Categories a retry of the same call can help with (when the error says `retryable`).
RETRYABLE_CATEGORIES = frozenset({"transient", "unavailable", "internal"})


def nothing_ran(error: ToolError) -> bool:
    """Whether the error says the tool's body never ran."""
    if error.code in NOTHING_RAN_CODES:
        return True
    return isinstance(error.data, dict) and error.data.get("ran") is False


@dataclass
class RetryPolicy:
    """How a failed call is retried; see the module's documentation."""

    max_attempts: int = 4
    base_delay_s: float = 0.25
    multiplier: float = 2.0
    jitter: float = 0.5
    max_delay_s: float = 10.0
    deadline_s: float = 120.0
    retry_categories: frozenset[str] = RETRYABLE_CATEGORIES
    sleep: Callable[[float], Awaitable[Any]] = anyio.sleep
    clock: Callable[[], float] = time.monotonic
    random: Callable[[], float] = field(default_factory=lambda: _random.Random().random)

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ValueError("max_attempts is at least 1")
        if self.max_delay_s < 0 or self.base_delay_s < 0 or self.deadline_s <= 0:
            raise ValueError("delays are not negative, and the deadline is positive")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter is a fraction from 0 to 1")

    def retryable(self, error: ToolError) -> bool:
        """Whether the error allows a retry at all (before idempotency)."""
        return error.retryable and error.category in self.retry_categories

    def safe_to_repeat(self, error: ToolError, idempotent: bool) -> bool:
        """Whether repeating the call cannot run its effect twice."""
        return idempotent or nothing_ran(error)

    def backoff_s(self, attempt: int) -> float:
        """The jittered backoff after failed attempt `attempt` (1-based), before the ceiling."""
        full = self.base_delay_s * self.multiplier ** max(0, attempt - 1)
        full = min(full, self.max_delay_s)
        return full * (1 - self.jitter) + full * self.jitter * self.random()

    def wait_s(self, error: ToolError, attempt: int) -> float:
        """The wait before the next attempt, clamped to the ceiling."""
        if error.retry_after_ms is not None:
            wanted = error.retry_after_ms / 1000
        else:
            wanted = self.backoff_s(attempt)
        return min(max(wanted, 0.0), self.max_delay_s)

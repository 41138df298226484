"""The retry policy (the same as the Rust kit's, held by the shared cases in `clients/cases/retry.json`).

- **Whether**: the error's `retryable` decides, except for the categories a repeat of the same
  call can never get past (`NEVER_RETRIED_CATEGORIES`: `validation`, `permission`,
  `module_disabled`, which need other arguments, other rights or another configuration),
  whatever `retryable` says.
- **Safety**: a tool whose listing does not annotate it `idempotentHint: true` or
  `readOnlyHint: true` is retried only when its error says nothing ran: `error.data.ran` false,
  or, when `data.ran` says nothing, an `error.code` the library emits only before a tool body
  runs (`NOTHING_RAN_CODES`). `ran: true` overrides the code.
- **Pacing**: `retry_after_ms` when the error gives one, else a jittered exponential backoff
  (`base_delay_s * multiplier ** (attempt - 1)`, full jitter by default: a uniformly random wait
  up to the step); every wait is clamped to `max_delay_s`, the ceiling.
- **Bounds**: at most `max_attempts` calls, after which the last failure is returned as it is;
  the whole call (calls and waits) within `deadline_s`. A `retry_after_ms` that reaches past the
  deadline stops at once with `RetryAfterTooLong` instead of sleeping; a backoff that would is
  `DeadlineExceeded`.

`RetryPolicy.decide` is that whole rule, the one decision `call` makes after each failure.
`sleep` and `clock` are injectable (a fake clock in tests: nothing sleeps for real); `random`
draws the jitter. `RetryPolicy.never()` turns retries off.
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

# Categories a repeat of the same call can never get past, whatever `retryable` says: the Rust
# kit's `NEVER_RETRIED`.
NEVER_RETRIED_CATEGORIES = frozenset({"validation", "permission", "module_disabled"})


def nothing_ran(error: ToolError) -> bool:
    """Whether the error says the tool's body never ran: `data.ran` when it says, else its code."""
    ran = error.data.get("ran") if isinstance(error.data, dict) else None
    if isinstance(ran, bool):
        return not ran
    return error.code in NOTHING_RAN_CODES


@dataclass(frozen=True)
class Decision:
    """What follows a failed attempt (`RetryPolicy.decide`).

    `action` is one of `"retry"` (after `wait_s`), `"return"` (the failed envelope is the answer;
    `why` is `"not_retryable"`, `"unsafe"` or `"exhausted"`), `"retry_after_past_deadline"` (the
    error asks to wait past the deadline: stop at once) or `"deadline"` (the backoff would end past
    it)."""

    action: str
    wait_s: float = 0.0
    why: str | None = None


@dataclass
class RetryPolicy:
    """How a failed call is retried; see the module's documentation."""

    max_attempts: int = 4
    base_delay_s: float = 0.2
    multiplier: float = 2.0
    jitter: float = 1.0
    max_delay_s: float = 10.0
    deadline_s: float = 60.0
    never_retried: frozenset[str] = NEVER_RETRIED_CATEGORIES
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

    @classmethod
    def never(cls) -> RetryPolicy:
        """One attempt, never a retry; the deadline still bounds the call."""
        return cls(max_attempts=1)

    def retryable(self, error: ToolError) -> bool:
        """Whether the error allows a retry at all (before idempotency)."""
        return error.retryable and error.category not in self.never_retried

    def safe_to_repeat(self, error: ToolError, idempotent: bool) -> bool:
        """Whether repeating the call cannot run its effect twice."""
        return idempotent or nothing_ran(error)

    def backoff_s(self, attempt: int) -> float:
        """The jittered backoff after failed attempt `attempt` (1-based), before the ceiling."""
        full = self.base_delay_s * self.multiplier ** max(0, attempt - 1)
        full = min(full, self.max_delay_s)
        return full * (1 - self.jitter) + full * self.jitter * self.random()

    def decide(self, error: ToolError, idempotent: bool, attempt: int, remaining_s: float) -> Decision:
        """What follows failed attempt `attempt` (1-based) that answered `error`, for a tool that
        may run twice (`idempotent`) or not, with `remaining_s` left of the deadline."""
        if not self.retryable(error):
            return Decision("return", why="not_retryable")
        if not self.safe_to_repeat(error, idempotent):
            return Decision("return", why="unsafe")
        if attempt >= self.max_attempts:
            return Decision("return", why="exhausted")
        if error.retry_after_ms is not None and error.retry_after_ms / 1000 >= remaining_s:
            return Decision("retry_after_past_deadline")
        wait = self.wait_s(error, attempt)
        if wait >= remaining_s:
            return Decision("deadline")
        return Decision("retry", wait_s=wait)

    def wait_s(self, error: ToolError, attempt: int) -> float:
        """The wait before the next attempt, clamped to the ceiling."""
        if error.retry_after_ms is not None:
            wanted = error.retry_after_ms / 1000
        else:
            wanted = self.backoff_s(attempt)
        return min(max(wanted, 0.0), self.max_delay_s)

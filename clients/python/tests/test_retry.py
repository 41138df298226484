"""The retry policy's decisions, without a server."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from envelope_client import NOTHING_RAN_CODES, RetryPolicy, ToolError, nothing_ran


def error(**fields: object) -> ToolError:
    return ToolError.model_validate({"category": "transient", "message": "m", "retryable": True, **fields})


def test_category_and_retryable_decide() -> None:
    policy = RetryPolicy()
    assert policy.retryable(error())
    assert policy.retryable(error(category="unavailable"))
    assert not policy.retryable(error(retryable=False))
    # A `not_found` the tool marks retryable (not there yet) is the tool's word.
    assert policy.retryable(error(category="not_found"))
    for category in ("validation", "permission", "module_disabled"):
        assert not policy.retryable(error(category=category)), category


def test_only_idempotent_tools_or_errors_that_ran_nothing_repeat() -> None:
    policy = RetryPolicy()
    assert policy.safe_to_repeat(error(), idempotent=True)
    assert not policy.safe_to_repeat(error(), idempotent=False)
    assert not policy.safe_to_repeat(error(data={"ran": True}), idempotent=False)
    assert policy.safe_to_repeat(error(data={"ran": False}), idempotent=False)
    for code in NOTHING_RAN_CODES:
        assert nothing_ran(error(code=code)), code
        assert not nothing_ran(error(code=code, data={"ran": True})), code
    # The same list `docs/CONTRACT.md` generates from `envelope_core::NOT_RUN_CODES`.
    contract = (Path(__file__).resolve().parents[3] / "docs" / "CONTRACT.md").read_text()
    line = next(line for line in contract.splitlines() if "says the tool body did nothing" in line)
    listed = line.split("not idempotent:", 1)[1].split(". A server", 1)[0]
    assert NOTHING_RAN_CODES == set(re.findall(r"`([^`]+)`", listed))


@pytest.mark.parametrize("draw", [0.0, 0.3, 0.999])
def test_backoff_is_jittered_exponential_and_clamped(draw: float) -> None:
    policy = RetryPolicy(base_delay_s=1, multiplier=2, jitter=0.5, max_delay_s=5, random=lambda: draw)
    for attempt, full in [(1, 1), (2, 2), (3, 4), (4, 5), (10, 5)]:
        wait = policy.wait_s(error(), attempt)
        assert full / 2 <= wait <= full, (attempt, wait)
    assert policy.wait_s(error(retry_after_ms=1200), 1) == 1.2
    assert policy.wait_s(error(retry_after_ms=365 * 86_400_000), 1) == 5


def test_a_policy_that_could_retry_forever_is_refused() -> None:
    with pytest.raises(ValueError):
        RetryPolicy(max_attempts=0)
    with pytest.raises(ValueError):
        RetryPolicy(deadline_s=0)
    with pytest.raises(ValueError):
        RetryPolicy(jitter=2)

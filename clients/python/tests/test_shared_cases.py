"""The kits' shared cases (`clients/cases/*.json`): every promise the Python and Rust kits make,
written once as data, held here for the Python kit (the Rust kit's `tests/shared_cases.rs` runs
the same files). Each case runs through the function the kit itself decides with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp_types import CallToolResult, Tool

from envelope_client import client, paging
from envelope_client import (
    MAX_CONTINUATION_CHARS,
    NEVER_RETRIED_CATEGORIES,
    NOTHING_RAN_CODES,
    STALE_REF_CODES,
    ActionArguments,
    Completeness,
    ContinuationTooLong,
    CursorLoop,
    EnvelopeSchemaError,
    NextAction,
    NotAnEnvelope,
    PageWentBack,
    RetryPolicy,
    ToolNotListed,
    TotalChanged,
    WalkGuard,
    check_action,
    next_call,
    parse_envelope,
    read_result,
)

CASES = Path(__file__).resolve().parents[2] / "cases"


def load(name: str) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((CASES / name).read_text())
    return loaded


def cases(name: str) -> list[Any]:
    return [pytest.param(case, id=case["promise"][:60]) for case in load(name)["cases"]]


def failure(error: dict[str, Any]) -> Any:
    wire = {
        "ok": False,
        "verdict": "ERROR",
        "error": error,
        "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3},
    }
    return parse_envelope(wire).error


def test_the_lists_both_kits_decide_by() -> None:
    codes = load("codes.json")
    assert set(codes["stale_ref_codes"]) == STALE_REF_CODES
    assert set(codes["nothing_ran_codes"]) == NOTHING_RAN_CODES
    assert set(codes["never_retried_categories"]) == NEVER_RETRIED_CATEGORIES
    target_ref = codes["target_ref"]
    assert (target_ref["field"], target_ref["join"], target_ref["max_joined"]) == (
        paging.TARGET_REF_FIELD,
        paging.TARGET_REF_JOIN,
        paging.MAX_JOINED_REFS,
    )


@pytest.mark.parametrize("case", cases("codes.json"))
def test_stale_ref_codes(case: dict[str, Any]) -> None:
    assert (case["code"] in STALE_REF_CODES) == case["expect"]["stale_ref"], case["promise"]


@pytest.mark.parametrize("case", cases("read.json"))
def test_a_result_is_read_as_the_cases_say(case: dict[str, Any]) -> None:
    result = CallToolResult.model_validate(case["result"])
    expect = case["expect"]
    promise = case["promise"]
    if expect["read"] == "envelope":
        envelope = read_result("tool", result)
        assert envelope.ok == expect["ok"], promise
        if "category" in expect:
            assert envelope.error is not None, promise
            assert envelope.error.category == expect["category"], promise
            assert envelope.error.retryable == expect["retryable"], promise
        return
    kind = {"not_an_envelope": NotAnEnvelope, "schema_error": EnvelopeSchemaError}[expect["read"]]
    with pytest.raises(EnvelopeSchemaError) as raised:
        read_result("tool", result)
    assert type(raised.value) is kind, (promise, raised.value)
    if "names" in expect:
        assert expect["names"] in str(raised.value), (promise, str(raised.value))


def test_the_default_policy_is_the_shared_one() -> None:
    defaults = load("retry.json")["default_policy"]
    policy = RetryPolicy()
    assert policy.max_attempts == defaults["max_attempts"]
    assert policy.base_delay_s * 1000 == pytest.approx(defaults["base_delay_ms"])
    assert policy.max_delay_s * 1000 == pytest.approx(defaults["max_delay_ms"])
    assert policy.deadline_s * 1000 == pytest.approx(defaults["deadline_ms"])
    assert defaults["jitter"] == "full" and policy.jitter == 1.0


@pytest.mark.parametrize("case", cases("retry.json"))
def test_a_failed_call_is_retried_as_the_cases_say(case: dict[str, Any]) -> None:
    steady = RetryPolicy(jitter=0.0)
    decision = steady.decide(failure(case["error"]), case["idempotent"], case["attempt"], case["remaining_ms"] / 1000)
    expect = case["expect"]
    assert decision.action == expect["decision"], case["promise"]
    if decision.action == "retry":
        assert decision.wait_s * 1000 == pytest.approx(expect["wait_ms"]), case["promise"]
    if decision.action == "return":
        assert decision.why == expect["why"], case["promise"]


def test_the_next_page_places_are_the_shared_table() -> None:
    places = load("next_page.json")["places"]
    actions = [
        (place["pointer"], place["id"], place["carries"], place["tool"], place["arguments"]) for place in places["actions"]
    ]
    assert tuple(actions) == client.NEXT_PAGE_PLACES
    assert tuple(places["tokens"]) == client.TOKEN_PLACES


@pytest.mark.parametrize("case", cases("next_page.json"))
def test_the_next_page_is_found_where_the_cases_say(case: dict[str, Any]) -> None:
    action = next_call(case["page"], case["tool"], case["arguments"])
    found = None if action is None else {"tool": action.tool, "arguments": action.arguments}
    assert found == case["expect"], case["promise"]


@pytest.mark.parametrize("case", cases("follow.json"))
def test_an_action_is_followed_only_as_the_cases_say(case: dict[str, Any]) -> None:
    tools = {tool["name"]: Tool.model_validate(tool) for tool in load("follow.json")["tools"]}
    action = NextAction.model_validate(case["action"])
    expect = case["expect"]
    if expect["follow"] == "sent":
        check_action(tools, action)
        return
    kind = {"not_listed": ToolNotListed, "arguments": ActionArguments}[expect["follow"]]
    with pytest.raises(kind) as raised:
        check_action(tools, action)
    assert expect["names"] in str(raised.value), (case["promise"], str(raised.value))


def test_the_walk_bound_is_the_shared_one() -> None:
    assert load("walk.json")["max_continuation_chars"] == MAX_CONTINUATION_CHARS


@pytest.mark.parametrize("case", cases("walk.json"))
def test_a_walk_is_checked_as_the_cases_say(case: dict[str, Any]) -> None:
    walk = WalkGuard("search")
    stopped: tuple[int, Exception] | None = None
    for index, step in enumerate(case["steps"]):
        try:
            if "send" in step:
                sent = step["send"]
                chars = sent.get("continuation_chars")
                arguments = {"continuation": "x" * chars} if chars is not None else sent["arguments"]
                walk.sending(sent["tool"], arguments)
            else:
                received = step["receive"]
                walk.received(None if received is None else Completeness.model_validate(received))
        except (CursorLoop, TotalChanged, ContinuationTooLong) as error:
            stopped = (index, error)
            break
    expect = case["expect"]
    if expect["error"] is None:
        assert stopped is None, (case["promise"], stopped)
        return
    assert stopped is not None, case["promise"]
    step, error = stopped
    # `PageWentBack` is a `CursorLoop`: the more specific class is the case's kind.
    kinds = [
        (PageWentBack, "went_back"),
        (CursorLoop, "cursor_repeated"),
        (TotalChanged, "total_changed"),
        (ContinuationTooLong, "continuation_too_long"),
    ]
    kind = next(name for cls, name in kinds if isinstance(error, cls))
    assert (kind, step) == (expect["error"], expect["step"]), (case["promise"], error)

"""The pydantic-ai toolset against the fault server, a scripted `FunctionModel` as the model: a
paged tool's call shows one combined page (cut honestly at the row limit the model or the toolset
sets), a failed envelope is shown as the envelope, and the kit's refusals (a looping cursor, a
year-long wait) reach the model as a failed call naming them, or end the run when asked to."""

from __future__ import annotations

import json
from typing import Any

import pytest

pytest.importorskip("pydantic_ai")

from pydantic_ai import Agent  # noqa: E402
from pydantic_ai.messages import (  # noqa: E402
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel  # noqa: E402

from envelope_client import CursorLoop  # noqa: E402
from envelope_client.pydantic_ai import EnvelopeToolset  # noqa: E402

pytestmark = pytest.mark.anyio


def one_call(tool: str, arguments: dict[str, Any], seen: list[Any]) -> FunctionModel:
    """A model that makes one tool call, keeps what it is shown, and ends."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        parts = messages[-1].parts
        answers = [p for p in parts if getattr(p, "part_kind", "") in ("tool-return", "retry-prompt")]
        if not answers:
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id="c1")])
        seen.append(answers[0])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


async def test_a_paged_tool_is_one_combined_page(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client, max_rows=100, page_size=3)
        await Agent(one_call("numbers", {"total": 11}, seen), toolsets=[toolset]).run("count")
    [shown] = seen
    page = json.loads(shown.model_response_str())
    assert [row["n"] for row in page["data"]["items"]] == list(range(1, 12))
    assert page["completeness"]["complete"] is True and page["completeness"]["returned"] == 11
    assert len(page["meta"]["page_request_ids"]) == 4


async def test_the_models_limit_is_the_rows_it_is_shown(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client, max_rows=100)
        await Agent(one_call("numbers", {"total": 30, "limit": 6}, seen), toolsets=[toolset]).run("x")
    page = json.loads(seen[0].model_response_str())
    assert [row["n"] for row in page["data"]["items"]] == list(range(1, 7))
    completeness = page["completeness"]
    assert (completeness["returned"], completeness["truncated"], completeness["complete"]) == (6, True, False)
    [action] = [a for a in page["next_actions"] if a["id"] == "next-page"]
    assert action["arguments"]["continuation"] == "p6"


async def test_a_failed_envelope_is_shown_as_is(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client)
        await Agent(one_call("missing", {"key": "m"}, seen), toolsets=[toolset]).run("x")
    page = json.loads(seen[0].model_response_str())
    assert page["ok"] is False and page["error"]["category"] == "validation"


async def test_the_kits_refusals_reach_the_model_typed(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client)
        await Agent(one_call("looping", {}, seen), toolsets=[toolset]).run("x")
        assert "CursorLoop" in seen[0].model_response_str()
        seen.clear()
        await Agent(one_call("year_wait", {"key": "y"}, seen), toolsets=[toolset]).run("x")
        assert "RetryAfterTooLong" in seen[0].model_response_str()
        raising = EnvelopeToolset(client, kit_errors="raise")
        with pytest.raises(CursorLoop):
            await Agent(one_call("looping", {}, []), toolsets=[raising]).run("x")


def copies_the_next_page(tool: str, arguments: dict[str, Any], seen: list[Any]) -> FunctionModel:
    """A model that calls `tool`, then calls the `next-page` action it is shown exactly as given
    (as a model copies what the answer offers), keeps both answers, and ends."""

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answers = [p for p in messages[-1].parts if getattr(p, "part_kind", "") == "tool-return"]
        if not answers:
            return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id="c1")])
        seen.append(answers[0])
        if len(seen) == 1:
            page = json.loads(answers[0].model_response_str())
            [action] = [a for a in page["next_actions"] if a["id"] == "next-page"]
            return ModelResponse(parts=[ToolCallPart(action["tool"], action["arguments"], tool_call_id="c2")])
        return ModelResponse(parts=[TextPart("done")])

    return FunctionModel(model)


async def test_following_a_cut_combined_page_goes_on_up_to_the_toolsets_limit(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client, max_rows=100)
        agent = Agent(copies_the_next_page("numbers", {"total": 30, "limit": 6}, seen), toolsets=[toolset])
        await agent.run("count")
    first, rest = (json.loads(answer.model_response_str()) for answer in seen)
    assert [row["n"] for row in first["data"]["items"]] == list(range(1, 7))
    # The action's `limit` is the server's page size, not the rows the model wants: the rest
    # comes whole, not one page of six.
    assert [row["n"] for row in rest["data"]["items"]] == list(range(7, 31))
    assert rest["completeness"]["complete"] is True


async def test_the_server_instructions_reach_the_model_unless_turned_off(faults: Any) -> None:
    shown: dict[str, Any] = {}

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        shown["instructions"] = info.instructions
        return ModelResponse(parts=[TextPart("done")])

    async with faults() as client:
        await Agent(FunctionModel(model), toolsets=[EnvelopeToolset(client)]).run("x")
        assert "branch on `ok`" in (shown["instructions"] or "")
        quiet = EnvelopeToolset(client, include_instructions=False)
        await Agent(FunctionModel(model), toolsets=[quiet]).run("x")
        assert not shown["instructions"]


async def test_a_plain_tool_of_a_mixed_server_is_shown_as_it_came(faults: Any) -> None:
    seen: list[Any] = []
    async with faults() as client:
        toolset = EnvelopeToolset(client)
        await Agent(one_call("weather", {"city": "Oslo"}, seen), toolsets=[toolset]).run("x")
    shown = json.loads(seen[0].model_response_str())
    assert shown["envelope"] is False
    assert "sunny in Oslo" in shown["text"]

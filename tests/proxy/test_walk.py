"""A megabyte read by an agent through a real framework nobody here wrote: pydantic-ai, its
`FunctionModel` standing in for the LLM, reads one 1 MB text file through the official
filesystem server (npm, pinned) directly and through `envelope-proxy`, and what the framework
shows its model is counted in exact tokens (`target/debug/xtask count-tokens`).

Directly, the one answer is the whole file. Through the proxy, the model is shown one page at a
time, each within the budget, and follows the `next-page` action of the page it was last shown,
calling the action's `tool` with its `arguments` copied verbatim (the model adds nothing); the
rows of every page joined are the file, byte for byte. Both totals, the pages and the largest
answer are printed (`pytest -s` shows them).
"""

from __future__ import annotations

import json
import random
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.client.transports import StdioTransport
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from proxied import BUDGET_CHARS, HERE, XTASK, BUILD, environment, filesystem_server, require, through_proxy

pytestmark = pytest.mark.anyio
TIMEOUT = 300
MAX_TURNS = 200


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder holding `big.txt`: a megabyte of text the proxy was not written against (words of
    the Python standard library's own word list, seeded), with a few lines far longer than a page."""
    root = tmp_path_factory.mktemp("walk")
    words = "the of and to in is that for it as was with be by on not he this are or his from at".split()
    seeded = random.Random(20261206)
    lines, size = [], 0
    while size < 1_000_000:
        count = 4_000 if seeded.random() < 0.005 else seeded.randint(1, 30)
        line = " ".join(seeded.choice(words) for _ in range(count))
        lines.append(line)
        size += len(line) + 1
    (root / "big.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


class Reader:
    """The scripted model: it reads `path`, then follows the `next-page` action of the last page
    it was shown, as given, until there is none."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.turns = 0
        self.rows: list[str] = []
        self.followed: list[dict[str, Any]] = []

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.turns += 1
        assert self.turns <= MAX_TURNS, f"the walk did not end after {MAX_TURNS} turns"
        shown = last_tool_return(messages)
        if shown is None:
            return self.call("read_text_file", {"path": self.path})
        answer = json.loads(shown)
        if isinstance(answer, dict) and "ok" in answer:
            assert answer["ok"] is True, answer.get("error")
            self.rows += answer["data"]
            actions = [a for a in answer.get("next_actions", []) if a.get("id") == "next-page"]
            if actions:
                [action] = actions
                self.followed.append(action)
                return self.call(action["tool"], action["arguments"])
        return ModelResponse(parts=[TextPart("read")])

    def call(self, tool: str, arguments: dict[str, Any]) -> ModelResponse:
        return ModelResponse(parts=[ToolCallPart(tool, arguments, tool_call_id=f"call-{self.turns}")])


def last_tool_return(messages: list[ModelMessage]) -> str | None:
    returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
    if not returns:
        return None
    [shown] = returns
    return shown.model_response_str()


def shown_by_tools(messages: list[ModelMessage]) -> list[str]:
    return [
        part.model_response_str()
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


async def run(command: list[str], path: str) -> tuple[Reader, list[ModelMessage]]:
    program, *args = command
    transport = StdioTransport(command=program, args=args, env=environment(), cwd=str(HERE), keep_alive=False)
    toolset = MCPToolset(transport, tool_error_behavior="error")
    reader = Reader(path)
    agent = Agent(FunctionModel(reader), toolsets=[toolset])
    with anyio.fail_after(TIMEOUT):
        result = await agent.run(f"Read {path}.")
    return reader, result.all_messages()


def count_tokens(texts: list[str], folder: Path) -> int:
    """The exact `cl100k_base` tokens of the texts, summed (one tool return, one message)."""
    require(XTASK, f"build it with `{BUILD}`")
    folder.mkdir()
    files = []
    for index, shown in enumerate(texts):
        file = folder / f"{index:04}.txt"
        file.write_text(shown, encoding="utf-8")
        files.append(str(file))
    run = subprocess.run([str(XTASK), "count-tokens", *files], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    return sum(json.loads(line)["cl100k_base"] for line in run.stdout.splitlines())


async def test_a_megabyte_through_the_proxy_is_shown_a_budget_at_a_time_and_reached_whole(
    folder: Path, tmp_path: Path
) -> None:
    path = str(folder / "big.txt")
    content = (folder / "big.txt").read_text(encoding="utf-8")
    server = filesystem_server(folder)

    _, direct_messages = await run(server, path)
    direct_shown = shown_by_tools(direct_messages)
    assert len(direct_shown) == 1
    assert len(direct_shown[0]) >= len(content)

    reader, messages = await run(through_proxy(server), path)
    shown = shown_by_tools(messages)
    assert "".join(reader.rows) == content, "the pages joined are the file"
    assert len(shown) == len(reader.followed) + 1
    largest = max(len(page) for page in shown)
    assert largest <= BUDGET_CHARS, largest
    # Each call after the first was the previous page's action, exactly: nothing added.
    calls = [
        part.args_as_dict()
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    assert calls[1:] == [action["arguments"] for action in reader.followed]
    assert all(set(call) == {"path", "continuation"} for call in calls[1:]), calls[1]

    direct_tokens = count_tokens(direct_shown, tmp_path / "direct")
    proxy_tokens = count_tokens(shown, tmp_path / "proxy")
    print(
        f"\n1 MB read through server-filesystem: directly 1 answer of {direct_tokens} tokens "
        f"(cl100k_base) shown at once; through envelope-proxy {len(shown)} pages, "
        f"{proxy_tokens} tokens in all, the largest page {largest} characters"
    )

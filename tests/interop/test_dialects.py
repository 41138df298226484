"""The official Python MCP SDK against the example answering in each source contract's wire,
driven the way a model drives it: list, call, then copy the call the answer offers for the next
page exactly as given, in whatever field that contract carries it. The SDK checks every
`structuredContent` against the tool's listed output schema, so this also proves each listing
describes the wire it answers in: the server's own dialect (`--dialect`), and every dialect a
call may ask for (`--call-dialects all`, the alternatives of each output schema).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

import servers
from servers import anyio_backend  # noqa: F401
from test_interop import BIN, REPO, WORD, write_paged_tree

pytestmark = pytest.mark.anyio

TIMEOUT = 60


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("dialects").resolve()
    write_paged_tree(root)
    return root


def session(root: Path, *args: str) -> Any:
    env = {**get_default_environment(), "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", str(root))}
    params = StdioServerParameters(command=str(BIN), args=["--root", str(root), *args], cwd=REPO, env=env)
    return servers.stdio_session(params)


def offered_next_page(dialect: str, answer: dict) -> tuple[str, dict] | None:
    """The call a model copies for the next page, where `dialect` writes it."""
    if dialect == "pincher":
        steps = answer["_meta"].get("next_steps", [])
        paging = [step for step in steps if "continuation" in step["args"]]
        return (paging[0]["tool"], paging[0]["args"]) if paging else None
    if dialect == "cos":
        actions = answer["data"]["meta"].get("next_actions", [])
    else:
        actions = answer.get("next_actions", [])
    paging = [action for action in actions if action["id"] == "next-page"]
    return (paging[0]["tool"], paging[0]["arguments"]) if paging else None


def rows(dialect: str, answer: dict) -> list:
    """The page's occurrences, where `dialect` puts the payload."""
    payload = {"pincher": answer.get("result"), "cos": answer.get("data")}.get(dialect, answer)
    return payload["occurrences"]


async def page_through(client: Any, dialect: str, arguments: dict) -> list:
    tool, seen = "search_text", []
    for _ in range(50):
        result = await client.call_tool(tool, arguments)
        assert result.is_error is False, result.structured_content
        answer = result.structured_content
        seen += rows(dialect, answer)
        offered = offered_next_page(dialect, answer)
        if offered is None:
            return seen
        tool, arguments = offered
    pytest.fail(f"{dialect}: paging did not end")


@pytest.mark.parametrize("dialect", ["pincher", "cos", "tsa", "frigg"])
async def test_a_server_in_a_dialect_pages_by_what_its_answers_offer(tree: Path, dialect: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with session(tree, "--dialect", dialect) as client:
            await client.list_tools()
            whole = await client.call_tool("search_text", {"query": WORD, "limit": 1000})
            expected = rows(dialect, whole.structured_content)
            assert len(expected) > 10
            assert await page_through(client, dialect, {"query": WORD, "limit": 4}) == expected


async def test_a_call_asks_for_any_offered_dialect_and_follows_it(tree: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with session(tree, "--call-dialects", "all") as client:
            await client.list_tools()
            whole = await client.call_tool("search_text", {"query": WORD, "limit": 1000})
            expected = whole.structured_content["data"]["occurrences"]
            for dialect in ["pincher", "cos", "tsa", "frigg"]:
                paged = await page_through(client, dialect, {"query": WORD, "limit": 4, "dialect": dialect})
                assert paged == expected, dialect


async def test_a_dialect_the_server_does_not_offer_is_an_invalid_argument(tree: Path) -> None:
    with anyio.fail_after(TIMEOUT):
        async with session(tree) as client:
            await client.list_tools()
            result = await client.call_tool("search_text", {"query": WORD, "dialect": "cos"})
            assert result.is_error is True
            error = result.structured_content["error"]
            assert error["code"] == "invalid_argument"
            assert error["data"]["offered"] == ["envelope"]


def succeeded(dialect: str, answer: dict) -> bool:
    """Whether `answer` says the call worked, read as each seed's own client reads it."""
    if dialect == "cos":
        return answer["ok"] is True
    if dialect == "tsa":
        return answer["success"] is True
    if dialect == "frigg":
        return "error_code" not in answer
    # pincher: the error is the first `diagnosis_v2` entry, severity `error`, and `result` null.
    diagnoses = answer["_meta"].get("diagnosis_v2", [])
    return not (answer["result"] is None and diagnoses and diagnoses[0]["severity"] == "error")


@pytest.mark.parametrize("dialect", ["pincher", "cos", "tsa", "frigg"])
def test_the_call_command_exits_by_the_dialects_own_success_field(tree: Path, dialect: str) -> None:
    """`workspace_server call` exits 0 on a success and 2 on a failure, in every dialect: it reads
    the dialect's own success field, not the envelope's `ok` (which three of them do not write)."""
    for arguments, worked in [({"query": WORD, "limit": 2}, True), ({"query": WORD, "limit": 0}, False)]:
        done = subprocess.run(
            [str(BIN), "--root", str(tree), "--dialect", dialect, "call", "search_text", json.dumps(arguments)],
            cwd=REPO,
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
        )
        answer = json.loads(done.stdout)
        assert succeeded(dialect, answer) is worked, answer
        assert done.returncode == (0 if worked else 2), (done.returncode, done.stderr, answer)

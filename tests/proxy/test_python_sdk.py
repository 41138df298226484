"""envelope-proxy in front of the official Python reference servers (PyPI, pinned in
tests/interop/requirements.txt: `mcp-server-git` and `mcp-server-time`), driven by the official
Python SDK: the listing as the upstream declares it, a diff too big for one answer read whole by
following `next-page` as given, and the upstream's refusals typed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from proxied import BUDGET_CHARS, envelope, next_page, python_server, session, text, through_proxy

pytestmark = pytest.mark.anyio
TIMEOUT = 120


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def repository(tmp_path: Path) -> Path:
    """A git repository with one commit and a large change not yet staged."""
    root = tmp_path / "repo"
    root.mkdir()
    git = lambda *args: subprocess.run(  # noqa: E731
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
    )
    git("init", "-q")
    (root / "notes.txt").write_text("first line\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "first")
    lines = [f"note {i:05d}: " + "lorem ipsum dolor sit amet " * (1 + i % 4) for i in range(3_000)]
    (root / "notes.txt").write_text("first line\n" + "\n".join(lines) + "\n")
    return root


def whole(result: Any) -> str:
    """What the upstream answered, as the text it is: its structured content's one text member,
    else its text."""
    structured = result.structured_content
    if isinstance(structured, dict) and len(structured) == 1:
        [value] = structured.values()
        if isinstance(value, str):
            return value
    return text(result)


async def test_a_diff_too_big_for_one_answer_is_read_whole_by_following_next_page(
    repository: Path,
) -> None:
    git = python_server("mcp_server_git", "--repository", str(repository))
    with anyio.fail_after(TIMEOUT):
        async with session(git) as direct, session(through_proxy(git)) as proxy:
            upstream = (await direct.list_tools()).tools
            fronted = (await proxy.list_tools()).tools
            assert sorted(tool.name for tool in fronted) == sorted(tool.name for tool in upstream)
            for tool in upstream:
                [listed] = [candidate for candidate in fronted if candidate.name == tool.name]
                assert listed.annotations == tool.annotations, tool.name

            arguments = {"repo_path": str(repository)}
            expected = whole(await direct.call_tool("git_diff_unstaged", arguments))
            assert len(expected) > 3 * BUDGET_CHARS, len(expected)
            result = await proxy.call_tool("git_diff_unstaged", arguments)
            rows: list[str] = []
            pages = 0
            while True:
                pages += 1
                shown = text(result)
                assert len(shown) <= BUDGET_CHARS, (pages, len(shown))
                answer = envelope(result)
                assert answer["ok"] is True, answer.get("error")
                rows += answer["data"]
                action = next_page(answer)
                if action is None:
                    break
                # Exactly as given: its tool, its arguments.
                result = await proxy.call_tool(action["tool"], action["arguments"])
            assert "".join(rows) == expected
            assert pages > 3, pages

            status = envelope(await proxy.call_tool("git_status", arguments))
            assert status["ok"] is True, status
            assert "notes.txt" in str(status["data"])


async def test_the_time_servers_answers_and_refusals_are_envelopes() -> None:
    time = python_server("mcp_server_time", "--local-timezone", "UTC")
    with anyio.fail_after(TIMEOUT):
        async with session(time) as direct, session(through_proxy(time)) as proxy:
            assert sorted(tool.name for tool in (await proxy.list_tools()).tools) == sorted(
                tool.name for tool in (await direct.list_tools()).tools
            )
            now = envelope(await proxy.call_tool("get_current_time", {"timezone": "Europe/Warsaw"}))
            assert now["ok"] is True, now
            assert "Europe/Warsaw" in str(now["data"]), now["data"]

            refused = envelope(
                await proxy.call_tool(
                    "convert_time",
                    {"source_timezone": "Nowhere/Atlantis", "time": "12:00", "target_timezone": "UTC"},
                )
            )
            assert refused["ok"] is False, refused
            assert refused["error"]["retryable"] is False, refused["error"]
            assert refused["verdict"] == "ERROR"

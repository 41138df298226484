"""The Python client kit (`clients/python`, package `envelope-client`) against the example
`workspace_server` over stdio (`target/debug/examples/workspace_server`, override with
`WORKSPACE_SERVER_BIN`; `cargo build --workspace --all-features --tests --bins --examples`).

Checked on the paging fixture of `test_interop.py`: every page of `search_text` and `list_files`,
each the previous page's `next-page` action followed as given, adds up to exactly the one big
page (`limit` 1000), and so does the kit's combined page, whose `completeness` says it is whole;
a combined page cut by a row limit ends on a page boundary and its `next-page` action continues
exactly there; `follow("next-page")` is the second page; a hit is read by its page's
`target_ref`, and after its file changed the kit re-resolves the stale ref once by the answer's
recovery action and reads the hit where it moved to; and a pydantic-ai agent (a scripted
`FunctionModel`) given the kit's toolset calls `search_text` once and is shown every row in one
combined page.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import StdioServerParameters
from mcp.client.stdio import get_default_environment

import servers
from servers import anyio_backend  # noqa: F401 (a fixture: pytest finds it by name)
from test_interop import BIN, PAGED_OCCURRENCES, PAGED_FILES, REPO, WORD, write_paged_tree
from test_interop import http_server

try:
    import envelope_client
    from envelope_client import EnvelopeClient
except ImportError:  # a collection error, not a skip: CI must install the package
    pytest.fail("envelope-client is not installed: pip install ./clients/python", pytrace=False)

pytestmark = pytest.mark.anyio
TIMEOUT = 120
SEARCH_PAGE = 7
LIST_PAGE = 4


@pytest.fixture(scope="module")
def server_bin() -> Path:
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: run `cargo build --workspace --all-features --tests --bins --examples`")
    return BIN


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path.resolve() / "tree"
    root.mkdir()
    write_paged_tree(root)
    return root


@asynccontextmanager
async def kit(root: Path) -> AsyncIterator[EnvelopeClient]:
    env = {**get_default_environment(), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    params = StdioServerParameters(command=str(BIN), args=["--root", str(root)], cwd=REPO, env=env)
    with anyio.fail_after(TIMEOUT):
        async with servers.stdio_session(params) as session:
            yield EnvelopeClient(session)


ROWS = {"search_text": "occurrences", "list_files": "files"}
CALLS = {
    "search_text": ({"query": WORD, "limit": SEARCH_PAGE}, {"query": WORD, "limit": 1000}),
    "list_files": ({"limit": LIST_PAGE}, {"limit": 1000}),
}


@pytest.mark.parametrize("tool", list(CALLS))
async def test_pages_to_the_end_equal_one_big_page(server_bin: Path, tree: Path, tool: str) -> None:
    paged, unpaged = CALLS[tool]
    key = ROWS[tool]
    async with kit(tree) as client:
        pages = [page async for page in client.pages(tool, paged)]
        big = await client.call(tool, unpaged)
        combined = await client.collect(tool, paged)
    expected = PAGED_OCCURRENCES if tool == "search_text" else PAGED_FILES
    assert big.completeness.complete and big.completeness.returned == expected
    assert len(pages) == -(-expected // paged["limit"])
    rows = [row for page in pages for row in page.data[key]]
    assert rows == big.data[key]
    # Each page starts where the one before ended.
    ends = [(page.completeness.offset or 0, page.completeness.returned) for page in pages]
    assert all(a + n == b for (a, n), (b, _) in zip(ends, ends[1:])), ends
    assert combined.rows == big.data[key] == combined.envelope.data[key]
    assert combined.envelope.completeness.wire() == {
        "unit": big.completeness.unit,
        "returned": expected,
        "total": expected,
        "complete": True,
        "truncated": False,
    }
    assert combined.envelope.next_page() is None


async def test_a_row_limit_continues_exactly_where_it_cut(server_bin: Path, tree: Path) -> None:
    async with kit(tree) as client:
        big = await client.call("search_text", {"query": WORD, "limit": 1000})
        first = await client.collect("search_text", {"query": WORD, "limit": SEARCH_PAGE}, max_rows=30)
        completeness = first.envelope.completeness
        assert (completeness.returned, completeness.total) == (30, PAGED_OCCURRENCES)
        assert completeness.truncated and not completeness.complete
        action = first.envelope.next_page()
        assert action is not None and action.arguments["limit"] == SEARCH_PAGE
        rest = await client.collect(action.tool, action.arguments)
        assert rest.envelope.completeness.offset == 30 and rest.envelope.completeness.complete
    assert first.rows + rest.rows == big.data["occurrences"]
    # The pages' refs are joined into the combined page's one `target_ref`: every row of it
    # is read by that ref as given, with the row's own location, as a model would copy them.
    assert "pages" not in first.envelope.data
    joined = first.envelope.data["target_ref"]
    assert joined == ".".join(page.data["target_ref"] for page in first.pages)
    async with kit(tree) as client:
        for row in first.rows:
            read = await client.call(
                "read_file", {"target_ref": joined, "path": row["path"], "line": row["line"], "context_lines": 0}
            )
            assert read.ok and read.data["path"] == row["path"], read
        # One page's own ref does not hold a row of another page: said as such, not as a change.
        own = first.pages[0].data["target_ref"]
        first_paths = {hit["path"] for hit in first.pages[0].data["occurrences"]}
        elsewhere = [row for page in first.pages[1:] for row in page.data["occurrences"] if row["path"] not in first_paths]
        assert elsewhere, "the walk's later pages hit other files"
        wrong = await client.call(
            "read_file", {"target_ref": own, "path": elsewhere[0]["path"], "line": elsewhere[0]["line"]}
        )
        assert wrong.error is not None and wrong.error.code == "TARGET_NOT_IN_REF", wrong


async def test_follow_runs_the_next_page_action(server_bin: Path, tree: Path) -> None:
    async with kit(tree) as client:
        first = await client.call("search_text", {"query": WORD, "limit": SEARCH_PAGE})
        second = await client.follow(first, "next-page")
        pages = [page async for page in client.pages("search_text", {"query": WORD, "limit": SEARCH_PAGE})]
    assert second.data["occurrences"] == pages[1].data["occurrences"]
    assert second.completeness.offset == SEARCH_PAGE


async def test_a_target_ref_is_read_and_re_resolved_once_when_stale(server_bin: Path, tree: Path) -> None:
    hit_file = tree / "a" / "doc-05.txt"
    search = {"query": WORD, "path_glob": "doc-05.txt"}
    async with kit(tree) as client:
        found = await client.call("search_text", search)
        hit = found.data["occurrences"][0]
        read = {"target_ref": found.data["target_ref"], "path": hit["path"], "line": hit["line"], "context_lines": 0}
        now = await client.read("read_file", read)
        assert now.data["start_line"] == hit["line"] and WORD in now.data["content"]
        assert not now.warnings

        # The file changes: the ref is stale; the kit follows the recovery (the search again)
        # once and reads the hit where it is now, a line further down.
        stat = hit_file.stat()
        hit_file.write_text(f"a new first line\n{hit_file.read_text()}")
        os.utime(hit_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
        moved = await client.read("read_file", read)
        assert moved.data["start_line"] == hit["line"] + 1, moved.data
        assert WORD in moved.data["content"]
        [note] = moved.warnings
        assert note.code == "target_relocated"
        assert note.data["arguments"]["line"] == hit["line"] + 1

        # A ref whose file is gone is not stale but not found: answered as data (no exception),
        # with the search again offered, which the kit does not run by itself.
        hit_file.unlink()
        gone = await client.read("read_file", read)
        assert not gone.ok and gone.error.code == "TARGET_NOT_FOUND", gone
        [again] = gone.next_actions
        assert again.tool == "search_text" and again.arguments == search
        with pytest.raises(envelope_client.ToolFailed):
            await client.read("read_file", read, check=True)


async def test_a_pydantic_ai_agent_sees_one_combined_page(server_bin: Path, tree: Path) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from envelope_client.pydantic_ai import EnvelopeToolset

    shown: list[dict[str, Any]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [
            part for part in messages[-1].parts if isinstance(part, ToolReturnPart)
        ]
        if not returns:
            names = {tool.name for tool in info.function_tools}
            assert {"search_text", "read_file", "list_files"} <= names, names
            # The server's instructions and each tool's output schema reach the model.
            assert info.instructions and "`ok`" in info.instructions, info.instructions
            # (A model without native return schemas reads each in its tool's description.)
            described = {tool.name: tool.description or "" for tool in info.function_tools}
            for name in ("search_text", "read_file"):
                assert "Return schema:" in described[name] and '"verdict"' in described[name], name
            return ModelResponse(parts=[ToolCallPart("search_text", {"query": WORD}, tool_call_id="search")])
        shown.append(json.loads(returns[0].model_response_str()))
        if len(shown) == 1:
            # The model reads the last hit by copying what the combined page offers: its one
            # `target_ref` and the row's own location.
            page = shown[0]
            row = page["data"]["occurrences"][-1]
            arguments = {"target_ref": page["data"]["target_ref"], "path": row["path"], "line": row["line"]}
            return ModelResponse(parts=[ToolCallPart("read_file", arguments, tool_call_id="read")])
        return ModelResponse(parts=[TextPart("done")])

    async with kit(tree) as client:
        # Pages of 7 from the server; the model sees them as one.
        toolset = EnvelopeToolset(client, max_rows=500, page_size=SEARCH_PAGE)
        agent = Agent(FunctionModel(model), toolsets=[toolset])
        result = await agent.run("find every occurrence")
        big = await client.call("search_text", {"query": WORD, "limit": 1000})
        # Turned off, neither the instructions nor the output schemas are shown.
        plain: dict[str, Any] = {}

        def quiet_model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
            plain["instructions"] = info.instructions
            plain["described"] = [tool.description or "" for tool in info.function_tools]
            return ModelResponse(parts=[TextPart("done")])

        quiet = EnvelopeToolset(client, include_instructions=False, return_schemas=False)
        await Agent(FunctionModel(quiet_model), toolsets=[quiet]).run("x")
        assert not plain["instructions"]
        assert not any("Return schema:" in text for text in plain["described"])
    calls = [
        part
        for message in result.all_messages()
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart)
    ]
    assert [call.tool_name for call in calls] == ["search_text", "read_file"]
    page, read = shown
    assert read["ok"] is True and read["data"]["path"] == page["data"]["occurrences"][-1]["path"], read
    assert page["ok"] is True
    assert page["data"]["occurrences"] == big.data["occurrences"]
    assert page["completeness"] == {
        "unit": "occurrence",
        "returned": PAGED_OCCURRENCES,
        "total": PAGED_OCCURRENCES,
        "complete": True,
        "truncated": False,
    }
    assert not any(action["id"] == "next-page" for action in page.get("next_actions", []))
    assert len(page["meta"]["page_request_ids"]) == -(-PAGED_OCCURRENCES // SEARCH_PAGE)


async def test_the_examples_tools_speak_the_envelope(server_bin: Path, tree: Path) -> None:
    """Every tool of the example lists the envelope's output schema: `call_any` reads each as an
    envelope, and `call_plain` refuses them before sending anything."""
    async with kit(tree) as client:
        listing = await client.list_tools()
        assert all(envelope_client.speaks_envelope(tool) for tool in listing.values()), [
            name for name, tool in listing.items() if not envelope_client.speaks_envelope(tool)
        ]
        page = await client.call_any("list_files", {"limit": 2})
        assert not isinstance(page, envelope_client.PlainResult) and page.ok
        with pytest.raises(envelope_client.EnvelopeTool):
            await client.call_plain("list_files", {"limit": 2})


GETTING_STARTED = REPO / "clients" / "python" / "examples" / "getting_started.py"


def run_getting_started(*args: str) -> str:
    """The getting-started example run as its docstring says; its output."""
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, str(GETTING_STARTED), *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def check_getting_started(out: str) -> None:
    lines = out.strip().splitlines()
    assert lines[0].startswith("showing 5 of "), out
    assert lines[1] == "50 rows in one combined page (complete: False)", out
    assert lines[2] == "the next page holds 50 rows", out


def test_getting_started_runs_as_written_over_stdio(server_bin: Path) -> None:
    check_getting_started(run_getting_started("--", str(server_bin), "--root", "."))


def test_getting_started_runs_as_written_over_http(server_bin: Path) -> None:
    with http_server(REPO) as url:
        check_getting_started(run_getting_started(url))


async def test_a_toolset_connects_by_url_and_by_command(server_bin: Path, tree: Path) -> None:
    """What users have: a URL or a command is enough; the toolset connects when the agent enters
    it, and closes when the run ends."""
    from mcp import StdioServerParameters
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from envelope_client.pydantic_ai import EnvelopeToolset

    shown: list[dict[str, Any]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        returns = [part for part in messages[-1].parts if isinstance(part, ToolReturnPart)]
        if not returns:
            return ModelResponse(parts=[ToolCallPart("list_files", {"limit": 3}, tool_call_id="l")])
        shown.append(json.loads(returns[0].model_response_str()))
        return ModelResponse(parts=[TextPart("done")])

    env = {**get_default_environment(), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    command = StdioServerParameters(command=str(server_bin), args=["--root", str(tree)], cwd=REPO, env=env)
    with http_server(tree) as url:
        for server in (url, command):
            toolset = EnvelopeToolset(server, max_rows=3)
            with anyio.fail_after(TIMEOUT):
                await Agent(FunctionModel(model), toolsets=[toolset]).run("list")
            with pytest.raises(RuntimeError):
                toolset.client  # noqa: B018 (closed once the run ended)
    assert len(shown) == 2
    assert all(page["ok"] and len(page["data"]["files"]) == 3 for page in shown), shown


RUST_GETTING_STARTED = REPO / "target" / "debug" / "examples" / "getting_started"


def check_rust_getting_started(*args: str) -> None:
    """The Rust kit's getting-started example, run as its docs say, against the example server."""
    import subprocess

    if not RUST_GETTING_STARTED.is_file():
        pytest.fail(f"{RUST_GETTING_STARTED} is missing: run `cargo build --workspace --all-features --tests --bins --examples`")
    done = subprocess.run(
        [str(RUST_GETTING_STARTED), *args], cwd=REPO, capture_output=True, text=True, timeout=TIMEOUT
    )
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stdout.strip().splitlines()
    assert lines[0].startswith("showing 5 of "), done.stdout
    assert lines[1] == "50 rows in 2 pages", done.stdout
    assert lines[2] == "the next page holds 25 rows", done.stdout


def test_the_rust_getting_started_runs_as_written_over_stdio(server_bin: Path) -> None:
    check_rust_getting_started("--", str(server_bin), "--root", ".")


def test_the_rust_getting_started_runs_as_written_over_http(server_bin: Path) -> None:
    with http_server(REPO) as url:
        check_rust_getting_started(url)

"""Every client is listed the wire it gets: the official Python MCP SDK, held to each protocol
version the example negotiates (2025-06-18 and 2025-11-25 by the `initialize` handshake,
2026-07-28 by `server/discover`), lists the example in every dialect configuration (each source
contract's wire as the server's own, `--dialect`, and every dialect offered per call,
`--call-dialects all`) and asserts that every tool lists an output schema, and that every answer
it gets back, successes, cut pages, empty results and failures alike, validates against it.

Before 2026-07-28 MCP lists only an output schema whose root is an object (rmcp drops any other
for those peers), so a listing that described the wire with bare alternatives at its root would
reach older clients as no schema at all: the SDK would then check nothing, and this suite would
fail on the missing schema rather than pass on an unchecked answer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp.client.session
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment

from servers import anyio_backend  # noqa: F401
from test_interop import BIN, REPO, WORD, write_paged_tree

pytestmark = pytest.mark.anyio

TIMEOUT = 120
DIALECTS = ["pincher", "cos", "tsa", "frigg"]
# The versions the SDK can be held to: the two newest handshake versions and discovery's.
VERSIONS = ["2025-06-18", "2025-11-25", "2026-07-28"]
# Each source contract's wire as the server's own, and all of them offered per call.
CONFIGURATIONS = [["--dialect", dialect] for dialect in DIALECTS] + [["--call-dialects", "all"]]


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("listings").resolve()
    write_paged_tree(root)
    return root


@asynccontextmanager
async def session_at(
    version: str, root: Path, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[ClientSession]:
    """A session with the example over stdio at protocol `version`: the handshake offers that
    version (the SDK offers its newest unless told otherwise), and 2026-07-28 is reached by
    discovery, as the SDK reaches it."""
    env = {**get_default_environment(), "XDG_STATE_HOME": os.environ.get("XDG_STATE_HOME", str(root))}
    params = StdioServerParameters(command=str(BIN), args=["--root", str(root), *args], cwd=REPO, env=env)
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                if version == "2026-07-28":
                    await session.discover()
                else:
                    monkeypatch.setattr(mcp.client.session, "LATEST_HANDSHAKE_VERSION", version)
                    await session.initialize()
                assert session.protocol_version == version
                yield session


def calls(dialect: str | None) -> list[tuple[str, dict[str, Any]]]:
    """The calls each listing is checked with: a cut page, a whole one, an empty search, a
    read, a missing file, an unknown argument, a tool without arguments, and each with the
    call's `dialect` when one is asked for."""
    plain: list[tuple[str, dict[str, Any]]] = [
        ("search_text", {"query": WORD, "limit": 4}),
        ("search_text", {"query": WORD, "limit": 1000}),
        ("search_text", {"query": "nothing-matches-this-word"}),
        ("read_file", {"path": "a/doc-00.txt"}),
        ("read_file", {"path": "a/no-such-file.txt"}),
        ("search_text", {"query": WORD, "no_such_argument": 1}),
        ("search_text", {"query": WORD, "limit": 0}),
        ("list_files", {}),
        ("workspace_stats", {}),
        ("change_impact", {"path": "a/doc-00.txt"}),
    ]
    if dialect is None:
        return plain
    return [(tool, {**arguments, "dialect": dialect}) for tool, arguments in plain]


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("args", CONFIGURATIONS, ids=lambda args: "=".join(args))
async def test_every_tool_lists_a_schema_every_answer_matches(
    tree: Path, version: str, args: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = [None] if args[0] == "--dialect" else [None, *DIALECTS]
    with anyio.fail_after(TIMEOUT):
        async with session_at(version, tree, args, monkeypatch) as client:
            listed = await client.list_tools()
            schemas = {tool.name: tool.output_schema for tool in listed.tools}
            missing = [name for name, schema in schemas.items() if schema is None]
            assert missing == [], f"{version} {args}: listed without an output schema: {missing}"
            for schema in schemas.values():
                Draft202012Validator.check_schema(schema)
            seen_failure = False
            for dialect in asked:
                for tool, arguments in calls(dialect):
                    # The SDK validates `structuredContent` against the listed schema itself;
                    # checked here too, so the assertion names the answer that failed.
                    result = await client.call_tool(tool, arguments)
                    answer = result.structured_content
                    assert isinstance(answer, dict), (tool, arguments, result)
                    errors = sorted(
                        Draft202012Validator(schemas[tool]).iter_errors(answer), key=lambda e: e.path
                    )
                    assert errors == [], (version, args, tool, arguments, errors[0].message, answer)
                    seen_failure |= bool(result.is_error)
            # The failures were among the answers checked.
            assert seen_failure

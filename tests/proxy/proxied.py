"""What the proxy's Python suites share: the upstream servers (npm's under `node_modules/`, PyPI's
in this interpreter's environment) spoken to directly or through `envelope-proxy`, over stdio,
and how an envelope answer reads.

The proxy is `target/debug/envelope-proxy` (override with `ENVELOPE_PROXY`; `cargo build
--workspace --all-features --tests --bins --examples`); the npm servers come from `npm ci
--prefix tests/proxy`.
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.stdio import get_default_environment

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
PROXY = Path(os.environ.get("ENVELOPE_PROXY", REPO / "target/debug/envelope-proxy"))
XTASK = Path(os.environ.get("XTASK_BIN", REPO / "target/debug/xtask"))
BUILD = "cargo build --workspace --all-features --tests --bins --examples"
FILESYSTEM = HERE / "node_modules/@modelcontextprotocol/server-filesystem/dist/index.js"
# The budget of one answer in characters: envelope-budget's `AGENT_BUDGET_CHARS`.
BUDGET_CHARS = 32_000
# Where the proxy keeps its paging key: a directory of the run's own.
STATE = tempfile.mkdtemp(prefix="envelope-proxy-state-")


def require(path: Path, how: str) -> Path:
    if not path.exists():
        pytest.fail(f"{path} is missing: {how}", pytrace=False)
    return path


def python_server(module: str, *args: str) -> list[str]:
    """A PyPI server installed beside these tests, run by this interpreter."""
    return [sys.executable, "-m", module, *args]


def filesystem_server(root: Path) -> list[str]:
    """The official filesystem server (npm) serving `root`."""
    require(FILESYSTEM, "run `npm ci --prefix tests/proxy`")
    return ["node", str(FILESYSTEM), str(root)]


def through_proxy(command: Sequence[str], *options: str) -> list[str]:
    """`command` behind envelope-proxy; `options` go before the `--`."""
    require(PROXY, f"build it with `{BUILD}`")
    return [str(PROXY), *options, "--", *command]


def environment() -> dict[str, str]:
    return {**get_default_environment(), "XDG_STATE_HOME": STATE, "RUST_LOG": "warn"}


@asynccontextmanager
async def session(command: Sequence[str]) -> AsyncIterator[ClientSession]:
    """An initialized session of the official Python SDK with what `command` runs, over stdio;
    its stderr goes to a temporary file."""
    program, *args = command
    params = StdioServerParameters(command=program, args=list(args), cwd=str(HERE), env=environment())
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as opened:
                await opened.initialize()
                yield opened


def envelope(result: Any) -> dict[str, Any]:
    """The envelope a `tools/call` result carries as its structured content."""
    assert result.structured_content is not None, result
    return result.structured_content


def text(result: Any) -> str:
    """The text a model is shown of a plain result: its text blocks, joined."""
    return "\n".join(block.text for block in result.content if block.type == "text")


def next_page(answer: dict[str, Any]) -> dict[str, Any] | None:
    """The `next-page` action an envelope offers, if any."""
    found = [action for action in answer.get("next_actions", []) if action.get("id") == "next-page"]
    assert len(found) <= 1, answer.get("next_actions")
    return found[0] if found else None

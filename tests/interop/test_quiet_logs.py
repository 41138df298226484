"""Quiet by default: at the example's default log filter (`envelope_mcp::DEFAULT_LOG_FILTER`,
`info,rmcp=warn`), a call logs at most one line, over stateless HTTP and in a session of the
official SDK. rmcp logs its session lifecycle at `info` in its own code: three lines a stateless
call before the filter put it at `warn`."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from servers import anyio_backend, free_port, stop  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("WORKSPACE_SERVER_BIN", REPO / "target/debug/examples/workspace_server"))
CALLS = 40
READ = {"name": "read_file", "arguments": {"path": "README.md", "start_line": 1, "end_line": 2}}


def serve(log: tempfile._TemporaryFileWrapper[bytes], *flags: str) -> tuple[subprocess.Popen[bytes], str]:
    """The example over HTTP with its default log filter (no `RUST_LOG`), logging to `log`."""
    env = {name: value for name, value in os.environ.items() if name != "RUST_LOG"}
    port = free_port()
    process = subprocess.Popen(
        [str(BIN), "--root", str(REPO), "--http", f"127.0.0.1:{port}", *flags],
        stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
    )  # fmt: skip
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return process, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            assert process.poll() is None, Path(log.name).read_text()
            time.sleep(0.05)
    stop(process)
    raise AssertionError(f"the server did not listen: {Path(log.name).read_text()}")


def lines(log: tempfile._TemporaryFileWrapper[bytes]) -> list[str]:
    return Path(log.name).read_text(errors="replace").splitlines()


def test_a_stateless_call_logs_nothing_at_the_default_filter() -> None:
    with tempfile.NamedTemporaryFile(prefix="quiet-stateless-") as log:
        process, url = serve(log, "--stateless", "--json-response")
        try:
            before = len(lines(log))
            for n in range(CALLS):
                body = {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": READ}
                request = urllib.request.Request(
                    url,
                    data=json.dumps(body).encode(),
                    headers={
                        "content-type": "application/json",
                        "accept": "application/json, text/event-stream",
                        "mcp-protocol-version": "2025-06-18",
                    },
                )
                with urllib.request.urlopen(request, timeout=10) as answer:
                    assert json.loads(answer.read())["result"]["structuredContent"]["ok"] is True
            during = lines(log)[before:]
        finally:
            stop(process)
    assert len(during) <= CALLS, during[:10]
    # None of rmcp's lifecycle lines, which were three a call.
    assert not any("rmcp::service" in line for line in during), during[:10]


@pytest.mark.anyio
async def test_a_session_call_logs_at_most_a_line_at_the_default_filter() -> None:
    with tempfile.NamedTemporaryFile(prefix="quiet-session-") as log:
        process, url = serve(log)
        try:
            async with streamable_http_client(url) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    before = len(lines(log))
                    for _ in range(CALLS):
                        result = await session.call_tool(READ["name"], READ["arguments"])
                        assert result.structured_content is not None and result.structured_content["ok"]
                    during = lines(log)[before:]
        finally:
            stop(process)
    assert len(during) <= CALLS, during[:10]

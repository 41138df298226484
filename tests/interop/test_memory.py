"""Memory: what the example `workspace_server` holds is bounded by its configuration, never by
what a client sends. Each test measures the server process itself (`/proc/<pid>/status`, Linux
only) around the request under test, and prints what it measured (`pytest -s` shows it):

- a 100 MB line over stdio and a 100 MB body over streamable HTTP are refused at the maximum
  request size (4 MiB by default), and resident memory afterwards is within `SETTLED_MIB` of
  where it was before; the peak never approaches the request's size;
- eight match-everything `search_text` calls at once over a 16 MiB tree, each asking for the
  largest page, peak below `SEARCH_PEAK_MIB` (before the page ceiling and the budget-aware row
  building, one such call peaked at 264 MB and eight at 1.9 GB).
"""

from __future__ import annotations

import json
import os
import select
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("WORKSPACE_SERVER_BIN", REPO / "target/debug/examples/workspace_server"))
# How far above its level before an oversized request the server may settle afterwards.
SETTLED_MIB = 16
# How far above its level before a request the server may peak while refusing it: a fraction of
# the request's 100 MB, so a server that buffered it fails.
OVERSIZED_PEAK_MIB = 24
# The peak of eight concurrent match-everything searches.
SEARCH_PEAK_MIB = 96
OVERSIZED_BYTES = 100 * 1024 * 1024
CHUNK = b"x" * (1024 * 1024)

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc (Linux)"),
]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def status_mib(pid: int, field: str) -> float:
    """`VmRSS` (resident now) or `VmHWM` (the peak so far) of `pid`, in MiB."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise AssertionError(f"no {field} in /proc/{pid}/status")


def assert_settled(pid: int, what: str, before: float, peak_before: float) -> None:
    """After an oversized request: resident memory is back within `SETTLED_MIB` of `before`, and
    the peak stayed within `OVERSIZED_PEAK_MIB` of it. Prints what was measured."""
    after = status_mib(pid, "VmRSS")
    peak = status_mib(pid, "VmHWM")
    print(f"\n{what}: RSS {before:.1f} -> {after:.1f} MiB, peak {peak_before:.1f} -> {peak:.1f} MiB")
    assert after - before < SETTLED_MIB
    assert peak - before < OVERSIZED_PEAK_MIB


def server_env() -> dict[str, str]:
    # The example keeps its paging key under the state directory: one of this run's.
    state = os.environ.get("XDG_STATE_HOME") or tempfile.mkdtemp(prefix="envelope-memory-state-")
    return {**os.environ, "XDG_STATE_HOME": state}


@contextmanager
def stdio_server(root: Path) -> Iterator[subprocess.Popen[bytes]]:
    process = subprocess.Popen(
        [str(BIN), "--root", str(root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    try:
        yield process
    finally:
        process.kill()
        process.wait(timeout=10)


def read_answer(process: subprocess.Popen[bytes], timeout: float = 60) -> dict[str, Any]:
    """The next line the server writes, as JSON; fails after `timeout` seconds of silence."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout)
    assert ready, "the server did not answer"
    line = process.stdout.readline()
    assert line, "the server closed its output"
    return json.loads(line)


def send_line(process: subprocess.Popen[bytes], message: dict[str, Any]) -> None:
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def initialize(process: subprocess.Popen[bytes]) -> None:
    send_line(
        process,
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "memory-test", "version": "0"},
            },
        },
    )
    assert "result" in read_answer(process)
    send_line(process, {"jsonrpc": "2.0", "method": "notifications/initialized"})


def call_line(process: subprocess.Popen[bytes], id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    send_line(
        process,
        {
            "jsonrpc": "2.0",
            "id": id,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        },
    )
    answer = read_answer(process)
    assert answer.get("id") == id, answer
    return answer["result"]["structuredContent"]


def test_a_100_mb_line_over_stdio_is_refused_and_memory_settles(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    with stdio_server(tmp_path) as process:
        initialize(process)
        # A few calls first, so the allocator's steady state is the baseline.
        for id in range(1, 4):
            assert call_line(process, id, "search_text", {"query": "needle"})["ok"] is True
        before = status_mib(process.pid, "VmRSS")
        peak_before = status_mib(process.pid, "VmHWM")

        assert process.stdin is not None
        head = b'{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"read_file",'
        process.stdin.write(head + b'"arguments":{"path":"')
        for _ in range(OVERSIZED_BYTES // len(CHUNK)):
            process.stdin.write(CHUNK)
        process.stdin.write(b'"}}}\n')
        process.stdin.flush()
        answer = read_answer(process)
        assert answer["error"]["code"] == -32600, answer
        assert "larger than" in answer["error"]["message"], answer

        # Still serving, and back where it was.
        assert call_line(process, 10, "search_text", {"query": "needle"})["ok"] is True
        assert_settled(process.pid, "stdio, 100 MB line", before, peak_before)


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(root: Path) -> Iterator[tuple[subprocess.Popen[bytes], int]]:
    port = free_port()
    process = subprocess.Popen(
        [str(BIN), "--root", str(root), "--http", f"127.0.0.1:{port}"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=server_env(),
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    break
            except OSError:
                assert process.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.05)
        yield process, port
    finally:
        process.kill()
        process.wait(timeout=10)


def post_streamed(port: int, total: int) -> str:
    """POSTs a `total`-byte body in chunks without declaring its length; the status line."""
    with socket.create_connection(("127.0.0.1", port), timeout=60) as sock:
        sock.sendall(
            f"POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\ncontent-type: application/json\r\n"
            "accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n".encode()
        )
        sent = 0
        try:
            while sent < total:
                sock.sendall(f"{len(CHUNK):x}\r\n".encode() + CHUNK + b"\r\n")
                sent += len(CHUNK)
            sock.sendall(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            # The server may answer and close before the body ends: that is the point.
            pass
        return sock.recv(4096).split(b"\r\n", 1)[0].decode()


async def call_http(url: str, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Runs `calls` at once in one session; their envelopes, in order."""
    results: list[dict[str, Any]] = [{} for _ in calls]
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(120)) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def one(index: int, tool: str, arguments: dict[str, Any]) -> None:
                    result = await session.call_tool(tool, arguments)
                    results[index] = result.structured_content or {}

                async with anyio.create_task_group() as group:
                    for index, (tool, arguments) in enumerate(calls):
                        group.start_soon(one, index, tool, arguments)
    return results


async def test_a_100_mb_body_over_http_is_refused_and_memory_settles(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    with http_server(tmp_path) as (process, port):
        url = f"http://127.0.0.1:{port}/mcp"
        for envelope in await call_http(url, [("search_text", {"query": "needle"})] * 3):
            assert envelope["ok"] is True, envelope
        before = status_mib(process.pid, "VmRSS")
        peak_before = status_mib(process.pid, "VmHWM")
        status = await anyio.to_thread.run_sync(post_streamed, port, OVERSIZED_BYTES)
        assert " 413 " in status + " ", status
        [envelope] = await call_http(url, [("search_text", {"query": "needle"})])
        assert envelope["ok"] is True, envelope
        assert_settled(process.pid, "HTTP, 100 MB streamed body", before, peak_before)


def write_haystack(root: Path) -> None:
    """16 files of 1 MiB, every line full of matches for `e`."""
    line = ("needle " * 11).strip() + "\n"
    body = line * (1024 * 1024 // len(line))
    for index in range(16):
        (root / f"hay-{index:02}.txt").write_text(body)


async def test_match_everything_searches_hold_a_page_not_every_match(tmp_path: Path) -> None:
    write_haystack(tmp_path)
    with http_server(tmp_path) as (process, port):
        url = f"http://127.0.0.1:{port}/mcp"
        before = status_mib(process.pid, "VmRSS")
        calls = [("search_text", {"query": "e", "limit": 1000})] * 8
        envelopes = await call_http(url, calls)
        for envelope in envelopes:
            assert envelope["ok"] is True, envelope
            completeness = envelope["completeness"]
            # Every match counted, one bounded page built.
            assert completeness["total"] == 16 * (1024 * 1024 // 77) * 33, completeness
            assert completeness["returned"] <= 1000
            # The rest is a `next-page` action away, its token in the action's arguments.
            assert "continuation" not in completeness, completeness
            [action] = [a for a in envelope["next_actions"] if a["id"] == "next-page"]
            assert action["arguments"]["continuation"], action
        peak = status_mib(process.pid, "VmHWM")
        print(f"\n8 match-everything searches at once: RSS before {before:.1f} MiB, peak {peak:.1f} MiB")
        assert peak < SEARCH_PEAK_MIB

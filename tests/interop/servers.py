"""What the Python interop suites share: a free loopback port, a server binary started with
`--http` on it and stopped again, an initialized SDK session over stdio or streamable HTTP, and
the pytest fixtures those suites declare alike.

`test_interop.py` (the example `workspace_server`) and `test_conformance_server.py` (the
conformance server) start servers and open sessions the same way; only the command line, the
environment and the HTTP client's hooks differ, and those are theirs to pass.
"""

from __future__ import annotations

import os
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client


@pytest.fixture
def anyio_backend() -> str:
    """The suites' `pytest.mark.anyio` tests run on asyncio. A suite imports this fixture by
    name, which is how pytest finds a fixture defined outside its module and `conftest.py`."""
    return "asyncio"


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest, server_bin: Path) -> str:
    """Each test once per transport. Over HTTP the importing suite's own `http_url` fixture (its
    session's server) is started first, so a server that does not start fails the test here;
    `server_bin` is the suite's check that the binary was built."""
    if request.param == "http":
        request.getfixturevalue("http_url")
    return request.param


def stop(process: subprocess.Popen[Any]) -> None:
    """Ends `process`: asked to stop, killed if it has not within five seconds."""
    process.terminate()
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=5)


def free_port() -> int:
    """A port free on 127.0.0.1 a moment ago (another process may take it before the server binds
    it: `http_server` then tries another)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def http_server(
    command: Sequence[str] | Callable[[int], Sequence[str]], cwd: Path, log_prefix: str
) -> Iterator[str]:
    """`command --http 127.0.0.1:<free port>`, run in `cwd` with its output in a temporary log
    (named after `log_prefix`) shown should it never listen; yields its `/mcp` URL once the port
    accepts a connection, and stops it (SIGTERM, then SIGKILL after 5 s) on exit. `command` may
    also be a function of the port, for a command line that names its own URL (an OAuth
    audience)."""
    log = tempfile.NamedTemporaryFile(prefix=log_prefix, suffix=".log", delete=False)
    process = None
    port = 0
    ready = False
    for _attempt in range(3):
        port = free_port()
        argv = command(port) if callable(command) else command
        process = subprocess.Popen(
            [*argv, "--http", f"127.0.0.1:{port}"],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
        deadline = time.monotonic() + 30
        while not ready and time.monotonic() < deadline and process.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                    ready = True
            except OSError:
                time.sleep(0.05)
        if ready:
            break
        # Lost the port between probing and binding, or never listened: try another.
        process.kill()
        process.wait(timeout=5)
    assert process is not None and ready, (
        f"the HTTP server did not start; its log:\n{Path(log.name).read_text(errors='replace')}"
    )
    try:
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        stop(process)
        log.close()
        os.unlink(log.name)


@asynccontextmanager
async def stdio_session(
    params: StdioServerParameters, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    """An initialized session with the server the SDK spawns from `params`; the server's stderr
    goes to a temporary file, not the test's output. `callbacks` go to `ClientSession`."""
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, **callbacks) as session:
                await session.initialize()
                yield session


@asynccontextmanager
async def http_session(
    url: str, http: httpx2.AsyncClient, **callbacks: Any
) -> AsyncIterator[ClientSession]:
    """An initialized session with the streamable HTTP server at `url`, through `http` (the
    caller's client: its headers, timeouts and hooks). `callbacks` go to `ClientSession`."""
    async with streamable_http_client(url, http_client=http) as (read, write):
        async with ClientSession(read, write, **callbacks) as session:
            await session.initialize()
            yield session

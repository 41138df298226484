"""Fixtures: a fault server over stdio (or, for `faults_over`, streamable HTTP) wrapped in an
`EnvelopeClient` whose retry policy runs on a fake clock (waits are recorded, never slept)."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client

from envelope_client import EnvelopeClient, RetryPolicy, connect

FAULT_SERVER = Path(__file__).with_name("fault_server.py")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class FakeClock:
    """A monotonic clock that only `sleep` moves; every wait is kept in `waits`."""

    def __init__(self) -> None:
        self.now = 1000.0
        self.waits: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def fake_policy(clock: FakeClock, **overrides: Any) -> RetryPolicy:
    settings: dict[str, Any] = {"sleep": clock.sleep, "clock": clock, "random": lambda: 0.5}
    settings.update(overrides)
    return RetryPolicy(**settings)


@asynccontextmanager
async def fault_session() -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=[str(FAULT_SERVER)])
    with tempfile.TemporaryFile(mode="w+") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


@pytest.fixture
def faults(clock: FakeClock) -> Callable[..., Any]:
    """`async with faults(**policy) as client`: a fresh fault server, and a client on it."""

    @asynccontextmanager
    async def open_client(**policy: Any) -> AsyncIterator[EnvelopeClient]:
        async with fault_session() as session:
            yield EnvelopeClient(session, policy=fake_policy(clock, **policy))

    return open_client


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@asynccontextmanager
async def fault_http_client(policy: RetryPolicy) -> AsyncIterator[EnvelopeClient]:
    """A fault server over streamable HTTP on loopback, and a client connected the kit's way."""
    port = _free_port()
    with tempfile.TemporaryFile(mode="w+") as errlog:
        process = subprocess.Popen(
            [sys.executable, str(FAULT_SERVER), "--http", str(port)], stdout=errlog, stderr=errlog
        )
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                    break
                except OSError:
                    if process.poll() is not None or time.monotonic() > deadline:
                        errlog.seek(0)
                        raise RuntimeError(f"the fault server did not listen: {errlog.read()}") from None
                    time.sleep(0.05)
            async with connect(f"http://127.0.0.1:{port}/mcp") as connection:
                yield EnvelopeClient(connection, policy=policy)
        finally:
            process.kill()
            process.wait()


@pytest.fixture(params=["stdio", "http"])
def faults_over(request: pytest.FixtureRequest, clock: FakeClock) -> Callable[..., Any]:
    """`faults`, over each transport in turn."""

    @asynccontextmanager
    async def open_client(**policy: Any) -> AsyncIterator[EnvelopeClient]:
        if request.param == "http":
            async with fault_http_client(fake_policy(clock, **policy)) as client:
                yield client
        else:
            async with fault_session() as session:
                yield EnvelopeClient(session, policy=fake_policy(clock, **policy))

    return open_client

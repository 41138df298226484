"""Many replicas behind a real load balancer, nothing pinned.

Three `workspace_server` processes share one continuation key file and serve stateless
streamable HTTP (`--stateless --json-response`) behind nginx, round-robin with no stickiness,
and the official Python SDK drives them through it:

- paging through a result where consecutive pages land on different replicas yields every row
  exactly once, in the order of one unpaged call;
- a `target_ref` sealed by one replica is read by another;
- a replica killed while it holds a call gives the client a clean JSON-RPC error for that call
  (nginx answers `502`; the SDK raises `MCPError`), and every later call succeeds: nginx retries
  the refused connection on another replica, as its access log shows.

nginx comes from the distribution (`apt-get install nginx-light`, done by `.ci/run`); without it
these tests are skipped with that reason. The replicas and the balancer are started the way the
README's deployment recipe starts them.
"""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from test_interop import (
    BIN,
    PAGED_OCCURRENCES,
    REPO,
    TIMEOUT,
    WORD,
    call_ok,
    follow_pages,
    listing,
    row_key,
    unpaged,
    write_paged_tree,
)

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
REPLICAS = 3
# The name the balancer gives the replicas in `Host`: they accept it, and only it besides
# loopback, as a deployment behind a proxy would.
HOST = "mcp.internal"

# CI sets ENVELOPE_REQUIRE_NGINX: there a missing nginx fails the run instead of skipping it.
if NGINX is None and os.environ.get("ENVELOPE_REQUIRE_NGINX"):
    raise RuntimeError("nginx is required (apt-get install nginx-light) and is not installed")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)"),
]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if process.poll() is not None:
            break
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} did not start; its log:\n{log.read_text(errors='replace')}")


NGINX_CONF = """\
{user}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 1024; }}
http {{
    log_format upstreams '$upstream_addr|$request_method|$status|$http_x_test_call';
    access_log {dir}/access.log upstreams;
    client_body_temp_path {dir}/body;
    proxy_temp_path {dir}/proxy;
    upstream replicas {{
{servers}
    }}
    server {{
        listen 127.0.0.1:{port};
        location / {{
            proxy_pass http://replicas;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host {host};
            # Event streams go through as they are written.
            proxy_buffering off;
            proxy_read_timeout 120s;
            # A refused connection is retried on the next replica (the request never reached
            # one); a call a replica took and then lost is not: the client gets the error.
            proxy_next_upstream error timeout;
        }}
        location = /healthz {{
            proxy_pass http://replicas;
            proxy_set_header Host {host};
        }}
    }}
}}
"""


@dataclass
class Cluster:
    url: str
    replicas: list[subprocess.Popen[bytes]]
    ports: list[int]
    access_log: Path

    def log_lines(self) -> list[list[str]]:
        """The balancer's access log so far: upstream(s), method, status, test call id."""
        text = self.access_log.read_text() if self.access_log.exists() else ""
        return [line.split("|") for line in text.splitlines() if line]

    def calls(self, tag: str) -> list[str]:
        """The upstream each request tagged `tag` went to, in order (a retried request lists
        every replica tried, the last one answering)."""
        return [upstream for upstream, _, _, call in self.log_lines() if call == tag]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    root = tmp_path / "tree"
    root.mkdir()
    write_paged_tree(root)
    key = tmp_path / "continuation.key"
    key.write_text(secrets.token_hex(32) + "\n")
    key.chmod(0o600)
    replicas: list[subprocess.Popen[bytes]] = []
    logs = []
    ports = [free_port() for _ in range(REPLICAS)]
    nginx: subprocess.Popen[bytes] | None = None
    try:
        for index, port in enumerate(ports):
            log = tmp_path / f"replica-{index}.log"
            logs.append(log)
            process = subprocess.Popen(
                [
                    str(BIN),
                    "--root", str(root),
                    "--http", f"127.0.0.1:{port}",
                    "--stateless",
                    "--json-response",
                    "--allowed-host", HOST,
                    "--continuation-key-file", str(key),
                    "--log-format", "json",
                ],
                cwd=REPO,
                stdin=subprocess.DEVNULL,
                stdout=log.open("wb"),
                stderr=subprocess.STDOUT,
            )
            replicas.append(process)
            wait_for_port(port, process, f"replica {index}", log)
        balancer = tmp_path / "nginx"
        balancer.mkdir()
        port = free_port()
        # `max_fails=0`: a dead replica stays in the rotation, so the balancer's retry of every
        # connection it refuses shows in the log (with the default, it is benched after one).
        servers = "\n".join(f"        server 127.0.0.1:{p} max_fails=0;" for p in ports)
        conf = balancer / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(
                user="user root;\n" if os.geteuid() == 0 else "",
                dir=balancer,
                servers=servers,
                port=port,
                host=HOST,
            )
        )
        nginx_log = balancer / "error.log"
        nginx = subprocess.Popen(
            [str(NGINX), "-p", str(balancer), "-c", str(conf), "-e", str(nginx_log)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        wait_for_port(port, nginx, "nginx", nginx_log)
        yield Cluster(f"http://127.0.0.1:{port}/mcp", replicas, ports, balancer / "access.log")
    finally:
        if nginx is not None:
            nginx.terminate()
            nginx.wait(timeout=10)
        for process in replicas:
            if process.poll() is None:
                process.terminate()
        for process in replicas:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


@asynccontextmanager
async def session_through(cluster: Cluster, tag: list[str]) -> AsyncIterator[ClientSession]:
    """An SDK session through the balancer. Every request carries `X-Test-Call: tag[0]`, which
    the balancer logs beside the replica that answered it."""

    async def mark(request: httpx2.Request) -> None:
        request.headers["x-test-call"] = tag[0]

    async with httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=TIMEOUT), event_hooks={"request": [mark]}
    ) as http:
        async with streamable_http_client(cluster.url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def test_paging_across_replicas_yields_every_row_once(cluster: Cluster) -> None:
    tag = ["setup"]
    with anyio.fail_after(TIMEOUT):
        async with session_through(cluster, tag) as session:
            tools = await listing(session)
            whole = await unpaged(session, tools, "search_text", {"query": WORD})
            tag[0] = "paging"
            arguments = {"query": WORD, "limit": 4}
            paged = await follow_pages(session, tools, "search_text", arguments, via_action=True)
    assert len(whole) == PAGED_OCCURRENCES
    keys = [row_key("search_text", row) for row in paged]
    assert len(keys) == len(set(keys)), "a row came twice"
    assert paged == whole
    upstreams = cluster.calls("paging")
    assert len(upstreams) >= PAGED_OCCURRENCES // 4, upstreams
    # Round-robin, no stickiness: every page on a replica other than the last page's, and
    # every replica served some.
    assert all(a != b for a, b in zip(upstreams, upstreams[1:])), upstreams
    assert len(set(upstreams)) == REPLICAS, upstreams


async def test_a_target_ref_sealed_by_one_replica_is_read_by_another(cluster: Cluster) -> None:
    tag = ["setup"]
    with anyio.fail_after(TIMEOUT):
        async with session_through(cluster, tag) as session:
            tools = await listing(session)
            tag[0] = "search"
            found = await call_ok(session, tools, "search_text", {"query": WORD, "limit": 1})
            hit = found["data"]["occurrences"][0]
            tag[0] = "read"
            read = await call_ok(session, tools, "read_file", {"target_ref": hit["target_ref"]})
    assert hit["path"] == read["data"]["path"], (hit, read["data"])
    assert WORD in read["data"]["content"]
    (searched,), (answered,) = cluster.calls("search"), cluster.calls("read")
    assert searched != answered, "the read went to the replica that sealed the ref"


async def test_a_killed_replica_fails_only_the_call_it_held(cluster: Cluster) -> None:
    tag = ["setup"]
    with anyio.fail_after(TIMEOUT):
        async with session_through(cluster, tag) as session:
            tools = await listing(session)
            # Freeze one replica: the balancer still hands it calls (its kernel accepts the
            # connection), and it answers none, so it holds one when it is killed.
            frozen = cluster.replicas[1]
            frozen.send_signal(signal.SIGSTOP)
            tag[0] = "held"
            outcomes: list[Any] = [None] * REPLICAS

            async def call(index: int) -> None:
                try:
                    outcomes[index] = await call_ok(
                        session, tools, "list_files", {"limit": 2 + index}
                    )
                except MCPError as error:
                    outcomes[index] = error

            async with anyio.create_task_group() as calls:
                for index in range(REPLICAS):
                    calls.start_soon(call, index)
                # Two answer; the third waits on the frozen replica until it dies.
                for _ in range(200):
                    if sum(outcome is not None for outcome in outcomes) == REPLICAS - 1:
                        break
                    await anyio.sleep(0.05)
                frozen.kill()
            failed = [outcome for outcome in outcomes if isinstance(outcome, MCPError)]
            assert len(failed) == 1, outcomes
            assert len([o for o in outcomes if isinstance(o, dict) and o["ok"]]) == REPLICAS - 1

            # Every call after it succeeds: the dead replica's refused connections are retried.
            tag[0] = "after"
            for index in range(12):
                envelope = await call_ok(session, tools, "list_files", {"limit": 1 + index % 5})
                assert envelope["ok"] is True
    dead = f"127.0.0.1:{cluster.ports[1]}"
    after = cluster.calls("after")
    assert len(after) == 12, after
    # Every third call went to the dead replica first, was refused, and was retried on a live
    # one, which answered it.
    retried = [upstreams for upstreams in after if "," in upstreams]
    assert len(retried) >= 12 // REPLICAS, after
    assert all(upstreams.startswith(dead) for upstreams in retried), after
    assert all(not upstreams.endswith(dead) for upstreams in after), after


async def test_health_through_the_balancer(cluster: Cluster) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        base = cluster.url.removesuffix("/mcp")
        for _ in range(REPLICAS):
            response = await http.get(f"{base}/healthz")
            assert response.status_code == 200, response.text
            assert response.json() == {"status": "ok"}


def test_sigterm_stops_a_replica_cleanly(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "replica.log"
    process = subprocess.Popen(
        [str(BIN), "--root", str(REPO), "--http", f"127.0.0.1:{port}", "--stateless"],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, "the server", log)
    ready = httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text
    assert ready.json()["continuations"] is True
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0, log.read_text(errors="replace")

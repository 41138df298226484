"""Replicas behind a proxy that speaks HTTP/2 to them: HAProxy with `proto h2` upstreams (h2c
with prior knowledge, as service meshes and load balancers speak to their upstreams), while
the official Python SDK speaks HTTP/1.1 to the proxy.

Three `workspace_server` replicas with the flags of `test_replicas.py` (stateless, one shared
continuation key), round-robin, nothing pinned: paging through a result whose pages land on
different replicas, over HTTP/2 between proxy and replicas, yields every row exactly once, in
the order of one unpaged call. A replica serving HTTP/1.1 only (`--no-http2`) is refused by such
a proxy, which shows the upstream hop really is HTTP/2.

HAProxy comes from the distribution (`apt-get install haproxy`, done by `.ci/run`); without it
these tests are skipped with that reason, unless `ENVELOPE_REQUIRE_HAPROXY` is set (CI sets it).
"""

from __future__ import annotations

import os
import secrets
import shutil
import subprocess
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client

from cluster import HOST, REPLICA_FLAGS, REPLICAS, free_port, start_server, wait_for_port
from test_interop import PAGED_OCCURRENCES, TIMEOUT, WORD, follow_pages, listing, row_key, unpaged, write_paged_tree

HAPROXY = shutil.which("haproxy") or ("/usr/sbin/haproxy" if Path("/usr/sbin/haproxy").exists() else None)

if HAPROXY is None and os.environ.get("ENVELOPE_REQUIRE_HAPROXY"):
    raise RuntimeError("haproxy is required (apt-get install haproxy) and is not installed")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(HAPROXY is None, reason="haproxy is not installed (apt-get install haproxy)"),
]

HAPROXY_CONF = """\
global
    maxconn 256
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    log stdout format raw local0
frontend mcp
    bind 127.0.0.1:{port}
    log global
    capture request header X-Test-Call len 64
    log-format "%s|%HM|%ST|%[capture.req.hdr(0)]"
    http-request set-header Host {host}
    default_backend replicas
backend replicas
    balance roundrobin
{servers}
"""


@contextmanager
def h2c_cluster(tmp_path: Path, *replica_flags: str) -> Iterator[tuple[str, Path]]:
    """Three replicas behind HAProxy speaking h2c to them: the proxy's `/mcp` URL and its log
    (one line a request: replica, method, status, test call id)."""
    root = tmp_path / "tree"
    root.mkdir()
    write_paged_tree(root)
    key = tmp_path / "continuation.key"
    key.write_text(secrets.token_hex(32) + "\n")
    key.chmod(0o600)
    replicas: list[subprocess.Popen[bytes]] = []
    proxy: subprocess.Popen[bytes] | None = None
    try:
        ports = []
        for index in range(REPLICAS):
            log = tmp_path / f"replica-{index}.log"
            flags = [*REPLICA_FLAGS(key)[2:], *replica_flags]
            process, port = start_server(root, log, *flags, what=f"replica {index}")
            replicas.append(process)
            ports.append(port)
        port = free_port()
        servers = "\n".join(f"    server r{i} 127.0.0.1:{p} proto h2" for i, p in enumerate(ports))
        conf = tmp_path / "haproxy.cfg"
        conf.write_text(HAPROXY_CONF.format(port=port, host=HOST, servers=servers))
        log = tmp_path / "haproxy.log"
        proxy = subprocess.Popen(
            [str(HAPROXY), "-f", str(conf), "-db"],
            stdin=subprocess.DEVNULL,
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
        )
        wait_for_port(port, proxy, "haproxy", log)
        yield f"http://127.0.0.1:{port}/mcp", log
    finally:
        if proxy is not None:
            proxy.terminate()
            proxy.wait(timeout=10)
        for process in replicas:
            process.terminate()
        for process in replicas:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def calls(log: Path, tag: str) -> list[str]:
    """The replica each request tagged `tag` went to, in order."""
    lines = [line.split("|") for line in log.read_text(errors="replace").splitlines()]
    return [fields[0] for fields in lines if len(fields) == 4 and fields[3] == tag]


@asynccontextmanager
async def session_through(url: str, tag: list[str]) -> AsyncIterator[ClientSession]:
    async def mark(request: httpx2.Request) -> None:
        request.headers["x-test-call"] = tag[0]

    async with httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=TIMEOUT), event_hooks={"request": [mark]}
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def test_paging_across_replicas_over_h2c_yields_every_row_once(tmp_path: Path) -> None:
    with h2c_cluster(tmp_path) as (url, log):
        tag = ["setup"]
        with anyio.fail_after(TIMEOUT):
            async with session_through(url, tag) as session:
                tools = await listing(session)
                whole = await unpaged(session, tools, "search_text", {"query": WORD})
                tag[0] = "paging"
                paged = await follow_pages(session, tools, "search_text", {"query": WORD, "limit": 4})
        assert len(whole) == PAGED_OCCURRENCES
        keys = [row_key("search_text", row) for row in paged]
        assert len(keys) == len(set(keys)), "a row came twice"
        assert paged == whole
        upstreams = calls(log, "paging")
        assert len(upstreams) >= PAGED_OCCURRENCES // 4, upstreams
        assert len(set(upstreams)) == REPLICAS, upstreams


async def test_a_replica_serving_http1_only_is_refused_by_an_h2c_proxy(tmp_path: Path) -> None:
    with h2c_cluster(tmp_path, "--no-http2") as (url, _):
        async with httpx2.AsyncClient(timeout=30) as http:
            answer = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"accept": "application/json, text/event-stream"},
            )
        assert answer.status_code in (502, 503), answer.text

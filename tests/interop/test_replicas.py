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
import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from cluster import (
    DEPLOY,
    HOST,
    NGINX,
    REPLICA_FLAGS,
    REPLICAS,
    Cluster,
    start_cluster,
    start_server,
)
from test_interop import (
    PAGED_OCCURRENCES,
    REPO,
    TIMEOUT,
    WORD,
    call_ok,
    follow_pages,
    listing,
    row_key,
    unpaged,
)



# CI sets ENVELOPE_REQUIRE_NGINX: there a missing nginx fails the run instead of skipping it.
if NGINX is None and os.environ.get("ENVELOPE_REQUIRE_NGINX"):
    raise RuntimeError("nginx is required (apt-get install nginx-light) and is not installed")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)"),
]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    with start_cluster(tmp_path) as running:
        yield running


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
            paged = await follow_pages(session, tools, "search_text", arguments)
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
            # The page's one ref, with the hit's path and line.
            by_ref = {
                "target_ref": found["data"]["target_ref"],
                "path": hit["path"],
                "line": hit["line"],
            }
            read = await call_ok(session, tools, "read_file", by_ref)
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
    log = tmp_path / "replica.log"
    process, port = start_server(REPO, log, "--stateless")
    ready = httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=10)
    assert ready.status_code == 200 and ready.json()["ready"] is True, ready.text
    assert ready.json()["continuations"] is True
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0, log.read_text(errors="replace")


def test_the_deployment_recipe_runs_what_these_tests_run() -> None:
    """`deploy/compose.yaml` starts the replicas with the flags these tests pass, three of them
    behind nginx with the proxy settings these tests include, the key as a secret."""
    import yaml

    compose = yaml.safe_load((DEPLOY / "compose.yaml").read_text())
    services = compose["services"]
    replicas = {name: spec for name, spec in services.items() if name.startswith("workspace-server")}
    assert len(replicas) == REPLICAS, list(services)
    for spec in replicas.values():
        flags = [flag for arg in spec["command"] for flag in arg.split("=", 1)]
        assert flags == [str(flag) for flag in REPLICA_FLAGS("/run/secrets/continuation_key")], flags
        assert spec["secrets"] == ["continuation_key"]
        assert "/readyz" in " ".join(spec["healthcheck"]["test"])
    balancer = services["balancer"]
    assert "./mcp-proxy.conf:/etc/nginx/mcp-proxy.conf:ro" in balancer["volumes"]
    nginx = (DEPLOY / "nginx.conf").read_text()
    assert "include /etc/nginx/mcp-proxy.conf;" in nginx
    assert nginx.count("server workspace-server-") == REPLICAS
    assert f"proxy_set_header Host {HOST};" in (DEPLOY / "mcp-proxy.conf").read_text()


def test_the_oauth_recipe_adds_only_the_oauth_flags() -> None:
    """`deploy/compose.auth.yaml`, layered over `compose.yaml`, starts every replica with the same
    flags plus `--auth-issuer` and `--auth-audience`, which the auth suites test (tests/auth)."""
    import yaml

    base = yaml.safe_load((DEPLOY / "compose.yaml").read_text())["services"]
    layered = yaml.safe_load((DEPLOY / "compose.auth.yaml").read_text())["services"]
    assert set(layered) == {name for name in base if name.startswith("workspace-server")}
    for name, spec in layered.items():
        command = spec["command"]
        assert command[: len(base[name]["command"])] == base[name]["command"], name
        added = [arg.split("=", 1)[0] for arg in command[len(base[name]["command"]) :]]
        assert added == ["--auth-issuer", "--auth-audience"], added


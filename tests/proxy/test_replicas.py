"""Two envelope-proxy replicas behind nginx (round-robin, no stickiness), sharing one Redis as
their result store and one paging key: a page one replica issued is served by the other.

Each replica fronts its own copy of the proxy's test upstream
(`envelope-proxy/tests/fixtures/upstream.py`), whose `append` is not read-only and names, in
its first line, how often that copy ran it. A client follows `next-page` through the balancer
exactly as given: the pages alternate between the replicas (nginx's log says which served
each), every row arrives once and in order, and `append` ran once, on the replica that
answered the first page, never on the one that served a page of it.

redis-server and nginx come from the distribution (`apt-get install redis-server
nginx-light`, done by `.ci/run`); without them these tests skip, unless
ENVELOPE_REQUIRE_REDIS / ENVELOPE_REQUIRE_NGINX (set in CI) make a missing one fail.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from proxied import PROXY, REPO, require

NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
REDIS = shutil.which("redis-server")
FIXTURE = REPO / "envelope-proxy/tests/fixtures/upstream.py"
if os.environ.get("ENVELOPE_REQUIRE_NGINX") and NGINX is None:
    raise RuntimeError("nginx is required (apt-get install nginx-light) and is not installed")
if os.environ.get("ENVELOPE_REQUIRE_REDIS") and REDIS is None:
    raise RuntimeError("redis-server is required (apt-get install redis-server) and is not installed")
pytestmark = [
    pytest.mark.skipif(NGINX is None, reason="nginx is not installed (apt-get install nginx-light)"),
    pytest.mark.skipif(REDIS is None, reason="redis-server is not installed (apt-get install redis-server)"),
]

NGINX_CONF = """\
{user}worker_processes 1;
daemon off;
pid {dir}/nginx.pid;
error_log {dir}/error.log info;
events {{ worker_connections 64; }}
http {{
    log_format upstreams '$upstream_addr|$request_uri|$status';
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
            proxy_set_header Host 127.0.0.1;
        }}
    }}
}}
"""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    raise AssertionError(f"{what} did not start; its log:\n{log.read_text(errors='replace')}")


@dataclass
class Replicas:
    url: str
    ports: list[int]
    access_log: Path
    redis_port: int


@pytest.fixture
def replicas(tmp_path: Path) -> Iterator[Replicas]:
    require(PROXY, "build it with `cargo build --workspace --all-features --tests --bins --examples`")
    processes: list[subprocess.Popen[bytes]] = []

    def start(command: list[str], port: int, what: str) -> None:
        log = tmp_path / f"{what}.log"
        process = subprocess.Popen(
            command, cwd=REPO, stdin=subprocess.DEVNULL, stdout=log.open("wb"), stderr=subprocess.STDOUT
        )
        processes.append(process)
        wait_for_port(port, process, what, log)

    try:
        redis_port = free_port()
        start(
            [str(REDIS), "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--maxmemory", "64mb", "--maxmemory-policy", "allkeys-lru"],
            redis_port,
            "redis",
        )
        key = tmp_path / "continuation.key"
        key.write_text(secrets.token_hex(32) + "\n")
        key.chmod(0o600)
        config = tmp_path / "proxy.toml"
        config.write_text(
            f"[upstream]\ncommand = {json.dumps(['python3', str(FIXTURE)])}\n\n"
            f'[store]\nredis_url = "redis://127.0.0.1:{redis_port}/0"\n'
        )
        ports = []
        for index in range(2):
            port = free_port()
            start(
                [str(PROXY), "--config", str(config), "--continuation-key-file", str(key),
                 "--http", f"127.0.0.1:{port}", "--stateless", "--json-response"],
                port,
                f"replica-{index}",
            )
            ports.append(port)
        balancer = tmp_path / "nginx"
        balancer.mkdir()
        port = free_port()
        conf = balancer / "nginx.conf"
        conf.write_text(
            NGINX_CONF.format(
                user="user root;\n" if os.geteuid() == 0 else "",
                dir=balancer,
                servers="\n".join(f"        server 127.0.0.1:{p};" for p in ports),
                port=port,
            )
        )
        start([str(NGINX), "-p", str(balancer), "-c", str(conf), "-e", str(balancer / "error.log")], port, "nginx")
        yield Replicas(f"http://127.0.0.1:{port}", ports, balancer / "access.log", redis_port)
    finally:
        for process in reversed(processes):
            if process.poll() is None:
                process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


def call(replicas: Replicas, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`POST /tools/{tool}` through the balancer: the envelope (a problem's, when it failed)."""
    return call_at(replicas.url, tool, arguments)


def call_at(url: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """`POST /tools/{tool}` at `url`: the envelope (a problem's, when it failed)."""
    request = urllib.request.Request(
        f"{url}/tools/{tool}",
        data=json.dumps(arguments).encode(),
        headers={"content-type": "application/json"},
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            body: dict[str, Any] = json.load(response)
            return body
    except urllib.error.HTTPError as refused:
        problem: dict[str, Any] = json.load(refused)
        return problem.get("envelope", problem)


def served_by(replicas: Replicas) -> list[str]:
    """The replica (`127.0.0.1:port`) that served each `/tools/` call, in order."""
    time.sleep(0.2)  # nginx writes its access log as each request ends
    lines = replicas.access_log.read_text().splitlines()
    return [line.split("|")[0] for line in lines if "|/tools/" in line]


def test_a_page_one_replica_issued_is_served_by_the_other(replicas: Replicas) -> None:
    envelope = call(replicas, "append", {"count": 5_000})
    assert envelope["ok"] is True, envelope
    rows = list(envelope["data"])
    pages = 1
    while True:
        following = [action for action in envelope.get("next_actions", []) if action["id"] == "next-page"]
        if not following:
            break
        action = following[0]
        envelope = call(replicas, action["tool"], action["arguments"])
        assert envelope["ok"] is True, envelope
        rows.extend(envelope["data"])
        pages += 1
        assert pages < 100, "paging does not end"
    assert pages > 3, pages
    # Every row once, in order: the first names the one run; no page ran the tool again.
    assert rows[0] == "appended 1 times\n"
    assert len(rows) == 5_000
    assert rows[1:] == [f"line {i:06d} {'x' * 28}\n" for i in range(1, 5_000)]
    # The balancer alternated: each replica served pages of the answer the other kept.
    served = served_by(replicas)
    assert len(served) == pages, served
    assert set(served) == {f"127.0.0.1:{port}" for port in replicas.ports}, served
    assert all(one != other for one, other in zip(served, served[1:])), served
    # Asked again at each replica: one upstream ran it once before, the other never.
    again = sorted(first_line(call_at(f"http://127.0.0.1:{port}", "append", {"count": 1})) for port in replicas.ports)
    assert again == ["appended 1 times", "appended 2 times"], again


def first_line(envelope: dict) -> str:
    """The first line of an answer's text, whether it came whole or as rows of lines."""
    assert envelope["ok"] is True, envelope
    data = envelope["data"]
    text = data if isinstance(data, str) else "".join(data)
    return text.split("\n", 1)[0]


def test_a_page_of_an_answer_redis_no_longer_holds_is_stale_with_a_rerun(replicas: Replicas) -> None:
    envelope = call(replicas, "append", {"count": 5_000})
    action = next(action for action in envelope["next_actions"] if action["id"] == "next-page")
    # Another call's arguments carry the token elsewhere: refused on whichever replica.
    moved = call(replicas, action["tool"], {**action["arguments"], "count": 4_999})
    assert moved["ok"] is False
    assert moved["error"]["code"] == "CONTINUATION_SCOPE_MISMATCH", moved
    # Redis evicts (here: everything at once); the page is stale on either replica, and the
    # rerun says it runs the tool again.
    subprocess.run(["redis-cli", "-p", str(replicas.redis_port), "FLUSHALL"], check=True, capture_output=True)
    for _ in replicas.ports:
        stale = call(replicas, action["tool"], action["arguments"])
        assert stale["ok"] is False
        assert stale["error"]["code"] == "STALE_CONTINUATION", stale
        rerun = next(action for action in stale["next_actions"] if action["id"] == "rerun")
        assert rerun["arguments"] == {"count": 5_000}, rerun
        assert "runs the tool again" in rerun["reason"], rerun


def test_an_answer_redis_cannot_take_is_kept_by_the_replica_that_ran_it(replicas: Replicas) -> None:
    # Redis goes away between the answers: the tool that ran is not run again, and none of
    # its answer is lost.
    subprocess.run(["redis-cli", "-p", str(replicas.redis_port), "SHUTDOWN", "NOSAVE"], capture_output=True)
    ran_at, other = (f"http://127.0.0.1:{port}" for port in replicas.ports)
    envelope = call_at(ran_at, "append", {"count": 5_000})
    assert envelope["ok"] is True, envelope
    rows = list(envelope["data"])
    first = next(action for action in envelope["next_actions"] if action["id"] == "next-page")
    while True:
        following = [action for action in envelope.get("next_actions", []) if action["id"] == "next-page"]
        if not following:
            break
        envelope = call_at(ran_at, following[0]["tool"], following[0]["arguments"])
        assert envelope["ok"] is True, envelope
        rows.extend(envelope["data"])
        assert len(rows) <= 5_000, "paging does not end"
    assert rows[0] == "appended 1 times\n"
    assert rows[1:] == [f"line {i:06d} {'x' * 28}\n" for i in range(1, 5_000)]
    # No page ran it again: asked anew, its upstream runs it the second time.
    again = call_at(ran_at, "append", {"count": 1})
    assert first_line(again) == "appended 2 times", again
    # The other replica keeps none of it and cannot read Redis: retry later, the same page.
    elsewhere = call_at(other, first["tool"], first["arguments"])
    assert elsewhere["ok"] is False, elsewhere
    assert elsewhere["error"]["code"] == "result_store_unavailable", elsewhere
    assert elsewhere["error"]["retryable"] is True, elsewhere

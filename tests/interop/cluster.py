"""Three `workspace_server` replicas behind nginx, as `deploy/compose.yaml` runs them: the
replica tests and the load benchmark start one."""

from __future__ import annotations

import os
import secrets
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from test_interop import BIN, REPO, write_paged_tree

DEPLOY = REPO / "deploy"
NGINX = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
REPLICAS = 3
# The name the balancer gives the replicas in `Host`: they accept it, and only it besides
# loopback, as a deployment behind a proxy would.
HOST = "mcp.internal"


def REPLICA_FLAGS(key: Path | str) -> list[str]:  # noqa: N802 (a constant, but for the key)
    """The flags every replica runs with (`deploy/compose.yaml` passes the same), `--http`
    first (its address differs: loopback ports here, 0.0.0.0:8080 in a container)."""
    return [
        "--http", "0.0.0.0:8080",
        "--stateless",
        "--json-response",
        "--allowed-host", HOST,
        "--log-format", "json",
        "--continuation-key-file", str(key),
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
            # What is deployed: `deploy/mcp-proxy.conf`.
            include {proxy};
        }}
    }}
}}
"""


def start_server(
    root: Path, log: Path, *flags: str, what: str = "the example server"
) -> tuple[subprocess.Popen[bytes], int]:
    """The example serving `root` over HTTP on a free loopback port with `flags`, once it
    listens, and the port; its output goes to `log`."""
    port = free_port()
    process = subprocess.Popen(
        [str(BIN), "--root", str(root), "--http", f"127.0.0.1:{port}", *flags],
        cwd=REPO,
        stdin=subprocess.DEVNULL,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    wait_for_port(port, process, what, log)
    return process, port


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


@contextmanager
def start_cluster(tmp_path: Path) -> Iterator[Cluster]:
    """Three replicas for a paging fixture tree sharing one new key, behind nginx."""
    root = tmp_path / "tree"
    root.mkdir()
    write_paged_tree(root)
    key = tmp_path / "continuation.key"
    key.write_text(secrets.token_hex(32) + "\n")
    key.chmod(0o600)
    replicas: list[subprocess.Popen[bytes]] = []
    logs = []
    ports: list[int] = []
    nginx: subprocess.Popen[bytes] | None = None
    try:
        for index in range(REPLICAS):
            log = tmp_path / f"replica-{index}.log"
            logs.append(log)
            process, port = start_server(root, log, *REPLICA_FLAGS(key)[2:], what=f"replica {index}")
            replicas.append(process)
            ports.append(port)
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
                proxy=DEPLOY / "mcp-proxy.conf",
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



"""Load through the balancer: 10,000 tool calls at concurrency 64, then 256, against three
`workspace_server` replicas behind nginx (`cluster.start_cluster`, as `deploy/compose.yaml`
runs them).

    target/interop-venv/bin/python tests/interop/bench_replicas.py [--calls N]

A benchmark, not a test: it prints throughput, p50/p99 latency and each replica's RSS before
and after, and exits non-zero only if a call got no envelope or more than one, two answers
shared a `request_id`, or a replica's RSS grew by more than `MAX_RSS_GROWTH_MIB`. The client is
this Python process (httpx, keep-alive connections), on the same two cores as nginx and the
replicas: the throughput is the whole loop's, the client's share included.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx2

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cluster import start_cluster  # noqa: E402
from test_interop import WORD  # noqa: E402

CONCURRENCY = (64, 256)
# Per replica, over both levels: more suggests something is kept per call.
MAX_RSS_GROWTH_MIB = 64
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-06-18",
}

# The calls, in turn: a page of a search, a file read, a listing, and a call with bad
# arguments (a `validation` envelope).
CALLS = [
    ("search_text", {"query": WORD, "limit": 5}, True),
    ("read_file", {"path": "a/doc-00.txt"}, True),
    ("list_files", {"limit": 10}, True),
    ("read_file", {"path": 42}, False),
]


def rss_mib(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def level(url: str, calls: int, concurrency: int) -> tuple[list[float], list[str], list[str]]:
    """Runs `calls` calls with `concurrency` in flight: latencies (s), request ids, problems."""
    latencies: list[float] = []
    request_ids: list[str] = []
    problems: list[str] = []
    next_call = iter(range(calls))
    limits = httpx2.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx2.AsyncClient(limits=limits, timeout=120) as http:

        async def worker() -> None:
            for index in next_call:
                name, arguments, ok = CALLS[index % len(CALLS)]
                body = {
                    "jsonrpc": "2.0",
                    "id": index,
                    "method": "tools/call",
                    "params": {"name": name, "arguments": arguments},
                }
                started = time.perf_counter()
                try:
                    response = await http.post(url, json=body, headers=HEADERS)
                except httpx2.HTTPError as error:
                    problems.append(f"call {index}: {error!r}")
                    continue
                latencies.append(time.perf_counter() - started)
                try:
                    message = json.loads(response.content)
                except ValueError:
                    problems.append(f"call {index}: {response.status_code} {response.text[:200]}")
                    continue
                # Exactly one JSON-RPC answer, to this call, carrying one envelope.
                if not isinstance(message, dict) or message.get("id") != index:
                    problems.append(f"call {index}: not its one answer: {response.text[:200]}")
                    continue
                envelope = message.get("result", {}).get("structuredContent")
                if not isinstance(envelope, dict) or envelope.get("ok") is not ok:
                    problems.append(f"call {index}: {response.text[:200]}")
                    continue
                request_ids.append(envelope["meta"]["request_id"])

        await asyncio.gather(*(worker() for _ in range(concurrency)))
    return latencies, request_ids, problems


def percentile(values: list[float], percent: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * percent / 100))]


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="calls per concurrency level")
    args = parser.parse_args()
    failed = False
    with tempfile.TemporaryDirectory(prefix="envelope-load-") as tmp, start_cluster(Path(tmp)) as cluster:
        pids = [replica.pid for replica in cluster.replicas]
        # Warm up: every kind of call on every replica.
        await level(cluster.url, 12 * len(CALLS), 4)
        before = [rss_mib(pid) for pid in pids]
        seen: set[str] = set()
        print(f"{args.calls} calls per level through nginx, {len(pids)} replicas")
        print("| concurrency | calls/s | p50 | p99 | replica RSS after (MiB) |")
        print("|---:|---:|---:|---:|---|")
        for concurrency in CONCURRENCY:
            started = time.perf_counter()
            latencies, request_ids, problems = await level(cluster.url, args.calls, concurrency)
            elapsed = time.perf_counter() - started
            duplicates = len(request_ids) - len(set(request_ids)) + len(seen & set(request_ids))
            seen |= set(request_ids)
            after = [rss_mib(pid) for pid in pids]
            print(
                f"| {concurrency} | {len(latencies) / elapsed:,.0f} | "
                f"{statistics.median(latencies) * 1e3:.1f} ms | {percentile(latencies, 99) * 1e3:.1f} ms | "
                + ", ".join(f"{mib:.1f}" for mib in after)
                + " |"
            )
            for problem in problems[:10]:
                print(f"  {problem}")
            if problems or duplicates or len(request_ids) != args.calls:
                print(f"  FAILED: {len(problems)} problems, {duplicates} duplicate request ids")
                failed = True
        growth = [a - b for a, b in zip(after, before)]
        print(
            "replica RSS before: "
            + ", ".join(f"{mib:.1f}" for mib in before)
            + " MiB; growth: "
            + ", ".join(f"{mib:+.1f}" for mib in growth)
            + f" MiB (bound {MAX_RSS_GROWTH_MIB} MiB)"
        )
        if any(mib > MAX_RSS_GROWTH_MIB for mib in growth):
            print("  FAILED: a replica grew past the bound")
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))

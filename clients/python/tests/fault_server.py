"""A fault server: tools written with the official Python SDK's server API that answer
hand-written envelopes, each failing in one way the kit has to handle. Run over stdio:
`python fault_server.py`. Its counters live in the process: one server per test.

Tools (a `key` argument keeps one test's counter apart from another's):
- `flaky` (idempotent): `transient`, retryable, `fail_times` times, then ok with the attempt.
- `rate_limited` (idempotent): `transient` with `retry_after_ms` once, then ok.
- `year_wait` (idempotent): `transient` with a `retry_after_ms` of a year, always.
- `unsafe_write` (not annotated): `transient`, retryable, once; with `say_nothing_ran` its error
  carries `data.ran: false`.
- `missing` (read-only): `validation`, `retryable: true` (a category retries cannot help: the
  same key fails again).
- `find` (read-only): a search page with one `target_ref` for its hits; with `stubborn` its ref
  is stale too.
- `stale_read` (read-only): by `target_ref`, `path`, `line`; a ref not starting `fresh` is
  `STALE_TARGET_SNAPSHOT` with a `resolve_target` action running `find` again (the hit a line
  further down); with `no_recovery` the stale answer offers none.
- `numbers` (read-only, pages): rows 1..`total`, `limit` a page (default 4), a continuation
  `p<offset>`; `limit` may change between pages.
- `breaks` (read-only, pages): as `numbers`, but the page starting at `break_at` fails: with
  `die`, the server process exits mid-call (a transport fault); else the page is an `internal`
  failure, not retryable.
- `looping` (read-only, pages): a page whose `next-page` token is always the same.
- `backwards` (read-only, pages): fresh tokens, but every page starts at row 1 again.
- `bad_envelope` (read-only): `ok: true` without `data`, verdict `CATASTROPHIC`.
- `ghost_action` (read-only): ok, with a next action naming `not_listed`, which is not served.
- `bad_args` (read-only): ok, with a next action calling `numbers` with a `total` that is no
  integer (its input schema refuses it).
- `call_log` (read-only): the names of the tools called so far, in order.
- `weather` (read-only): a plain tool, no envelope: a string (listed with the SDK's own output
  schema, `{result: string}`).
- `raw_text` (read-only): a plain tool listed without an output schema: one text block.
"""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.types import CallToolResult, TextContent, ToolAnnotations

# The instructions a toolset shows its model (`test_pydantic_ai.py` looks for this text).
INSTRUCTIONS = "Every tool answers an envelope: branch on `ok`, then on `verdict`."
server = MCPServer("fault-server", instructions=INSTRUCTIONS)
IDEMPOTENT = ToolAnnotations(idempotent_hint=True)
READ_ONLY = ToolAnnotations(read_only_hint=True)
YEAR_MS = 365 * 24 * 3600 * 1000

counters: dict[str, int] = {}
log: list[str] = []
_ids = iter(range(10**6))


def request_id() -> str:
    """A fresh ULID-shaped id (Crockford base 32, first character 0)."""
    n = next(_ids)
    digits = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    tail = ""
    for _ in range(10):
        tail = digits[n % 32] + tail
        n //= 32
    return "01HM3K2X9V7QY8R4" + tail


def answer(envelope: dict[str, Any]) -> CallToolResult:
    envelope.setdefault("meta", {"request_id": request_id()})
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(envelope))],
        structured_content=envelope,
        is_error=envelope.get("ok") is not True,
    )


def ok(data: Any, **extra: Any) -> CallToolResult:
    return answer({"ok": True, "verdict": "INFO", "data": data, **extra})


def failed(category: str, message: str, retryable: bool, **error: Any) -> CallToolResult:
    return answer(
        {
            "ok": False,
            "verdict": "ERROR",
            "error": {"category": category, "message": message, "retryable": retryable, **error},
        }
    )


def count(name: str, key: str) -> int:
    log.append(name)
    counters[f"{name}/{key}"] = counters.get(f"{name}/{key}", 0) + 1
    return counters[f"{name}/{key}"]


@server.tool(annotations=IDEMPOTENT)
def flaky(key: str, fail_times: int) -> CallToolResult:
    """Transient failures, then ok."""
    attempt = count("flaky", key)
    if attempt <= fail_times:
        return failed("transient", "the backend timed out", True, code="backend_timeout")
    return ok({"attempt": attempt})


@server.tool(annotations=IDEMPOTENT)
def rate_limited(key: str, retry_after_ms: int) -> CallToolResult:
    """Rate-limited once, then ok."""
    attempt = count("rate_limited", key)
    if attempt == 1:
        return failed("transient", "rate limited", True, code="rate_limited", retry_after_ms=retry_after_ms)
    return ok({"attempt": attempt})


@server.tool(annotations=IDEMPOTENT)
def year_wait(key: str) -> CallToolResult:
    """Always asks to wait a year."""
    count("year_wait", key)
    return failed("transient", "come back next year", True, code="rate_limited", retry_after_ms=YEAR_MS)


@server.tool()
def unsafe_write(key: str, say_nothing_ran: bool = False) -> CallToolResult:
    """A write that fails transiently once."""
    attempt = count("unsafe_write", key)
    if attempt == 1:
        data = {"ran": False} if say_nothing_ran else None
        extra = {"data": data} if data is not None else {}
        return failed("transient", "the write timed out", True, code="write_timeout", **extra)
    return ok({"attempt": attempt, "written": True})


@server.tool(annotations=READ_ONLY)
def missing(key: str) -> CallToolResult:
    """A key refused, claiming to be retryable."""
    count("missing", key)
    return failed("validation", "no such key", True, code="no_entity")


def hits(stubborn: bool, generation: int) -> CallToolResult:
    ref = "stale-again" if stubborn else f"fresh-{generation}"
    rows = [
        {"path": "a.txt", "line": 2, "text": "needle"},
        {"path": "a.txt", "line": 5, "text": "needle again"},
    ]
    completeness = {"unit": "occurrence", "returned": 2, "total": 2, "complete": True, "truncated": False}
    return ok({"occurrences": rows, "target_ref": ref}, completeness=completeness)


@server.tool(annotations=READ_ONLY)
def find(query: str, stubborn: bool = False) -> CallToolResult:
    """A search page: two hits and one ref."""
    generation = count("find", query)
    return hits(stubborn, generation)


@server.tool(annotations=READ_ONLY)
def stale_read(target_ref: str, path: str, line: int, no_recovery: bool = False, stubborn: bool = False) -> CallToolResult:
    """A read by target ref."""
    count("stale_read", target_ref)
    if target_ref.startswith("fresh"):
        return ok({"path": path, "line": line, "content": "needle"})
    result = failed("validation", "the target changed", False, code="STALE_TARGET_SNAPSHOT")
    if not no_recovery:
        envelope = result.structured_content
        arguments: dict[str, Any] = {"query": "needle"}
        if stubborn:
            arguments["stubborn"] = True
        envelope["next_actions"] = [
            {
                "id": "search-again",
                "role": "resolve_target",
                "tool": "find",
                "arguments": arguments,
                "reason": "run the search again for a fresh ref",
            }
        ]
        result = answer(envelope)
    return result


def page(rows: list[int], offset: int, total: int, token: str | None, tool: str, args: dict[str, Any]) -> CallToolResult:
    more = token is not None
    completeness: dict[str, Any] = {"unit": "item", "returned": len(rows), "total": total, "complete": not more, "truncated": more}
    if offset:
        completeness["offset"] = offset
    if more:
        completeness["truncation_reasons"] = ["page_limit"]
    extra: dict[str, Any] = {"completeness": completeness}
    if more:
        extra["next_actions"] = [
            {
                "id": "next-page",
                "role": "broaden_scope",
                "tool": tool,
                "arguments": {**args, "continuation": token},
                "reason": "next page",
            }
        ]
    return ok({"items": [{"n": n, "label": f"item number {n}"} for n in rows], "generation": "g1"}, **extra)


@server.tool(annotations=READ_ONLY)
def numbers(total: int, limit: int = 4, continuation: str | None = None) -> CallToolResult:
    """Rows 1..total, paged."""
    log.append("numbers")
    offset = int(continuation[1:]) if continuation else 0
    rows = list(range(offset + 1, min(total, offset + limit) + 1))
    end = offset + len(rows)
    token = f"p{end}" if end < total else None
    return page(rows, offset, total, token, "numbers", {"total": total, "limit": limit})


@server.tool(annotations=READ_ONLY)
def breaks(total: int, break_at: int, limit: int = 4, die: bool = False, continuation: str | None = None) -> CallToolResult:
    """Rows 1..total, paged, until the page starting at `break_at`."""
    log.append("breaks")
    offset = int(continuation[1:]) if continuation else 0
    if offset >= break_at:
        if die:
            os._exit(1)
        return failed("internal", "the index went away", False)
    rows = list(range(offset + 1, min(total, offset + limit) + 1))
    end = offset + len(rows)
    token = f"p{end}" if end < total else None
    args = {"total": total, "break_at": break_at, "limit": limit, "die": die}
    return page(rows, offset, total, token, "breaks", args)


@server.tool(annotations=READ_ONLY)
def growing(continuation: str | None = None) -> CallToolResult:
    """Pages of two, each offering a continuation twice as long as the last: without bound."""
    log.append("growing")
    size = len(continuation) if continuation else 0
    offset = 0 if size == 0 else 2 * (size.bit_length() - 6)
    token = "g" * max(64, size * 2)
    return page([offset + 1, offset + 2], offset, 10**6, token, "growing", {})


@server.tool(annotations=READ_ONLY)
def shifting(continuation: str | None = None) -> CallToolResult:
    """Pages of two whose total grows by one on every page."""
    log.append("shifting")
    offset = int(continuation[1:]) if continuation else 0
    return page([offset + 1, offset + 2], offset, 100 + offset, f"s{offset + 2}", "shifting", {})


@server.tool(annotations=READ_ONLY)
def vanishing(continuation: str | None = None) -> CallToolResult:
    """Pages of two; after the second, the tool leaves the server's listing."""
    log.append("vanishing")
    offset = int(continuation[1:]) if continuation else 0
    if offset >= 2:
        server.remove_tool("vanishing")
    return page([offset + 1, offset + 2], offset, 10, f"v{offset + 2}", "vanishing", {})


@server.tool(annotations=READ_ONLY)
def looping(continuation: str | None = None) -> CallToolResult:
    """Always the same next-page token."""
    log.append("looping")
    offset = 0 if continuation is None else 2
    return page([offset + 1, offset + 2], offset, 100, "same-token", "looping", {})


@server.tool(annotations=READ_ONLY)
def backwards(continuation: str | None = None) -> CallToolResult:
    """Fresh tokens, every page the first rows again."""
    n = int(continuation[1:]) if continuation else 0
    log.append("backwards")
    return page([1, 2], 0, 100, f"t{n + 1}", "backwards", {})


@server.tool(annotations=READ_ONLY)
def bad_envelope() -> CallToolResult:
    """An envelope breaking its own schema."""
    log.append("bad_envelope")
    return answer({"ok": True, "verdict": "CATASTROPHIC", "summary_line": "fine"})


@server.tool(annotations=READ_ONLY)
def ghost_action() -> CallToolResult:
    """A next action naming a tool the server does not serve."""
    log.append("ghost_action")
    return ok(
        {"done": True},
        next_actions=[
            {
                "id": "ghost",
                "role": "inspect",
                "tool": "not_listed",
                "arguments": {"x": 1},
                "reason": "look closer",
            }
        ],
    )


@server.tool(annotations=READ_ONLY)
def bad_args() -> CallToolResult:
    """A next action whose arguments its tool's input schema refuses."""
    log.append("bad_args")
    return ok(
        {"done": True},
        next_actions=[
            {
                "id": "count",
                "role": "inspect",
                "tool": "numbers",
                "arguments": {"total": "many"},
                "reason": "count them",
            }
        ],
    )


@server.tool(annotations=READ_ONLY)
def call_log() -> CallToolResult:
    """The tools called so far."""
    return ok({"calls": list(log)})


@server.tool(annotations=READ_ONLY)
def weather(city: str) -> str:
    """A plain tool: no envelope."""
    log.append("weather")
    return f"sunny in {city}"


@server.tool(annotations=READ_ONLY)
def raw_text() -> CallToolResult:
    """A plain tool without an output schema."""
    log.append("raw_text")
    return CallToolResult(content=[TextContent(type="text", text="just text")])


if __name__ == "__main__":
    # `--http PORT`: over streamable HTTP on loopback, at `/mcp`; else over stdio.
    if sys.argv[1:2] == ["--http"]:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run()

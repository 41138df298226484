"""Interop: the example `workspace_server` driven by the official Python MCP SDK.

Every test runs over both transports the server offers: stdio (the SDK spawns the binary) and
streamable HTTP (one server process on a loopback port for the whole session). The binary is
`target/debug/examples/workspace_server` (override with `WORKSPACE_SERVER_BIN`); build it first
with `cargo build -p envelope-mcp --example workspace_server`.

What is checked is DESIGN §12 from the client's side: the listing's schemas are valid JSON Schema
2020-12; every call result carries the envelope as `structuredContent`, valid against the tool's
output schema, mirrored as compact JSON in the first text content, with `isError == !ok` and
the request id and tier in `_meta`; the tool's own failures (bad arguments, a missing file) are
`isError` results while an unknown tool is a JSON-RPC error; long tools report progress; and
over HTTP the `X-Request-ID` header is echoed (a valid ULID kept, anything else replaced) and
becomes the envelope's `meta.request_id`.
"""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("WORKSPACE_SERVER_BIN", REPO / "target/debug/examples/workspace_server"))

ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
VERDICTS = {"SAFE", "CAUTION", "REVIEW", "UNSAFE", "INFO", "WARN", "ERROR", "NOT_FOUND"}
CATEGORIES = {
    "transient",
    "validation",
    "permission",
    "not_found",
    "unavailable",
    "internal",
    "module_disabled",
}
TIERS = {"lite", "standard", "heavy"}
INVALID_PARAMS = -32602

TOOLS = {"search_text", "read_file", "list_files", "workspace_stats", "graph_export"}

# Arguments each tool must accept.
GOOD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_text", {"query": "EnvelopeServer", "limit": 5}),
    ("search_text", {"query": r"fn\s+\w+", "regex": True, "path_glob": "**/*.rs", "limit": 3}),
    ("read_file", {"path": "Cargo.toml", "start_line": 1, "end_line": 3}),
    ("read_file", {"path": "Cargo.toml"}),
    ("list_files", {"glob": "**/*.toml", "limit": 5}),
    ("list_files", {}),
    ("workspace_stats", {}),
    ("graph_export", {"max_nodes": 10}),
    ("graph_export", {}),
]

# Per-call controls every tool accepts.
CONTROLS = {"response_mode": "full", "output_format": "json", "compact_only": False}

# Arguments each tool must refuse as a validation error (and its input schema must refuse too).
BAD_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("search_text", {"query": 42}),
    ("search_text", {}),
    ("search_text", {"query": "x", "limit": "ten"}),
    ("read_file", {"path": ["not", "a", "string"]}),
    ("read_file", {"path": "Cargo.toml", "start_line": "one"}),
    ("read_file", {}),
    ("list_files", {"limit": "many"}),
    ("list_files", {"limit": -1}),
    ("graph_export", {"max_nodes": "all"}),
]

# Paths that do not exist under the root.
MISSING_PATHS = ["no/such/dir/file-7f3a.txt", "does-not-exist.rs"]

# Paths that leave the root: never served.
ESCAPING_PATHS = ["../../../../../../etc/hostname", "/etc/hostname"]

# ULIDs for the X-Request-ID tests.
CLIENT_ID = "01HM3K2X9V7QY8R4PNZTH5W6BC"
CALL_ID = "01HM3K2X9V7QY8R4PNZTH5W6BD"
BAD_IDS: list[str | bytes] = [
    "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  # first character past 7: over 128 bits
    CLIENT_ID + "X",  # too long
    CLIENT_ID[:-1],  # too short
    CLIENT_ID[:-1] + "U",  # U is not Crockford
    (CLIENT_ID[:-1] + "É").encode("utf-8"),  # not ASCII
    "",
]

TIMEOUT = 120

# workspace_stats calls per transport in the progress test.
PROGRESS_CALLS = 20

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def server_bin() -> Path:
    if not BIN.is_file():
        pytest.fail(
            f"{BIN} is missing: run `cargo build -p envelope-mcp --example workspace_server` first"
        )
    return BIN


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture(scope="session")
def http_url(server_bin: Path) -> Any:
    """One HTTP server on a free loopback port for the session; killed at teardown."""
    log = tempfile.NamedTemporaryFile(prefix="workspace_server-http-", suffix=".log", delete=False)
    process = None
    port = 0
    ready = False
    for _attempt in range(3):
        port = _free_port()
        process = subprocess.Popen(
            [str(server_bin), "--root", str(REPO), "--http", f"127.0.0.1:{port}"],
            cwd=REPO,
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
        process.terminate()
        try:
            process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=5)
        log.close()
        os.unlink(log.name)


@pytest.fixture(params=["stdio", "http"])
def transport(request: pytest.FixtureRequest, server_bin: Path) -> str:
    if request.param == "http":
        request.getfixturevalue("http_url")
    return request.param


@asynccontextmanager
async def connect(
    request: pytest.FixtureRequest,
    transport: str,
    headers: dict[str, str] | None = None,
    on_response: list[httpx2.Response] | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session over `transport`."""
    if transport == "stdio":
        params = StdioServerParameters(command=str(BIN), args=["--root", str(REPO)], cwd=REPO)
        with tempfile.TemporaryFile(mode="w+") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write) as session:
                    await session.initialize()
                    yield session
        return

    url = request.getfixturevalue("http_url")

    async def record(response: httpx2.Response) -> None:
        if on_response is not None:
            on_response.append(response)

    async with httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30, read=TIMEOUT),
        event_hooks={"response": [record]},
    ) as http:
        async with streamable_http_client(url, http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()
                yield session


async def listing(session: ClientSession) -> dict[str, Any]:
    result = await session.list_tools()
    return {tool.name: tool for tool in result.tools}


def unresolved_refs(schema: dict[str, Any]) -> list[str]:
    """Local `$ref`s of `schema` that do not point into the schema itself. A listed schema has to
    be self-contained: a client resolves its references against that document alone."""
    missing = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                target: Any = schema
                try:
                    assert ref.startswith("#"), ref
                    for part in filter(None, ref[1:].split("/")):
                        part = part.replace("~1", "/").replace("~0", "~")
                        target = target[int(part)] if isinstance(target, list) else target[part]
                except (AssertionError, KeyError, IndexError, ValueError, TypeError):
                    missing.append(ref)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    return missing


def check_result(result: Any, tool: Any) -> dict[str, Any]:
    """The §12 mapping of one call result; returns the envelope."""
    envelope = result.structured_content
    assert isinstance(envelope, dict), f"no structuredContent: {result}"
    Draft202012Validator(tool.output_schema).validate(envelope)

    assert isinstance(envelope["ok"], bool)
    assert result.is_error is (not envelope["ok"]), (result.is_error, envelope)
    assert envelope["verdict"] in VERDICTS
    if envelope["ok"]:
        assert "data" in envelope and "error" not in envelope
        assert envelope["verdict"] != "ERROR"
    else:
        assert "error" in envelope and "data" not in envelope
        assert envelope["verdict"] == "ERROR"
        assert envelope["error"]["category"] in CATEGORIES
        assert isinstance(envelope["error"]["message"], str) and envelope["error"]["message"]
        assert isinstance(envelope["error"]["retryable"], bool)

    first = result.content[0]
    assert first.type == "text"
    assert json.loads(first.text) == envelope
    # Compact, not pretty-printed: JSON strings escape their newlines, so a raw one is layout.
    assert "\n" not in first.text

    meta = envelope["meta"]
    assert ULID.match(meta["request_id"]), meta
    assert meta["tool"] == tool.name
    assert meta["complexity_tier"] in TIERS
    assert result.meta is not None, "result _meta is missing"
    assert result.meta["envelope/request_id"] == meta["request_id"]
    assert result.meta["envelope/tier"] == meta["complexity_tier"]
    assert tool.meta["envelope/tier"] == meta["complexity_tier"]
    return envelope


# --- the listing ---------------------------------------------------------------------------


async def test_listing_has_valid_2020_12_schemas(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
    assert TOOLS <= set(tools), sorted(tools)
    for name, tool in tools.items():
        assert tool.description, name
        Draft202012Validator.check_schema(tool.input_schema)
        assert tool.input_schema.get("type") == "object", name
        assert tool.output_schema is not None, f"{name} has no output schema"
        Draft202012Validator.check_schema(tool.output_schema)
        assert tool.output_schema.get("type") == "object", name
        assert not unresolved_refs(tool.input_schema), (name, unresolved_refs(tool.input_schema))
        assert not unresolved_refs(tool.output_schema), (name, unresolved_refs(tool.output_schema))
        annotations = tool.annotations
        assert annotations is not None, name
        for hint in ("read_only_hint", "destructive_hint", "idempotent_hint", "open_world_hint"):
            assert isinstance(getattr(annotations, hint), bool), (name, hint)
        assert tool.meta is not None and tool.meta.get("envelope/tier") in TIERS, name
        # The project's prefix only: nothing under the reserved ones.
        for key in tool.meta:
            assert not key.startswith(("io.modelcontextprotocol/", "mcp")), (name, key)


async def test_listing_schemas_agree_with_good_and_bad_arguments(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
    for name, arguments in GOOD_CALLS:
        Draft202012Validator(tools[name].input_schema).validate(arguments)
        # Every tool takes the per-call controls (DESIGN §10) besides its own arguments.
        Draft202012Validator(tools[name].input_schema).validate({**arguments, **CONTROLS})
    for name, arguments in BAD_CALLS:
        errors = list(Draft202012Validator(tools[name].input_schema).iter_errors(arguments))
        assert errors, f"{name}'s input schema accepts {arguments}"


# --- calls ---------------------------------------------------------------------------------


async def test_good_calls(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for name, arguments in GOOD_CALLS:
                result = await session.call_tool(name, arguments)
                envelope = check_result(result, tools[name])
                assert envelope["ok"] is True, (name, arguments, envelope)
                if name == "read_file" and arguments.get("start_line") == 1:
                    assert "[workspace]" in json.dumps(envelope["data"]), envelope["data"]


async def test_controls_are_accepted(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for name, arguments in GOOD_CALLS[:3]:
                result = await session.call_tool(name, {**arguments, **CONTROLS})
                envelope = check_result(result, tools[name])
                assert envelope["ok"] is True, (name, envelope)
                assert not envelope.get("warnings"), envelope


async def test_toon_is_the_text_channel_on_request(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            result = await session.call_tool(
                "read_file", {"path": "Cargo.toml", "end_line": 2, "output_format": "toon"}
            )
    envelope = result.structured_content
    Draft202012Validator(tools["read_file"].output_schema).validate(envelope)
    assert envelope["ok"] is True and result.is_error is False
    text = result.content[0].text
    assert "ok: true" in text, text
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)


async def test_request_ids_are_fresh_per_call(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            ids = set()
            for _ in range(3):
                result = await session.call_tool("read_file", {"path": "Cargo.toml", "end_line": 1})
                ids.add(result.structured_content["meta"]["request_id"])
    assert len(ids) == 3


async def test_bad_arguments_are_is_error_results(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for name, arguments in BAD_CALLS:
                result = await session.call_tool(name, arguments)
                envelope = check_result(result, tools[name])
                assert result.is_error is True, (name, arguments, envelope)
                assert envelope["error"]["category"] == "validation", (name, arguments, envelope)
                assert envelope["error"]["retryable"] is False


async def test_unknown_arguments_warn(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            result = await session.call_tool(
                "read_file", {"path": "Cargo.toml", "end_line": 1, "no_such_argument": 1}
            )
    envelope = check_result(result, tools["read_file"])
    assert envelope["ok"] is True, envelope
    codes = [warning["code"] for warning in envelope.get("warnings", [])]
    assert "unknown_arg" in codes, envelope


async def test_missing_file_is_not_found(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for path in MISSING_PATHS:
                result = await session.call_tool("read_file", {"path": path})
                envelope = check_result(result, tools["read_file"])
                assert result.is_error is True, envelope
                assert envelope["error"]["category"] == "not_found", envelope


async def test_paths_outside_the_root_are_refused(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for path in ESCAPING_PATHS:
                result = await session.call_tool("read_file", {"path": path})
                envelope = check_result(result, tools["read_file"])
                assert result.is_error is True, (path, envelope)
                assert envelope["error"]["category"] in {"permission", "validation", "not_found"}


async def test_unknown_tool_is_a_json_rpc_error(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            with pytest.raises(MCPError) as raised:
                await session.call_tool("no_such_tool", {})
            assert raised.value.code == INVALID_PARAMS, raised.value
            # The session survives the error.
            result = await session.call_tool("read_file", {"path": "Cargo.toml", "end_line": 1})
            assert result.is_error is False


async def test_progress_reaches_the_callback(
    request: pytest.FixtureRequest, transport: str
) -> None:
    """Every report arrives, in order, before the result: the SDK drops a notification whose
    request is already answered. Repeated, since a race loses only some of them."""
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for _ in range(PROGRESS_CALLS):
                events: list[tuple[float, float | None, str | None]] = []

                async def on_progress(
                    progress: float, total: float | None, message: str | None
                ) -> None:
                    events.append((progress, total, message))

                result = await session.call_tool(
                    "workspace_stats", {}, progress_callback=on_progress
                )
                envelope = check_result(result, tools["workspace_stats"])
                assert envelope["ok"] is True, envelope
                assert events, "no progress notification reached the callback"
                progress = [event[0] for event in events]
                assert all(a < b for a, b in zip(progress, progress[1:])), events
                for value, total, _message in events:
                    if total is not None:
                        assert value <= total, events
                # A finished walk reports its last step: the final report was not lost.
                last, total, _ = events[-1]
                assert total is None or last == total, events


# --- HTTP: X-Request-ID --------------------------------------------------------------------

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "envelope-interop", "version": "0"},
    },
}


async def raw_initialize(url: str, request_id: str | bytes | None) -> httpx2.Headers:
    """POSTs `initialize` with `X-Request-ID: request_id`; returns the response headers after
    checking the body answers the request. Ends the session it opened."""
    headers: dict[str, Any] = {
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
    }
    if request_id is not None:
        headers["X-Request-ID"] = request_id
    async with httpx2.AsyncClient(timeout=30) as http:
        async with http.stream("POST", url, headers=headers, json=INITIALIZE) as response:
            assert response.status_code == 200, response
            answer = None
            if response.headers.get("content-type", "").startswith("application/json"):
                answer = json.loads(await response.aread())
            else:
                async for line in response.aiter_lines():
                    if line.startswith("data:") and line[5:].strip():
                        answer = json.loads(line[5:])
                        break
            assert answer is not None and answer.get("id") == 1, answer
            assert "result" in answer, answer
            session = response.headers.get("mcp-session-id")
            result_headers = response.headers
        if session:
            await http.delete(url, headers={"mcp-session-id": session})
    return result_headers


async def test_a_valid_request_id_is_echoed(http_url: str) -> None:
    with anyio.fail_after(TIMEOUT):
        headers = await raw_initialize(http_url, CLIENT_ID)
    assert headers.get("x-request-id") == CLIENT_ID


@pytest.mark.parametrize("bad", BAD_IDS, ids=repr)
async def test_a_bad_request_id_is_replaced(http_url: str, bad: str | bytes) -> None:
    with anyio.fail_after(TIMEOUT):
        first = await raw_initialize(http_url, bad)
        second = await raw_initialize(http_url, bad)
    for headers in (first, second):
        echoed = headers.get("x-request-id")
        assert echoed is not None and ULID.match(echoed), echoed
        assert echoed.encode() != (bad if isinstance(bad, bytes) else bad.encode())
    assert first["x-request-id"] != second["x-request-id"], "a replacement id is fresh each time"


async def test_no_request_id_gets_a_fresh_one(http_url: str) -> None:
    with anyio.fail_after(TIMEOUT):
        headers = await raw_initialize(http_url, None)
    assert ULID.match(headers.get("x-request-id", "")), headers


async def test_the_request_id_header_becomes_meta_request_id(
    request: pytest.FixtureRequest, http_url: str
) -> None:
    responses: list[httpx2.Response] = []
    with anyio.fail_after(TIMEOUT):
        async with connect(
            request, "http", headers={"X-Request-ID": CALL_ID}, on_response=responses
        ) as session:
            tools = await listing(session)
            result = await session.call_tool("read_file", {"path": "Cargo.toml", "end_line": 1})
    envelope = check_result(result, tools["read_file"])
    assert envelope["meta"]["request_id"] == CALL_ID
    assert result.meta["envelope/request_id"] == CALL_ID
    posts = [response for response in responses if response.request.method == "POST"]
    assert posts
    for response in posts:
        assert response.headers.get("x-request-id") == CALL_ID, response


# --- the command line ----------------------------------------------------------------------


def test_cli_call_prints_the_envelope(server_bin: Path) -> None:
    done = subprocess.run(
        [
            str(server_bin),
            "--root",
            str(REPO),
            "call",
            "read_file",
            json.dumps({"path": "Cargo.toml", "end_line": 1}),
        ],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    envelope = json.loads(done.stdout)
    assert envelope["ok"] is True, envelope
    assert envelope["meta"]["tool"] == "read_file"
    assert ULID.match(envelope["meta"]["request_id"])


def test_cli_list_names_every_tool(server_bin: Path) -> None:
    done = subprocess.run(
        [str(server_bin), "list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for name in TOOLS:
        assert name in done.stdout, done.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__, "-q"]))

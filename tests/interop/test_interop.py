"""Interop: the example `workspace_server` driven by the official Python MCP SDK.

Every test runs over both transports the server offers: stdio (the SDK spawns the binary) and
streamable HTTP (one server process on a loopback port for the whole session). The binary is
`target/debug/examples/workspace_server` (override with `WORKSPACE_SERVER_BIN`); build it first
with `cargo build --workspace --all-features --tests --bins --examples`.

What is checked is the MCP mapping of `docs/CONTRACT.md`, from the client's side: the listing's schemas are valid JSON Schema
2020-12; every call result carries the envelope as `structuredContent`, valid against the tool's
output schema, mirrored as compact JSON in the first text content, with `isError == !ok` and
the request id and tier in `_meta`; `meta` is compact by default (the request id, `truncated`)
and stamped with the tool, tier and schema version under `"response_mode": "full"`; the tool's
own failures (bad arguments, a missing file) are `isError` results while an unknown tool is a
JSON-RPC error; long tools report progress; and over HTTP the `X-Request-ID` header is echoed (a
valid ULID kept, anything else replaced) and becomes the envelope's `meta.request_id`.

Every `next_actions` entry of every envelope the suite sees names a served tool and carries
arguments that tool's input schema accepts (and no `continuation_arg`: an action is called as
given). Paging: on a fixture tree, `search_text` and `list_files` pages followed through the
`next-page` action, its `tool` called with its `arguments` verbatim, add up to exactly the unpaged
result; the action's arguments are the request's plus the token, `continuation` (its one place
on the wire: `completeness` carries none); a token replayed with another query, tool or session,
after a file in scope changed, or with a character changed is refused with its code, and one
quoted, cut short or padded as an `invalid_argument` naming `continuation` and the `next-page`
action; and with a shared key file, a token sealed by one `call` process opens in another.
Target refs: a `search_text` page's one `target_ref`, sealed by one server process, reads a hit
(with the hit's path and line) in another sharing only the key, until its file changes; the
stale answer's recovery action, followed verbatim, gives a fresh ref.
"""

from __future__ import annotations

import atexit
import json
import logging
import os
import shutil
import re
import secrets
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Iterator
from contextlib import AbstractContextManager, ExitStack, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPError

import servers
# `anyio_backend` and `transport` are fixtures: pytest finds them by name in this module.
from servers import anyio_backend, transport  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
# The example keeps its paging key under the user's state directory; every server these tests
# start keeps it in a directory of this run's instead, so nothing outside it is touched.
os.environ["XDG_STATE_HOME"] = tempfile.mkdtemp(prefix="envelope-interop-state-")
atexit.register(shutil.rmtree, os.environ["XDG_STATE_HOME"], ignore_errors=True)
BIN = Path(os.environ.get("WORKSPACE_SERVER_BIN", REPO / "target/debug/examples/workspace_server"))

ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
# The tags the example advertises on every transport (HTTP adds `streamable_http`).
CAPABILITIES = {
    "standardized_error_envelope",
    "canonical_verdicts",
    "request_ids",
    "complexity_tier",
    "idempotency_declared",
    "tokens_estimated",
    "budget_trimming",
    "completeness",
    "next_actions",
    "continuations",
    "toon_output",
    "progress",
}
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
FULL = {"response_mode": "full"}
# What `meta` holds only under `"response_mode": "full"`; the default `compact` mode keeps
# `request_id`, `truncated` and the trim and drift markers that apply.
FULL_ONLY_META = {
    "tool",
    "complexity_tier",
    "idempotent",
    "latency_ms",
    "tokens_estimated",
    "tokens_method",
    "tokens_saved",
    "tokens_saved_pct",
    "baseline_method",
    "layer",
    "schema_version",
    "client_request_id",
    "capabilities",
}
SCHEMA_VERSION = 3

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
# Not ULIDs, but safe to log: a gateway's correlation ids, kept beside the envelope's ULID.
CORRELATION_IDS: list[str] = [
    "6f1c2a8e-3b7d-4c55-9e0a-1d2f3a4b5c6d",  # a UUID
    "8ZZZZZZZZZZZZZZZZZZZZZZZZZ",  # first character past 7: over 128 bits
    CLIENT_ID + "X",  # too long for a ULID
    CLIENT_ID[:-1] + "U",  # U is not Crockford
    "req 42",  # a space inside
]
# Unsafe to log or echo: replaced by a fresh ULID.
BAD_IDS: list[str | bytes] = [
    (CLIENT_ID[:-1] + "É").encode("utf-8"),  # not ASCII
    "tab\tinside",  # a control character
    "x" * 129,  # longer than 128
    "",
]

TIMEOUT = 120

# workspace_stats calls per transport in the progress test.
PROGRESS_CALLS = 20

# The paging fixture: PAGED_FILES text files, file i holding WORD (i % 3) + 2 times over two
# subdirectories, so pages cut inside files and across directories.
WORD = "quillwort"
PAGED_FILES = 30
PAGED_OCCURRENCES = sum(i % 3 + 2 for i in range(PAGED_FILES))
# Page sizes in the paging tests, and the limit of the one unpaged call compared against.
SEARCH_PAGE = 7
LIST_PAGE = 4
UNPAGED = 1000  # the largest `limit` either tool accepts
# More pages than this means the continuation never ends.
MAX_PAGES = 100

# Continuation error codes (envelope `error.code`).
INVALID_CONTINUATION = "INVALID_CONTINUATION"
# A token changed on its way back (quoted, cut short, padded) is a bad argument, not a token.
INVALID_ARGUMENT = "invalid_argument"
SCOPE_MISMATCH = "CONTINUATION_SCOPE_MISMATCH"
STALE_CONTINUATION = "STALE_CONTINUATION"
BASE64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def server_bin() -> Path:
    if not BIN.is_file():
        pytest.fail(
            f"{BIN} is missing: run `cargo build --workspace --all-features --tests --bins --examples` first"
        )
    return BIN


def http_server(root: Path) -> AbstractContextManager[str]:
    """A streamable HTTP server for `root` on a free loopback port (see `servers.http_server`);
    stopped on exit."""
    return servers.http_server([str(BIN), "--root", str(root)], REPO, "workspace_server-http-")


@pytest.fixture(scope="session")
def http_url(server_bin: Path) -> Iterator[str]:
    """One HTTP server for the repository for the session."""
    with http_server(REPO) as url:
        yield url


def write_paged_tree(root: Path) -> None:
    """The paging fixture under `root` (see `WORD`)."""
    for i in range(PAGED_FILES):
        folder = root / ("a" if i < PAGED_FILES // 2 else "b")
        folder.mkdir(exist_ok=True)
        # (i % 3) + 2 occurrences: 1 + 1, 1 + 2, or 1 + 2 + 1, two of them on one line.
        lines = [f"{WORD} opens file {i}", "a line without it"]
        lines += [f"{WORD} again, {WORD}"] if i % 3 else [f"and once more: {WORD}"]
        lines += [f"and once more: {WORD}"] if i % 3 == 2 else []
        (folder / f"doc-{i:02}.txt").write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="session")
def paged_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The paging fixture, shared by the tests that leave it unchanged."""
    root = tmp_path_factory.mktemp("paged").resolve()
    write_paged_tree(root)
    return root


@pytest.fixture(scope="session")
def paged_http_url(server_bin: Path, paged_root: Path) -> Iterator[str]:
    """One HTTP server for the paging fixture for the session."""
    with http_server(paged_root) as url:
        yield url


@pytest.fixture
def paged_url(request: pytest.FixtureRequest, transport: str) -> str | None:
    """The paging fixture's HTTP endpoint over HTTP; None over stdio."""
    return request.getfixturevalue("paged_http_url") if transport == "http" else None


@asynccontextmanager
async def connect(
    request: pytest.FixtureRequest,
    transport: str,
    headers: dict[str, str] | None = None,
    on_response: list[httpx2.Response] | None = None,
    root: Path = REPO,
    url: str | None = None,
) -> AsyncIterator[ClientSession]:
    """An initialized client session over `transport`: over stdio, a server for `root`; over
    HTTP, the one at `url` (default: the session's server for the repository)."""
    if transport == "stdio":
        # The SDK passes a child only a few variables by default; the state directory too.
        env = {**get_default_environment(), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
        params = StdioServerParameters(
            command=str(BIN), args=["--root", str(root)], cwd=REPO, env=env
        )
        async with servers.stdio_session(params) as session:
            yield session
        return

    if url is None:
        url = request.getfixturevalue("http_url")

    async def record(response: httpx2.Response) -> None:
        if on_response is not None:
            on_response.append(response)

    async with httpx2.AsyncClient(
        headers=headers,
        timeout=httpx2.Timeout(30, read=TIMEOUT),
        event_hooks={"response": [record]},
    ) as http:
        async with servers.http_session(url, http) as session:
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


def check_next_actions(envelope: dict[str, Any], input_schemas: dict[str, Any]) -> None:
    """Every next action of `envelope` can run: it names a tool of the listing (`input_schemas`
    maps each listed tool to its input schema) and its arguments are valid for that tool."""
    actions = envelope.get("next_actions", [])
    assert isinstance(actions, list), envelope
    ids = [action["id"] for action in actions]
    assert len(ids) == len(set(ids)), f"next action ids repeat: {ids}"
    for action in actions:
        tool = action.get("tool")
        assert tool in input_schemas, f"next action {action} names a tool not in the listing"
        assert isinstance(action.get("arguments"), dict), action
        # An action is called as given: nothing tells a client to add anything to it.
        assert "continuation_arg" not in action, action
        schema = input_schemas[tool]
        errors = [
            error.message
            for error in Draft202012Validator(schema).iter_errors(action["arguments"])
        ]
        assert not errors, f"next action {action} fails {tool}'s input schema: {errors}"
        # The schemas leave extra properties open (the server warns of them instead), so the
        # names are checked too: an action passes only arguments its tool declares.
        if schema.get("additionalProperties") is None and "properties" in schema:
            unknown = set(action["arguments"]) - set(schema["properties"])
            assert not unknown, f"next action {action} passes undeclared {sorted(unknown)}"


def input_schemas(tools: dict[str, Any]) -> dict[str, Any]:
    return {name: tool.input_schema for name, tool in tools.items()}


def check_result(
    result: Any, tools: dict[str, Any], name: str, full: bool = False
) -> dict[str, Any]:
    """The MCP mapping of one result of calling `name`, with `tools` the listing; returns the
    envelope. `full`: the call asked for `"response_mode": "full"`, so `meta` carries the
    stamps (tool, tier, schema version) that the default `compact` mode leaves out."""
    tool = tools[name]
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

    # The paging token rides in the `next-page` action's arguments alone.
    assert "continuation" not in envelope.get("completeness", {}), envelope["completeness"]

    meta = envelope["meta"]
    assert ULID.match(meta["request_id"]), meta
    # Every answer, an error's included, says whether the budget cut it.
    assert isinstance(meta["truncated"], bool), meta
    if full:
        assert meta["tool"] == tool.name, meta
        assert meta["complexity_tier"] in TIERS, meta
        assert meta["schema_version"] == SCHEMA_VERSION, meta
        assert meta["complexity_tier"] == tool.meta["rs.envelope/tier"], meta
    else:
        # The default `compact` mode leaves the observability stamps to `full`.
        assert not FULL_ONLY_META & set(meta), meta
    assert result.meta is not None, "result _meta is missing"
    assert result.meta["rs.envelope/request_id"] == meta["request_id"]
    assert result.meta["rs.envelope/tier"] in TIERS, result.meta
    assert tool.meta["rs.envelope/tier"] == result.meta["rs.envelope/tier"]
    # Every result, an error's included, says what the server supports.
    assert set(result.meta["rs.envelope/capabilities"]) >= CAPABILITIES, result.meta
    check_next_actions(envelope, input_schemas(tools))
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
        # What the example declares and nothing more: read-only, idempotent, closed-world; no
        # destructive_hint, which means nothing beside read_only_hint=True.
        assert annotations.read_only_hint is True, name
        assert annotations.idempotent_hint is True, name
        assert annotations.open_world_hint is False, name
        assert annotations.destructive_hint is None, name
        assert annotations.title == tool.title and tool.title, name
        assert tool.meta is not None and tool.meta.get("rs.envelope/tier") in TIERS, name
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
        # Every tool takes the per-call controls (`docs/CONTRACT.md`) besides its own arguments.
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
                # The default (compact) `meta`, and the full one with the tool's stamps.
                for full in (False, True):
                    sent = {**arguments, **FULL} if full else arguments
                    result = await session.call_tool(name, sent)
                    envelope = check_result(result, tools, name, full=full)
                    assert envelope["ok"] is True, (name, sent, envelope)
                    if name == "read_file" and arguments.get("start_line") == 1:
                        assert "[workspace]" in json.dumps(envelope["data"]), envelope["data"]


async def test_controls_are_accepted(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for name, arguments in GOOD_CALLS[:3]:
                result = await session.call_tool(name, {**arguments, **CONTROLS})
                envelope = check_result(result, tools, name, full=True)
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
    check_next_actions(envelope, input_schemas(tools))
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
            tools = await listing(session)
            ids = set()
            for _ in range(3):
                result = await session.call_tool("read_file", {"path": "Cargo.toml", "end_line": 1})
                ids.add(check_result(result, tools, "read_file")["meta"]["request_id"])
    assert len(ids) == 3


async def test_bad_arguments_are_is_error_results(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for name, arguments in BAD_CALLS:
                # An error's `meta` too: compact by default, stamped under `full`.
                for full in (False, True):
                    sent = {**arguments, **FULL} if full else arguments
                    result = await session.call_tool(name, sent)
                    envelope = check_result(result, tools, name, full=full)
                    assert result.is_error is True, (name, sent, envelope)
                    assert envelope["error"]["category"] == "validation", (name, sent, envelope)
                    assert envelope["error"]["retryable"] is False


async def test_unknown_arguments_warn(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            result = await session.call_tool(
                "read_file", {"path": "Cargo.toml", "end_line": 1, "no_such_argument": 1}
            )
    envelope = check_result(result, tools, "read_file")
    assert envelope["ok"] is True, envelope
    codes = [warning["code"] for warning in envelope.get("warnings", [])]
    assert "unknown_arg" in codes, envelope


async def test_missing_file_is_not_found(request: pytest.FixtureRequest, transport: str) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            for path in MISSING_PATHS:
                result = await session.call_tool("read_file", {"path": path})
                envelope = check_result(result, tools, "read_file")
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
                envelope = check_result(result, tools, "read_file")
                assert result.is_error is True, (path, envelope)
                assert envelope["error"]["category"] in {"permission", "validation", "not_found"}


async def test_unknown_tool_is_a_json_rpc_error(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            tools = await listing(session)
            with pytest.raises(MCPError) as raised:
                await session.call_tool("no_such_tool", {})
            assert raised.value.code == INVALID_PARAMS, raised.value
            # The session survives the error.
            result = await session.call_tool("read_file", {"path": "Cargo.toml", "end_line": 1})
            assert result.is_error is False
            check_result(result, tools, "read_file")


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
                envelope = check_result(result, tools, "workspace_stats")
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


async def read_with_request_id(
    request: pytest.FixtureRequest, url: str, sent: str
) -> tuple[dict[str, Any], Any]:
    """Reads a file over HTTP with `X-Request-ID: sent` on every request; checks each POST's
    echoed id is `sent`, and returns the envelope and the result. The read asks for the full
    `meta`, where a client's correlation id (`client_request_id`) is stamped."""
    responses: list[httpx2.Response] = []
    with anyio.fail_after(TIMEOUT):
        async with connect(
            request, "http", headers={"X-Request-ID": sent}, on_response=responses
        ) as session:
            tools = await listing(session)
            result = await session.call_tool(
                "read_file", {"path": "Cargo.toml", "end_line": 1, **FULL}
            )
    posts = [response for response in responses if response.request.method == "POST"]
    assert posts
    for response in posts:
        assert response.headers.get("x-request-id") == sent, response
    return check_result(result, tools, "read_file", full=True), result


@pytest.mark.parametrize("correlation", CORRELATION_IDS, ids=repr)
async def test_a_client_correlation_id_survives(
    request: pytest.FixtureRequest, http_url: str, correlation: str
) -> None:
    envelope, result = await read_with_request_id(request, http_url, correlation)
    # The envelope's own id stays a ULID; the client's rides beside it, and is echoed.
    assert ULID.match(envelope["meta"]["request_id"]), envelope["meta"]
    assert envelope["meta"]["client_request_id"] == correlation
    assert result.meta["rs.envelope/client_request_id"] == correlation


async def test_no_request_id_gets_a_fresh_one(http_url: str) -> None:
    with anyio.fail_after(TIMEOUT):
        headers = await raw_initialize(http_url, None)
    assert ULID.match(headers.get("x-request-id", "")), headers


async def test_the_request_id_header_becomes_meta_request_id(
    request: pytest.FixtureRequest, http_url: str
) -> None:
    envelope, result = await read_with_request_id(request, http_url, CALL_ID)
    assert envelope["meta"]["request_id"] == CALL_ID
    assert "client_request_id" not in envelope["meta"], envelope["meta"]
    assert result.meta["rs.envelope/request_id"] == CALL_ID


# --- paging --------------------------------------------------------------------------------


def rows_of(name: str, envelope: dict[str, Any]) -> list[Any]:
    """The paged rows of a `search_text` or `list_files` envelope. A search page with hits
    carries one `data.target_ref` for all of them, beside the rows (each answer seals it
    afresh), so rows of two calls compare as they are."""
    if name != "search_text":
        return envelope["data"]["files"]
    data = envelope["data"]
    rows = data["occurrences"]
    if rows:
        assert isinstance(data.get("target_ref"), str) and data["target_ref"], data
    else:
        assert "target_ref" not in data, data
    for row in rows:
        assert "target_ref" not in row, row
    return rows


def next_page_action(envelope: dict[str, Any]) -> dict[str, Any] | None:
    actions = [a for a in envelope.get("next_actions", []) if a["id"] == "next-page"]
    assert len(actions) <= 1, envelope["next_actions"]
    return actions[0] if actions else None


def check_next_page(action: dict[str, Any], name: str, arguments: dict[str, Any]) -> str:
    """`action`, the `next-page` action of a page of `name` called with `arguments` (no token
    among them), is that request continued: the same tool, and the same arguments plus the
    token under `continuation`, a non-empty string. Returns the token."""
    assert action["tool"] == name, action
    token = action["arguments"].get("continuation")
    assert isinstance(token, str) and token, action
    assert action["arguments"] == {**arguments, "continuation": token}, (arguments, action)
    return token


def next_page_token(envelope: dict[str, Any]) -> str:
    """The token of `envelope`'s `next-page` action, for the tests that replay a token where it
    does not belong (another query, tool, key or tree). A follow never reads it: it calls the
    action's `tool` with its `arguments` as given."""
    assert "continuation" not in envelope["completeness"], envelope["completeness"]
    action = next_page_action(envelope)
    assert action is not None, envelope
    token = action["arguments"].get("continuation")
    assert isinstance(token, str) and token, action
    return token


async def call_ok(
    session: ClientSession, tools: dict[str, Any], name: str, arguments: dict[str, Any]
) -> dict[str, Any]:
    result = await session.call_tool(name, arguments)
    envelope = check_result(result, tools, name)
    assert envelope["ok"] is True, (name, arguments, envelope)
    return envelope


async def unpaged(
    session: ClientSession, tools: dict[str, Any], name: str, arguments: dict[str, Any]
) -> list[Any]:
    """Every row of a call with a limit past them all. The response budget may still end a
    page first: then its `next-page` action, followed verbatim, goes on from the row after the
    last one sent, with `budget_limit` as the reason, until the last page."""
    rows: list[Any] = []
    first_arguments = {**arguments, "limit": UNPAGED}
    call_name, call_arguments = name, first_arguments
    for _page in range(MAX_PAGES):
        envelope = await call_ok(session, tools, call_name, call_arguments)
        page = rows_of(name, envelope)
        completeness = envelope["completeness"]
        assert completeness["returned"] == len(page), completeness
        assert completeness.get("offset", 0) == len(rows), completeness
        action = next_page_action(envelope)
        if action is None:
            assert completeness["complete"] is True, completeness
            assert completeness["total"] == len(rows) + len(page), completeness
            return rows + page
        assert completeness["truncation_reasons"] == ["budget_limit"], completeness
        check_next_page(action, name, first_arguments)
        rows += page
        call_name, call_arguments = action["tool"], action["arguments"]
    raise AssertionError(f"{name} did not finish paging in {MAX_PAGES} pages")


async def follow_pages(
    session: ClientSession,
    tools: dict[str, Any],
    name: str,
    arguments: dict[str, Any],
) -> list[Any]:
    """The rows of every page from `arguments` on: the next call is the last page's `next-page`
    action, its `tool` called with its `arguments` exactly as given (nothing added, nothing
    taken from elsewhere). Checks each page's completeness and action."""
    rows: list[Any] = []
    tokens: set[str] = set()
    page_size = arguments["limit"]
    call_name, call_arguments = name, dict(arguments)
    for _page in range(MAX_PAGES):
        envelope = await call_ok(session, tools, call_name, call_arguments)
        page = rows_of(name, envelope)
        completeness = envelope["completeness"]
        action = next_page_action(envelope)
        assert completeness["returned"] == len(page), completeness
        if action is None:
            # The last page: every remaining row, nothing more to fetch.
            assert completeness["complete"] is True, completeness
            assert completeness["truncated"] is False, completeness
            assert completeness["total"] == len(rows) + len(page), completeness
            assert completeness.get("offset", 0) == len(rows), completeness
            assert 0 < len(page) <= page_size, completeness
            return rows + page
        # The action is the same request, continued: its arguments are the request's, plus
        # the token, whose one place on the wire they are.
        token = check_next_page(action, name, arguments)
        assert token not in tokens, (token, tokens)
        tokens.add(token)
        assert completeness["complete"] is False, completeness
        assert completeness["truncated"] is True, completeness
        # The page size ends a page, or the response budget first; either way the
        # continuation goes on from the next row.
        reasons = completeness["truncation_reasons"]
        if "budget_limit" in reasons:
            assert 0 < len(page) <= page_size, completeness
        else:
            assert reasons == ["page_limit"], completeness
            assert len(page) == page_size, completeness
        # `total` counts the whole result; `offset` is where the page starts.
        assert completeness["total"] > len(rows) + len(page), completeness
        assert completeness.get("offset", 0) == len(rows), completeness
        assert json.dumps(envelope).count(token) == 1, envelope
        rows += page
        call_name, call_arguments = action["tool"], action["arguments"]
    pytest.fail(f"{name} {arguments}: still a continuation after {MAX_PAGES} pages")


def row_key(name: str, row: Any) -> Any:
    return (row["path"], row["line"], row["column"]) if name == "search_text" else row


PAGED_CALLS = [
    ("search_text", {"query": WORD, "limit": SEARCH_PAGE}),
    ("list_files", {"limit": LIST_PAGE}),
]


@pytest.mark.parametrize("name,arguments", PAGED_CALLS, ids=[name for name, _ in PAGED_CALLS])
async def test_pages_add_up_to_the_unpaged_result(
    request: pytest.FixtureRequest,
    transport: str,
    paged_root: Path,
    paged_url: str | None,
    name: str,
    arguments: dict[str, Any],
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, root=paged_root, url=paged_url) as session:
            tools = await listing(session)
            whole = await unpaged(session, tools, name, arguments)
            # The first page counts every row; each later one, the rows from its start on.
            first = await call_ok(session, tools, name, arguments)
            assert first["completeness"]["total"] == len(whole), first["completeness"]
            paged = await follow_pages(session, tools, name, arguments)
    expected = PAGED_OCCURRENCES if name == "search_text" else PAGED_FILES
    assert len(whole) == expected, whole
    keys = [row_key(name, row) for row in paged]
    assert len(keys) == len(set(keys)), "a row came twice"
    # Same rows, same order: no gap, no duplicate.
    assert paged == whole


# Page sizes around the edges: one row a page, sizes that divide the total (no empty last
# page), one short of it, all of it, past it.
BOUNDARY_CALLS = [
    ("list_files", {"limit": limit})
    for limit in (1, 5, PAGED_FILES - 1, PAGED_FILES, PAGED_FILES + 1)
] + [
    ("search_text", {"query": WORD, "limit": limit})
    for limit in (9, PAGED_OCCURRENCES - 1, PAGED_OCCURRENCES)
]


async def test_pages_at_boundary_sizes(
    request: pytest.FixtureRequest, transport: str, paged_root: Path, paged_url: str | None
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, root=paged_root, url=paged_url) as session:
            tools = await listing(session)
            wholes = {
                name: await unpaged(session, tools, name, arguments)
                for name, arguments in PAGED_CALLS
            }
            for name, arguments in BOUNDARY_CALLS:
                paged = await follow_pages(session, tools, name, arguments)
                assert paged == wholes[name], (name, arguments)


async def test_the_actions_of_an_empty_search_run_and_page(
    request: pytest.FixtureRequest, transport: str, paged_root: Path, paged_url: str | None
) -> None:
    """An empty search offers a retry; the retry, run as offered, pages like any search."""
    empty_searches = [
        ({"query": WORD, "path_glob": "*.none", "limit": SEARCH_PAGE}, "search-without-path-glob"),
        ({"query": WORD[:5] + r"\w+", "limit": SEARCH_PAGE}, "retry-as-regex"),
    ]
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, root=paged_root, url=paged_url) as session:
            tools = await listing(session)
            whole = await unpaged(session, tools, "search_text", {"query": WORD})
            for arguments, action_id in empty_searches:
                envelope = await call_ok(session, tools, "search_text", arguments)
                assert envelope["verdict"] == "NOT_FOUND", envelope
                assert rows_of("search_text", envelope) == [], envelope
                actions = {action["id"]: action for action in envelope.get("next_actions", [])}
                assert action_id in actions, envelope
                action = actions[action_id]
                assert "continuation" not in action["arguments"], action
                paged = await follow_pages(session, tools, action["tool"], action["arguments"])
                assert paged == whole, (arguments, action)


async def test_continued_pages_keep_the_total_and_say_their_offset(
    request: pytest.FixtureRequest, transport: str, paged_root: Path, paged_url: str | None
) -> None:
    arguments = {"query": WORD, "limit": SEARCH_PAGE}
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, root=paged_root, url=paged_url) as session:
            tools = await listing(session)
            start = 0
            envelope = await call_ok(session, tools, "search_text", arguments)
            for _page in range(MAX_PAGES):
                completeness = envelope["completeness"]
                assert completeness["total"] == PAGED_OCCURRENCES, (start, completeness)
                assert completeness.get("offset", 0) == start, (start, completeness)
                action = next_page_action(envelope)
                if action is None:
                    break
                start += completeness["returned"]
                # Followed as given.
                envelope = await call_ok(session, tools, action["tool"], action["arguments"])
            else:
                pytest.fail(f"still a next page after {MAX_PAGES} pages")
    assert start + completeness["returned"] == PAGED_OCCURRENCES


def assert_refused(result: Any, tools: dict[str, Any], name: str, code: str) -> None:
    envelope = check_result(result, tools, name)
    assert result.is_error is True, (code, envelope)
    error = envelope["error"]
    assert error.get("code") == code, (code, envelope)
    assert error["category"] == "validation", envelope
    assert error["retryable"] is False, envelope


def with_one_character_changed(token: str, index: int) -> str:
    old = token[index]
    new = BASE64URL[(BASE64URL.index(old) + 1) % len(BASE64URL)]
    changed = token[:index] + new + token[index + 1 :]
    assert changed != token and len(changed) == len(token)
    return changed


async def test_replayed_continuations_are_refused(
    request: pytest.FixtureRequest, transport: str, paged_root: Path, paged_url: str | None
) -> None:
    search = {"query": WORD, "limit": SEARCH_PAGE}
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, root=paged_root, url=paged_url) as session:
            tools = await listing(session)
            first = await call_ok(session, tools, "search_text", search)
            token = next_page_token(first)
            # Another query.
            result = await session.call_tool(
                "search_text", {**search, "query": WORD[:-1], "continuation": token}
            )
            assert_refused(result, tools, "search_text", SCOPE_MISMATCH)
            # Another argument besides the query.
            result = await session.call_tool(
                "search_text", {**search, "path_glob": "*.txt", "continuation": token}
            )
            assert_refused(result, tools, "search_text", SCOPE_MISMATCH)
            # Another tool.
            result = await session.call_tool(
                "list_files", {"limit": SEARCH_PAGE, "continuation": token}
            )
            assert_refused(result, tools, "list_files", SCOPE_MISMATCH)
            # And the other way round.
            listed = await call_ok(session, tools, "list_files", {"limit": LIST_PAGE})
            result = await session.call_tool(
                "search_text", {**search, "continuation": next_page_token(listed)}
            )
            assert_refused(result, tools, "search_text", SCOPE_MISMATCH)
            # One character changed: the first, the fourth, the middle one, the last.
            for index in (0, 3, len(token) // 2, len(token) - 1):
                tampered = with_one_character_changed(token, index)
                result = await session.call_tool(
                    "search_text", {**search, "continuation": tampered}
                )
                assert_refused(result, tools, "search_text", INVALID_CONTINUATION)
            # Not a token as written: not one at all, or one quoted, cut short or padded on its
            # way back. A bad copy, refused as such: the argument at fault, and the action to
            # call as given instead.
            for pasted in ("x", f'"{token}"', token[:-1], f" {token}", f"{token}\n"):
                result = await session.call_tool(
                    "search_text", {**search, "continuation": pasted}
                )
                assert_refused(result, tools, "search_text", INVALID_ARGUMENT)
                error = result.structured_content["error"]
                assert error["data"] == {"field": "continuation", "action": "next-page"}, error
            # The refusals spent nothing: the token still opens its next page, at any limit.
            second = await call_ok(
                session, tools, "search_text", {**search, "limit": 3, "continuation": token}
            )
            whole = await unpaged(session, tools, "search_text", search)
            assert rows_of("search_text", second) == whole[SEARCH_PAGE : SEARCH_PAGE + 3]


async def test_a_continuation_survives_a_restart_whatever_header_is_sent(
    request: pytest.FixtureRequest, paged_root: Path
) -> None:
    # Regression test for #12: a token was bound to its `Mcp-Session-Id`, so after a restart
    # (same key) it failed, though sealed tokens promise to survive one. Without OAuth the
    # server knows no caller: an `Authorization` header it does not verify is no identity, so
    # whatever one is sent (or none) the token opens its next page. Binding a token to its
    # caller is the OAuth resource server's job: issuer + subject of a verified access token
    # (tests/auth/auth.test.mjs and test_auth.py, `CONTINUATION_SCOPE_MISMATCH` for another
    # client).
    search = {"query": WORD, "limit": SEARCH_PAGE}
    with anyio.fail_after(TIMEOUT):
        with http_server(paged_root) as url:
            alice = {"Authorization": "Bearer alice-token"}
            async with connect(request, "http", root=paged_root, url=url, headers=alice) as first:
                tools = await listing(first)
                page = await call_ok(first, tools, "search_text", search)
                action = next_page_action(page)
                assert action is not None, page
                check_next_page(action, "search_text", search)
        # Another process, holding the same key (the one kept in this run's state directory).
        with http_server(paged_root) as url:
            for headers in (alice, {"Authorization": "Bearer mallory-token"}, {}):
                async with connect(
                    request, "http", root=paged_root, url=url, headers=headers
                ) as again:
                    tools = await listing(again)
                    # The first process's action, followed verbatim.
                    following = await call_ok(
                        again, tools, action["tool"], action["arguments"]
                    )
                    whole = await unpaged(again, tools, "search_text", search)
                    assert rows_of("search_text", following) == (
                        whole[SEARCH_PAGE : 2 * SEARCH_PAGE]
                    ), headers


async def test_a_changed_file_makes_the_continuation_stale(
    request: pytest.FixtureRequest, transport: str, tmp_path: Path
) -> None:
    root = tmp_path.resolve()
    write_paged_tree(root)
    changed = root / "b" / "doc-20.txt"
    with ExitStack() as stack:
        url = stack.enter_context(http_server(root)) if transport == "http" else None
        with anyio.fail_after(TIMEOUT):
            async with connect(request, transport, root=root, url=url) as session:
                tools = await listing(session)
                for name, arguments in PAGED_CALLS:
                    first = await call_ok(session, tools, name, arguments)
                    action = next_page_action(first)
                    assert action is not None, first
                    check_next_page(action, name, arguments)
                    # Still good before the change.
                    await call_ok(session, tools, action["tool"], action["arguments"])
                    stat = changed.stat()
                    with changed.open("a") as file:
                        file.write(f"{WORD} appended\n")
                    os.utime(changed, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
                    assert changed.stat().st_size != stat.st_size
                    # The next-page action of the old page, followed as given, is stale now.
                    result = await session.call_tool(action["tool"], action["arguments"])
                    assert_refused(result, tools, name, STALE_CONTINUATION)
                    # Starting over works, sees the change, and its token is good.
                    again = await call_ok(session, tools, name, arguments)
                    if name == "search_text":
                        # The appended line holds one more occurrence.
                        grew = first["completeness"]["total"] + 1
                        assert again["completeness"]["total"] == grew, again["completeness"]
                    fresh = next_page_action(again)
                    assert fresh is not None, again
                    assert fresh["arguments"] != action["arguments"], (fresh, action)
                    await call_ok(session, tools, fresh["tool"], fresh["arguments"])


async def test_a_target_ref_is_read_by_another_process_until_its_file_changes(
    request: pytest.FixtureRequest, transport: str, tmp_path: Path
) -> None:
    # The search -> read by ref -> stale -> recovery walk, with the search answered by one
    # server process and the reads by another that shares only its key (the one kept in this
    # run's state directory): a ref is resolved from what it carries, never from a cache.
    root = tmp_path.resolve()
    write_paged_tree(root)
    hit_file = root / "a" / "doc-05.txt"
    search = {"query": WORD, "path_glob": "doc-05.txt"}

    def refused(result: Any, tools: dict[str, Any], code: str, category: str) -> dict[str, Any]:
        envelope = check_result(result, tools, "read_file")
        assert result.is_error is True, (code, envelope)
        assert envelope["error"].get("code") == code, (code, envelope)
        assert envelope["error"]["category"] == category, envelope
        return envelope

    with ExitStack() as stack:
        urls = [None, None]
        if transport == "http":
            urls = [stack.enter_context(http_server(root)) for _ in range(2)]
        with anyio.fail_after(TIMEOUT):
            async with (
                connect(request, transport, root=root, url=urls[0]) as searcher,
                connect(request, transport, root=root, url=urls[1]) as reader,
            ):
                tools = await listing(searcher)
                found = await call_ok(searcher, tools, "search_text", search)
                hit = found["data"]["occurrences"][0]
                assert hit["path"] == "a/doc-05.txt", found
                # A hit is read by its page's one ref, with the hit's path and line.
                ref = found["data"]["target_ref"]
                read = {"target_ref": ref, "path": hit["path"], "line": hit["line"]}
                read["context_lines"] = 1
                around = await call_ok(reader, tools, "read_file", read)
                assert around["data"]["path"] == "a/doc-05.txt", around
                assert around["data"]["start_line"] == hit["line"], around
                assert WORD in around["data"]["content"], around

                # A ref with a line range, a ref without the hit's line, a ref for a file
                # none of its hits is in, and a tampered ref, are refused by code.
                for location in ({"start_line": 1}, {"end_line": 2}):
                    result = await reader.call_tool("read_file", {**read, **location})
                    refused(result, tools, "CONFLICTING_TARGET_INPUT", "validation")
                result = await reader.call_tool(
                    "read_file", {"target_ref": ref, "path": hit["path"]}
                )
                lineless = check_result(result, tools, "read_file")
                assert result.is_error is True, lineless
                assert lineless["error"]["category"] == "validation", lineless
                assert lineless["error"]["data"]["field"] == "line", lineless
                result = await reader.call_tool("read_file", {**read, "path": "a/doc-04.txt"})
                refused(result, tools, "TARGET_NOT_IN_REF", "validation")
                bent = with_one_character_changed(ref, len(ref) // 2)
                result = await reader.call_tool("read_file", {**read, "target_ref": bent})
                refused(result, tools, "INVALID_TARGET_REF", "validation")

                # The file changes: the ref is stale, and the answer offers the search again.
                stat = hit_file.stat()
                hit_file.write_text(f"a new first line\n{hit_file.read_text()}")
                os.utime(hit_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 5_000_000_000))
                result = await reader.call_tool("read_file", read)
                stale = refused(result, tools, "STALE_TARGET_SNAPSHOT", "validation")
                recover = stale["next_actions"][0]
                assert recover["tool"] == "search_text", stale
                assert recover["arguments"] == search, stale

                # Following it verbatim gives a fresh ref to where the hit is now.
                again = await call_ok(searcher, tools, recover["tool"], recover["arguments"])
                fresh = again["data"]["occurrences"][0]
                assert fresh["line"] == hit["line"] + 1, again
                exact = {
                    "target_ref": again["data"]["target_ref"],
                    "path": fresh["path"],
                    "line": fresh["line"],
                    "context_lines": 0,
                }
                now = await call_ok(reader, tools, "read_file", exact)
                assert now["data"]["start_line"] == fresh["line"], now
                assert WORD in now["data"]["content"], now

                # A ref whose file is gone is not found.
                hit_file.unlink()
                result = await reader.call_tool("read_file", exact)
                refused(result, tools, "TARGET_NOT_FOUND", "not_found")


# --- the command line ----------------------------------------------------------------------


@pytest.fixture(scope="session")
def cli_schemas(server_bin: Path) -> dict[str, Any]:
    """The input schemas of `workspace_server list`, by tool."""
    done = subprocess.run(
        [str(server_bin), "list"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    return {tool["name"]: tool["inputSchema"] for tool in json.loads(done.stdout)}


def cli_call(
    root: Path,
    tool: str,
    arguments: dict[str, Any],
    schemas: dict[str, Any],
    key_file: Path | None = None,
    env: dict[str, str] | None = None,
) -> tuple[int, dict[str, Any]]:
    """`workspace_server --root ROOT [--continuation-key-file KEY] call TOOL JSON` in a process
    of its own: its exit code and envelope, checked like every envelope."""
    key = ["--continuation-key-file", str(key_file)] if key_file is not None else []
    environment = {k: v for k, v in os.environ.items() if k != "WORKSPACE_SERVER_CONTINUATION_KEY"}
    done = subprocess.run(
        [str(BIN), "--root", str(root), *key, "call", tool, json.dumps(arguments)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        env={**environment, **(env or {})},
    )
    assert done.stdout, done.stderr
    envelope = json.loads(done.stdout)
    assert done.returncode == (0 if envelope["ok"] else 2), (done.returncode, envelope)
    # The tool's own stamp is in the full `meta` only.
    if arguments.get("response_mode") == "full":
        assert envelope["meta"]["tool"] == tool, envelope["meta"]
    check_next_actions(envelope, schemas)
    # The paging token rides in the `next-page` action's arguments alone.
    assert "continuation" not in envelope.get("completeness", {}), envelope["completeness"]
    return done.returncode, envelope


def write_key(path: Path) -> Path:
    path.write_text(secrets.token_hex(32) + "\n")
    return path


def test_cli_continuations_cross_processes_with_a_shared_key(
    server_bin: Path, paged_root: Path, cli_schemas: dict[str, Any], tmp_path: Path
) -> None:
    key = write_key(tmp_path / "continuation.key")
    search = {"query": WORD, "limit": 2}
    code, whole = cli_call(paged_root, "search_text", {**search, "limit": UNPAGED}, cli_schemas)
    assert code == 0 and whole["completeness"]["total"] == PAGED_OCCURRENCES, whole
    occurrences = rows_of("search_text", whole)
    assert len(occurrences) >= 6, whole["completeness"]

    code, first = cli_call(paged_root, "search_text", search, cli_schemas, key_file=key)
    assert code == 0, first
    assert rows_of("search_text", first) == occurrences[:2]
    action = next_page_action(first)
    assert action is not None, first
    check_next_page(action, "search_text", search)
    # The first process's action, followed verbatim by the others.
    following = action["arguments"]

    # A second process with the same key file continues where the first stopped.
    code, second = cli_call(paged_root, action["tool"], following, cli_schemas, key_file=key)
    assert code == 0, second
    assert rows_of("search_text", second) == occurrences[2:4], second
    assert second["completeness"]["total"] == PAGED_OCCURRENCES, second["completeness"]
    assert second["completeness"]["offset"] == 2, second["completeness"]

    # The same key through the environment.
    hex_key = key.read_text().strip()
    code, third = cli_call(
        paged_root,
        action["tool"],
        following,
        cli_schemas,
        env={"WORKSPACE_SERVER_CONTINUATION_KEY": hex_key},
    )
    assert code == 0, third
    assert rows_of("search_text", third) == occurrences[2:4], third

    # Another key cannot open it.
    other = write_key(tmp_path / "other.key")
    code, refused = cli_call(paged_root, action["tool"], following, cli_schemas, key_file=other)
    assert code == 2, refused
    assert refused["ok"] is False and refused["error"]["code"] == INVALID_CONTINUATION, refused
    assert refused["error"]["category"] == "validation", refused
    assert refused["error"]["retryable"] is False, refused
    # Nor can a process with no key given, which uses the key kept for its user.
    code, refused = cli_call(paged_root, action["tool"], following, cli_schemas)
    assert code == 2 and refused["error"]["code"] == INVALID_CONTINUATION, refused


def test_cli_next_page_works_pasted_into_the_next_call(
    server_bin: Path, paged_root: Path, cli_schemas: dict[str, Any], tmp_path: Path
) -> None:
    # Regression test for #11: with no key configured, each `call` made up a key of its own, so
    # the `next-page` action it printed failed in the next one.
    env = {"XDG_STATE_HOME": str(tmp_path / "state")}
    search = {"query": WORD, "limit": 3}
    code, whole = cli_call(paged_root, "search_text", {**search, "limit": UNPAGED}, cli_schemas, env=env)
    occurrences = rows_of("search_text", whole)
    code, first = cli_call(paged_root, "search_text", search, cli_schemas, env=env)
    assert code == 0, first
    action = next_page_action(first)
    assert action is not None, first
    check_next_page(action, "search_text", search)
    code, second = cli_call(paged_root, action["tool"], action["arguments"], cli_schemas, env=env)
    assert code == 0 and second["ok"] is True, second
    assert rows_of("search_text", second) == occurrences[3:6], second
    # The kept key is the user's alone.
    key = tmp_path / "state" / "envelope" / "workspace_server.key"
    assert key.stat().st_mode & 0o077 == 0, oct(key.stat().st_mode)
    assert len(key.read_text().strip()) == 64


def test_cli_call_prints_the_envelope(server_bin: Path, cli_schemas: dict[str, Any]) -> None:
    for arguments in ({"path": "Cargo.toml", "end_line": 1}, {"path": "Cargo.toml", "end_line": 1, **FULL}):
        code, envelope = cli_call(REPO, "read_file", arguments, cli_schemas)
        assert code == 0 and envelope["ok"] is True, envelope
        assert ULID.match(envelope["meta"]["request_id"])


def test_cli_refuses_a_non_utf8_argument_with_a_clear_error(server_bin: Path) -> None:
    # Regression test for #12: it panicked (exit 101, a Rust backtrace).
    done = subprocess.run(
        [str(server_bin), "--root", b"\xff\xfe", "list"],
        cwd=REPO,
        capture_output=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 2, done
    stderr = done.stderr.decode("utf-8", "replace")
    assert "is not valid UTF-8" in stderr, stderr
    assert "panicked" not in stderr, stderr


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


async def test_closing_a_session_is_no_content_and_warns_of_nothing(
    http_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The SDK ends its session with a `DELETE`, and takes anything but 200 or 204 for a failed
    termination ("Session termination failed: 202"): the server answers 204."""
    caplog.set_level(logging.WARNING, logger="mcp.client.streamable_http")
    answers: list[httpx2.Response] = []

    async def record(response: httpx2.Response) -> None:
        answers.append(response)

    with anyio.fail_after(TIMEOUT):
        async with httpx2.AsyncClient(timeout=30, event_hooks={"response": [record]}) as http:
            async with servers.http_session(http_url, http) as session:
                await session.list_tools()
    closes = [answer for answer in answers if answer.request.method == "DELETE"]
    assert [answer.status_code for answer in closes] == [204], closes
    warned = [r.getMessage() for r in caplog.records if "termination" in r.getMessage()]
    assert not warned, warned

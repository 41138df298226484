"""Interop: the conformance server's envelope tools driven by the official Python MCP SDK.

Every test runs over both transports the server offers: stdio (the SDK spawns the binary) and
streamable HTTP (one server process on a loopback port for the whole session). The binary is
`target/debug/conformance-server` (override with `CONFORMANCE_SERVER`); build it first with
`cargo build --workspace --all-features --tests --bins --examples`.

What is checked is what an envelope tool sends beside its envelope and what it asks of the
client, read through the SDK's own types:

- media (`docs/CONTRACT.md`, "Media beside the envelope"): the SDK parses each attachment as its
  own `ImageContent`, `AudioContent` or `EmbeddedResource` (with `TextResourceContents`), after
  a `TextContent` whose JSON is the envelope (`structuredContent`); the base64 decodes to the
  file it claims to be; `meta.attachments` notes every block in order, `delivery: "sent"`, with
  `bytes` the decoded size.
- elicitation: `test_elicitation` asks the SDK's `elicitation_callback` with a flat object
  schema, and answers what the callback did (accept with its content, decline, cancel); a
  session without the callback declares no `elicitation` (the SDK declares it only with one),
  and the tool answers an `elicitation_unavailable` error.
- sampling: `test_sampling` asks the SDK's `sampling_callback` and answers its text and model;
  without the callback, `sampling_unavailable`.
- logging and progress: `test_tool_with_logging`'s three messages reach the `logging_callback`,
  in order, before the call returns; `logging/setLevel` above `info` silences them;
  `test_tool_with_progress`'s three reports reach the `progress_callback` before the result.
- `test_error_handling` is an `isError` result whose envelope carries the tool's code.
"""

from __future__ import annotations

import base64
import json
import os
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import get_default_environment
from mcp.shared.exceptions import MCPDeprecationWarning

# `anyio_backend` and `transport` are fixtures: pytest finds them by name in this module.
from servers import anyio_backend, http_server, http_session, stdio_session, transport  # noqa: F401

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("CONFORMANCE_SERVER", REPO / "target/debug/conformance-server"))
BUILD = "cargo build --workspace --all-features --tests --bins --examples"

ULID = re.compile(r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")
TIMEOUT = 120

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

# Each media tool's blocks after the envelope's text mirror, in order: the SDK type, the MIME
# type, and for an embedded resource its URI and text.
MEDIA: dict[str, list[dict[str, Any]]] = {
    "test_image_content": [{"type": types.ImageContent, "mime_type": "image/png"}],
    "test_audio_content": [{"type": types.AudioContent, "mime_type": "audio/wav"}],
    "test_embedded_resource": [
        {
            "type": types.EmbeddedResource,
            "mime_type": "text/plain",
            "uri": "test://embedded-resource",
            "text": "This is an embedded resource content.",
        }
    ],
    "test_multiple_content_types": [
        {"type": types.ImageContent, "mime_type": "image/png"},
        {
            "type": types.EmbeddedResource,
            "mime_type": "application/json",
            "uri": "test://mixed-content-resource",
            "text": '{"test":"data","value":123}',
        },
    ],
}

# What `test_elicitation` asks for, and an answer that fits it.
ELICIT_MESSAGE = "Who are you?"
ELICIT_FIELDS = {"username", "email"}
ELICIT_ANSWER = {"username": "ada", "email": "ada@example.org"}

LOG_MESSAGES = ["Tool execution started", "Tool processing data", "Tool execution completed"]
# Calls per transport in the logging test: a message lost to a race is lost only sometimes.
LOGGING_CALLS = 5

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="session")
def server_bin() -> Path:
    if not BIN.is_file():
        pytest.fail(f"{BIN} is missing: run `{BUILD}` first")
    return BIN


@pytest.fixture(scope="session")
def http_url(server_bin: Path) -> Iterator[str]:
    """One HTTP server for the session."""
    with http_server([str(BIN)], REPO, "conformance-server-http-") as url:
        yield url


@asynccontextmanager
async def connect(
    request: pytest.FixtureRequest,
    transport: str,
    sent: list[dict[str, Any]] | None = None,
    **callbacks: Any,
) -> AsyncIterator[ClientSession]:
    """An initialized client session over `transport`, with the SDK callbacks `callbacks`
    (`elicitation_callback`, `sampling_callback`, `logging_callback`). Over HTTP, `sent` (when
    given) collects every JSON-RPC message the client posted."""
    if transport == "stdio":
        params = StdioServerParameters(
            command=str(BIN), args=["--stdio"], cwd=REPO, env=get_default_environment()
        )
        async with stdio_session(params, **callbacks) as session:
            yield session
        return

    async def record(http_request: httpx2.Request) -> None:
        if sent is not None and http_request.method == "POST":
            sent.append(json.loads(http_request.content))

    async with httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=TIMEOUT), event_hooks={"request": [record]}
    ) as http:
        url = request.getfixturevalue("http_url")
        async with http_session(url, http, **callbacks) as session:
            yield session


def check_envelope(result: types.CallToolResult) -> dict[str, Any]:
    """The envelope of one result: `structuredContent`, mirrored as JSON by the first block (an
    SDK `TextContent`), with `isError == !ok` and the request id in `meta` and `_meta`."""
    envelope = result.structured_content
    assert isinstance(envelope, dict), f"no structuredContent: {result}"
    assert isinstance(envelope["ok"], bool), envelope
    assert result.is_error is (not envelope["ok"]), (result.is_error, envelope)
    assert result.content, f"no content: {result}"
    first = result.content[0]
    assert isinstance(first, types.TextContent), f"content[0] is {type(first).__name__}"
    assert json.loads(first.text) == envelope, (first.text, envelope)
    assert ULID.match(envelope["meta"]["request_id"]), envelope["meta"]
    assert result.meta is not None, "result _meta is missing"
    assert result.meta["rs.envelope/request_id"] == envelope["meta"]["request_id"], result.meta
    return envelope


def check_unavailable(envelope: dict[str, Any], code: str) -> None:
    assert envelope["ok"] is False, envelope
    assert envelope["error"]["code"] == code, envelope
    assert envelope["error"]["category"] == "unavailable", envelope
    assert envelope["error"]["retryable"] is False, envelope


# --- media ---------------------------------------------------------------------------------


@pytest.mark.parametrize("tool", sorted(MEDIA))
async def test_media_are_the_sdks_own_blocks_noted_in_meta(
    request: pytest.FixtureRequest, transport: str, tool: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            result = await session.call_tool(tool, {})
    envelope = check_envelope(result)
    assert envelope["ok"] is True, envelope
    expected = MEDIA[tool]
    blocks = result.content[1:]
    assert [type(block) for block in blocks] == [want["type"] for want in expected], blocks

    notes = []
    for block, want in zip(blocks, expected):
        if isinstance(block, types.EmbeddedResource):
            contents = block.resource
            assert isinstance(contents, types.TextResourceContents), contents
            assert contents.uri == want["uri"], contents
            assert contents.mime_type == want["mime_type"], contents
            assert contents.text == want["text"], contents
            if want["mime_type"] == "application/json":
                json.loads(contents.text)
            notes.append(
                {
                    "kind": "resource",
                    "mime_type": want["mime_type"],
                    "bytes": len(contents.text.encode("utf-8")),
                    "uri": want["uri"],
                    "delivery": "sent",
                }
            )
            continue
        assert block.mime_type == want["mime_type"], block
        data = base64.b64decode(block.data, validate=True)
        if isinstance(block, types.ImageContent):
            assert data.startswith(PNG_MAGIC), data[:8]
            kind = "image"
        else:
            assert data[:4] == b"RIFF" and data[8:12] == b"WAVE", data[:12]
            kind = "audio"
        notes.append(
            {"kind": kind, "mime_type": want["mime_type"], "bytes": len(data), "delivery": "sent"}
        )
    # One note per block, in the blocks' order, and nothing else.
    assert envelope["meta"]["attachments"] == notes, envelope["meta"]


# --- elicitation ---------------------------------------------------------------------------


def check_elicit_request(params: types.ElicitRequestParams) -> None:
    """What the SDK parsed of `test_elicitation`'s `elicitation/create`: a form with a flat
    object schema of the two string fields, both required."""
    assert isinstance(params, types.ElicitRequestFormParams), params
    assert params.message == ELICIT_MESSAGE, params
    schema = params.requested_schema
    assert isinstance(schema, dict) and schema.get("type") == "object", schema
    assert set(schema["properties"]) == ELICIT_FIELDS, schema
    assert all(field["type"] == "string" for field in schema["properties"].values()), schema
    assert set(schema["required"]) == ELICIT_FIELDS, schema


@pytest.mark.parametrize(
    ("answer", "expected"),
    [
        (
            types.ElicitResult(action="accept", content=ELICIT_ANSWER),
            {"action": "accept", "content": ELICIT_ANSWER},
        ),
        (types.ElicitResult(action="decline"), {"action": "decline", "content": None}),
        (types.ElicitResult(action="cancel"), {"action": "cancel", "content": None}),
    ],
    ids=["accept", "decline", "cancel"],
)
async def test_elicitation_answers_what_the_user_did(
    request: pytest.FixtureRequest,
    transport: str,
    answer: types.ElicitResult,
    expected: dict[str, Any],
) -> None:
    asked: list[types.ElicitRequestParams] = []

    async def on_elicit(
        context: Any, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        asked.append(params)
        return answer

    sent: list[dict[str, Any]] = []
    with anyio.fail_after(TIMEOUT):
        async with connect(
            request, transport, sent=sent, elicitation_callback=on_elicit
        ) as session:
            result = await session.call_tool("test_elicitation", {"message": ELICIT_MESSAGE})
    envelope = check_envelope(result)
    assert len(asked) == 1, asked
    check_elicit_request(asked[0])
    assert envelope["ok"] is True, envelope
    assert envelope["data"] == expected, envelope
    if transport == "http":
        (initialize,) = [message for message in sent if message.get("method") == "initialize"]
        assert "elicitation" in initialize["params"]["capabilities"], initialize


async def test_elicitation_without_the_callback_is_unavailable(
    request: pytest.FixtureRequest, transport: str
) -> None:
    """The SDK declares `elicitation` only with an `elicitation_callback` (over HTTP its
    `initialize` is read off the wire); without it, the tool never asks and says why."""
    sent: list[dict[str, Any]] = []
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, sent=sent) as session:
            result = await session.call_tool("test_elicitation", {"message": ELICIT_MESSAGE})
    check_unavailable(check_envelope(result), "elicitation_unavailable")
    if transport == "http":
        (initialize,) = [message for message in sent if message.get("method") == "initialize"]
        assert "elicitation" not in initialize["params"]["capabilities"], initialize


# --- sampling ------------------------------------------------------------------------------


async def test_sampling_answers_the_clients_model(
    request: pytest.FixtureRequest, transport: str
) -> None:
    asked: list[types.CreateMessageRequestParams] = []

    async def on_sample(
        context: Any, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        asked.append(params)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text="A haiku, sampled."),
            model="interop-model-1",
            stop_reason="endTurn",
        )

    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, sampling_callback=on_sample) as session:
            result = await session.call_tool("test_sampling", {"prompt": "Write a haiku"})
    envelope = check_envelope(result)
    assert envelope["ok"] is True, envelope
    assert envelope["data"] == {"text": "A haiku, sampled.", "model": "interop-model-1"}, envelope
    (params,) = asked
    (message,) = params.messages
    assert message.role == "user", message
    assert isinstance(message.content, types.TextContent), message
    assert message.content.text == "Write a haiku", message
    assert params.max_tokens == 100, params


async def test_sampling_without_the_callback_is_unavailable(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            result = await session.call_tool("test_sampling", {"prompt": "Write a haiku"})
    check_unavailable(check_envelope(result), "sampling_unavailable")


# --- logging and progress ------------------------------------------------------------------


async def test_log_messages_arrive_before_the_result(
    request: pytest.FixtureRequest, transport: str
) -> None:
    """The server flushes a call's messages before its result, so the callback has them all
    when `call_tool` returns. Repeated: a race loses only some calls' last message."""
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, logging_callback=on_log) as session:
            for round_ in range(LOGGING_CALLS):
                received.clear()
                result = await session.call_tool("test_tool_with_logging", {})
                # What arrived by the time the result did.
                arrived = list(received)
                envelope = check_envelope(result)
                assert envelope["ok"] is True, envelope
                assert [message.data for message in arrived] == LOG_MESSAGES, (round_, arrived)
                for message in arrived:
                    assert message.level == "info", message
                    assert message.logger == "test_tool_with_logging", message


async def test_log_messages_below_the_level_set_are_not_sent(
    request: pytest.FixtureRequest, transport: str
) -> None:
    received: list[types.LoggingMessageNotificationParams] = []

    async def on_log(params: types.LoggingMessageNotificationParams) -> None:
        received.append(params)

    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport, logging_callback=on_log) as session:
            with pytest.warns(MCPDeprecationWarning):  # logging/setLevel is gone on 2026-07-28
                await session.set_logging_level("warning")
            result = await session.call_tool("test_tool_with_logging", {})
            assert check_envelope(result)["ok"] is True
            # Nothing late either.
            await anyio.sleep(0.3)
    assert received == [], received


async def test_progress_arrives_before_the_result(
    request: pytest.FixtureRequest, transport: str
) -> None:
    events: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        events.append((progress, total, message))

    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            result = await session.call_tool(
                "test_tool_with_progress", {}, progress_callback=on_progress
            )
            arrived = list(events)
    envelope = check_envelope(result)
    assert envelope["ok"] is True, envelope
    assert arrived == [(0.0, 100.0, "working"), (50.0, 100.0, "working"), (100.0, 100.0, "working")]


# --- errors --------------------------------------------------------------------------------


async def test_error_handling_is_an_is_error_envelope(
    request: pytest.FixtureRequest, transport: str
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with connect(request, transport) as session:
            result = await session.call_tool("test_error_handling", {})
    envelope = check_envelope(result)
    assert result.is_error is True, result
    assert envelope["ok"] is False and envelope["verdict"] == "ERROR", envelope
    assert envelope["error"]["code"] == "intentional_error", envelope
    assert envelope["error"]["category"] == "internal", envelope
    assert "data" not in envelope, envelope

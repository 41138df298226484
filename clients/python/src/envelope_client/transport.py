"""Connections that fail as the kit's errors: a server that dies or cannot be reached is a
`ProtocolError` of the call that met it, over every transport.

Over stdio the official SDK already resolves a call whose server died with a JSON-RPC error. Over
streamable HTTP it does not: a request the server never answers (connection refused or reset,
the process gone) raises out of the transport's own task group, which cancels the caller (a bare
`CancelledError` in the middle of a walk) and leaves an `ExceptionGroup` of httpx errors at the
`async with`. `http_transport` wraps the HTTP client the SDK sends through so that such a request
is answered, at once, by a `502` carrying a JSON-RPC error that names the failure: the SDK hands
that error to the waiting call, the kit raises it as `ProtocolError`, and a walk keeps what it
fetched (`partial`, `resume`). Nothing is retried by it: a call the server never answered may or
may not have run, so whether to call again is the retry policy's decision, not the transport's.

`connect(server)` opens an `mcp.Client` the kit's way: a URL over `http_transport`, a
`StdioServerParameters` over stdio.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import MCP_DEFAULT_SSE_READ_TIMEOUT, MCP_DEFAULT_TIMEOUT

# The JSON-RPC code of a request the server never answered (the implementation-defined server
# error range).
UNREACHED = -32000


def unreached(request: httpx2.Request, error: Exception) -> httpx2.Response:
    """The answer to `request`, which met `error` before any answer came."""
    body = {
        "jsonrpc": "2.0",
        "id": None,
        "error": {
            "code": UNREACHED,
            "message": f"the server did not answer ({type(error).__name__}: {error or 'no detail'})",
        },
    }
    return httpx2.Response(
        502,
        headers={"content-type": "application/json"},
        content=json.dumps(body).encode(),
        request=request,
    )


class _Answered(httpx2.AsyncByteStream):
    """A response body whose transport failure mid-way ends it as a stream error, which the SDK
    resolves the waiting call with, instead of a transport error that cancels the session."""

    def __init__(self, inner: httpx2.AsyncByteStream) -> None:
        self.inner = inner

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.inner:
                yield chunk
        except httpx2.TransportError as error:
            raise httpx2.StreamError(f"the server stopped answering ({type(error).__name__}: {error})") from error

    async def aclose(self) -> None:
        await self.inner.aclose()


class AnsweringTransport(httpx2.AsyncBaseTransport):
    """An HTTP transport every request through which is answered: a failure to reach the server
    becomes a `502` with a JSON-RPC error naming it (see the module's documentation)."""

    def __init__(self, inner: httpx2.AsyncBaseTransport | None = None) -> None:
        self.inner = inner if inner is not None else httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        try:
            response = await self.inner.handle_async_request(request)
        except httpx2.TransportError as error:
            return unreached(request, error)
        if isinstance(response.stream, httpx2.AsyncByteStream):
            response.stream = _Answered(response.stream)
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def http_transport(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[Any]:
    """The streamable-HTTP transport to `url` (for `mcp.Client(...)`, or its streams for a
    `ClientSession`), with the SDK's default timeouts, sending through `AnsweringTransport`."""
    # The SDK's own client settings (`create_mcp_http_client`), over the answering transport.
    client = httpx2.AsyncClient(
        timeout=httpx2.Timeout(MCP_DEFAULT_TIMEOUT, read=MCP_DEFAULT_SSE_READ_TIMEOUT),
        headers=headers,
        auth=auth,
        transport=AnsweringTransport(),
    )
    async with client, streamable_http_client(url, http_client=client) as streams:
        yield streams


def connect(server: str | StdioServerParameters, **options: Any) -> Client:
    """An `mcp.Client` to `server`, entered with `async with`: a URL over `http_transport`, a
    command over stdio. `options` go to `mcp.Client`."""
    if isinstance(server, str):
        return Client(http_transport(server), **options)
    return Client(server, **options)

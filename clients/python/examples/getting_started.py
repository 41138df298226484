"""Getting started with envelope-client: connect, call, page, and keep what a fault left.

Against the example server of this repository over stdio (from the repository's root, after
`cargo build --workspace --all-features --tests --bins --examples`):

    python clients/python/examples/getting_started.py -- target/debug/examples/workspace_server --root .

or over streamable HTTP, against a server already listening
(`target/debug/examples/workspace_server --root . --http 127.0.0.1:8080`):

    python clients/python/examples/getting_started.py http://127.0.0.1:8080/mcp

The tool names (`search_text`) are the example server's; any envelope server's work the same.
"""

from __future__ import annotations

import sys

import anyio
from mcp import StdioServerParameters

from envelope_client import EnvelopeClient, EnvelopeClientError, connect


def server_from(argv: list[str]) -> str | StdioServerParameters:
    """`-- COMMAND ARGS…` (stdio) or a URL (streamable HTTP)."""
    if len(argv) >= 2 and argv[0] == "--":
        return StdioServerParameters(command=argv[1], args=argv[2:])
    if len(argv) == 1:
        return argv[0]
    raise SystemExit(__doc__)


async def main(server: str | StdioServerParameters) -> None:
    # `connect` is `mcp.Client` with a server that dies or cannot be reached failing the call
    # that met it, as a kit error, over HTTP as over stdio.
    async with connect(server) as connection:
        client = EnvelopeClient(connection)

        # One call, retried as the envelope allows. A failed call is an envelope too.
        page = await client.call("search_text", {"query": "Envelope", "limit": 5})
        if page.error is not None:
            print(f"failed ({page.error.category}): {page.error.message}")
            return
        print(page.next_step or page.summary_line or "one page")

        # Every page, merged into one, up to 50 rows; a fault part-way keeps what was fetched.
        try:
            combined = await client.collect("search_text", {"query": "Envelope"}, max_rows=50)
        except EnvelopeClientError as error:
            if error.partial is None:
                raise
            print(f"stopped early: {error}")
            combined = error.partial
        completeness = combined.envelope.completeness
        complete = completeness is not None and completeness.complete
        print(f"{len(combined.rows)} rows in one combined page (complete: {complete})")

        # What the answer offers next, followed exactly as given.
        if combined.envelope.next_page() is not None:
            more = await client.follow(combined.envelope, "next-page")
            print(f"the next page holds {len(more.data['occurrences']) if isinstance(more.data, dict) else 0} rows")


if __name__ == "__main__":
    anyio.run(main, server_from(sys.argv[1:]))

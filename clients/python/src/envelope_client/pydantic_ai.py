"""A pydantic-ai toolset over an `EnvelopeClient`: the model sees one combined page.

```python
from pydantic_ai import Agent
from envelope_client.pydantic_ai import EnvelopeToolset

toolset = EnvelopeToolset(client, max_rows=500, max_tokens=8000)
agent = Agent(model, toolsets=[toolset])
```

Every tool of the server's listing is offered as listed (its name, description, input schema and
output schema, which the model is shown as the tool's return schema), and the server's
instructions (where it says what the controls are and how to branch on `ok` and `verdict`) are
the toolset's instructions; `include_instructions=False` and `return_schemas=False` leave
them out.
A call of a paged tool (one that declares `continuation`) is answered with every page merged into
one (`EnvelopeClient.collect`, up to `max_rows` rows and `max_tokens` tokens of rows), its
`completeness` rewritten for what the model is shown: `returned` the rows given, `truncated`
when a limit cut them, and a `next-page` action continuing exactly after them when the walk could
line one up. A `limit` the model passes is the most rows it wants (at most `max_rows`); following a
`next-page` action (its arguments carry a `continuation`), the `limit` in them is the server's page
size, and the walk again goes on up to `max_rows`. Other tools
are called once (retried per the policy). The model is shown the envelope, `ok: false` ones
included (their `error` and `hint` say what to change); a plain tool of a server that mixes
plain and envelope tools (its listed output schema is no envelope's) is called once and its answer
shown as it came, marked `"envelope": false` (a tool listed without an output schema is told by
its answer); the kit's own refusals (a tool not listed,
a cursor loop, a wait past the deadline, a schema-violating answer) reach the model as a failed
tool call (pydantic-ai's `ToolFailed`) naming them, or are raised with `kit_errors="raise"`.

pydantic-ai is an optional dependency: `pip install envelope-client[pydantic-ai]`.
"""

from __future__ import annotations

from typing import Any, Literal

from mcp import Client, ClientSession, StdioServerParameters
from pydantic_ai import RunContext
from pydantic_ai.exceptions import ToolFailed as ModelToolFailed
from pydantic_ai.tools import ToolDefinition
from pydantic_ai.toolsets import AbstractToolset
from pydantic_ai.toolsets.abstract import ToolsetTool
from pydantic_core import SchemaValidator, core_schema

from .client import EnvelopeClient
from .errors import EnvelopeClientError, NotPageable
from .transport import connect
from .walk import CONTINUATION

ARGS_VALIDATOR = SchemaValidator(
    schema=core_schema.dict_schema(core_schema.str_schema(), core_schema.any_schema())
)

COMBINED_NOTE = (
    "\n\nPages are combined: one call returns every row up to {max_rows}; "
    "follow `next-page` only when the answer is truncated."
)


class EnvelopeToolset(AbstractToolset[Any]):
    """The server's tools for a pydantic-ai agent, paged tools answering one combined page.

    `client`: an `EnvelopeClient` over an initialized session (the caller owns the session), an
    initialized `ClientSession`, an entered mcp `Client`; or what to connect to: a URL (streamable
    HTTP) or `StdioServerParameters` (a command), which the toolset connects to when the agent
    enters it and closes when it leaves (`toolset.client` is then valid inside the run).
    `max_rows`, `max_tokens`, `page_size`: the combined page's bounds and the page size asked
    of the server (its default when None). `tools`: offer only these. `max_retries`: what
    pydantic-ai allows the model per tool. `kit_errors`: `"tool_failed"` shows the model the
    kit's refusals as a failed call, `"raise"` ends the run with them. `include_instructions`:
    the server's instructions are the toolset's. `return_schemas`: each tool's listed output
    schema is its return schema, shown to the model."""

    def __init__(
        self,
        client: EnvelopeClient | ClientSession | Client | str | StdioServerParameters,
        *,
        max_rows: int = 500,
        max_tokens: int | None = None,
        page_size: int | None = None,
        tools: list[str] | None = None,
        max_retries: int = 1,
        kit_errors: Literal["tool_failed", "raise"] = "tool_failed",
        include_instructions: bool = True,
        return_schemas: bool = True,
        id: str | None = None,
    ) -> None:
        if max_rows < 1:
            raise ValueError("max_rows is at least 1")
        # What to connect to when entered, when the toolset opens its own connection.
        self._server: str | StdioServerParameters | None = None
        self._connection: Client | None = None
        self._entered = 0
        self._client: EnvelopeClient | None = None
        if isinstance(client, EnvelopeClient):
            self._client = client
        elif isinstance(client, (ClientSession, Client)):
            self._client = EnvelopeClient(client)
        else:
            self._server = client
        self.max_rows = max_rows
        self.max_tokens = max_tokens
        self.page_size = page_size
        self.only = set(tools) if tools is not None else None
        self.max_retries = max_retries
        self.kit_errors = kit_errors
        self.include_instructions = include_instructions
        # Not `include_return_schemas`: that is a method of pydantic-ai's toolsets.
        self.return_schemas = return_schemas
        self._id = id
        self.shown: list[dict[str, Any]] = []

    @property
    def id(self) -> str | None:
        return self._id

    @property
    def client(self) -> EnvelopeClient:
        """The kit the toolset calls through: the one it was given, or, for a URL or a command,
        the one over the connection it opened when entered."""
        if self._client is None:
            raise RuntimeError("the toolset connects to its server when entered: use it inside `async with` or an agent run")
        return self._client

    async def __aenter__(self) -> EnvelopeToolset:
        if self._server is not None:
            if self._entered == 0:
                connection = connect(self._server)
                await connection.__aenter__()
                self._connection = connection
                self._client = EnvelopeClient(connection)
            self._entered += 1
        return self

    async def __aexit__(self, *args: Any) -> bool | None:
        if self._server is not None and self._entered > 0:
            self._entered -= 1
            if self._entered == 0 and self._connection is not None:
                connection, self._connection, self._client = self._connection, None, None
                await connection.__aexit__(*args)
        return None

    async def get_instructions(self, ctx: RunContext[Any]) -> str | None:
        """The server's instructions (from its `initialize` answer), unless turned off."""
        if not self.include_instructions:
            return None
        initialized = self.client.session.initialize_result
        instructions = initialized.instructions if initialized is not None else None
        return instructions or None

    async def get_tools(self, ctx: RunContext[Any]) -> dict[str, ToolsetTool[Any]]:
        listing = await self.client.list_tools()
        tools: dict[str, ToolsetTool[Any]] = {}
        for name, tool in listing.items():
            if self.only is not None and name not in self.only:
                continue
            description = tool.description or ""
            if self.client.accepts(tool, CONTINUATION):
                description += COMBINED_NOTE.format(max_rows=self.max_rows)
            annotations = tool.annotations.model_dump(by_alias=True, exclude_none=True) if tool.annotations else None
            tools[name] = ToolsetTool(
                toolset=self,
                tool_def=ToolDefinition(
                    name=name,
                    description=description,
                    parameters_json_schema=tool.input_schema,
                    metadata={"annotations": annotations},
                    return_schema=tool.output_schema if self.return_schemas else None,
                    include_return_schema=self.return_schemas and tool.output_schema is not None,
                ),
                max_retries=self.max_retries,
                args_validator=ARGS_VALIDATOR,
            )
        return tools

    async def call_tool(
        self, name: str, tool_args: dict[str, Any], ctx: RunContext[Any], tool: ToolsetTool[Any]
    ) -> Any:
        try:
            shown = await self._answer(name, dict(tool_args))
        except EnvelopeClientError as error:
            if self.kit_errors == "raise":
                raise
            raise ModelToolFailed(f"{type(error).__name__}: {error}") from error
        self.shown.append({"tool": name, "arguments": tool_args, "answer": shown})
        return shown

    async def _answer(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        listing = await self.client.list_tools()
        listed = listing.get(name)
        if listed is None or (self.only is not None and name not in self.only):
            from .errors import ToolNotListed

            raise ToolNotListed(name, [n for n in listing if self.only is None or n in self.only])
        if not self.client.accepts(listed, CONTINUATION):
            # A plain tool of a mixed server is shown as it came, marked as no envelope.
            answer = await self.client.call_any(name, arguments, check=False)
            return answer.wire()
        max_rows = self.max_rows
        if CONTINUATION in arguments:
            # A next-page action followed as given: its `limit` is the server's page size, not
            # the rows the model wants; the walk goes on up to `max_rows`.
            wanted = None
        else:
            wanted = arguments.pop("limit", None)
        if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted >= 1:
            max_rows = min(max_rows, wanted)
        elif wanted is not None:
            arguments["limit"] = wanted  # not a count: the server says what is wrong with it
        try:
            combined = await self.client.collect(
                name,
                arguments,
                max_rows=max_rows,
                max_tokens=self.max_tokens,
                page_size=self.page_size,
            )
        except NotPageable as error:
            # A page with no rows to combine (an empty answer, say) is shown as it came.
            if error.envelope is None:
                raise
            return error.envelope.wire()
        except EnvelopeClientError as error:
            from .errors import ToolFailed

            if isinstance(error, ToolFailed):
                return error.envelope.wire()
            raise
        return combined.envelope.wire()

"""`EnvelopeClient`: an MCP `ClientSession` wrapped with the envelope's paging, retry and follow.

```python
async with ClientSession(read, write) as session:
    await session.initialize()
    client = EnvelopeClient(session)
    page = await client.call("search_text", {"query": "Envelope"})     # retried per the policy
    async for page in client.pages("search_text", {"query": "Envelope"}):  # every page
        ...
    combined = await client.collect("search_text", {"query": "Envelope"}, max_rows=500)
    nxt = await client.follow(page, "next-page")                      # an action, by id
    hit = await client.read("read_file", {"target_ref": ref, "path": p, "line": n})
```

Nothing is called that the server's listing does not name (`ToolNotListed`, raised before any
request): a next action, a recovery or a page of another tool included; nor a next action (one
followed, or a page's `next-page`) whose arguments fail its tool's listed input schema
(`ActionArguments`). Every answer is checked
against the envelope's schema and invariants (`EnvelopeSchemaError`). The retry policy is
`retry.RetryPolicy`'s; paging stops with `CursorLoop` on a continuation it sent before and with
`PageLimitExceeded` past `max_pages`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import jsonschema
from mcp import Client, ClientSession
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, TextContent, Tool

from .envelope import Envelope, NextAction, Notice, parse_envelope
from .errors import (
    ActionArguments,
    ActionNotFound,
    CursorLoop,
    DeadlineExceeded,
    EnvelopeClientError,
    EnvelopeSchemaError,
    EnvelopeTool,
    NotAnEnvelope,
    NotRetriedUnsafe,
    PageLimitExceeded,
    ProtocolError,
    RetriesExhausted,
    RetryAfterTooLong,
    StaleTarget,
    ToolFailed,
    ToolNotListed,
    TotalChanged,
)
from .paging import CombinedPage, combine, estimate_tokens, rows_key, rows_of
from .plain import PlainResult, is_plain, speaks_envelope
from .retry import RetryPolicy
from .walk import CONTINUATION, WalkGuard

# The codes of a target ref that was genuine but went stale, which `read` re-resolves once: the
# contract's table lists one (`STALE_TARGET_SNAPSHOT`: what the ref points into changed, or it
# does not cover the target named). The Rust kit's `STALE_REF_CODES`, the same list.
STALE_REF_CODES = frozenset({"STALE_TARGET_SNAPSHOT"})
# The roles of an action that recovers a stale ref.
RECOVERY_ROLES = ("resolve_target", "retry")
# More listing pages than this is a server looping on its cursor.
MAX_LISTING_PAGES = 100


def is_stale_target(envelope: Envelope) -> bool:
    """Whether the envelope refuses a target ref as stale: its error's code is one of
    `STALE_REF_CODES`."""
    code = envelope.error.code if envelope.error is not None else None
    return code in STALE_REF_CODES


Relocate = Callable[[dict[str, Any], Envelope, str], "dict[str, Any] | None"]


def read_result(tool: str, result: CallToolResult, *, text_fallback: bool = True) -> Envelope:
    """The envelope `result` carries: its `structuredContent`, or, only when that is absent (and
    `text_fallback` is on), its first text block when that is the envelope's JSON (an object with
    `ok`). `NotAnEnvelope` when it carries none; `EnvelopeSchemaError`, naming the field, when the
    envelope breaks its schema or its `ok` contradicts the result's `isError`. A failed envelope
    is returned as read. The Rust kit's `read::envelope_value` and `read::decode`, held to the same
    shared cases (`clients/cases/read.json`)."""
    raw = result.structured_content
    if raw is None and text_fallback:
        texts = [block for block in result.content if isinstance(block, TextContent)]
        if texts:
            try:
                raw = json.loads(texts[0].text)
            except ValueError:
                raw = None
            if not isinstance(raw, dict) or "ok" not in raw:
                raw = None
    if raw is None:
        raise NotAnEnvelope(tool, ["the result carries no envelope (no structuredContent)"], None, result)
    if not isinstance(raw, dict) or "ok" not in raw:
        raise NotAnEnvelope(tool, ["the result's content is no envelope (it has no `ok`)"], raw, result)
    if isinstance(raw.get("ok"), bool) and bool(result.is_error) == raw["ok"]:
        raise EnvelopeSchemaError(tool, [f"isError is {bool(result.is_error)} but the envelope's ok is {raw['ok']}"], raw)
    return parse_envelope(raw, tool=tool)


def check_action(tools: dict[str, Tool], action: NextAction) -> None:
    """Refuses `action` (`ToolNotListed`, `ActionArguments` naming where) unless `tools` (the
    server's listing) names its tool and its arguments, as given, pass that tool's listed input
    schema: what `follow` and paging check before sending anything. The Rust kit's
    `check_action`, held to the same shared cases (`clients/cases/follow.json`)."""
    if action.tool not in tools:
        raise ToolNotListed(action.tool, list(tools), action.id)
    listed = tools[action.tool]
    schema = listed.input_schema if isinstance(listed.input_schema, dict) else {}
    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = next(iter(validator.iter_errors(action.arguments)), None)
    except jsonschema.exceptions.SchemaError as broken:
        raise ActionArguments(action.id, action.tool, f"the input schema does not compile: {broken.message}") from None
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        raise ActionArguments(action.id, action.tool, f"/{where}: {error.message}")


# Where each wire puts the page after a page, tried in order: the places of a next-page action
# (a JSON pointer to the list, the `id` that marks it, or, where steps have no id, the argument a
# page step carries, and the names of its tool and arguments), then the places of a bare token.
# The Rust kit's `NEXT_PAGE_PLACES` and `TOKEN_PLACES`; `clients/cases/next_page.json` holds
# both kits to the same table.
NEXT_PAGE_PLACES: tuple[tuple[str, str | None, str | None, str, str], ...] = (
    # envelope, Frigg and tsa: a `next_actions` entry with the id `next-page`
    ("/next_actions", "next-page", None, "tool", "arguments"),
    # cos: the same action, in the diagnostics block
    ("/data/meta/next_actions", "next-page", None, "tool", "arguments"),
    # pincher: the `next_steps` entry whose `args` carry the continuation
    ("/_meta/next_steps", None, CONTINUATION, "tool", "args"),
)
TOKEN_PLACES: tuple[str, ...] = ("/completeness/continuation",)


def _at(value: Any, pointer: str) -> Any:
    for part in pointer.strip("/").split("/"):
        if not isinstance(value, dict):
            return None
        value = value.get(part)
    return value


def next_call(answer: Envelope | dict[str, Any], tool: str, arguments: dict[str, Any]) -> NextAction | None:
    """The call for the page after `answer` (answered to `tool(arguments)`), in any dialect's
    wire (an `Envelope`, or an answer's structured content as it came): its next-page action
    exactly as given (its `limit` included), found by `NEXT_PAGE_PLACES`; else a token in one of
    `TOKEN_PLACES` (where a token no action carries goes, and where Frigg's contract always puts
    it) sent back with the last call otherwise unchanged; None on the last page. The Rust kit's
    `next_call`, held to the same shared cases (`clients/cases/next_page.json`)."""
    wire = answer.wire() if isinstance(answer, Envelope) else answer
    for pointer, action_id, carries, tool_name, arguments_name in NEXT_PAGE_PLACES:
        steps = _at(wire, pointer)
        for step in steps if isinstance(steps, list) else []:
            if not isinstance(step, dict):
                continue
            given = step.get(arguments_name)
            called = step.get(tool_name)
            if not isinstance(given, dict) or not isinstance(called, str) or not called:
                continue
            if (action_id is not None and step.get("id") == action_id) or (
                carries is not None and carries in given
            ):
                reason = step.get("reason") or step.get("why") or "the next page"
                return NextAction.model_validate(
                    {"id": "next-page", "role": "broaden_scope", "tool": called, "arguments": given, "reason": reason}
                )
    for pointer in TOKEN_PLACES:
        token = _at(wire, pointer)
        if isinstance(token, str) and token:
            again = {**arguments, CONTINUATION: token}
            return NextAction.model_validate(
                {"id": "next-page", "role": "broaden_scope", "tool": tool, "arguments": again, "reason": "the next page"}
            )
    return None


def _gave_up(tool: str, envelope: Envelope, attempts: int, why: str | None) -> ToolFailed:
    """The raising form of a failure `call` returns (`check=True`)."""
    if why == "unsafe":
        return NotRetriedUnsafe(
            tool,
            envelope,
            attempts,
            "the tool is not annotated idempotent or read-only, and its error does not say nothing ran",
        )
    if why == "exhausted":
        return RetriesExhausted(tool, envelope, attempts, f"{attempts} attempts made")
    error = envelope.error
    reason = (
        "its error is not retryable"
        if error is None or not error.retryable
        else f"a `{error.category}` error is not retried"
    )
    return ToolFailed(tool, envelope, attempts, reason)


def relocate_hit(arguments: dict[str, Any], recovered: Envelope, ref_arg: str) -> dict[str, Any] | None:
    """The read's arguments with the fresh ref of `recovered` (a search run again) in place of the
    stale one, and the hit moved to where the fresh page has it. The hit's location is the
    read's arguments (the ref aside) that the fresh page's rows carry too, whatever the tool
    names them: the rows that agree on every one of them but a single integer (a line, say)
    are the same hit moved, and that integer becomes the nearest one among them (the same when
    it is still there, the later on a tie). None when the recovered page holds no fresh ref."""
    data = recovered.data if isinstance(recovered.data, dict) else {}
    fresh = data.get(ref_arg)
    if not isinstance(fresh, str) or not fresh:
        return None
    moved = {**arguments, ref_arg: fresh}
    if recovered.completeness is None:
        return moved
    try:
        rows = [row for row in rows_of(recovered, rows_key(recovered)) if isinstance(row, dict)]
    except EnvelopeClientError:
        return moved

    def integer(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool)

    location = [key for key in arguments if key != ref_arg and any(key in row for row in rows)]
    moving = [key for key in location if integer(arguments[key])]
    fixed = [key for key in location if key not in moving]
    if len(moving) != 1 or not fixed:
        # No single coordinate to move, or nothing that says which hit is the same one.
        return moved
    [key] = moving
    at = arguments[key]
    places = sorted(
        {
            row[key]
            for row in rows
            if integer(row.get(key)) and all(row.get(name) == arguments[name] for name in fixed)
        }
    )
    if places and at not in places:
        moved[key] = min(places, key=lambda candidate: (abs(candidate - at), -candidate))
    return moved


def _contradicts(error: EnvelopeClientError) -> bool:
    """Whether `error` stopped a walk that cannot be continued: a loop, or a page that
    contradicts the ones before."""
    return isinstance(error, (CursorLoop, TotalChanged))


def _bounded(guard: WalkGuard, max_pages: int, tool: str, arguments: dict[str, Any]) -> None:
    """The walk's checks of a call about to be sent, and its page bound."""
    guard.sending(tool, arguments)
    if guard.pages >= max_pages:
        raise PageLimitExceeded(guard.tool, max_pages)


class _Walk:
    """What a `collect` walk has fetched so far, and the next page's call it is making (None
    between pages): what an error part-way hands back."""

    def __init__(self) -> None:
        self.pages: list[Envelope] = []
        self.pending: NextAction | None = None


class EnvelopeClient:
    """A `ClientSession` (or mcp 2's `Client`, entered) with the envelope's paging, retry and
    follow; see the module's doc.

    `policy`: the retry policy (`RetryPolicy()` by default). `max_pages`: the most pages one
    walk reads. `text_fallback`: read the envelope from the first text content when a result
    has no `structuredContent` (the contract's mirror), instead of refusing it.
    """

    def __init__(
        self,
        session: ClientSession | Client,
        *,
        policy: RetryPolicy | None = None,
        max_pages: int = 1000,
        text_fallback: bool = True,
    ) -> None:
        # mcp 2's high-level `Client` (entered) holds the session the kit talks through.
        self.session: ClientSession = session.session if isinstance(session, Client) else session
        self.policy = policy or RetryPolicy()
        self.max_pages = max_pages
        self.text_fallback = text_fallback
        self._tools: dict[str, Tool] | None = None

    # --- the listing ---------------------------------------------------------------------

    async def list_tools(self, *, refresh: bool = False) -> dict[str, Tool]:
        """The server's tools by name (every listing page), cached until `refresh`."""
        if self._tools is not None and not refresh:
            return self._tools
        from mcp_types import PaginatedRequestParams

        tools: dict[str, Tool] = {}
        cursor: str | None = None
        cursors: set[str] = set()
        for _ in range(MAX_LISTING_PAGES):
            params = PaginatedRequestParams(cursor=cursor) if cursor is not None else None
            try:
                result = await self.session.list_tools(params=params)
            except MCPError as error:
                raise ProtocolError("tools/list", error.message, error.code) from error
            for tool in result.tools:
                tools[tool.name] = tool
            cursor = result.next_cursor
            if cursor is None:
                break
            if cursor in cursors:
                raise CursorLoop("tools/list", len(cursors) + 1, cursor, "the listing repeats a cursor")
            cursors.add(cursor)
        else:
            raise PageLimitExceeded("tools/list", MAX_LISTING_PAGES)
        self._tools = tools
        return tools

    async def _check_action(self, action: NextAction) -> None:
        """`check_action` against the server's listing."""
        check_action(await self.list_tools(), action)

    async def _listed(self, tool: str, action_id: str | None = None) -> Tool:
        tools = await self.list_tools()
        if tool not in tools:
            raise ToolNotListed(tool, list(tools), action_id)
        return tools[tool]

    def idempotent(self, tool: Tool) -> bool:
        """Whether the listing annotates the tool `idempotentHint: true` or `readOnlyHint: true`."""
        annotations = tool.annotations
        if annotations is None:
            return False
        return annotations.idempotent_hint is True or annotations.read_only_hint is True

    @staticmethod
    def accepts(tool: Tool, argument: str) -> bool:
        """Whether the tool's input schema declares `argument`."""
        properties = tool.input_schema.get("properties") if isinstance(tool.input_schema, dict) else None
        return isinstance(properties, dict) and argument in properties

    @staticmethod
    def _limit_maximum(tool: Tool) -> int | None:
        properties = tool.input_schema.get("properties") or {}
        spec = properties.get("limit") if isinstance(properties, dict) else None
        maximum = spec.get("maximum") if isinstance(spec, dict) else None
        return maximum if isinstance(maximum, int) else None

    # --- one call, retried ---------------------------------------------------------------

    def _envelope_of(self, tool: str, result: CallToolResult) -> Envelope:
        return read_result(tool, result, text_fallback=self.text_fallback)

    async def _call_once(self, tool: str, arguments: dict[str, Any], remaining_s: float, deadline_s: float) -> Envelope:
        try:
            with anyio.fail_after(remaining_s):
                result = await self.session.call_tool(tool, arguments)
        except TimeoutError:
            raise DeadlineExceeded(tool, deadline_s) from None
        except MCPError as error:
            raise ProtocolError(tool, error.message, error.code) from error
        except RuntimeError as error:
            # The SDK checks structured content against the listed output schema itself.
            if "structured content" in str(error):
                raise EnvelopeSchemaError(tool, [str(error)], None) from error
            raise ProtocolError(tool, str(error)) from error
        if not isinstance(result, CallToolResult):
            raise ProtocolError(tool, f"answered a {type(result).__name__}, not a tool result")
        return self._envelope_of(tool, result)

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        check: bool = False,
        action_id: str | None = None,
    ) -> Envelope:
        """Call `tool` with `arguments` as given, retried per the policy, and return its envelope,
        whether it is ok or not: a tool's failure is data (its `error` says what failed and
        whether a retry could help), not an exception. With `check=True` a failure the kit gives
        up on raises `ToolFailed` instead (`RetriesExhausted`, `NotRetriedUnsafe`). A wait past
        the deadline raises `RetryAfterTooLong` or `DeadlineExceeded` either way."""
        listed = await self._listed(tool, action_id)
        arguments = dict(arguments or {})
        policy = self.policy
        idempotent = self.idempotent(listed)
        deadline = policy.clock() + policy.deadline_s
        attempt = 0
        while True:
            attempt += 1
            remaining = deadline - policy.clock()
            if remaining <= 0:
                raise DeadlineExceeded(tool, policy.deadline_s)
            envelope = await self._call_once(tool, arguments, remaining, policy.deadline_s)
            if envelope.ok:
                return envelope
            error = envelope.error
            assert error is not None  # parse_envelope checked it
            remaining = deadline - policy.clock()
            decision = policy.decide(error, idempotent, attempt, remaining)
            if decision.action == "return":
                if check:
                    raise _gave_up(tool, envelope, attempt, decision.why)
                return envelope
            if decision.action == "retry_after_past_deadline":
                asked = (error.retry_after_ms or 0) / 1000
                raise RetryAfterTooLong(tool, envelope, asked, remaining)
            if decision.action == "deadline":
                raise DeadlineExceeded(tool, policy.deadline_s, envelope)
            wait = decision.wait_s
            await policy.sleep(wait)

    async def call_plain(self, tool: str, arguments: dict[str, Any] | None = None) -> PlainResult:
        """Call a plain tool (one whose listing is no envelope's: `speaks_envelope`) once, with
        `arguments` as given, and hand back what it answered unread, marked as no envelope.
        Not retried: without an envelope nothing says a retry could help. A tool that speaks
        the envelope is refused (`EnvelopeTool`) before anything is sent: `call` reads it."""
        listed = await self._listed(tool)
        if speaks_envelope(listed):
            raise EnvelopeTool(tool)
        policy = self.policy
        try:
            with anyio.fail_after(policy.deadline_s):
                result = await self.session.call_tool(tool, dict(arguments or {}))
        except TimeoutError:
            raise DeadlineExceeded(tool, policy.deadline_s) from None
        except MCPError as error:
            raise ProtocolError(tool, error.message, error.code) from error
        if not isinstance(result, CallToolResult):
            raise ProtocolError(tool, f"answered a {type(result).__name__}, not a tool result")
        return PlainResult.of(tool, result)

    async def call_any(
        self, tool: str, arguments: dict[str, Any] | None = None, *, check: bool = False
    ) -> Envelope | PlainResult:
        """`call` for a tool that speaks the envelope, `call_plain` for a plain one (see
        `envelope_client.plain`); a tool listed without an output schema is told by its answer,
        which is read as an envelope when it is one. What a caller of a server mixing both uses.
        An answer that claims to be an envelope (it has `ok`) but breaks the envelope's schema
        still raises `EnvelopeSchemaError`, naming the field."""
        listed = await self._listed(tool)
        if is_plain(listed):
            return await self.call_plain(tool, arguments)
        try:
            return await self.call(tool, arguments, check=check)
        except NotAnEnvelope as error:
            if speaks_envelope(listed):
                raise
            # Listed without an output schema: its answer says it is plain.
            return PlainResult.of(tool, error.result)

    # --- next actions --------------------------------------------------------------------

    async def follow(self, envelope: Envelope, action_id: str, *, check: bool = False) -> Envelope:
        """Run the envelope's next action `action_id`: its tool with its arguments exactly as
        given. `ActionNotFound` when it offers none by that id; `ToolNotListed`, without a call,
        when the action names a tool the listing does not."""
        action = envelope.action(action_id)
        if action is None:
            raise ActionNotFound(action_id, [a.id for a in envelope.next_actions or []])
        await self._check_action(action)
        return await self.call(action.tool, action.arguments, check=check, action_id=action.id)

    # --- pages ---------------------------------------------------------------------------

    @staticmethod
    def _next_call(
        envelope: Envelope, tool: str, arguments: dict[str, Any]
    ) -> tuple[NextAction, str, dict[str, Any]] | None:
        """`next_call`, with the tool and arguments it calls."""
        action = next_call(envelope, tool, arguments)
        if action is None:
            return None
        return action, action.tool, dict(action.arguments)

    async def pages(
        self, tool: str, arguments: dict[str, Any] | None = None, *, max_pages: int | None = None
    ) -> AsyncIterator[Envelope]:
        """Every page of `tool(arguments)`, the first included, each the previous page's
        `next-page` action followed as given (each call retried per the policy). A page that
        fails (`ok: false`, once the policy gives up) is yielded as read and ends the walk, as in
        the Rust kit: its call is the previous page's `next-page` action, to follow again."""
        guard = WalkGuard(tool)
        bound = max_pages or self.max_pages
        arguments = dict(arguments or {})
        current_tool = tool
        pending: NextAction | None = None
        while True:
            try:
                _bounded(guard, bound, current_tool, arguments)
                envelope = await self.call(
                    current_tool,
                    arguments,
                    action_id=None if guard.pages == 0 else "next-page",
                )
                guard.received(envelope.completeness)
            except EnvelopeClientError as error:
                # The pages before were yielded: the call that did not complete resumes; a loop,
                # or a page that contradicts the ones before, resumes nothing.
                error.resume = None if _contradicts(error) else pending
                raise
            yield envelope
            if not envelope.ok:
                return
            following = self._next_call(envelope, current_tool, arguments)
            if following is None:
                return
            pending, current_tool, arguments = following
            try:
                await self._check_action(pending)
            except EnvelopeClientError as error:
                error.resume = None  # an action that cannot be called resumes nothing
                raise

    async def collect(
        self,
        tool: str,
        arguments: dict[str, Any] | None = None,
        *,
        max_rows: int | None = None,
        max_tokens: int | None = None,
        page_size: int | None = None,
        max_pages: int | None = None,
    ) -> CombinedPage:
        """Every page of `tool(arguments)` merged into one page (`paging.combine`), up to
        `max_rows` rows and `max_tokens` tokens of rows (characters over 4).

        When the tool declares `limit`, the walk asks each page for no more rows than are left
        (and `page_size` when given), so the combined page ends on a page boundary and its
        `next-page` action continues exactly after its last row; a cut the walk cannot line up
        so is reported truncated with no `next-page` action."""
        guard = WalkGuard(tool)
        bound = max_pages or self.max_pages
        listed = await self._listed(tool)
        sized = self.accepts(listed, "limit")
        maximum = self._limit_maximum(listed)

        def sized_args(args: dict[str, Any], left: int | None) -> dict[str, Any]:
            if not sized:
                return args
            wanted = [n for n in (args.get("limit"), page_size, left, maximum) if isinstance(n, int)]
            if page_size is not None or left is not None:
                limit = min(wanted)
                if limit >= 1 and limit != args.get("limit"):
                    return {**args, "limit": limit}
            return args

        walk = _Walk()
        try:
            return await self._collect_walk(
                tool, arguments, walk, guard, bound, sized, sized_args, max_rows, max_tokens, page_size
            )
        except EnvelopeClientError as error:
            # What was fetched before the fault is kept: the pages so far, combined, continued
            # by the call that did not complete (by none after a loop, or a page that
            # contradicts the ones before).
            if _contradicts(error):
                walk.pending = None
            error.resume = walk.pending
            if walk.pages:
                try:
                    error.partial = combine(tool, walk.pages, next_page=walk.pending)
                except EnvelopeClientError:
                    # Pages that cannot be combined were refused as they came; none is lost.
                    error.partial = None
            raise

    async def _collect_walk(
        self,
        tool: str,
        arguments: dict[str, Any] | None,
        walk: _Walk,
        guard: WalkGuard,
        bound: int,
        sized: bool,
        sized_args: Callable[[dict[str, Any], int | None], dict[str, Any]],
        max_rows: int | None,
        max_tokens: int | None,
        page_size: int | None,
    ) -> CombinedPage:
        """`collect`'s walk, each page fetched kept in `walk.pages` and the call being made in
        `walk.pending`, so that a fault part-way keeps what was fetched."""
        current_tool = tool
        base_limit = page_size if page_size is not None else (arguments or {}).get("limit")
        arguments = sized_args(dict(arguments or {}), max_rows)
        _bounded(guard, bound, current_tool, arguments)
        first = await self.call(current_tool, arguments, check=True)
        key = rows_key(first, tool)
        rows = rows_of(first, key)
        if max_tokens is not None and sized:
            fit = self._fit(rows, 0, max_tokens)
            if 1 <= fit < len(rows):
                # Ask again for the rows that fit, so the page ends where the combined one does.
                first = await self.call(current_tool, {**arguments, "limit": fit}, check=True)
                arguments = {**arguments, "limit": fit}
                rows = rows_of(first, key)
        guard.received(first.completeness)
        walk.pages.append(first)
        pages = walk.pages
        count, tokens = len(rows), estimate_tokens(rows)
        keep: int | None = None
        reason: str | None = None
        continue_with: NextAction | None = None
        if max_rows is not None and count > max_rows:
            keep, reason = max_rows, "page_limit"
        elif max_tokens is not None and tokens > max_tokens:
            keep, reason = self._fit(rows, 0, max_tokens), "budget_limit"
        else:
            page = first
            while True:
                following = self._next_call(page, current_tool, arguments)
                if following is None:
                    break
                action, next_tool, next_args = following
                if max_rows is not None and count >= max_rows:
                    continue_with, reason = action, "page_limit"
                    break
                if max_tokens is not None and tokens >= max_tokens:
                    continue_with, reason = action, "budget_limit"
                    break
                if next_tool != current_tool:
                    # A page of another tool is no page of this result: offered, not walked.
                    continue_with = action
                    break
                # An action that cannot be called resumes nothing: checked before it is pending.
                await self._check_action(action)
                walk.pending = action
                next_args = sized_args(next_args, None if max_rows is None else max_rows - count)
                walk.pending = action.model_copy(update={"arguments": next_args})
                _bounded(guard, bound, next_tool, next_args)
                page = await self.call(next_tool, next_args, check=True, action_id=action.id)
                guard.received(page.completeness)
                new = rows_of(page, key)
                new_tokens = estimate_tokens(new)
                fit = len(new) if max_tokens is None else self._fit(new, tokens, max_tokens)
                if fit < len(new):
                    reason = "budget_limit"
                    if fit == 0:
                        # Nothing of it fits: stop before it; its own call continues here.
                        continue_with = action.model_copy(update={"arguments": next_args})
                        reason = "budget_limit"
                        break
                    if sized and fit < len(new):
                        # Ask for the rows that fit, so the page ends where the combined one does.
                        smaller = {**next_args, "limit": fit}
                        page = await self.call(next_tool, smaller, check=True, action_id=action.id)
                        guard.replaced(page.completeness)
                        new = rows_of(page, key)
                        if len(new) > fit:
                            keep, reason = count + fit, "budget_limit"
                    else:
                        keep, reason = count + fit, "budget_limit"
                    pages.append(page)
                    count += len(new)
                    tokens += estimate_tokens(new)
                    if keep is None:
                        following = self._next_call(page, next_tool, next_args)
                        continue_with = following[0] if following else None
                        if continue_with is None:
                            reason = None
                    break
                pages.append(page)
                walk.pending = None
                count += len(new)
                tokens += new_tokens
                arguments = next_args
                if max_rows is not None and count > max_rows:
                    keep, reason = max_rows, "page_limit"
                    break
        if keep is not None:
            continue_with = None
        if continue_with is not None and sized and continue_with.tool == tool:
            # The walk shrank pages to end on the combined page's last row; the page after it
            # is asked at the size the caller asked (the server's default when none).
            resumed = dict(continue_with.arguments)
            if base_limit is None:
                resumed.pop("limit", None)
            else:
                resumed["limit"] = base_limit
            continue_with = continue_with.model_copy(update={"arguments": resumed})
        return combine(tool, pages, keep_rows=keep, limit_reason=reason, next_page=continue_with)

    @staticmethod
    def _fit(rows: list[Any], used: int, max_tokens: int) -> int:
        """How many of `rows` fit in what is left of `max_tokens` after `used`."""
        fit = 0
        for row in rows:
            cost = estimate_tokens(row) + 1
            if used + cost > max_tokens:
                break
            used += cost
            fit += 1
        return fit

    # --- target refs ---------------------------------------------------------------------

    async def read(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        ref_arg: str = "target_ref",
        relocate: Relocate = relocate_hit,
        check: bool = False,
    ) -> Envelope:
        """Call `tool(arguments)` (a read by target ref). On a stale ref (a code of
        `STALE_REF_CODES`) it re-resolves once, by the recovery the answer names (its
        `resolve_target` or `retry` action, followed as given): a recovery that reads by itself
        is the answer; a search run again gives a fresh ref, with which the read is made again
        (`relocate` moves the hit's line; the answer then carries a `target_relocated` warning
        saying so). Still stale, or no recovery offered: `StaleTarget`."""
        envelope = await self.call(tool, arguments, check=False)
        if envelope.ok or not is_stale_target(envelope) or ref_arg not in arguments:
            if check and not envelope.ok:
                raise ToolFailed(tool, envelope, 1, "its error is not retryable")
            return envelope
        recovery = next(
            (
                action
                for role in RECOVERY_ROLES
                for action in envelope.next_actions or []
                if action.role == role
            ),
            None,
        )
        if recovery is None:
            raise StaleTarget(tool, envelope, "its answer offers no recovery action")
        recovered = await self.call(recovery.tool, recovery.arguments, check=True, action_id=recovery.id)
        if recovery.tool == tool and ref_arg not in recovery.arguments:
            # The recovery is itself a read (of the file, say): its answer is the read.
            return recovered
        again_args = relocate(dict(arguments), recovered, ref_arg)
        if again_args is None:
            raise StaleTarget(tool, recovered, f"its recovery `{recovery.id}` gave no fresh `{ref_arg}`")
        again = await self.call(tool, again_args, check=False)
        if not again.ok:
            if is_stale_target(again):
                raise StaleTarget(tool, again, "it stayed stale after one re-resolution")
            if check:
                raise ToolFailed(tool, again, 1, "its error is not retryable")
            return again
        moved = {k: again_args[k] for k in again_args if k != ref_arg and again_args[k] != arguments.get(k)}
        note = Notice.model_validate(
            {
                "code": "target_relocated",
                "severity": "info",
                "message": f"the target ref was stale; re-resolved by `{recovery.id}`"
                + (f", the hit now at {moved}" if moved else ""),
                "data": {"recovery": recovery.id, "arguments": again_args},
            }
        )
        return again.model_copy(update={"warnings": [*(again.warnings or []), note]})

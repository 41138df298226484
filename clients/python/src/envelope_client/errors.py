"""The kit's typed errors. Every one is an `EnvelopeClientError`; each says what was refused or
given up and carries what an agent loop branches on (the tool, the last envelope, the attempts).

- `EnvelopeSchemaError`: an answer that is no valid envelope (its schema or its own invariants);
  `NotAnEnvelope` when it holds no envelope at all.
- `ProtocolError`: the call never produced a tool result (a JSON-RPC error, a dropped session).
- `EnvelopeTool`: `call_plain` of a tool that speaks the envelope (`call` reads it); nothing
  was sent.
- `ToolNotListed`: a call (a next action's included) naming a tool the server's listing does not
  name; refused before anything is sent.
- `ActionArguments`: a next action whose arguments fail its tool's listed input schema; nothing
  was sent.
- `ActionNotFound`: `follow` of an id the envelope's `next_actions` does not hold.
- `ToolFailed`: the tool answered `ok: false` and the kit will not (or may no longer) retry;
  `RetriesExhausted` when attempts ran out, `NotRetriedUnsafe` when only idempotency stopped it.
- `RetryAfterTooLong`: the server asked to wait past the call's deadline; nothing was slept.
- `DeadlineExceeded`: the call's deadline passed (waiting or in a call).
- `CursorLoop`: paging saw a continuation it had sent before; `PageWentBack` when a page starts
  before the rows already returned.
- `TotalChanged`: the pages' `completeness.total` changed part-way.
- `ContinuationTooLong`: a continuation longer than the kit sends (a server whose tokens grow
  without bound).
- `PageLimitExceeded`: paging went past the configured page bound.
- `StaleTarget`: a target ref stayed stale after its one re-resolution, or none was offered.
- `NotPageable`: rows to combine could not be found in a page.

An error raised part-way through a walk keeps what the walk had fetched: `partial` (from
`collect`) is the combined page of the pages fetched before it, whose `next-page` action (its
`resume`) is the call that failed, to run again once the cause is gone; `resume` (from `pages`
too) is that call alone, the pages before it having been yielded already.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .envelope import Envelope, NextAction
    from .paging import CombinedPage


class EnvelopeClientError(Exception):
    """The base of every error the kit raises.

    `partial`: when raised part-way through `collect`, the combined page of the rows fetched
    before it (None otherwise). `resume`: when raised part-way through a walk (`collect` or
    `pages`), the next page's call that did not complete, to run again to continue (None
    otherwise, and on the first page, which the caller's own call starts again)."""

    partial: CombinedPage | None = None
    resume: NextAction | None = None


class EnvelopeSchemaError(EnvelopeClientError):
    """An answer that violates `docs/envelope.schema.json` or the envelope's invariants."""

    def __init__(self, tool: str | None, problems: list[str], raw: Any) -> None:
        self.tool = tool
        self.problems = list(problems)
        self.raw = raw
        where = f"`{tool}`" if tool else "the server"
        super().__init__(
            f"{where} answered an envelope that violates its schema: " + "; ".join(self.problems)
        )


class NotAnEnvelope(EnvelopeSchemaError):
    """An answer with no envelope in it at all (no structured content with `ok`, no text that
    reads as one): `result` is the MCP result as it came, which `call_any` hands back as a
    `PlainResult` for a tool listed without an output schema."""

    def __init__(self, tool: str | None, problems: list[str], raw: Any, result: Any) -> None:
        super().__init__(tool, problems, raw)
        self.result = result


class ProtocolError(EnvelopeClientError):
    """The call got no tool result: a JSON-RPC error (`code`), or the transport failed."""

    def __init__(self, tool: str, message: str, code: int | None = None) -> None:
        self.tool = tool
        self.code = code
        super().__init__(f"`{tool}`: {message}" + (f" (JSON-RPC {code})" if code is not None else ""))


class EnvelopeTool(EnvelopeClientError):
    """`call_plain` of a tool whose listed output schema is an envelope's: `call` (or
    `call_any`) reads its answers; nothing was sent."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        super().__init__(
            f"`{tool}` answers envelopes (its output schema is one): call it with `call`; not called"
        )


class ToolNotListed(EnvelopeClientError):
    """A call to a tool the server's listing does not name; nothing was sent."""

    def __init__(self, tool: str, listed: list[str], action_id: str | None = None) -> None:
        self.tool = tool
        self.listed = sorted(listed)
        self.action_id = action_id
        origin = f"next action `{action_id}` names" if action_id else "the call names"
        super().__init__(
            f"{origin} tool `{tool}`, which the server does not list "
            f"(it lists {', '.join(self.listed) or 'none'}); not called"
        )


class ActionArguments(EnvelopeClientError):
    """A next action (`follow`, or a page's `next-page` while paging) whose arguments fail its
    tool's listed input schema: `detail` is the first violation. Nothing was sent."""

    def __init__(self, action_id: str, tool: str, detail: str) -> None:
        self.action_id = action_id
        self.tool = tool
        self.detail = detail
        super().__init__(
            f"the arguments of action `{action_id}` fail `{tool}`'s input schema: {detail}; not called"
        )


class ActionNotFound(EnvelopeClientError):
    """`follow` of an action id the envelope does not offer."""

    def __init__(self, action_id: str, offered: list[str]) -> None:
        self.action_id = action_id
        self.offered = offered
        super().__init__(
            f"no next action `{action_id}` (offered: {', '.join(offered) or 'none'})"
        )


class ToolFailed(EnvelopeClientError):
    """The tool answered `ok: false` and the kit gives up: `envelope` is its last answer."""

    def __init__(self, tool: str, envelope: Envelope, attempts: int, why: str) -> None:
        self.tool = tool
        self.envelope = envelope
        self.attempts = attempts
        self.why = why
        error = envelope.error
        code = f" [{error.code}]" if error is not None and error.code else ""
        category = error.category if error is not None else "?"
        message = error.message if error is not None else ""
        super().__init__(
            f"`{tool}` failed ({category}{code}: {message}) after {attempts} "
            f"attempt{'s' if attempts != 1 else ''}: {why}"
        )

    @property
    def category(self) -> str | None:
        return self.envelope.error.category if self.envelope.error else None

    @property
    def code(self) -> str | None:
        return self.envelope.error.code if self.envelope.error else None


class RetriesExhausted(ToolFailed):
    """Retryable failures until the attempt bound."""


class NotRetriedUnsafe(ToolFailed):
    """A retryable failure of a tool not declared idempotent or read-only, whose error does not
    say nothing ran: repeating it could do its effect twice."""


class RetryAfterTooLong(EnvelopeClientError):
    """`retry_after_ms` reaches past the call's deadline: given up at once, without sleeping."""

    def __init__(self, tool: str, envelope: Envelope, retry_after_s: float, remaining_s: float) -> None:
        self.tool = tool
        self.envelope = envelope
        self.retry_after_s = retry_after_s
        self.remaining_s = remaining_s
        super().__init__(
            f"`{tool}` asks to retry after {retry_after_s:.3f} s, past the call's deadline "
            f"({remaining_s:.3f} s left); not waited"
        )


class DeadlineExceeded(EnvelopeClientError):
    """The whole call (retries and waits included) ran past its deadline."""

    def __init__(self, tool: str, deadline_s: float, envelope: Envelope | None = None) -> None:
        self.tool = tool
        self.deadline_s = deadline_s
        self.envelope = envelope
        super().__init__(f"`{tool}` did not finish within its {deadline_s:.3f} s deadline")


class CursorLoop(EnvelopeClientError):
    """Paging would send a continuation it sent before (or the offset went back): it stops."""

    def __init__(self, tool: str, page: int, token: str | None, why: str) -> None:
        self.tool = tool
        self.page = page
        self.token = token
        super().__init__(f"`{tool}` paging stopped at page {page}: {why}")


class PageWentBack(CursorLoop):
    """A page starts before the end of the rows already returned (a page without `offset` starts
    at the first row): the walk went back. The Rust kit's `ClientError::PageWentBack`."""

    def __init__(self, tool: str, page: int, offset: int, end: int) -> None:
        self.offset = offset
        self.end = end
        super().__init__(
            tool,
            page,
            None,
            f"page {page} starts at row {offset + 1}, before the end of the rows already returned ({end})",
        )


class TotalChanged(EnvelopeClientError):
    """`completeness.total` changed between the pages of one walk: they no longer describe one
    result. The Rust kit's `ClientError::TotalChanged`."""

    def __init__(self, tool: str, first: int, now: int, page: int) -> None:
        self.tool = tool
        self.first = first
        self.now = now
        self.page = page
        super().__init__(f"`{tool}` changed its total from {first} to {now} on page {page}")


class ContinuationTooLong(EnvelopeClientError):
    """A next page's continuation is longer than `MAX_CONTINUATION_CHARS`: a server whose tokens
    grow without bound is refused rather than held. Nothing was sent. The Rust kit's
    `ClientError::ContinuationTooLong`."""

    def __init__(self, tool: str, chars: int, page: int) -> None:
        self.tool = tool
        self.chars = chars
        self.page = page
        super().__init__(f"`{tool}` offers a continuation of {chars} characters (page {page}): too long to send")


class PageLimitExceeded(EnvelopeClientError):
    """More pages than the configured bound."""

    def __init__(self, tool: str, max_pages: int) -> None:
        self.tool = tool
        self.max_pages = max_pages
        super().__init__(f"`{tool}` still offers a next page after {max_pages} pages; stopped")


class StaleTarget(EnvelopeClientError):
    """A target ref that stayed stale after re-resolving it once, or whose answer named no
    recovery to follow. `envelope` is the last answer."""

    def __init__(self, tool: str, envelope: Envelope, why: str) -> None:
        self.tool = tool
        self.envelope = envelope
        super().__init__(f"`{tool}`: the target ref is stale and {why}")


class NotPageable(EnvelopeClientError):
    """No row list to combine in a page (no array payload, no list whose length is
    `completeness.returned`)."""

    def __init__(self, tool: str, why: str, envelope: Envelope | None = None) -> None:
        self.tool = tool
        self.envelope = envelope
        super().__init__(f"`{tool}`: cannot combine pages: {why}")

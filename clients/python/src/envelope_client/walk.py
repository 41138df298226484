"""What a paging walk checks as it goes, whoever drives it (the kit's `pages` and `collect`, or a
loop of one's own): a call or a continuation sent twice (a loop), a continuation too long to hold,
a page starting before the rows already returned, a total that changes. The Rust kit's
`WalkGuard`, held to the same shared cases (`clients/cases/walk.json`).

The guard keeps a short digest of each call sent, never the call, so its memory grows by a few
bytes a page whatever the server sends.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .envelope import Completeness
from .errors import ContinuationTooLong, CursorLoop, PageWentBack, TotalChanged

# The argument a paging tool declares for its token.
CONTINUATION = "continuation"
# The longest continuation a walk sends, in characters (the Rust kit's `MAX_CONTINUATION_CHARS`).
MAX_CONTINUATION_CHARS = 65_536


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode(), digest_size=8).digest()


class WalkGuard:
    """The checks of one walk of `tool`; see the module's documentation."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self._calls: set[bytes] = set()
        self._tokens: set[bytes] = set()
        self.pages = 0
        self.rows = 0
        self.total: int | None = None
        self._end: int | None = None
        self._last_returned = 0

    def sending(self, tool: str, arguments: dict[str, Any]) -> None:
        """Checks the call of `tool` with `arguments` before it is sent: `ContinuationTooLong`
        for a continuation longer than `MAX_CONTINUATION_CHARS`, `CursorLoop` for a call, or a
        continuation, sent before."""
        token = arguments.get(CONTINUATION)
        token = token if isinstance(token, str) else None
        if token is not None and len(token) > MAX_CONTINUATION_CHARS:
            raise ContinuationTooLong(self.tool, len(token), self.pages + 1)
        call = _digest(json.dumps([tool, arguments], sort_keys=True, default=str))
        repeated_token = token is not None and _digest(token) in self._tokens
        if call in self._calls or repeated_token:
            raise CursorLoop(
                self.tool,
                self.pages + 1,
                token,
                "the server offered a continuation it had already been sent"
                if repeated_token
                else "the server offered the same next-page call again",
            )
        self._calls.add(call)
        if token is not None:
            self._tokens.add(_digest(token))

    def received(self, completeness: Completeness | None) -> None:
        """Checks a page as it comes (its `completeness`, when it states one): `PageWentBack`
        for a page starting before the rows already returned (a page without `offset` starts at
        the first row), `TotalChanged` for a total other than the first page's."""
        self.pages += 1
        self._last_returned = 0
        if completeness is None:
            return
        offset = completeness.offset or 0
        if self._end is not None and offset < self._end:
            raise PageWentBack(self.tool, self.pages, offset, self._end)
        if completeness.total is not None:
            if self.total is not None and completeness.total != self.total:
                raise TotalChanged(self.tool, self.total, completeness.total, self.pages)
            self.total = completeness.total
        self.rows += completeness.returned
        self._last_returned = completeness.returned
        self._end = offset + completeness.returned

    def replaced(self, completeness: Completeness | None) -> None:
        """The last page, asked again for fewer rows: it stands in for the one received."""
        if completeness is None:
            return
        self.rows += completeness.returned - self._last_returned
        self._last_returned = completeness.returned
        self._end = (completeness.offset or 0) + completeness.returned

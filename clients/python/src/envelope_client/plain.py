"""`PlainResult`: the answer of a tool that does not speak the envelope, passed through as it
came and marked so, so that a server mixing plain and envelope tools is usable through the kit.

A tool speaks the envelope when its listed output schema is an envelope's (it requires `ok`,
`verdict` and `meta`, as every envelope tool's does), and is plain when it lists an output schema
that is not; a tool listed without one is told by its answer (an envelope, or not one at all). A
plain tool's result has no envelope to read: the kit cannot tell whether a retry could help, so it
is called once, never retried, and its content is handed back unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp_types import CallToolResult, TextContent, Tool

# What an envelope tool's listed output schema requires at its root.
ENVELOPE_REQUIRES = ("ok", "verdict", "meta")


def is_plain(tool: Tool) -> bool:
    """Whether `tool` lists an output schema that is not an envelope's."""
    return isinstance(tool.output_schema, dict) and not speaks_envelope(tool)


def speaks_envelope(tool: Tool) -> bool:
    """Whether `tool`'s listed output schema is an envelope's: it requires `ok`, `verdict` and
    `meta` at its root. A tool listed without one is plain."""
    schema = tool.output_schema
    if not isinstance(schema, dict):
        return False
    required = schema.get("required")
    return isinstance(required, list) and all(name in required for name in ENVELOPE_REQUIRES)


@dataclass(frozen=True)
class PlainResult:
    """What a plain tool answered, unread: `text` its text content joined, `structured` its
    structured content (None when it has none), `is_error` the result's `isError`, and `result`
    the whole MCP result. `envelope` is always False: this is not an envelope."""

    tool: str
    text: str
    structured: Any
    is_error: bool
    result: CallToolResult
    envelope: bool = False

    @classmethod
    def of(cls, tool: str, result: CallToolResult) -> PlainResult:
        text = "\n".join(block.text for block in result.content if isinstance(block, TextContent))
        return cls(
            tool=tool,
            text=text,
            structured=result.structured_content,
            is_error=bool(result.is_error),
            result=result,
        )

    def wire(self) -> dict[str, Any]:
        """What a model is shown: marked as no envelope, its text, and its structured content
        when it has one."""
        shown: dict[str, Any] = {"envelope": False, "is_error": self.is_error, "text": self.text}
        if self.structured is not None:
            shown["structured_content"] = self.structured
        return shown

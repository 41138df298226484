"""envelope-client: paging, retry and follow for MCP servers that answer envelopes.

The envelope is typed in `envelope_client.envelope` (against `docs/envelope.schema.json`), the
retry policy in `envelope_client.retry`, pages merged in `envelope_client.paging`, and the MCP
session wrapper is `EnvelopeClient`. The pydantic-ai toolset is `envelope_client.pydantic_ai`
(an optional extra, imported only from there).
"""

from .client import (
    STALE_REF_CODES,
    EnvelopeClient,
    check_action,
    is_stale_target,
    next_call,
    read_result,
    relocate_hit,
)
from .envelope import (
    SCHEMA_VERSION,
    AttachmentNote,
    BinaryDrift,
    Completeness,
    Dependency,
    Envelope,
    Meta,
    NextAction,
    Notice,
    ToolError,
    parse_envelope,
)
from .errors import (
    ActionArguments,
    ActionNotFound,
    ContinuationTooLong,
    CursorLoop,
    DeadlineExceeded,
    EnvelopeClientError,
    EnvelopeSchemaError,
    EnvelopeTool,
    NotAnEnvelope,
    NotPageable,
    NotRetriedUnsafe,
    PageLimitExceeded,
    PageWentBack,
    ProtocolError,
    RetriesExhausted,
    RetryAfterTooLong,
    StaleTarget,
    ToolFailed,
    ToolNotListed,
    TotalChanged,
)
from .paging import CombinedPage, combine, rows_key, rows_of
from .plain import PlainResult, is_plain, speaks_envelope
from .retry import NEVER_RETRIED_CATEGORIES, NOTHING_RAN_CODES, Decision, RetryPolicy, nothing_ran
from .transport import AnsweringTransport, connect, http_transport
from .walk import MAX_CONTINUATION_CHARS, WalkGuard

__version__ = "0.1.0"

__all__ = [
    "MAX_CONTINUATION_CHARS",
    "WalkGuard",
    "TotalChanged",
    "PageWentBack",
    "ContinuationTooLong",
    "SCHEMA_VERSION",
    "STALE_REF_CODES",
    "NOTHING_RAN_CODES",
    "NEVER_RETRIED_CATEGORIES",
    "ActionArguments",
    "ActionNotFound",
    "AnsweringTransport",
    "AttachmentNote",
    "BinaryDrift",
    "CombinedPage",
    "Completeness",
    "CursorLoop",
    "DeadlineExceeded",
    "Decision",
    "Dependency",
    "Envelope",
    "EnvelopeClient",
    "EnvelopeClientError",
    "EnvelopeSchemaError",
    "EnvelopeTool",
    "NotAnEnvelope",
    "Meta",
    "NextAction",
    "NotPageable",
    "NotRetriedUnsafe",
    "Notice",
    "PlainResult",
    "PageLimitExceeded",
    "ProtocolError",
    "RetriesExhausted",
    "RetryAfterTooLong",
    "RetryPolicy",
    "StaleTarget",
    "ToolError",
    "ToolFailed",
    "ToolNotListed",
    "check_action",
    "connect",
    "http_transport",
    "combine",
    "is_plain",
    "is_stale_target",
    "next_call",
    "nothing_ran",
    "parse_envelope",
    "read_result",
    "relocate_hit",
    "rows_key",
    "rows_of",
    "speaks_envelope",
]

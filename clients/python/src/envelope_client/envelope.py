"""The envelope, typed: pydantic models of `docs/envelope.schema.json` (contract schema version 3).

Every model's fields carry the schema's wire names (a test reads the schema file and compares
them); the closed sets (verdicts, categories, roles, severities, truncation and incomplete
reasons, dependency modes, tiers, token methods, attachment kinds, deliveries) are `Literal`s and
the open ones (units, empty reasons, capability tags) plain strings. Models are strict (no
coercion: `"3"` is no integer, `1` no boolean), refuse `null` for a field that is absent when it
does not apply, keep fields they do not know (the schema allows them: `meta`'s trim markers, a
recovery-contract `completeness.continuation`), and check what the schema's `oneOf`/`if` say:
`ok` iff `data`, `ERROR` iff not `ok`, and the completeness invariants of `docs/CONTRACT.md`.

`parse_envelope(value)` is the one entry point: an `Envelope`, or `EnvelopeSchemaError` listing
every problem found.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator
from typing_extensions import Annotated

from .errors import EnvelopeSchemaError

SCHEMA_VERSION = 3

Verdict = Literal["SAFE", "CAUTION", "REVIEW", "UNSAFE", "INFO", "WARN", "ERROR", "NOT_FOUND"]
Category = Literal[
    "transient",
    "validation",
    "permission",
    "not_found",
    "unavailable",
    "internal",
    "module_disabled",
]
Role = Literal[
    "proof_read", "verify_exact", "retry", "resolve_target", "inspect", "broaden_scope", "diagnose"
]
Severity = Literal["info", "warning", "error"]
DependencyMode = Literal["all", "any"]
TruncationReason = Literal[
    "page_limit",
    "per_file_limit",
    "top_k_limit",
    "child_limit",
    "merge_page_limit",
    "ancestor_limit",
    "budget_limit",
    "store_limit",
]
IncompleteReason = Literal[
    "ranked_discovery",
    "diagnostic_coverage",
    "unreadable_candidate",
    "walk_failure",
    "backend_failure",
    "backend_semantics_unsupported",
    "navigation_partial_coverage",
    "navigation_heuristic_coverage",
    "navigation_unavailable",
    "child_incomplete",
]
Tier = Literal["lite", "standard", "heavy"]
TokensMethod = Literal["heuristic", "script_aware", "chars_div_4", "cl100k_base", "o200k_base"]
AttachmentKind = Literal["image", "audio", "resource_link", "resource"]
Delivery = Literal["sent", "linked", "dropped"]

# Open sets: read the value and branch, defaulting on values not known here.
Unit = Annotated[str, Field(pattern=r"^[a-z][a-z0-9_]{0,63}$")]
EmptyReason = str
Capability = str
RequestId = Annotated[str, Field(pattern=r"^[0-7][0-9A-HJKMNP-TV-Z]{25}$")]
Count = Annotated[int, Field(ge=0)]

# Fields the schema leaves untyped (any JSON value, `null` included).
_ANY_JSON = frozenset({"data"})


class _Wire(BaseModel):
    """A schema object: strict, unknown fields kept, and `null` refused for a field the schema
    types (absent means "not applicable"; the schema has no nullable field but untyped `data`)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=False)

    @model_validator(mode="before")
    @classmethod
    def _no_nulls(cls, value: Any) -> Any:
        if isinstance(value, dict):
            nulls = [
                key
                for key, item in value.items()
                if item is None and key in cls.model_fields and key not in _ANY_JSON
            ]
            if nulls:
                raise ValueError(
                    f"null for {', '.join(sorted(nulls))}: an absent field is left out, never null"
                )
        return value

    def wire(self) -> dict[str, Any]:
        """The wire form: absent fields left out, unknown fields kept (and `data: null` kept
        when it was sent)."""
        return self.model_dump(mode="json", exclude_unset=True, by_alias=True)


class AttachmentNote(_Wire):
    kind: AttachmentKind
    delivery: Delivery
    mime_type: str | None = None
    bytes: Count | None = None
    uri: str | None = None


class BinaryDrift(_Wire):
    stored_version: Count
    running_version: Count
    remediation: str | None = None


class Meta(_Wire):
    request_id: RequestId
    attachments: list[AttachmentNote] | None = None
    baseline_method: str | None = None
    binary_drift_warning: BinaryDrift | None = None
    capabilities: list[Capability] | None = None
    client_request_id: str | None = None
    complexity_tier: Tier | None = None
    envelope_unshrinkable: bool | None = None
    idempotent: bool | None = None
    latency_ms: Count | None = None
    layer: str | None = None
    schema_version: Count | None = None
    schema_version_at_index: Count | None = None
    tokens_estimated: Count | None = None
    tokens_method: TokensMethod | None = None
    tokens_saved: int | None = None
    tokens_saved_pct: float | None = None
    tool: str | None = None
    truncated: bool | None = None


class ToolError(_Wire):
    category: Category
    message: str
    retryable: bool
    code: str | None = None
    hint: str | None = None
    retry_after_ms: Count | None = None
    data: Any = None


class Dependency(_Wire):
    mode: DependencyMode
    action_ids: list[str]


class NextAction(_Wire):
    id: Annotated[str, Field(min_length=1)]
    role: Role
    tool: Annotated[str, Field(min_length=1)]
    arguments: dict[str, Any]
    reason: Annotated[str, Field(min_length=1)]
    order: Annotated[int, Field(ge=0, le=65535)] | None = None
    dependencies: list[Dependency] | None = None


class Notice(_Wire):
    code: str
    severity: Severity
    message: str
    data: Any = None


class Completeness(_Wire):
    unit: Unit
    returned: Count
    complete: bool
    truncated: bool
    offset: Count | None = None
    total: Count | None = None
    truncation_reasons: list[TruncationReason] | None = None
    incomplete_reasons: list[IncompleteReason] | None = None
    shortened: list[str] | None = None

    @property
    def continuation(self) -> str | None:
        """A recovery-contract server's token, written here rather than in a next action."""
        extra = self.model_extra or {}
        token = extra.get("continuation")
        return token if isinstance(token, str) else None

    def problems(self) -> list[str]:
        """The invariants of `docs/CONTRACT.md` this completeness breaks, by their codes."""
        found = []
        offset = self.offset or 0
        truncation = self.truncation_reasons or []
        incomplete = self.incomplete_reasons or []
        continuation = (self.model_extra or {}).get("continuation")
        if self.total is not None and offset + self.returned > self.total:
            found.append("returned_exceeds_total")
        if self.complete:
            if self.total is None:
                found.append("complete_without_total")
            elif offset + self.returned != self.total:
                found.append("complete_count_mismatch")
            if self.truncated or truncation:
                found.append("complete_but_truncated")
            if incomplete:
                found.append("complete_with_incomplete_reasons")
            if continuation is not None:
                found.append("continuation_on_complete")
        if self.truncated and not truncation:
            found.append("truncated_without_reason")
        if truncation and not self.truncated:
            found.append("reason_without_truncation")
        if not self.complete and not self.truncated and not incomplete:
            found.append("incomplete_without_reason")
        if continuation is not None and not self.truncated:
            found.append("continuation_without_truncation")
        if continuation is not None and (not isinstance(continuation, str) or not continuation):
            found.append("empty_continuation")
        return found


class Envelope(_Wire):
    ok: bool
    verdict: Verdict
    meta: Meta
    summary_line: str | None = None
    next_step: str | None = None
    data: Any = None
    error: ToolError | None = None
    completeness: Completeness | None = None
    empty_reason: EmptyReason | None = None
    diagnosis: str | None = None
    next_actions: Annotated[list[NextAction], Field(max_length=8)] | None = None
    warnings: list[Notice] | None = None
    diagnostics: list[Notice] | None = None

    @property
    def has_data(self) -> bool:
        """Whether `data` was sent (`null` is a payload: `Envelope::ok(())` sends it)."""
        return "data" in self.model_fields_set

    def action(self, action_id: str) -> NextAction | None:
        """The next action with this id, or None."""
        return next((a for a in self.next_actions or [] if a.id == action_id), None)

    def next_page(self) -> NextAction | None:
        """The `next-page` action, or None on a last (or unpaged) answer."""
        return self.action("next-page")

    def problems(self) -> list[str]:
        """What the schema's `oneOf` and completeness rules say that typing alone does not."""
        found = []
        if self.ok:
            if not self.has_data:
                found.append("ok: true without `data`")
            if self.error is not None:
                found.append("ok: true with an `error`")
            if self.verdict == "ERROR":
                found.append("ok: true with verdict ERROR")
        else:
            if self.error is None:
                found.append("ok: false without an `error`")
            if self.has_data:
                found.append("ok: false with `data`")
            if self.verdict != "ERROR":
                found.append(f"ok: false with verdict {self.verdict}, not ERROR")
        if self.completeness is not None:
            found += [f"completeness: {code}" for code in self.completeness.problems()]
        return found


def parse_envelope(value: Any, *, tool: str | None = None) -> Envelope:
    """`value` (an MCP result's `structuredContent`) as an `Envelope`, or `EnvelopeSchemaError`
    naming every way it breaks the schema."""
    if not isinstance(value, dict):
        raise EnvelopeSchemaError(
            tool, [f"the answer is no envelope object: {type(value).__name__}"], value
        )
    try:
        envelope = Envelope.model_validate(value)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in issue['loc']) or '(root)'}: {issue['msg']}"
            for issue in error.errors()
        ]
        raise EnvelopeSchemaError(tool, problems, value) from None
    problems = envelope.problems()
    if problems:
        raise EnvelopeSchemaError(tool, problems, value)
    return envelope

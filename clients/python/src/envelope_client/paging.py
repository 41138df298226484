"""Pages: where a page's rows are, and many pages merged into one combined page.

A page's rows are its payload when that is an array, else the one list of `data` whose length is
`completeness.returned` (the contract's rule for the list `completeness` describes); when
several lists have that length, the first of the contract's known list keys wins.

`combine(pages, ...)` merges pages already fetched in order (each the page after the one before,
as the `next-page` action led): rows concatenated; the other `data` fields kept when every page
agrees, and otherwise listed per page under `data.pages`, save the pages' `target_ref`s: those are
joined into the one `target_ref` of the combined page (the server reads refs joined with `.` as
one ref to every row of their pages, up to `MAX_JOINED_REFS`), so every row is reached by the ref
the combined page gives, copied as it is; and `completeness` rewritten honestly for what the combined
page holds: `offset` the first page's, `returned` the rows given, `total` the last page's,
`complete` only when the last page reached the end and every row fetched is given, `truncated`
(with its reasons) when rows remain.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from .envelope import Completeness, Envelope, NextAction, parse_envelope
from .errors import NotPageable

# The contract's target ref: the field a page carries it in, what joins the refs of consecutive
# pages into one, and the most refs one joined ref holds (`envelope_core::paging`'s
# `TARGET_REF_FIELD`, `TARGET_REF_JOIN`, `MAX_JOINED_REFS`; the shared cases hold them equal).
TARGET_REF_FIELD = "target_ref"
TARGET_REF_JOIN = "."
MAX_JOINED_REFS = 64

# The contract's known list keys, in its order (docs/CONTRACT.md, "Budgets and trimming").
KNOWN_LIST_KEYS = (
    "results", "neighbours", "references", "edges", "nodes", "processes", "call_sites",
    "import_sites", "doc_references", "test_references", "string_literals", "external_targets",
    "branches", "steps", "http_routes", "mcp_tools", "grpc_endpoints", "event_handlers",
    "websocket", "nodes_top", "samples", "rows", "entries", "cycles", "untested", "dead",
)  # fmt: skip


def rows_key(envelope: Envelope, tool: str = "?") -> str | None:
    """The key of `data` that holds the page's rows, or None when `data` is itself the row
    array. `NotPageable` when there is no such list."""
    data = envelope.data
    if isinstance(data, list):
        return None
    if envelope.completeness is None:
        raise NotPageable(tool, "the page has no `completeness`", envelope)
    if not isinstance(data, dict):
        raise NotPageable(tool, "its `data` is neither an array nor an object", envelope)
    returned = envelope.completeness.returned
    candidates = [k for k, v in data.items() if isinstance(v, list) and len(v) == returned]
    if not candidates:
        raise NotPageable(
            tool, f"no list in `data` holds `completeness.returned` ({returned}) rows", envelope
        )
    known = [k for k in KNOWN_LIST_KEYS if k in candidates]
    return known[0] if known else candidates[0]


def rows_of(envelope: Envelope, key: str | None) -> list[Any]:
    data = envelope.data
    if key is None:
        return list(data) if isinstance(data, list) else []
    value = data.get(key) if isinstance(data, dict) else None
    return list(value) if isinstance(value, list) else []


def estimate_tokens(value: Any) -> int:
    """Tokens of `value` as compact JSON, by the plain rule: characters over 4, rounded up."""
    text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return (len(text) + 3) // 4


@dataclass
class CombinedPage:
    """Pages merged: `envelope` is the combined page (a valid envelope), `pages` the pages it
    was made of, `rows` its rows, `cut` whether a limit left fetched rows out."""

    envelope: Envelope
    pages: list[Envelope]
    rows: list[Any]
    rows_key: str | None
    cut: bool


def _unit_plural(unit: str, count: int) -> str:
    if count == 1:
        return unit.replace("_", " ")
    irregular = {"occurrence": "occurrences", "symbol": "symbols"}
    word = irregular.get(unit, unit)
    word = word.replace("_", " ")
    if not word.endswith("s"):
        word += "es" if word.endswith(("sh", "ch", "x")) else "s"
    return word


def _joined_ref(values: list[Any]) -> str | None:
    """The pages' target refs as one (the pages without rows carry none), or None when they are
    not all refs or are too many to join."""
    refs = [value for value in values if value is not None]
    if not refs or len(refs) > MAX_JOINED_REFS:
        return None
    if not all(isinstance(ref, str) and ref and TARGET_REF_JOIN not in ref for ref in refs):
        return None
    return TARGET_REF_JOIN.join(refs)


def combine(
    tool: str,
    pages: list[Envelope],
    *,
    keep_rows: int | None = None,
    limit_reason: str | None = None,
    next_page: NextAction | None = None,
) -> CombinedPage:
    """One page of `pages` (fetched in order, each the next page of the one before).

    `keep_rows`: give only this many of the fetched rows (a limit cut the last page).
    `limit_reason`: the truncation reason of the combining's own limit, when it stopped the
    combining (first among the reasons; the last page's own follow it). `next_page`: the action that continues exactly
    after the last row given (None when no action can: the combined page then offers none).
    """
    if not pages:
        raise ValueError("no pages to combine")
    first, last = pages[0], pages[-1]
    key = rows_key(first, tool)
    rows: list[Any] = []
    for page in pages:
        rows += rows_of(page, key)
    fetched = len(rows)
    cut = keep_rows is not None and keep_rows < fetched
    if cut:
        rows = rows[:keep_rows]

    # data: rows merged; other fields kept when every page agrees, else per page.
    data: Any
    per_page_fields: dict[str, list[Any]] = {}
    if key is None:
        data = rows
    else:
        data = {}
        for name, value in first.data.items():
            if name == key:
                continue
            values = [page.data.get(name) if isinstance(page.data, dict) else None for page in pages]
            if all(v == value for v in values):
                data[name] = value
            elif name == TARGET_REF_FIELD and (joined := _joined_ref(values)) is not None:
                data[name] = joined
            else:
                per_page_fields[name] = values
        data[key] = rows
        if per_page_fields:
            listing = []
            start = 0
            for index, page in enumerate(pages):
                count = len(rows_of(page, key))
                if start >= len(rows):
                    break
                entry: dict[str, Any] = {"first_row": start, "rows": min(count, len(rows) - start)}
                for name, values in per_page_fields.items():
                    if values[index] is not None:
                        entry[name] = values[index]
                listing.append(entry)
                start += count
            data["pages"] = listing

    # completeness, rewritten for what this page holds.
    c_first, c_last = first.completeness, last.completeness
    assert c_first is not None and c_last is not None
    offset = c_first.offset or 0
    total = c_last.total
    more = next_page is not None or cut or c_last.truncated
    reasons: list[str] = []
    if limit_reason is not None and (cut or more):
        reasons.append(limit_reason)
    for reason in c_last.truncation_reasons or []:
        if reason not in reasons:
            reasons.append(reason)
    incomplete: list[str] = []
    for page in pages:
        for coverage in (page.completeness.incomplete_reasons or []) if page.completeness else []:
            if coverage not in incomplete:
                incomplete.append(coverage)
    complete = (
        not more
        and not incomplete
        and total is not None
        and offset + len(rows) == total
        and c_last.complete
    )
    fields: dict[str, Any] = {
        "unit": c_first.unit,
        "returned": len(rows),
        "complete": complete,
        "truncated": bool(more),
    }
    if offset:
        fields["offset"] = offset
    if total is not None:
        fields["total"] = total
    if more:
        fields["truncation_reasons"] = reasons or [limit_reason or "page_limit"]
    if incomplete and not complete:
        fields["incomplete_reasons"] = incomplete
    if not complete and not more and not incomplete:
        # Neither proven complete nor cut: say why coverage is not claimed.
        fields["incomplete_reasons"] = ["child_incomplete"]
    shortened: list[str] = []
    for page in pages:
        for name in (page.completeness.shortened or []) if page.completeness else []:
            if name not in shortened:
                shortened.append(name)
    if shortened:
        fields["shortened"] = shortened
    completeness = Completeness.model_validate(fields)

    wire: dict[str, Any] = {
        "ok": True,
        "verdict": first.verdict,
        "data": data,
        "completeness": completeness.wire(),
        "meta": {
            **first.meta.wire(),
            "page_request_ids": [page.meta.request_id for page in pages],
        },
    }
    unit = c_first.unit
    combined = f"{len(pages)} page{'s' if len(pages) != 1 else ''} combined"
    if not rows:
        # Nothing to show: no range, and no "of" a total of none.
        step = f"no {_unit_plural(unit, 2)} ({combined})"
    else:
        span = f"{offset + 1}–{offset + len(rows)}"
        of = f" of {total}" if total is not None else ""
        step = f"showing {_unit_plural(unit, 2)} {span}{of} ({combined})"
    if next_page is not None:
        step += " — follow `next-page` for more"
    elif more:
        step += "; more rows exist but no action continues exactly here"
    wire["next_step"] = step
    if last.summary_line is not None:
        wire["summary_line"] = last.summary_line
    actions = [a.wire() for a in last.next_actions or [] if a.id != "next-page"]
    if next_page is not None:
        actions.insert(0, next_page.wire())
    if actions:
        wire["next_actions"] = actions[:8]
    for name in ("warnings", "diagnostics"):
        notices: list[dict[str, Any]] = []
        for page in pages:
            for notice in getattr(page, name) or []:
                item = notice.wire()
                if item not in notices:
                    notices.append(item)
        if notices:
            wire[name] = notices
    for name in ("empty_reason", "diagnosis"):
        value = getattr(last, name)
        if value is not None and not rows:
            wire[name] = value
    envelope = parse_envelope(wire, tool=tool)
    return CombinedPage(envelope=envelope, pages=pages, rows=rows, rows_key=key, cut=cut)

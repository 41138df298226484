"""The package's models against `docs/envelope.schema.json`, read from the repository at test
time: every model's fields are the schema's properties (same names, same required set), every
closed set is the schema's, and the envelopes the schema's own tests use (`tests/tests/schema.rs`,
written by hand from the contract) are accepted and refused alike by the models and by the schema.
"""

from __future__ import annotations

import copy
import json
import typing
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from envelope_client import envelope as model
from envelope_client import EnvelopeSchemaError, parse_envelope

SCHEMA_PATH = Path(__file__).resolve().parents[3] / "docs" / "envelope.schema.json"
SCHEMA = json.loads(SCHEMA_PATH.read_text())
VALIDATOR = Draft202012Validator(SCHEMA)

# Each schema object and the model typing it (None: the root).
MODELS: dict[str | None, type[model._Wire]] = {
    None: model.Envelope,
    "AttachmentNote": model.AttachmentNote,
    "BinaryDrift": model.BinaryDrift,
    "Completeness": model.Completeness,
    "Dependency": model.Dependency,
    "Meta": model.Meta,
    "NextAction": model.NextAction,
    "Notice": model.Notice,
    "ToolError": model.ToolError,
}
# Each closed set and its Literal.
CLOSED = {
    "Verdict": model.Verdict,
    "Category": model.Category,
    "Role": model.Role,
    "Severity": model.Severity,
    "DependencyMode": model.DependencyMode,
    "TruncationReason": model.TruncationReason,
    "IncompleteReason": model.IncompleteReason,
    "Tier": model.Tier,
    "TokensMethod": model.TokensMethod,
    "AttachmentKind": model.AttachmentKind,
    "Delivery": model.Delivery,
}


def definition(name: str | None) -> dict[str, Any]:
    return SCHEMA if name is None else SCHEMA["$defs"][name]


def test_every_schema_object_has_a_model() -> None:
    objects = {name for name, spec in SCHEMA["$defs"].items() if spec.get("type") == "object"}
    assert objects == {name for name in MODELS if name is not None}


@pytest.mark.parametrize("name", list(MODELS), ids=lambda n: n or "Envelope")
def test_model_fields_are_the_schemas_properties(name: str | None) -> None:
    spec = definition(name)
    fields = MODELS[name].model_fields
    assert set(fields) == set(spec["properties"]), name
    required = {field for field, info in fields.items() if info.is_required()}
    assert required == set(spec.get("required", [])), name


@pytest.mark.parametrize("name", list(CLOSED))
def test_closed_sets_are_the_schemas(name: str) -> None:
    spec = definition(name)
    values = spec.get("enum") or [variant["const"] for variant in spec["oneOf"]]
    assert set(typing.get_args(CLOSED[name])) == set(values)


def test_the_schema_version_is_the_schemas() -> None:
    assert SCHEMA["title"].endswith(f"version {model.SCHEMA_VERSION}")
    assert SCHEMA["$defs"]["Meta"]["properties"]["schema_version"]["default"] == model.SCHEMA_VERSION


# --- the schema tests' envelopes (tests/tests/schema.rs) --------------------------------------


def meta() -> dict[str, Any]:
    return {
        "request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC",
        "tool": "search_text",
        "complexity_tier": "lite",
        "idempotent": True,
        "latency_ms": 38,
        "tokens_estimated": 1247,
        "tokens_method": "heuristic",
        "schema_version": 2,
        "capabilities": ["standardized_error_envelope", "complexity_tier"],
    }


def ok_envelope() -> dict[str, Any]:
    return {
        "ok": True,
        "verdict": "INFO",
        "summary_line": "3 matches in 2 files",
        "data": {"matches": [{"path": "src/lib.rs", "line": 3}]},
        "warnings": [{"code": "stale_cache", "severity": "warning", "message": "cache is old"}],
        "meta": meta(),
    }


def error_envelope() -> dict[str, Any]:
    return {
        "ok": False,
        "verdict": "ERROR",
        "error": {
            "category": "transient",
            "code": "backend_timeout",
            "message": "the index backend timed out",
            "retryable": True,
            "hint": "retry in a few seconds",
            "retry_after_ms": 2000,
        },
        "meta": meta(),
    }


def truncated_envelope() -> dict[str, Any]:
    return {
        "ok": True,
        "verdict": "INFO",
        "next_step": "showing 40 of 512 results — raise limit or narrow the path",
        "data": {"results": []},
        "completeness": {
            "unit": "file",
            "returned": 40,
            "total": 512,
            "complete": False,
            "truncated": True,
            "truncation_reasons": ["page_limit"],
            "continuation": "opaque-token",
        },
        "next_actions": [
            {
                "id": "verify-exact-1",
                "role": "verify_exact",
                "order": 20,
                "dependencies": [],
                "tool": "search_text",
                "arguments": {"query": "FriggMcpServer"},
                "reason": "Verify the discovered identifier with exact text search.",
            }
        ],
        "diagnostics": [
            {
                "code": "unknown_arg",
                "severity": "info",
                "message": "ignored `limt`",
                "data": {"accepted": ["limit", "path"]},
            }
        ],
        "meta": meta(),
    }


def library_written() -> list[dict[str, Any]]:
    """What `envelopes_the_library_writes_validate` serializes, as the library writes it."""
    rid = {"request_id": "01HM3K2X9V7QY8R4PNZTH5W6BC"}
    page = {"unit": "file", "returned": 1, "total": 9, "complete": False, "truncated": True,
            "truncation_reasons": ["page_limit"]}  # fmt: skip
    return [
        {"ok": True, "verdict": "INFO", "data": {"rows": [1]}, "completeness": page, "meta": rid},
        {
            "ok": False,
            "verdict": "ERROR",
            "error": {"category": "internal", "message": "internal error (request 01HM…)", "retryable": False},
            "meta": rid,
        },
        {"ok": True, "verdict": "INFO", "data": None, "meta": rid},
    ]


GOOD = [ok_envelope(), error_envelope(), truncated_envelope(), *library_written()]


def set_path(value: dict[str, Any], path: list[Any], new: Any) -> dict[str, Any]:
    value = copy.deepcopy(value)
    target = value
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = new
    return value


def without(value: dict[str, Any], path: list[Any]) -> dict[str, Any]:
    value = copy.deepcopy(value)
    target = value
    for part in path[:-1]:
        target = target[part]
    del target[path[-1]]
    return value


BAD = {
    "an unknown verdict": set_path(ok_envelope(), ["verdict"], "CATASTROPHIC"),
    "an unknown category": set_path(error_envelope(), ["error", "category"], "cosmic_rays"),
    "ok: true with an error": set_path(ok_envelope(), ["error"], error_envelope()["error"]),
    "ok: false without an error": without(error_envelope(), ["error"]),
    "a next action without tool": without(truncated_envelope(), ["next_actions", 0, "tool"]),
    "a notice with severity fatal": set_path(ok_envelope(), ["warnings", 0, "severity"], "fatal"),
    "null for an absent field": set_path(ok_envelope(), ["summary_line"], None),
    "complete and truncated": set_path(truncated_envelope(), ["completeness", "complete"], True),
    "truncated without a reason": set_path(
        truncated_envelope(), ["completeness", "truncation_reasons"], []
    ),
    "nine next actions": set_path(
        truncated_envelope(), ["next_actions"], [truncated_envelope()["next_actions"][0]] * 9
    ),
    # Beyond the Rust schema tests: types the models do not coerce.
    "a string count": set_path(truncated_envelope(), ["completeness", "returned"], "40"),
    "a request id that is no ULID": set_path(ok_envelope(), ["meta", "request_id"], "req-1"),
    "a numeric retryable": set_path(error_envelope(), ["error", "retryable"], 1),
    "no meta": without(ok_envelope(), ["meta"]),
    "ok: false with data": set_path(error_envelope(), ["data"], {"rows": []}),
}


@pytest.mark.parametrize("envelope", GOOD, ids=range(len(GOOD)))
def test_the_schemas_examples_are_accepted(envelope: dict[str, Any]) -> None:
    assert not list(VALIDATOR.iter_errors(envelope))
    parsed = parse_envelope(envelope)
    # Read and written back, nothing is lost or added.
    assert parsed.wire() == envelope


@pytest.mark.parametrize("why", list(BAD))
def test_what_the_schema_refuses_the_models_refuse(why: str) -> None:
    assert not VALIDATOR.is_valid(BAD[why]), why
    with pytest.raises(EnvelopeSchemaError) as raised:
        parse_envelope(BAD[why], tool="t")
    assert raised.value.problems, why
    assert raised.value.raw == BAD[why]


def test_completeness_invariants_beyond_the_schema() -> None:
    """What the contract's invariants refuse that the schema cannot express."""
    base = truncated_envelope()
    cases = {
        "returned_exceeds_total": {"returned": 600, "total": 512},
        "complete_count_mismatch": {"complete": True, "truncated": False, "truncation_reasons": []},
        "incomplete_without_reason": {"truncated": False, "truncation_reasons": []},
    }
    for code, change in cases.items():
        envelope = copy.deepcopy(base)
        envelope["completeness"].update(change)
        envelope["completeness"].pop("continuation", None)
        with pytest.raises(EnvelopeSchemaError, match=code):
            parse_envelope(envelope)

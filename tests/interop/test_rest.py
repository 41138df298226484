"""The example's plain HTTP API (`POST /tools/{name}`, `GET /tools`, `GET /openapi.json`)
checked by clients nobody here wrote: `openapi-spec-validator` validates the OpenAPI 3.1
document the server generates, and Schemathesis, property-based, calls every operation with
arguments generated from that document (valid and invalid), and fails on any server error,
any response that does not conform to the document (status, content type, headers, body
schema), or any status the document does not list.

Both are pinned in `requirements.txt`. The Schemathesis seed is fixed so a failure replays;
set `SCHEMATHESIS_SEED` to explore others, `SCHEMATHESIS_MAX_EXAMPLES` for more cases.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from openapi_spec_validator import validate

from cluster import start_server
from test_interop import write_paged_tree

# What Schemathesis must find nothing wrong with: the three promises.
CHECKS = [
    "not_a_server_error",
    "status_code_conformance",
    "content_type_conformance",
    "response_headers_conformance",
    "response_schema_conformance",
]
SEED = os.environ.get("SCHEMATHESIS_SEED", "1717")
MAX_EXAMPLES = os.environ.get("SCHEMATHESIS_MAX_EXAMPLES", "40")


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The example serving a small tree over HTTP, the gateway beside `/mcp`; its base URL."""
    tmp = tmp_path_factory.mktemp("rest")
    root = tmp / "tree"
    root.mkdir()
    write_paged_tree(root)
    process, port = start_server(root, tmp / "server.log", "--stateless")
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_the_openapi_document_is_valid_openapi_3_1(gateway: str) -> None:
    document = httpx2.get(f"{gateway}/openapi.json").json()
    assert document["openapi"].startswith("3.1")
    validate(document)
    listed = {tool["name"] for tool in httpx2.get(f"{gateway}/tools").json()["tools"]}
    operations = {
        operation["operationId"]
        for path, item in document["paths"].items()
        if path.startswith("/tools/")
        for operation in item.values()
    }
    assert operations == listed


def test_an_error_is_a_problem_that_embeds_the_envelope(gateway: str) -> None:
    answer = httpx2.post(f"{gateway}/tools/read_file", json={"path": "no/such/file.txt"})
    assert answer.status_code == 404
    assert answer.headers["content-type"] == "application/problem+json"
    problem = answer.json()
    envelope = problem["envelope"]
    assert envelope["ok"] is False
    assert problem["status"] == 404
    assert problem["type"].endswith("/" + envelope["error"]["category"])
    assert problem["detail"] == envelope["error"]["message"]
    assert answer.headers["x-request-id"] == envelope["meta"]["request_id"]


def test_schemathesis_finds_nothing_wrong(gateway: str, tmp_path: Path) -> None:
    schemathesis = Path(sys.executable).with_name("schemathesis")
    command = [
        str(schemathesis),
        "run",
        f"{gateway}/openapi.json",
        "--checks",
        ",".join(CHECKS),
        "--max-examples",
        MAX_EXAMPLES,
        "--seed",
        SEED,
        "--no-color",
    ]
    run = subprocess.run(
        command,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    report = run.stdout + run.stderr
    assert run.returncode == 0, f"Schemathesis failed (seed {SEED}):\n{report}"
    # It reached every operation but the one serving the document it read, which Schemathesis
    # leaves out unless asked for by path: every tool, and the listing.
    document = httpx2.get(f"{gateway}/openapi.json").json()
    operations = sum(len(item) for item in document["paths"].values()) - 1
    assert f"{operations} selected / {operations} total" in report, report
    assert f"Tested: {operations}" in report, report

"""`envelope-check` run on this project's own example, as CI requires: over stdio and over
streamable HTTP, zero failures. The checker is `target/debug/envelope-check` (override with
`ENVELOPE_CHECK_BIN`); build it with `cargo build --workspace --all-features --tests --bins --examples`. The seed is fixed so a failure replays; `ENVELOPE_CHECK_SEED` explores others.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cluster import start_server
from test_interop import BIN, REPO, write_paged_tree

CHECK_BIN = Path(os.environ.get("ENVELOPE_CHECK_BIN", REPO / "target/debug/envelope-check"))
SEED = os.environ.get("ENVELOPE_CHECK_SEED", "1")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("check") / "tree"
    root.mkdir()
    write_paged_tree(root)
    return root


def envelope_check(*args: str) -> dict:
    if not CHECK_BIN.is_file():
        pytest.fail(f"{CHECK_BIN} is missing: cargo build --workspace --all-features --tests --bins --examples")
    run = subprocess.run(
        [str(CHECK_BIN), "--seed", SEED, "--json", *args],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, f"envelope-check exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
    return json.loads(run.stdout)


def assert_clean(report: dict) -> None:
    assert report["failed_count"] == 0, json.dumps(report, indent=1)
    assert {tool["tool"] for tool in report["tools"]} >= {"search_text", "read_file", "list_files"}
    # Paging was followed through, not skipped.
    search = next(tool for tool in report["tools"] if tool["tool"] == "search_text")
    assert search["checks"]["paging.follow"]["passed"] == 1, search
    assert search["checks"]["paging.tampered"]["passed"] == 1, search
    # Every next action of the read-only tools was followed exactly as given, and made progress.
    assert search["checks"]["next_actions.verbatim"]["passed"] >= 1, search


def test_the_example_over_stdio_passes_every_check(tree: Path) -> None:
    assert_clean(envelope_check("--", str(BIN), "--root", str(tree)))


@pytest.mark.parametrize("dialect", ["pincher", "cos", "tsa", "frigg"])
def test_the_example_in_each_dialect_passes_every_check(tree: Path, dialect: str) -> None:
    """Served in a source contract's wire (`--dialect`), checked as that wire: every answer
    validates against the dialect's schema and is read back as the envelope it carries. Pages
    are followed through whatever the dialect offers to copy."""
    report = envelope_check("--dialect", dialect, "--", str(BIN), "--root", str(tree), "--dialect", dialect)
    assert_clean(report)


def test_the_example_over_http_passes_every_check(tree: Path, tmp_path: Path) -> None:
    process, port = start_server(tree, tmp_path / "server.log")
    try:
        assert_clean(envelope_check("--url", f"http://127.0.0.1:{port}/mcp"))
    finally:
        process.terminate()
        process.wait(timeout=10)


PLAIN_PYTHON_SERVER = '''
from mcp.server.mcpserver import MCPServer

server = MCPServer("plain-python")


@server.tool()
def add(a: int, b: int) -> dict:
    """Add two numbers."""
    return {"sum": a + b}


@server.tool()
def greet(name: str) -> str:
    """Greet someone."""
    return f"Hello, {name}!"


if __name__ == "__main__":
    server.run()
'''


def test_a_server_written_with_the_python_sdk_is_told_what_it_lacks(tmp_path: Path) -> None:
    """What an author sees before adopting envelope: a report, not a crash."""
    server = tmp_path / "server.py"
    server.write_text(PLAIN_PYTHON_SERVER)
    # Its tools carry no annotations, so neither is taken for read-only: without an opt-in,
    # neither is called, and both are reported as withheld.
    untouched = subprocess.run(
        [str(CHECK_BIN), "--seed", SEED, "--json", "--", sys.executable, str(server)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    # Nothing checked is nothing passed: exit 1.
    assert untouched.returncode == 1, f"{untouched.stdout}\n{untouched.stderr}"
    report = json.loads(untouched.stdout)
    assert report["tools"] == [], report
    assert {withheld["tool"] for withheld in report["withheld"]} == {"add", "greet"}
    assert report["permissions"] == {"allow_writes": False, "allowed_tools": []}
    # Adding and greeting change nothing: opted in one by one, both are checked.
    opted_in = ["--allow-tool", "add", "--allow-tool", "greet"]
    run = subprocess.run(
        [str(CHECK_BIN), "--seed", SEED, "--json", *opted_in, "--", sys.executable, str(server)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 1, f"{run.stdout}\n{run.stderr}"
    report = json.loads(run.stdout)
    assert report.get("stopped") is None, report
    tools = {tool["tool"]: tool for tool in report["tools"]}
    assert set(tools) == {"add", "greet"}
    # A structured answer that is no envelope; a text answer with no structure at all; bad
    # arguments answered with prose.
    assert tools["greet"]["checks"]["envelope.schema"]["failed"] > 0
    assert tools["add"]["checks"]["call.answered"]["failed"] > 0
    assert tools["add"]["checks"]["invalid.validation"]["failed"] > 0
    assert report["failed_count"] > 0 and report["score"] < 50


MEDIA_TOOLS = "test_image_content,test_audio_content,test_embedded_resource,test_multiple_content_types"


def test_the_conformance_servers_paged_tool_is_followed_as_given() -> None:
    """The conformance server's paged tool (`envelope_count`): its `next-page` action, called
    exactly as given, pages on (`next_actions.verbatim`) through every row once
    (`paging.follow`)."""
    server = Path(os.environ.get("CONFORMANCE_SERVER", REPO / "target/debug/conformance-server"))
    if not server.is_file():
        pytest.fail(f"{server} is missing: cargo build --workspace --all-features --tests --bins --examples")
    report = envelope_check("--tool", "envelope_count", "--", str(server), "--stdio")
    assert report["failed_count"] == 0, json.dumps(report, indent=1)
    [count] = report["tools"]
    for check in ["next_actions.verbatim", "paging.follow", "paging.tampered"]:
        assert count["checks"][check]["passed"] >= 1, count


def test_the_conformance_servers_media_are_the_ones_its_envelopes_note() -> None:
    """The media tools of the conformance server (`target/debug/conformance-server`, built
    for the interop suites) pass every response check, `envelope.attachments` included: the
    blocks after the mirror are the ones `meta.attachments` says were sent."""
    server = Path(os.environ.get("CONFORMANCE_SERVER", REPO / "target/debug/conformance-server"))
    if not server.is_file():
        pytest.fail(f"{server} is missing: cargo build --workspace --all-features --tests --bins --examples")
    # Not annotated read-only (the suite's fixtures are not): allowed by name.
    report = envelope_check(
        "--tool", MEDIA_TOOLS, "--allow-tool", MEDIA_TOOLS, "--", str(server), "--stdio"
    )
    assert report["failed_count"] == 0, json.dumps(report, indent=1)
    for tool in report["tools"]:
        assert tool["checks"]["envelope.attachments"]["passed"] > 0, tool

"""An agent walk through a real framework nobody here wrote: pydantic-ai, its `FunctionModel`
standing in for the LLM, drives the example envelope server and a plain rmcp server serving the
same rows, and what the framework shows its model from the tools is weighed in exact tokens.

The tree both serve is real source text: a copy of every `*.rs` file under this repository's
`envelope-core/src/` (recursively, at the same relative paths), so rows are as long and as varied
as an agent's search rows are. The walk: `search_text` for `Value` (it occurs a few hundred times
there; fewer than 100 fails the test) with `limit: 20`, pages followed until 100 hits are read
(5 pages), then 3 of them read in context. Over the envelope server
(`target/debug/examples/workspace_server`, override with `WORKSPACE_SERVER_BIN`; `cargo build -p
envelope-mcp --example workspace_server`) the model follows the `next-page` action of the last
page it was shown, calling the action's `tool` with its `arguments` copied verbatim (the paging
token is among them, as `continuation`; the model adds nothing), and reads a hit by its page's
`data.target_ref`. Over the plain server (`target/debug/plain_workspace_server`, override with
`PLAIN_WORKSPACE_SERVER_BIN`; `cargo build --workspace --all-features --tests --bins --examples`),
which answers plain JSON, it pages by `offset` (the last offset plus the page's length, as its
answer says) and reads a hit by path and line range.

Checked: both walks read 5 pages and see the same 100 rows (path, line, column, text) in the same
order, no two at the same (path, line, column); no envelope page the model was shown has a
`completeness.continuation` or a `continuation_arg`, and every page before the walk's last has a
`next-page` action whose arguments carry the token; each search call after the first is, in the
final message history, exactly the `tool` and `arguments` of the previous page's `next-page`
action; each read returns its hit's line; and the tool returns the model was shown over the
whole walk (every `ToolReturnPart` of the final message history, as `model_response_str()`
renders it, the text OpenAI's chat API is sent) cost the envelope server at most `MAX_RATIO`
times the plain server's, in `cl100k_base` and in `o200k_base`, counted exactly by `target/debug/xtask
count-tokens` (override with `XTASK_BIN`; `cargo build --workspace --all-features --tests --bins --examples`). Both totals
and their ratio are printed (`pytest -s` shows them), with the tool listings' cost beside them
for information.

pydantic-ai shows the model an MCP result's `structuredContent` when every content block is text
(the envelope server's case), and otherwise the text content, parsed when it is JSON (the plain
server's); `_meta` is never shown.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastmcp.client.transports import StdioTransport
from mcp.client.stdio import get_default_environment
from pydantic_ai import Agent
from pydantic_ai.mcp import MCPToolset
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from servers import anyio_backend  # noqa: F401 (a fixture: pytest finds it by name)
from test_interop import BIN, REPO

PLAIN_BIN = Path(
    os.environ.get("PLAIN_WORKSPACE_SERVER_BIN", REPO / "target/debug/plain_workspace_server")
)
XTASK_BIN = Path(os.environ.get("XTASK_BIN", REPO / "target/debug/xtask"))
BUILDS = {
    BIN: "cargo build --workspace --all-features --tests --bins --examples",
    PLAIN_BIN: "cargo build --workspace --all-features --tests --bins --examples",
    XTASK_BIN: "cargo build --workspace --all-features --tests --bins --examples",
}

# The source files copied into the served tree, and the identifier searched in them.
SOURCES = REPO / "envelope-core" / "src"
SOURCE_GLOB = "*.rs"
WORD = "Value"
# The envelope server shows a longer matched line as a window around the match, the plain
# server whole: the copied tree must have no matching line that long, or rows would differ.
MAX_LINE_CHARS = 400
# Hits the walk reads, a page at a time, and which of them it then reads in context.
HITS = 100
# The page size, sent as `limit` by the first search (the envelope server's `next-page` action
# carries it on; the plain walk sends it with every `offset`). It divides `HITS`, so every
# page is a whole one and the envelope walk's follows need no edit.
PAGE = 20
PAGES = HITS // PAGE
assert PAGES * PAGE == HITS
READS = (0, 49, 99)
# Lines of context on each side of a read hit: `read_file`'s own default, which the envelope
# walk leaves to the tool and the plain walk asks for.
CONTEXT = 3
# The envelope walk may cost at most this many times the plain walk's tokens.
MAX_RATIO = 1.3
ENCODINGS = ("cl100k_base", "o200k_base")
# More model turns than this means the walk never ends.
MAX_TURNS = 2 * HITS // PAGE + len(READS) + 8
TIMEOUT = 120

pytestmark = pytest.mark.anyio


@pytest.fixture(scope="module")
def binaries() -> None:
    """Every binary the walk needs; a missing one fails the test, naming its build."""
    missing = [
        f"{path} is missing: run `{build}`" for path, build in BUILDS.items() if not path.is_file()
    ]
    if missing:
        pytest.fail("\n".join(missing))


def write_tree(root: Path) -> None:
    """A copy of every `SOURCE_GLOB` file under `SOURCES`, recursively, at its path relative to
    the repository (`envelope-core/src/…`), byte for byte. Fails, saying why, when the copy
    holds fewer than `HITS` occurrences of `WORD` (counted as the plain server counts them:
    line by line, left to right, without overlap), or a matching line both servers would not
    show alike."""
    sources = sorted(SOURCES.rglob(SOURCE_GLOB))
    assert sources, f"no {SOURCE_GLOB} file under {SOURCES}"
    occurrences = 0
    too_long = []
    for source in sources:
        rel = source.relative_to(REPO)
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(source.read_bytes())
        for number, line in enumerate(source.read_text(encoding="utf-8").split("\n"), 1):
            found = line.removesuffix("\r").count(WORD)
            occurrences += found
            if found and len(line) > MAX_LINE_CHARS:
                too_long.append(f"{rel}:{number} ({len(line)} characters)")
    if occurrences < HITS:
        pytest.fail(
            f"`{WORD}` occurs {occurrences} times in the {len(sources)} {SOURCE_GLOB} files "
            f"under {SOURCES.relative_to(REPO)}: the walk reads {HITS}; pick a commoner "
            "identifier or more files"
        )
    if too_long:
        pytest.fail(
            f"lines matching `{WORD}` over {MAX_LINE_CHARS} characters, which the envelope "
            f"server shows as a window and the plain one whole: {', '.join(too_long)}"
        )


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("agent-walk").resolve() / "tree"
    root.mkdir()
    write_tree(root)
    return root


def wire(answer: dict[str, Any], name: str, where: str) -> Any:
    """`answer[name]`, or a failure naming the missing wire field and the fields there are."""
    assert name in answer, f"{where} has no `{name}`; it has {sorted(answer)}"
    return answer[name]


def row(hit: dict[str, Any]) -> tuple[str, int, int, str]:
    """What both servers must agree on for a hit."""
    return (hit["path"], hit["line"], hit["column"], hit["text"])


class Walk:
    """The scripted model: it decides each turn from the tool return it was last shown (the
    string the framework renders for the model, parsed), as a model would, and keeps what it
    saw. `envelope` says which server's answers it reads."""

    def __init__(self, envelope: bool) -> None:
        self.envelope = envelope
        self.hits: list[dict[str, Any]] = []
        # Envelope server: each hit's page, and each page's `data.target_ref`.
        self.pages_of_hits: list[int] = []
        self.refs: list[str] = []
        # Plain server: where the next page starts.
        self.offset = 0
        self.searches = 0
        self.reads: list[tuple[dict[str, Any], dict[str, Any]]] = []
        self.turns = 0

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.turns += 1
        assert self.turns <= MAX_TURNS, f"the walk did not end after {MAX_TURNS} turns"
        shown = last_tool_return(messages)
        if shown is None:
            return self.call("search_text", {"query": WORD, "limit": PAGE})
        name, answer = shown
        if name == "search_text":
            return self.after_search(answer)
        assert name == "read_file", name
        self.reads.append((self.hits[READS[len(self.reads)]], answer))
        return self.next_read()

    def call(self, tool: str, arguments: dict[str, Any]) -> ModelResponse:
        return ModelResponse(
            parts=[ToolCallPart(tool, arguments, tool_call_id=f"call-{self.turns}")]
        )

    def after_search(self, page: dict[str, Any]) -> ModelResponse:
        self.searches += 1
        if self.envelope:
            assert page.get("ok") is True, page
            data = wire(page, "data", "the envelope")
            occurrences = wire(data, "occurrences", "a search page's `data`")
            self.hits += occurrences
            self.pages_of_hits += [len(self.refs)] * len(occurrences)
            # One ref for every hit of the page.
            self.refs.append(wire(data, "target_ref", "a search page's `data`"))
            action = next_page(page)
            if action is not None and len(self.hits) < HITS:
                # Followed as given: the action's tool and arguments, copied verbatim.
                return self.call(action["tool"], action["arguments"])
        else:
            self.hits += page["occurrences"]
            self.offset += len(page["occurrences"])
            if self.offset < page["total"] and len(self.hits) < HITS:
                return self.call(
                    "search_text", {"query": WORD, "limit": PAGE, "offset": self.offset}
                )
        return self.next_read()

    def next_read(self) -> ModelResponse:
        if len(self.reads) == len(READS):
            return ModelResponse(
                parts=[TextPart(f"{len(self.hits)} hits read, {len(self.reads)} in context")]
            )
        assert len(self.hits) > READS[len(self.reads)], f"only {len(self.hits)} hits were paged"
        index = READS[len(self.reads)]
        hit = self.hits[index]
        if self.envelope:
            return self.call(
                "read_file",
                {
                    "target_ref": self.refs[self.pages_of_hits[index]],
                    "path": hit["path"],
                    "line": hit["line"],
                },
            )
        return self.call(
            "read_file",
            {
                "path": hit["path"],
                "start_line": max(1, hit["line"] - CONTEXT),
                "end_line": hit["line"] + CONTEXT,
            },
        )


def next_page(page: dict[str, Any]) -> dict[str, Any] | None:
    """The `next-page` action of an envelope search page as the model was shown it, or None on
    the last page. Its arguments carry the token (`continuation`, a non-empty string), the
    token's one place: `completeness` has none, and no action names an argument to add."""
    completeness = wire(page, "completeness", "a search page")
    assert "continuation" not in completeness, completeness
    actions = page.get("next_actions", [])
    assert all("continuation_arg" not in action for action in actions), actions
    found = [action for action in actions if action.get("id") == "next-page"]
    assert len(found) <= 1, actions
    if not found:
        assert completeness["complete"] is True, completeness
        return None
    [action] = found
    token = wire(action, "arguments", "the `next-page` action").get("continuation")
    assert isinstance(token, str) and token, action
    return action


def searches_and_pages(
    messages: list[ModelMessage],
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """Each `search_text` call of the history (its arguments, as the model made it) beside the
    page it was answered (parsed as the model was shown it), in order."""
    calls = {
        part.tool_call_id: part.args_as_dict()
        for message in messages
        if isinstance(message, ModelResponse)
        for part in message.parts
        if isinstance(part, ToolCallPart) and part.tool_name == "search_text"
    }
    return [
        (calls[part.tool_call_id], json.loads(part.model_response_str()))
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart) and part.tool_name == "search_text"
    ]


def check_follows(messages: list[ModelMessage]) -> None:
    """The envelope walk's searches: the first asks for `limit: PAGE`, and every later one is
    exactly the previous page's `next-page` action, tool and arguments, as the model was shown
    it: nothing added, nothing changed."""
    searches = searches_and_pages(messages)
    assert len(searches) == PAGES, [arguments for arguments, _ in searches]
    assert searches[0][0] == {"query": WORD, "limit": PAGE}, searches[0][0]
    for (_, page), (arguments, _) in zip(searches, searches[1:]):
        action = next_page(page)
        assert action is not None, page
        assert action["tool"] == "search_text", action
        assert arguments == action["arguments"], (arguments, action)
        assert action["arguments"] == {
            "query": WORD,
            "limit": PAGE,
            "continuation": action["arguments"]["continuation"],
        }, action
    tokens = [arguments["continuation"] for arguments, _ in searches[1:]]
    assert len(tokens) == len(set(tokens)), tokens
    # Past `HITS` rows the last page read still offers the next one (`next_page` checks it).
    last = searches[-1][1]
    if last["completeness"]["total"] > HITS:
        assert next_page(last) is not None, last


def last_tool_return(messages: list[ModelMessage]) -> tuple[str, dict[str, Any]] | None:
    """The tool name and the parsed text of the last tool return the model was shown."""
    last = messages[-1]
    returns = [part for part in last.parts if isinstance(part, ToolReturnPart)]
    if not returns:
        return None
    assert len(returns) == 1, returns
    return returns[0].tool_name, json.loads(returns[0].model_response_str())


def shown_by_tools(messages: list[ModelMessage]) -> list[str]:
    """Everything the model was shown from tools over the walk: every tool return of the
    history, rendered as the framework renders it for the model."""
    return [
        part.model_response_str()
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


async def walk(
    binary: Path, root: Path, log: Path, envelope: bool
) -> tuple[Walk, list[ModelMessage], list[str]]:
    """One agent run against `binary` serving `root` over stdio: the script, the final message
    history, and the tool listing the model is offered (each tool's name, description and
    parameter schema as one compact JSON text; a provider frames them a little differently)."""
    env = {**get_default_environment(), "XDG_STATE_HOME": os.environ["XDG_STATE_HOME"]}
    transport = StdioTransport(
        command=str(binary),
        args=["--root", str(root)],
        env=env,
        cwd=str(REPO),
        keep_alive=False,
        log_file=log,
    )
    # A tool error fails the walk with the server's message, rather than being shown to the
    # scripted model as a retry it cannot handle.
    toolset = MCPToolset(transport, tool_error_behavior="error")
    script = Walk(envelope)
    listing: list[str] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        if not listing:
            listing.extend(
                json.dumps(
                    {
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.parameters_json_schema,
                    },
                    separators=(",", ":"),
                    ensure_ascii=False,
                )
                for tool in info.function_tools
            )
        return script(messages, info)

    agent = Agent(FunctionModel(model), toolsets=[toolset])
    with anyio.fail_after(TIMEOUT):
        result = await agent.run(f"Find every `{WORD}` and show me three of them in context.")
    return script, result.all_messages(), listing


def count_tokens(texts: list[str], folder: Path) -> dict[str, int]:
    """The exact tokens of each text, summed: one tool return is one message to the model."""
    folder.mkdir()
    files = []
    for index, text in enumerate(texts):
        file = folder / f"{index:03}.txt"
        file.write_text(text, encoding="utf-8")
        files.append(str(file))
    run = subprocess.run(
        [str(XTASK_BIN), "count-tokens", *files], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, f"xtask count-tokens exited {run.returncode}:\n{run.stderr}"
    counts = [json.loads(line) for line in run.stdout.splitlines()]
    assert len(counts) == len(files), run.stdout
    return {
        encoding: sum(count[encoding] for count in counts) for encoding in (*ENCODINGS, "chars")
    }


def check_reads(script: Walk, envelope: bool) -> None:
    """Each read answered lines around its hit, the hit's own line among them."""
    assert len(script.reads) == len(READS), script.reads
    for hit, answer in script.reads:
        if envelope:
            assert answer.get("ok") is True, answer
            answer = wire(answer, "data", "a `read_file` envelope")
        assert answer["path"] == hit["path"], (hit, answer)
        assert answer["start_line"] <= hit["line"] <= answer["end_line"], (hit, answer)
        # Split as the servers split lines (`str::lines`), not at every character Python
        # counts as a line break.
        lines = [line.removesuffix("\r") for line in answer["content"].split("\n")]
        assert lines[hit["line"] - answer["start_line"]] == hit["text"], (hit, answer)


def weigh(
    name: str, script: Walk, history: list[ModelMessage], listing: list[str], folder: Path
) -> dict[str, dict[str, int]]:
    """The exact tokens of what `script`'s walk showed the model from tools, and of its tool
    listing, printed (`pytest -s`)."""
    shown = shown_by_tools(history)
    assert len(shown) == script.searches + len(script.reads), len(shown)
    weights = {
        "returns": count_tokens(shown, folder / f"{name}-returns"),
        "listing": count_tokens(listing, folder / f"{name}-listing"),
    }
    print(
        f"\n{name} walk, {script.searches} pages and {len(script.reads)} reads: tool returns "
        + ", ".join(f"{unit} {n}" for unit, n in weights["returns"].items())
        + "; tool listing (for information) "
        + ", ".join(f"{unit} {n}" for unit, n in weights["listing"].items())
    )
    return weights


async def test_the_envelope_walk_costs_at_most_1_3x_the_plain_walk(
    binaries: None, tree: Path, tmp_path: Path
) -> None:
    """The plain walk first, the reference; then the envelope walk must see the same rows and
    show the model at most `MAX_RATIO` times the plain walk's tokens."""
    plain, history, listing = await walk(PLAIN_BIN, tree, tmp_path / "plain.log", envelope=False)
    # The plain walk is the reference: it paged exactly 100 hits, 20 at a time.
    assert len(plain.hits) == HITS, len(plain.hits)
    assert plain.searches == PAGES, plain.searches
    check_reads(plain, envelope=False)
    plain_weights = weigh("plain", plain, history, listing, tmp_path)

    envelope, history, listing = await walk(BIN, tree, tmp_path / "envelope.log", envelope=True)
    # 5 pages of 20, every follow the shown action verbatim, 100 distinct rows.
    assert envelope.searches == PAGES, envelope.searches
    assert len(envelope.hits) == HITS, len(envelope.hits)
    check_follows(history)
    places = {(hit["path"], hit["line"], hit["column"]) for hit in envelope.hits}
    assert len(places) == HITS, f"{HITS - len(places)} rows came twice"
    rows = [row(hit) for hit in envelope.hits]
    assert rows == [row(hit) for hit in plain.hits], (
        "the two walks saw different rows:\n"
        + "\n".join(
            f"{index}: envelope {a} / plain {b}"
            for index, (a, b) in enumerate(zip(rows, map(row, plain.hits)))
            if a != b
        )
        + f"\n({len(rows)} envelope rows, {len(plain.hits)} plain)"
    )
    check_reads(envelope, envelope=True)
    envelope_weights = weigh("envelope", envelope, history, listing, tmp_path)

    envelope_tokens, plain_tokens = envelope_weights["returns"], plain_weights["returns"]
    report = "; ".join(
        f"{encoding} envelope {envelope_tokens[encoding]} / plain {plain_tokens[encoding]}"
        f" = {envelope_tokens[encoding] / plain_tokens[encoding]:.3f}"
        for encoding in ENCODINGS
    )
    report = f"tool returns over the walk, {report} (at most {MAX_RATIO})"
    print(report)
    for encoding in ENCODINGS:
        assert envelope_tokens[encoding] <= MAX_RATIO * plain_tokens[encoding], report

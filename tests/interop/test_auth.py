"""OAuth: the example `workspace_server` as an OAuth 2.1 resource server, driven by the official
Python MCP SDK's own OAuth client.

The authorization server is the loopback OpenID provider of `tests/auth` (panva's
oidc-provider, `node tests/auth/provider.mjs --port 0`; it needs `npm ci --prefix tests/auth`).
The example runs with `--auth-issuer <provider> --auth-audience <its /mcp URL>` over the paging
fixture of `test_interop.py`. The SDK's `ClientCredentialsOAuthProvider` (with `issuer=`) is the
`auth` of the `httpx2.AsyncClient` under `streamable_http_client`: nothing hands it a token or
a URL but the server's; it must follow the 401's challenge to the protected-resource metadata,
from there to the authorization server, and get a token for the metadata's `resource`.

Checked: that discovery walk, in order, and the token it yields (issuer, subject, audience);
the listing's scopes; an ok `search_text`; a `reader` (no `workspace:heavy`) gets the
`insufficient_scope` envelope from `graph_export`; and a continuation is bound to issuer +
subject: a fresh token of the same client resumes it, another client's is refused with
`CONTINUATION_SCOPE_MISMATCH` (without auth no header is an identity, see
`test_interop.py::test_a_continuation_survives_a_restart_whatever_header_is_sent`).

With `--auth-introspection-endpoint` the example takes opaque tokens instead, asking the
provider about each (RFC 7662) and keeping the answer: many requests with one token ask once, as
the provider's admin API counts.

`envelope-check` logs in to the same example with the client-credentials grant
(`--oauth-token-url`, `--client-id`, `--client-secret-file`, `--scope`) and finds nothing wrong,
without printing the secret; without a login it is told that the server needs one, and with a
wrong secret it is told the provider's refusal.

Without `tests/auth/node_modules` (or `node`) the module is skipped, unless
`ENVELOPE_REQUIRE_AUTH` is set (CI sets it): then it fails.
"""

from __future__ import annotations

import base64
import json
import os
import queue
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import ClientSession
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp.shared.exceptions import MCPError

import servers
from test_check import CHECK_BIN, SEED
# `anyio_backend` is a fixture: pytest finds it by name in this module.
from servers import anyio_backend  # noqa: F401
from test_interop import (
    BIN,
    PAGED_OCCURRENCES,
    REPO,
    SCOPE_MISMATCH,
    TIMEOUT,
    WORD,
    assert_refused,
    call_ok,
    check_next_page,
    check_result,
    listing,
    next_page_action,
    rows_of,
    unpaged,
    write_paged_tree,
)

AUTH_DIR = REPO / "tests" / "auth"
PROVIDER = AUTH_DIR / "provider.mjs"
NODE = shutil.which("node")
MISSING = (
    "node is not on PATH"
    if NODE is None
    else "tests/auth/node_modules is missing (run `npm ci --prefix tests/auth`)"
    if not (AUTH_DIR / "node_modules" / "oidc-provider").is_dir()
    else None
)

# CI sets ENVELOPE_REQUIRE_AUTH: there a missing provider fails the run instead of skipping it.
if MISSING is not None and os.environ.get("ENVELOPE_REQUIRE_AUTH"):
    raise RuntimeError(f"the OAuth tests need the test OpenID provider: {MISSING}")

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.skipif(MISSING is not None, reason=f"no test OpenID provider: {MISSING}"),
]

READ = "workspace:read"
HEAVY = "workspace:heavy"
# The JSON-RPC error of a call refused `403` for a scope (envelope_mcp::INSUFFICIENT_SCOPE_ERROR).
INSUFFICIENT_SCOPE_ERROR = -32006
TOOLS = {"change_impact", "graph_export", "list_files", "read_file", "search_text", "workspace_stats"}
SCOPES = {name: [READ, HEAVY] if name == "graph_export" else [READ] for name in TOOLS}
SEARCH = {"query": WORD, "limit": 7}


@dataclass
class Provider:
    issuer: str
    token_endpoint: str
    introspection_endpoint: str
    admin: str


@pytest.fixture(scope="module")
def provider() -> Iterator[Provider]:
    """The test OpenID provider on an ephemeral port; stopped (SIGTERM) at the end. Its stdin is
    a pipe, so it also exits should this process die."""
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [str(NODE), str(PROVIDER), "--port", "0"],
        cwd=REPO,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=log,
        text=True,
    )
    lines: queue.Queue[str] = queue.Queue()
    assert process.stdout is not None
    threading.Thread(target=lambda: lines.put(process.stdout.readline()), daemon=True).start()
    try:
        try:
            line = lines.get(timeout=30)
        except queue.Empty:
            line = ""
        if not line:
            process.kill()
            process.wait(timeout=5)
            log.seek(0)
            pytest.fail(f"the test OpenID provider did not start; its log:\n{log.read()}")
        ready = json.loads(line)
        yield Provider(
            issuer=ready["issuer"],
            token_endpoint=ready["token_endpoint"],
            introspection_endpoint=ready["introspection_endpoint"],
            admin=ready["admin"],
        )
    finally:
        servers.stop(process)
        log.close()


@pytest.fixture(scope="module")
def auth_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("auth-paged").resolve()
    write_paged_tree(root)
    return root


@pytest.fixture(scope="module")
def auth_url(provider: Provider, auth_root: Path) -> Iterator[str]:
    """The example over `auth_root` with OAuth on for `provider`, its audience its own `/mcp`."""
    if not BIN.is_file():
        pytest.fail(
            f"{BIN} is missing: run `cargo build --workspace --all-features --tests --bins --examples` first"
        )

    def command(port: int) -> list[str]:
        return [
            str(BIN),
            "--root",
            str(auth_root),
            "--auth-issuer",
            provider.issuer,
            "--auth-audience",
            f"http://127.0.0.1:{port}/mcp",
        ]

    with servers.http_server(command, REPO, "workspace_server-auth-") as url:
        yield url


@pytest.fixture(scope="module")
def opaque_url(provider: Provider, auth_root: Path) -> Iterator[str]:
    """The example over `auth_root` taking opaque tokens, each asked about at `provider`'s
    introspection endpoint as the client `reader`. Its MCP endpoint is `/opaque`, a path the
    provider issues opaque tokens for."""
    if not BIN.is_file():
        pytest.fail(
            f"{BIN} is missing: run `cargo build --workspace --all-features --tests --bins --examples` first"
        )

    def command(port: int) -> list[str]:
        return [
            str(BIN),
            "--root",
            str(auth_root),
            "--path",
            "/opaque",
            "--auth-issuer",
            provider.issuer,
            "--auth-audience",
            f"http://127.0.0.1:{port}/opaque",
            "--auth-introspection-endpoint",
            provider.introspection_endpoint,
            "--auth-client-id",
            "reader",
            "--auth-client-secret",
            "reader-secret",
        ]

    with servers.http_server(command, REPO, "workspace_server-opaque-") as url:
        yield url.removesuffix("/mcp") + "/opaque"


@dataclass
class MemoryStorage:
    """The SDK's `TokenStorage`, in memory."""

    tokens: OAuthToken | None = None
    client_info: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client_info

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client_info = client_info


@dataclass
class Exchange:
    method: str
    url: str
    status: int
    bearer: bool
    form: dict[str, str] = field(default_factory=dict)


@asynccontextmanager
async def oauth_session(
    url: str,
    provider: Provider,
    client_id: str,
    exchanges: list[Exchange] | None = None,
    stored: OAuthToken | None = None,
) -> AsyncIterator[tuple[ClientSession, MemoryStorage]]:
    """An initialized session with `url` through the SDK's client-credentials OAuth client for
    `client_id` (secret `<client_id>-secret`), trusting only `provider`'s issuer, starting from
    the `stored` token if any (as after a restart). Every HTTP exchange, the auth flow's own
    included, is appended to `exchanges`."""
    storage = MemoryStorage(tokens=stored)
    auth = ClientCredentialsOAuthProvider(
        server_url=url,
        storage=storage,
        client_id=client_id,
        client_secret=f"{client_id}-secret",
        issuer=provider.issuer,
    )

    async def record(response: httpx2.Response) -> None:
        if exchanges is None:
            return
        request = response.request
        form: dict[str, str] = {}
        if request.headers.get("content-type", "").startswith("application/x-www-form-urlencoded"):
            form = dict(httpx2.QueryParams(request.content.decode()))
        exchanges.append(
            Exchange(
                method=request.method,
                url=str(request.url),
                status=response.status_code,
                bearer=request.headers.get("authorization", "").startswith("Bearer "),
                form=form,
            )
        )

    async with httpx2.AsyncClient(
        auth=auth,
        timeout=httpx2.Timeout(30, read=TIMEOUT),
        event_hooks={"response": [record]},
    ) as http:
        async with servers.http_session(url, http) as session:
            yield session, storage


def claims(token: str) -> dict[str, Any]:
    """The payload of a JWT (not verified: the server did that)."""
    payload = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(payload + "=" * (-len(payload) % 4)))


async def test_the_sdk_oauth_client_discovers_the_server_and_calls_a_tool(
    auth_url: str, provider: Provider
) -> None:
    base = auth_url.removesuffix("/mcp")
    exchanges: list[Exchange] = []
    with anyio.fail_after(TIMEOUT):
        async with oauth_session(auth_url, provider, "agent", exchanges) as (session, storage):
            tools = await listing(session)
            assert set(tools) == TOOLS
            for name, tool in tools.items():
                assert tool.meta is not None and tool.meta["rs.envelope/scopes"] == SCOPES[name]
            envelope = await call_ok(session, tools, "search_text", SEARCH)
            assert envelope["completeness"]["total"] == PAGED_OCCURRENCES, envelope
            assert len(rows_of("search_text", envelope)) == SEARCH["limit"]

    walk = "\n".join(f"{e.method} {e.url} {e.status}" for e in exchanges)

    def first(predicate: Any, what: str) -> int:
        index = next((i for i, e in enumerate(exchanges) if predicate(e)), -1)
        assert index >= 0, f"the SDK never {what}; its requests:\n{walk}"
        return index

    # No token at first: the challenge, the metadata it names, the authorization server's
    # metadata, a token for this resource, then the same endpoint with the token.
    assert (exchanges[0].url, exchanges[0].status, exchanges[0].bearer) == (auth_url, 401, False), walk
    metadata = first(
        lambda e: e.method == "GET"
        and e.url == f"{base}/.well-known/oauth-protected-resource/mcp"
        and e.status == 200,
        "read the protected-resource metadata",
    )
    as_metadata = first(
        lambda e: e.method == "GET"
        and e.url.startswith(f"{provider.issuer}/.well-known/")
        and e.status == 200,
        "read the authorization server's metadata",
    )
    token = first(
        lambda e: e.method == "POST" and e.url == provider.token_endpoint and e.status == 200,
        "got a token",
    )
    authorized = first(
        lambda e: e.url == auth_url and e.bearer and e.status == 200, "called with the token"
    )
    assert metadata < as_metadata < token < authorized, walk
    assert exchanges[token].form.get("grant_type") == "client_credentials", exchanges[token]
    assert exchanges[token].form.get("resource") == auth_url, exchanges[token]
    assert all(e.bearer for e in exchanges[authorized:] if e.url == auth_url), walk

    assert storage.tokens is not None
    payload = claims(storage.tokens.access_token)
    assert payload["iss"] == provider.issuer
    assert payload["sub"] == "agent"
    assert payload["aud"] == auth_url
    assert set(payload["scope"].split()) == {READ, HEAVY}


async def test_a_token_without_the_heavy_scope_gets_insufficient_scope(
    auth_url: str, provider: Provider
) -> None:
    exchanges: list[Exchange] = []
    with anyio.fail_after(TIMEOUT):
        async with oauth_session(auth_url, provider, "reader", exchanges) as (session, storage):
            assert storage.tokens is not None and claims(storage.tokens.access_token)["scope"] == READ
            tools = await listing(session)
            # Without --auth-filter-listing every tool is listed.
            assert set(tools) == TOOLS
            await call_ok(session, tools, "search_text", SEARCH)
            # The specification's step-up: `403` with the scopes in the challenge. The SDK asks
            # its provider for them, which grants a reader none wider, and retries: still `403`,
            # and the SDK surfaces the JSON-RPC error whose data is the `permission` envelope.
            with pytest.raises(MCPError) as refused:
                await session.call_tool("graph_export", {})
    walk = "\n".join(f"{e.method} {e.url} {e.status} {e.form.get('scope')}" for e in exchanges)
    forbidden = [e for e in exchanges if e.url == auth_url and e.status == 403]
    assert len(forbidden) == 2, walk
    asked = [e for e in exchanges if e.url == provider.token_endpoint and HEAVY in e.form.get("scope", "")]
    assert asked, f"the SDK never asked for {HEAVY}:\n{walk}"
    assert refused.value.error.code == INSUFFICIENT_SCOPE_ERROR, refused.value.error
    envelope = refused.value.error.data
    assert envelope["ok"] is False, envelope
    error = envelope["error"]
    assert error["category"] == "permission", envelope
    assert error["code"] == "insufficient_scope", envelope
    assert error["data"] == {"required": [READ, HEAVY], "missing": [HEAVY]}, envelope
    assert f"`{READ} {HEAVY}`" in error["hint"], envelope


async def test_the_sdk_steps_up_to_the_scope_a_call_needs_and_the_call_succeeds(
    auth_url: str, provider: Provider
) -> None:
    # An agent that may hold both scopes holds a token of the narrower one (the server's first
    # challenge names every scope its tools declare, so a fresh SDK client asks for them all:
    # step-up is for a token granted, or kept from before, narrower than a call needs).
    async with httpx2.AsyncClient(timeout=30) as http:
        granted = await http.post(
            provider.token_endpoint,
            auth=("agent", "agent-secret"),
            data={"grant_type": "client_credentials", "scope": READ, "resource": auth_url},
        )
    assert granted.status_code == 200, granted.text
    narrow = OAuthToken.model_validate(granted.json())
    assert narrow.scope == READ, narrow
    exchanges: list[Exchange] = []
    with anyio.fail_after(TIMEOUT):
        async with oauth_session(auth_url, provider, "agent", exchanges, stored=narrow) as (session, storage):
            tools = await listing(session)
            envelope = await call_ok(session, tools, "graph_export", {})
            assert storage.tokens is not None
            assert set(claims(storage.tokens.access_token)["scope"].split()) == {READ, HEAVY}
    walk = "\n".join(f"{e.method} {e.url} {e.status} {e.form.get('scope')}" for e in exchanges)
    challenged = next(
        (i for i, e in enumerate(exchanges) if e.url == auth_url and e.status == 403), -1
    )
    assert challenged >= 0, f"no step-up challenge:\n{walk}"
    wider = next(
        (
            i
            for i, e in enumerate(exchanges)
            if i > challenged and e.url == provider.token_endpoint and HEAVY in e.form.get("scope", "")
        ),
        -1,
    )
    assert wider > challenged, f"the SDK never asked for {HEAVY} after the challenge:\n{walk}"
    retried = next(
        (i for i, e in enumerate(exchanges) if i > wider and e.url == auth_url and e.status == 200), -1
    )
    assert retried > wider, f"the call was not retried with the wider token:\n{walk}"
    assert envelope["ok"] is True


async def test_a_continuation_is_bound_to_the_issuer_and_subject(
    auth_url: str, provider: Provider
) -> None:
    with anyio.fail_after(TIMEOUT):
        async with oauth_session(auth_url, provider, "agent") as (session, storage):
            tools = await listing(session)
            page = await call_ok(session, tools, "search_text", SEARCH)
            # The page's `next-page` action, the same search continued: followed verbatim below.
            action = next_page_action(page)
            assert action is not None, page
            check_next_page(action, "search_text", SEARCH)
            whole = await unpaged(session, tools, "search_text", SEARCH)
            assert storage.tokens is not None
            first_token = storage.tokens.access_token
        # The same client, a new token (another session, another OAuth client instance).
        async with oauth_session(auth_url, provider, "agent") as (session, storage):
            assert storage.tokens is not None
            assert storage.tokens.access_token != first_token
            assert claims(storage.tokens.access_token)["sub"] == claims(first_token)["sub"]
            following = await call_ok(session, tools, action["tool"], action["arguments"])
            assert rows_of("search_text", following) == whole[SEARCH["limit"] : 2 * SEARCH["limit"]]
        # Another subject of the same issuer, with the same scopes.
        for other in ("other-agent", "reader"):
            async with oauth_session(auth_url, provider, other) as (session, _storage):
                result = await session.call_tool(action["tool"], action["arguments"])
                assert_refused(result, tools, "search_text", SCOPE_MISMATCH)


def introspections(provider: Provider) -> int:
    """How many introspection requests `provider` has had."""
    return httpx2.get(f"{provider.admin}/introspections", timeout=10).json()["introspections"]


def opaque_token(provider: Provider, client_id: str, resource: str) -> str:
    """An opaque access token of `client_id` for `resource`, from `provider`."""
    answer = httpx2.post(
        provider.token_endpoint,
        auth=(client_id, f"{client_id}-secret"),
        data={"grant_type": "client_credentials", "scope": READ, "resource": resource},
        timeout=10,
    )
    assert answer.status_code == 200, answer.text
    token = answer.json()["access_token"]
    assert "." not in token, "an opaque token, not a JWT"
    return token


async def test_an_opaque_token_is_introspected_once_for_many_requests(
    opaque_url: str, provider: Provider
) -> None:
    """The example keeps what introspection said of a token (issue #37): a session's requests
    and the REST gateway's, all with one token, ask the provider about it once."""
    token = opaque_token(provider, "agent", opaque_url)
    bearer = {"authorization": f"Bearer {token}"}
    before = introspections(provider)
    with anyio.fail_after(TIMEOUT):
        async with httpx2.AsyncClient(
            headers=bearer, timeout=httpx2.Timeout(30, read=TIMEOUT)
        ) as http:
            async with servers.http_session(opaque_url, http) as session:
                tools = await listing(session)
                assert set(tools) == TOOLS
                for _ in range(3):
                    envelope = await call_ok(session, tools, "search_text", SEARCH)
                    assert envelope["completeness"]["total"] == PAGED_OCCURRENCES, envelope
            listed = await http.get(opaque_url.removesuffix("/opaque") + "/tools")
            assert listed.status_code == 200, listed.text
    assert introspections(provider) == before + 1

    # A token the provider never issued is refused, and asked about each time: refusals are
    # not kept.
    before = introspections(provider)
    for _ in range(2):
        refused = httpx2.get(
            opaque_url.removesuffix("/opaque") + "/tools",
            headers={"authorization": "Bearer never-issued"},
            timeout=10,
        )
        assert refused.status_code == 401, refused.text
        assert 'error="invalid_token"' in refused.headers["www-authenticate"]
    assert introspections(provider) == before + 2


def test_serving_beyond_loopback_without_auth_says_so_at_start_up() -> None:
    """Without `--auth-issuer` the example still serves, and listening on every interface it
    warns that anyone who reaches the port may call every tool; on loopback it does not."""
    for host, warns in (("0.0.0.0", True), ("127.0.0.1", False)):
        port = servers.free_port()
        process = subprocess.Popen(
            [str(BIN), "--root", str(REPO), "--http", f"{host}:{port}"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            ready = None
            for _ in range(100):
                try:
                    ready = httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=2)
                    break
                except httpx2.TransportError:
                    time.sleep(0.1)
            assert ready is not None and ready.status_code == 200
        finally:
            process.terminate()
            _, said = process.communicate(timeout=20)
        assert "serving" in said, said
        assert ("no authentication is on" in said) == warns, said


def test_envelope_check_logs_in_with_client_credentials_and_finds_nothing_wrong(
    auth_url: str, provider: Provider, tmp_path: Path
) -> None:
    """`envelope-check` gets its token from the provider's token endpoint for the example's own
    `/mcp` (RFC 8707) and checks every tool: zero failures. Its output, `RUST_LOG=trace` set,
    holds no secret. (Renewal is tested in `envelope-check/tests/login.rs`: a run here is over
    before even a `short-lived` token is half gone, and the verifier allows leeway.)"""
    if not CHECK_BIN.is_file():
        pytest.fail(f"{CHECK_BIN} is missing: cargo build --workspace --all-features --tests --bins --examples")
    client_id = "agent"
    secret = f"{client_id}-secret"
    secret_file = tmp_path / "client.secret"
    secret_file.write_text(f"{secret}\n")
    run = subprocess.run(
        [
            str(CHECK_BIN),
            "--seed",
            SEED,
            "--json",
            "--url",
            auth_url,
            "--oauth-token-url",
            provider.token_endpoint,
            "--client-id",
            client_id,
            "--client-secret-file",
            str(secret_file),
            "--scope",
            f"{READ} {HEAVY}",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "RUST_LOG": "trace"},
    )
    assert secret not in run.stdout and secret not in run.stderr, "the client secret was printed"
    assert run.returncode == 0, f"envelope-check exited {run.returncode}:\n{run.stdout}\n{run.stderr}"
    report = json.loads(run.stdout)
    assert report["failed_count"] == 0, json.dumps(report, indent=1)
    # Every tool was checked, graph_export (which needs workspace:heavy) included.
    checked = {tool["tool"] for tool in report["tools"]}
    assert checked >= {"search_text", "read_file", "list_files", "graph_export"}, report
    search = next(tool for tool in report["tools"] if tool["tool"] == "search_text")
    assert search["checks"]["paging.follow"]["passed"] == 1, search


def test_envelope_check_without_a_login_is_told_the_server_needs_one(
    auth_url: str, provider: Provider, tmp_path: Path
) -> None:
    run = subprocess.run(
        [str(CHECK_BIN), "--url", auth_url], capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 2, f"{run.stdout}\n{run.stderr}"
    assert "requires a login (HTTP 401" in run.stderr, run.stderr
    # A wrong secret: the provider's refusal, by its status and error code, and not the secret.
    wrong = tmp_path / "wrong.secret"
    wrong.write_text("not-the-agent-secret")
    run = subprocess.run(
        [
            str(CHECK_BIN),
            "--url",
            auth_url,
            "--oauth-token-url",
            provider.token_endpoint,
            "--client-id",
            "agent",
            "--client-secret-file",
            str(wrong),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, f"{run.stdout}\n{run.stderr}"
    assert "refused the login: HTTP 401 (invalid_client" in run.stderr, run.stderr
    assert "not-the-agent-secret" not in run.stdout + run.stderr

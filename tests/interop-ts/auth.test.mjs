// OAuth step-up with the official TypeScript MCP SDK: the example `workspace_server` as a
// resource server of the loopback OpenID provider of `tests/auth` (panva's oidc-provider; it
// needs `npm ci --prefix tests/auth`), driven by the SDK's `ClientCredentialsProvider`.
//
// The agent holds a token of `workspace:read` only, as a client does after a restart or when
// first granted less. `graph_export` also needs `workspace:heavy`: the server answers `403` with
// `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`, the SDK's transport asks the
// provider for that scope (the specification's step-up), retries, and the call succeeds. Nothing
// hands the SDK a scope or a URL but the server's answers.
//
// The binary is `target/debug/examples/workspace_server` (override with
// `WORKSPACE_SERVER_BIN`). Without `tests/auth/node_modules` the test is skipped, unless
// `ENVELOPE_REQUIRE_AUTH` is set (CI sets it): then it fails.
//
// Run: `npm ci --prefix tests/interop-ts && node --test tests/interop-ts/auth.test.mjs`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { connect as tcpConnect } from 'node:net';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { makeFixture, removeFixture } from './fixture.mjs';
import { collect, freePort, newLog } from './servers.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.WORKSPACE_SERVER_BIN
    ? resolve(process.env.WORKSPACE_SERVER_BIN)
    : resolve(REPO, 'target/debug/examples/workspace_server');
const PROVIDER = resolve(REPO, 'tests/auth/provider.mjs');
const MISSING = existsSync(resolve(REPO, 'tests/auth/node_modules/oidc-provider'))
    ? null
    : 'tests/auth/node_modules is missing (run `npm ci --prefix tests/auth`)';
if (MISSING && process.env.ENVELOPE_REQUIRE_AUTH) {
    throw new Error(MISSING);
}

const READ = 'workspace:read';
const HEAVY = 'workspace:heavy';

const children = new Set();
let root;
let provider;
let server;

/** Spawns `command`, kept for cleanup, its output collected into a log. */
function start(command, args) {
    const log = newLog();
    const child = spawn(command, args, { cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    child.once('exit', () => children.delete(child));
    return { child, log };
}

/** Whether 127.0.0.1:`port` accepts a connection. */
function accepts(port) {
    return new Promise((ok) => {
        const socket = tcpConnect({ host: '127.0.0.1', port });
        socket.once('connect', () => {
            socket.destroy();
            ok(true);
        });
        socket.once('error', () => ok(false));
    });
}

before(async () => {
    if (MISSING) return;
    root = makeFixture();
    // The provider prints one line of JSON once it listens: its issuer and endpoints.
    const started = start(process.execPath, [PROVIDER, '--port', '0']);
    collect(started.child.stderr, started.log);
    // Seconds as a rule; a provider that says nothing for 30 s fails the suite with its log,
    // rather than hanging it until CI's own timeout.
    const line = await new Promise((ok, fail) => {
        const lines = createInterface({ input: started.child.stdout });
        const timer = setTimeout(
            () => fail(new Error(`the provider did not start within 30 s: ${started.log.text}`)),
            30_000,
        );
        lines.once('line', (first) => {
            clearTimeout(timer);
            ok(first);
        });
        started.child.once('exit', () => {
            clearTimeout(timer);
            fail(new Error(`the provider exited: ${started.log.text}`));
        });
    });
    provider = JSON.parse(line);
    // The example on a port chosen first: its audience is its own `/mcp` URL.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/mcp`;
    const running = start(BIN, [
        '--root', root,
        '--auth-issuer', provider.issuer,
        '--auth-audience', url,
        '--http', `127.0.0.1:${port}`,
    ]);
    collect(running.child.stdout, running.log);
    collect(running.child.stderr, running.log);
    const deadline = Date.now() + 30_000;
    while (!(await accepts(port))) {
        assert.ok(Date.now() < deadline, `the example did not listen: ${running.log.text}`);
        await sleep(50);
    }
    server = { url, log: running.log };
});

after(() => {
    for (const child of children) child.kill('SIGKILL');
    if (root) removeFixture(root);
});

/** A token of `scope` for `client`, asked of the provider directly (client_secret_basic). */
async function token(client, scope, resource) {
    const answer = await fetch(provider.token_endpoint, {
        method: 'POST',
        headers: {
            authorization: `Basic ${Buffer.from(`${client}:${client}-secret`).toString('base64')}`,
            'content-type': 'application/x-www-form-urlencoded',
        },
        body: new URLSearchParams({ grant_type: 'client_credentials', scope, resource }),
    });
    assert.equal(answer.status, 200, await answer.clone().text());
    return answer.json();
}

test('the SDK steps up to the scope a call needs on a 403, and the call succeeds', { skip: MISSING ?? false }, async () => {
    const narrow = await token('agent', READ, server.url);
    assert.equal(narrow.scope, READ);
    const auth = new ClientCredentialsProvider({
        clientId: 'agent',
        clientSecret: 'agent-secret',
        expectedIssuer: provider.issuer,
    });
    auth.saveTokens(narrow);
    // Every exchange the transport makes, its own OAuth requests included.
    const exchanges = [];
    const recording = async (input, init) => {
        const answer = await fetch(input, init);
        exchanges.push({ url: String(input), status: answer.status });
        return answer;
    };
    const transport = new StreamableHTTPClientTransport(new URL(server.url), {
        authProvider: auth,
        fetch: recording,
    });
    const client = new Client({ name: 'step-up', version: '1' });
    await client.connect(transport);
    try {
        const result = await client.callTool({ name: 'graph_export', arguments: {} });
        const envelope = result.structuredContent;
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.equal(result.isError, false);
    } finally {
        await client.close();
    }
    const walk = exchanges.map((e) => `${e.status} ${e.url}`).join('\n');
    const challenged = exchanges.findIndex((e) => e.url === server.url && e.status === 403);
    assert.ok(challenged >= 0, `no step-up challenge:\n${walk}`);
    // A new token after the challenge (its scope, read below, is the wider one).
    const wider = exchanges.findIndex(
        (e, i) => i > challenged && e.url === provider.token_endpoint && e.status === 200,
    );
    assert.ok(wider > challenged, `the SDK asked for no token after the challenge:\n${walk}`);
    const retried = exchanges.findIndex((e, i) => i > wider && e.url === server.url && e.status === 200);
    assert.ok(retried > wider, `the call was not retried with the wider token:\n${walk}`);
    const scopes = new Set(auth.tokens().scope.split(' '));
    assert.ok(scopes.has(READ) && scopes.has(HEAVY), auth.tokens().scope);
});

// OAuth 2.1 resource server: the example `workspace_server` with `--auth-issuer`, against the
// loopback OpenID provider of this folder (`provider.mjs`, a real oidc-provider) and driven by
// the official TypeScript MCP SDK and by plain `fetch`.
//
// Processes: two providers (the server's issuer, and "another issuer" whose tokens must be
// refused) and two servers on free loopback ports, run with `RUST_LOG=trace` and every byte
// of their output kept: the main one (`--auth-jwks-refresh-interval 1`, for the key rotation)
// and one with `--auth-filter-listing`. They serve a fixture tree made fresh in a temporary
// directory: 60 files holding `Envelope` three times each, so a search pages.
//
// What is checked (each a `test`): the SDK's own OAuth client (`ClientCredentialsProvider`)
// discovers the server from its 401 (challenge → protected-resource metadata → authorization
// server → token with `resource`) and then lists and calls tools; plain REST calls with a
// token; refusals without a token, without a scope, and with every kind of bad token (wrong
// audience, expired, `alg: none`, `HS256` keyed with the public key, another issuer's, signed
// by a stranger's key under the real kid, a re-encoded payload); a key rotation picked up
// without a restart; continuations bound to issuer + subject, not to the token string; the
// filtered listing; and last, that no token string or signature ever shows in the servers'
// trace-level output nor in any answer.
//
// The binary is `target/debug/examples/workspace_server` (override with `WORKSPACE_SERVER_BIN`).
// Run: `npm ci --prefix tests/auth && node --test tests/auth/auth.test.mjs`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { once } from 'node:events';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

import { freePort } from '../interop-ts/servers.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const PROVIDER = join(HERE, 'provider.mjs');
const BIN = process.env.WORKSPACE_SERVER_BIN
    ? resolve(process.env.WORKSPACE_SERVER_BIN)
    : resolve(REPO, 'target/debug/examples/workspace_server');

const TOOLS = ['change_impact', 'graph_export', 'list_files', 'read_file', 'search_text', 'workspace_stats'];
const READ = 'workspace:read';
const HEAVY = 'workspace:heavy';
/** The scopes each tool needs, in the order the server lists them. */
const SCOPES = Object.fromEntries(TOOLS.map((name) => [name, name === 'graph_export' ? [READ, HEAVY] : [READ]]));
const FILES = 60;
const PER_FILE = 3;
const SEARCH = { query: 'Envelope', limit: 2 };
const MCP_INITIALIZE = {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'auth-test', version: '0' } },
};

// --- what the suite keeps for the leak check -----------------------------------------------

/** Every access token obtained or forged. */
const TOKENS = new Set();
/** Every answer received from a resource server: status, headers and body. */
const ANSWERS = [];
/** Reads of SDK answers still in flight (an SSE stream ends with its session). */
const PENDING = [];
/** The servers started, each with its whole output. */
const SERVERS = [];

const remember = (token) => {
    assert.equal(typeof token, 'string');
    TOKENS.add(token);
    return token;
};

const isServerUrl = (url) => SERVERS.some((server) => url.startsWith(server.base));

const recordAnswer = (url, res, body) => {
    ANSWERS.push(`${url} ${res.status}\n${[...res.headers].map(([k, v]) => `${k}: ${v}`).join('\n')}\n\n${body}`);
};

/**
 * A `fetch` for the SDK's transport: records each exchange in `log` (method, URL, status,
 * whether it carried a bearer token, a form body's fields) and every resource server answer in
 * `ANSWERS` (not the authorization server's: its token responses hold the tokens).
 */
function recordingFetch(log = []) {
    const wrapped = async (input, init = {}) => {
        const url = String(input instanceof Request ? input.url : input);
        const method = init.method ?? 'GET';
        const authorization = new Headers(init.headers).get('authorization');
        const form = init.body instanceof URLSearchParams ? Object.fromEntries(init.body) : undefined;
        const res = await fetch(input, init);
        log.push({ method, url, status: res.status, bearer: authorization?.startsWith('Bearer ') ?? false, form });
        if (isServerUrl(url)) {
            PENDING.push(
                res
                    .clone()
                    .text()
                    .then((body) => recordAnswer(url, res, body), () => recordAnswer(url, res, '')),
            );
        }
        return res;
    };
    wrapped.log = log;
    return wrapped;
}

// --- processes -----------------------------------------------------------------------------

/** Starts `provider.mjs` (stdin piped: it dies with this process); resolves with its JSON line. */
async function startProvider() {
    const child = spawn(process.execPath, [PROVIDER, '--port', '0'], { stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8');
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk) => { stderr += chunk; });
    const info = await new Promise((ok, fail) => {
        const timer = setTimeout(() => fail(new Error(`provider did not start in 20 s:\n${stderr}`)), 20_000);
        child.stdout.on('data', (chunk) => {
            stdout += chunk;
            if (stdout.includes('\n')) {
                clearTimeout(timer);
                ok(JSON.parse(stdout.slice(0, stdout.indexOf('\n'))));
            }
        });
        child.once('exit', (code) => {
            clearTimeout(timer);
            fail(new Error(`provider exited with ${code}:\n${stderr}`));
        });
    });
    return {
        ...info,
        stderr: () => stderr,
        async stop() {
            if (child.exitCode === null && child.signalCode === null) {
                child.kill('SIGTERM');
                await once(child, 'exit');
            }
        },
    };
}

/**
 * Starts the example on a free port with OAuth on for `issuer`, `RUST_LOG=trace`, and every
 * byte it writes (stdout and stderr) kept in `output`. Ready once it says it is serving.
 */
async function startServer(issuer, extra = []) {
    for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const base = `http://127.0.0.1:${port}`;
        const url = `${base}/mcp`;
        const args = ['--root', ROOT, '--http', `127.0.0.1:${port}`, '--auth-issuer', issuer, '--auth-audience', url, ...extra];
        const child = spawn(BIN, args, {
            cwd: REPO,
            env: { ...process.env, RUST_LOG: 'trace', XDG_STATE_HOME: STATE, NO_COLOR: '1' },
            stdio: ['ignore', 'pipe', 'pipe'],
        });
        const server = { base, url, output: '', child };
        for (const stream of [child.stdout, child.stderr]) {
            stream.setEncoding('utf8');
            stream.on('data', (chunk) => { server.output += chunk; });
        }
        server.stop = async () => {
            if (child.exitCode !== null || child.signalCode !== null) return;
            const gone = once(child, 'exit');
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            await gone;
            clearTimeout(timer);
        };
        const deadline = Date.now() + 30_000;
        while (child.exitCode === null && Date.now() < deadline && !server.output.includes('workspace_server: serving')) {
            await sleep(25);
        }
        if (server.output.includes('workspace_server: serving') && child.exitCode === null) {
            SERVERS.push(server);
            return server;
        }
        await server.stop();
        // Lost the port between probing and binding: try another.
        if (attempt === 3) assert.fail(`${BIN} ${args.join(' ')} did not start:\n${server.output}`);
    }
}

// --- tokens --------------------------------------------------------------------------------

const basic = (clientId) => `Basic ${Buffer.from(`${clientId}:${clientId}-secret`).toString('base64')}`;

/** The provider's token response for `clientId`'s client-credentials request. */
async function tokenResponse(op, clientId, form = {}) {
    const res = await fetch(op.token_endpoint, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic(clientId) },
        body: new URLSearchParams({ grant_type: 'client_credentials', ...form }),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    remember(body.access_token);
    return body;
}

/** An access token of `clientId` for `resource` (default: the main server). */
async function tokenFor(clientId, { op = OP, resource = MAIN.url, scope } = {}) {
    return (await tokenResponse(op, clientId, { resource, ...(scope ? { scope } : {}) })).access_token;
}

const b64 = (value) => Buffer.from(typeof value === 'string' ? value : JSON.stringify(value)).toString('base64url');

function decodeJwt(jwt) {
    const parts = jwt.split('.');
    assert.equal(parts.length, 3, 'a JWS compact serialization');
    const [header, payload] = parts.slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
    return { header, payload, parts };
}

/** An RS256 JWS of `header` and `payload` under `key` (a private JWK or KeyObject). */
function signRs256(header, payload, key) {
    const input = `${b64(header)}.${b64(payload)}`;
    const privateKey = key instanceof crypto.KeyObject ? key : crypto.createPrivateKey({ key, format: 'jwk' });
    return remember(`${input}.${crypto.sign('RSA-SHA256', Buffer.from(input), privateKey).toString('base64url')}`);
}

/** The provider's current private signing key (its admin API hands it out, for forging). */
async function signingKey(op = OP) {
    const res = await fetch(`${op.admin}/keys`);
    assert.equal(res.status, 200);
    return res.json();
}

/** Claims a valid token of `clientId` for the main server would carry. */
function claims(clientId, { iss = OP.issuer, aud = MAIN.url, scope = `${READ} ${HEAVY}`, lifetime = 600, iat } = {}) {
    const now = iat ?? Math.floor(Date.now() / 1000);
    return { sub: clientId, jti: crypto.randomUUID(), iat: now, exp: now + lifetime, scope, client_id: clientId, iss, aud };
}

// --- HTTP ----------------------------------------------------------------------------------

/** One request to a resource server; its answer is recorded for the leak check. */
async function call(server, method, path, { token, body, headers = {} } = {}) {
    const init = { method, headers: { ...headers } };
    if (token !== undefined) init.headers.authorization = `Bearer ${token}`;
    if (body !== undefined) {
        init.headers['content-type'] = 'application/json';
        init.body = JSON.stringify(body);
    }
    const url = `${server.base}${path}`;
    const res = await fetch(url, init);
    const text = await res.text();
    recordAnswer(url, res, text);
    let json;
    try {
        json = JSON.parse(text);
    } catch {
        // SSE or plain text.
    }
    return { status: res.status, headers: res.headers, text, json };
}

/** `POST /mcp` with an initialize request (as a client opens a session). */
const initialize = (server, token) =>
    call(server, 'POST', '/mcp', {
        token,
        body: MCP_INITIALIZE,
        headers: { accept: 'application/json, text/event-stream' },
    });

const restCall = (server, name, args, token) => call(server, 'POST', `/tools/${name}`, { token, body: args });

/** The challenge of a request that carried no token. */
const bareChallenge = (server) =>
    `Bearer scope="${HEAVY} ${READ}", resource_metadata="${server.base}/.well-known/oauth-protected-resource/mcp"`;

/** Splits a `Bearer k="v", ...` challenge into its parameters. */
function challengeParams(header) {
    assert.ok(header?.startsWith('Bearer '), `a Bearer challenge: ${header}`);
    const params = {};
    for (const [, key, value] of header.slice('Bearer '.length).matchAll(/([a-z_]+)="((?:[^"\\]|\\.)*)"/g)) {
        params[key] = value;
    }
    return params;
}

/** A REST refusal: RFC 9457 problem JSON holding the envelope, with `status` and `code`. */
function assertProblem(answer, status, code) {
    assert.equal(answer.status, status, answer.text);
    assert.match(answer.headers.get('content-type'), /^application\/problem\+json/);
    assert.equal(answer.json.status, status, answer.text);
    assert.equal(typeof answer.json.type, 'string');
    assert.equal(typeof answer.json.title, 'string');
    const envelope = answer.json.envelope;
    assert.equal(envelope.ok, false, answer.text);
    assert.equal(envelope.verdict, 'ERROR');
    assert.equal(envelope.error.category, 'permission');
    assert.equal(envelope.error.code, code, answer.text);
    return envelope;
}

/** A refused token: 401 with an `invalid_token` challenge, on `/mcp` and on REST. */
async function assertInvalidToken(server, token, why) {
    const mcp = await initialize(server, token);
    assert.equal(mcp.status, 401, `${why}: /mcp answered ${mcp.status} ${mcp.text}`);
    assert.match(mcp.headers.get('content-type'), /^text\/plain/);
    assert.ok(mcp.text.length > 0);
    const rest = [
        await call(server, 'GET', '/tools', { token }),
        await restCall(server, 'search_text', SEARCH, token),
        await call(server, 'GET', '/openapi.json', { token }),
    ];
    for (const answer of rest) assertProblem(answer, 401, 'unauthenticated');
    for (const answer of [mcp, ...rest]) {
        const params = challengeParams(answer.headers.get('www-authenticate'));
        assert.equal(params.error, 'invalid_token', `${why}: ${answer.headers.get('www-authenticate')}`);
        assert.ok(params.error_description, 'says why');
        assert.equal(params.resource_metadata, `${server.base}/.well-known/oauth-protected-resource/mcp`);
    }
    return challengeParams(mcp.headers.get('www-authenticate')).error_description;
}

// --- SDK sessions --------------------------------------------------------------------------

/**
 * Connects an SDK `Client` to `server` over streamable HTTP (`options` go to the transport, with
 * a recording `fetch`), runs `body(client, transport)`, and closes the session.
 */
async function withSession(server, options, body) {
    const client = new Client({ name: 'envelope-auth-test', version: '0.0.0' });
    const errors = [];
    client.onerror = (error) => errors.push(String(error));
    const transport = new StreamableHTTPClientTransport(new URL(server.url), { fetch: recordingFetch(), ...options });
    const start = server.output.length;
    try {
        await client.connect(transport);
        // `errors` is the body's too: one that expects the SDK to report an error takes it.
        const result = await body(client, transport, errors);
        assert.deepEqual(errors, [], 'the SDK reported errors');
        return result;
    } catch (error) {
        if (error instanceof Error) error.message += `\n--- server output ---\n${server.output.slice(start).slice(-8_000)}`;
        throw error;
    } finally {
        if (transport.sessionId) await transport.terminateSession().catch(() => {});
        await client.close();
    }
}

/** A session authenticated with a hand-supplied header (no OAuth client: nothing up-scopes). */
const withToken = (server, token, body) =>
    withSession(server, { requestInit: { headers: { Authorization: `Bearer ${token}` } } }, body);

/** The SDK's client-credentials provider, recording every token it saves. */
class RecordingClientCredentials extends ClientCredentialsProvider {
    saveTokens(tokens) {
        remember(tokens.access_token);
        super.saveTokens(tokens);
    }
}

const names = (tools) => tools.map((tool) => tool.name).sort();

const occurrences = (envelope) => envelope.data.occurrences.map(({ path, line, column }) => `${path}:${line}:${column}`);

// --- the suite -----------------------------------------------------------------------------

let ROOT;
let STATE;
let OP; // the server's issuer
let OTHER_OP; // another issuer
let MAIN; // --auth-jwks-refresh-interval 1
let FILTERED; // --auth-filter-listing

before(async () => {
    assert.ok(existsSync(BIN), `${BIN} is missing: build it with \`cargo build --workspace --all-features --tests --bins --examples\``);
    ROOT = mkdtempSync(join(tmpdir(), 'envelope-auth-root-'));
    STATE = mkdtempSync(join(tmpdir(), 'envelope-auth-state-'));
    for (let i = 0; i < FILES; i++) {
        const folder = join(ROOT, i < FILES / 2 ? 'a' : 'b');
        mkdirSync(folder, { recursive: true });
        writeFileSync(join(folder, `note-${String(i).padStart(2, '0')}.txt`), `Envelope ${i}\nno match here\nEnvelope and Envelope\n`);
    }
    [OP, OTHER_OP] = await Promise.all([startProvider(), startProvider()]);
    MAIN = await startServer(OP.issuer, ['--auth-jwks-refresh-interval', '1']);
    FILTERED = await startServer(OP.issuer, ['--auth-filter-listing']);
});

after(async () => {
    await Promise.all([...SERVERS.map((server) => server.stop()), OP?.stop(), OTHER_OP?.stop()]);
    // To read what the servers logged: ENVELOPE_AUTH_LOG_DIR=<dir>.
    if (process.env.ENVELOPE_AUTH_LOG_DIR) {
        mkdirSync(process.env.ENVELOPE_AUTH_LOG_DIR, { recursive: true });
        SERVERS.forEach((server, i) => writeFileSync(join(process.env.ENVELOPE_AUTH_LOG_DIR, `server-${i}.log`), server.output));
    }
    if (ROOT) rmSync(ROOT, { recursive: true, force: true });
    if (STATE) rmSync(STATE, { recursive: true, force: true });
});

test('the SDK OAuth client discovers the server from its 401 and calls a tool over MCP', async () => {
    const fetchLog = [];
    const authProvider = new RecordingClientCredentials({
        clientId: 'agent',
        clientSecret: 'agent-secret',
        expectedIssuer: OP.issuer,
    });
    await withSession(MAIN, { authProvider, fetch: recordingFetch(fetchLog) }, async (client) => {
        const { tools } = await client.listTools();
        assert.deepEqual(names(tools), TOOLS);
        for (const tool of tools) {
            assert.deepEqual(tool._meta?.['rs.envelope/scopes'], SCOPES[tool.name], tool.name);
        }
        const result = await client.callTool({ name: 'search_text', arguments: SEARCH });
        assert.equal(result.isError, false, JSON.stringify(result));
        const envelope = result.structuredContent;
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.equal(envelope.data.occurrences.length, 2);
        assert.equal(envelope.completeness.total, FILES * PER_FILE);
    });

    // The path the SDK took: no token at first, the challenge, the metadata it names, the
    // authorization server's metadata, a token for this resource, then the call with it.
    const at = (predicate, what) => {
        const index = fetchLog.findIndex(predicate);
        assert.ok(index >= 0, `${what}; the SDK's requests:\n${fetchLog.map((e) => `${e.method} ${e.url} ${e.status}`).join('\n')}`);
        return index;
    };
    const first = fetchLog[0];
    assert.deepEqual([first.method, first.url, first.status, first.bearer], ['POST', MAIN.url, 401, false]);
    const metadata = at((e) => e.method === 'GET' && e.url === `${MAIN.base}/.well-known/oauth-protected-resource/mcp` && e.status === 200, 'read the protected-resource metadata');
    const asMetadata = at((e) => e.method === 'GET' && e.url.startsWith(`${OP.issuer}/.well-known/`) && e.status === 200, "read the authorization server's metadata");
    const tokenRequest = at((e) => e.method === 'POST' && e.url === OP.token_endpoint && e.status === 200, 'asked for a token');
    const authorized = at((e, i) => i > tokenRequest && e.url === MAIN.url && e.bearer && e.status === 200, 'called again with the token');
    assert.ok(metadata < asMetadata && asMetadata < tokenRequest && tokenRequest < authorized);
    assert.equal(fetchLog[tokenRequest].form?.grant_type, 'client_credentials');
    assert.equal(fetchLog[tokenRequest].form?.resource, MAIN.url, 'RFC 8707 resource = the metadata resource');
    const mcpRequests = fetchLog.filter((e) => e.url === MAIN.url);
    assert.ok(mcpRequests.slice(1).every((e) => e.bearer && e.status < 300), `every later MCP request carried the token: ${JSON.stringify(mcpRequests)}`);

    const { payload } = decodeJwt(authProvider.tokens().access_token);
    assert.equal(payload.aud, MAIN.url);
    assert.equal(payload.sub, 'agent');
    assert.equal(payload.iss, OP.issuer);
});

test('REST with a token; health, readiness and metadata need none', async () => {
    for (const path of ['/healthz', '/readyz']) {
        const answer = await call(MAIN, 'GET', path);
        assert.equal(answer.status, 200, `${path}: ${answer.text}`);
    }
    const expected = {
        resource: MAIN.url,
        authorization_servers: [OP.issuer],
        bearer_methods_supported: ['header'],
        scopes_supported: [HEAVY, READ],
        resource_name: 'workspace_server',
    };
    for (const path of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
        const answer = await call(MAIN, 'GET', path);
        assert.equal(answer.status, 200, `${path}: ${answer.text}`);
        assert.match(answer.headers.get('content-type'), /^application\/json/);
        assert.deepEqual(answer.json, expected, path);
    }

    const token = await tokenFor('agent');
    const listing = await call(MAIN, 'GET', '/tools', { token });
    assert.equal(listing.status, 200, listing.text);
    assert.deepEqual(listing.json.tools.map((tool) => tool.name).sort(), TOOLS);
    for (const tool of listing.json.tools) assert.deepEqual(tool.scopes, SCOPES[tool.name], tool.name);

    const openapi = await call(MAIN, 'GET', '/openapi.json', { token });
    assert.equal(openapi.status, 200, openapi.text);
    const scheme = openapi.json.components.securitySchemes.oauth;
    assert.equal(scheme.type, 'http');
    assert.equal(scheme.scheme, 'bearer');
    for (const name of TOOLS) {
        const operation = openapi.json.paths[`/tools/${name}`]?.post;
        assert.ok(operation, `POST /tools/${name} is described`);
        assert.deepEqual(operation.security, [{ oauth: SCOPES[name] }], name);
        assert.deepEqual(operation['x-scopes'], SCOPES[name], name);
    }

    const answer = await restCall(MAIN, 'search_text', SEARCH, token);
    assert.equal(answer.status, 200, answer.text);
    assert.equal(answer.json.ok, true, answer.text);
    assert.equal(answer.json.data.occurrences.length, 2);
});

test('no token: 401 with a challenge naming the metadata, on /mcp and on REST', async () => {
    const mcp = await initialize(MAIN);
    assert.equal(mcp.status, 401, mcp.text);
    assert.match(mcp.headers.get('content-type'), /^text\/plain/);
    assert.equal(mcp.headers.get('www-authenticate'), bareChallenge(MAIN));
    for (const [method, path, body] of [
        ['GET', '/tools'],
        ['POST', '/tools/search_text', SEARCH],
        ['POST', '/tools/graph_export', {}],
        ['GET', '/openapi.json'],
    ]) {
        const answer = await call(MAIN, method, path, { body });
        assertProblem(answer, 401, 'unauthenticated');
        // RFC 6750 §3.1: no error code when the request carried no credentials.
        assert.equal(answer.headers.get('www-authenticate'), bareChallenge(MAIN), `${method} ${path}`);
    }
});

test('a token without workspace:heavy: graph_export is refused over MCP and REST', async () => {
    const token = await tokenFor('reader');
    assert.equal(decodeJwt(token).payload.scope, READ);
    await withToken(MAIN, token, async (client, _transport, errors) => {
        // Without --auth-filter-listing, the listing shows every tool and what it needs.
        const { tools } = await client.listTools();
        assert.deepEqual(names(tools), TOOLS);
        const allowed = await client.callTool({ name: 'search_text', arguments: SEARCH });
        assert.equal(allowed.structuredContent.ok, true, JSON.stringify(allowed));

        // The specification's step-up answer: `403`, the scopes in the challenge (the REST
        // call below reads it), and the JSON-RPC error -32006 whose data is the envelope. This
        // client has a static token and no OAuth provider to step up with: the SDK rejects
        // the call with the answer's body.
        let envelope;
        await assert.rejects(client.callTool({ name: 'graph_export', arguments: {} }), (error) => {
            assert.equal(error.code, 403, String(error));
            const body = JSON.parse(error.message.slice(error.message.indexOf('{')));
            assert.equal(body.error.code, -32006, JSON.stringify(body));
            envelope = body.error.data;
            return true;
        });
        // The transport reported the same refusal: taken, being expected.
        assert.equal(errors.length, 1, errors.join('\n'));
        assert.match(errors[0], /-32006/);
        errors.length = 0;
        assert.equal(envelope.ok, false);
        assert.equal(envelope.verdict, 'ERROR');
        assert.equal(envelope.error.category, 'permission');
        assert.equal(envelope.error.code, 'insufficient_scope');
        assert.equal(envelope.error.retryable, false);
        assert.deepEqual(envelope.error.data, { required: [READ, HEAVY], missing: [HEAVY] });
        assert.match(envelope.error.hint, /new token with scope `workspace:read workspace:heavy`/);
    });

    const rest = await restCall(MAIN, 'graph_export', {}, token);
    const envelope = assertProblem(rest, 403, 'insufficient_scope');
    assert.deepEqual(envelope.error.data, { required: [READ, HEAVY], missing: [HEAVY] });
    const challenge = rest.headers.get('www-authenticate');
    const params = challengeParams(challenge);
    assert.equal(params.error, 'insufficient_scope', challenge);
    assert.equal(params.scope, `${READ} ${HEAVY}`, challenge);
    assert.equal(params.resource_metadata, `${MAIN.base}/.well-known/oauth-protected-resource/mcp`);
    // What the reader may do, it still may.
    assert.equal((await restCall(MAIN, 'search_text', SEARCH, token)).status, 200);
});

test('invalid: a token for another audience', async () => {
    const token = await tokenFor('agent', { resource: 'http://127.0.0.1:9/elsewhere' });
    assert.equal(decodeJwt(token).payload.aud, 'http://127.0.0.1:9/elsewhere');
    await assertInvalidToken(MAIN, token, 'wrong audience');
});

test('invalid: an expired token (the same forgery, unexpired, is accepted)', async () => {
    const key = await signingKey();
    const header = { alg: 'RS256', typ: 'at+jwt', kid: key.kid };
    const now = Math.floor(Date.now() / 1000);
    // The control: this forgery is good but for `exp`.
    const fresh = signRs256(header, claims('agent'), key);
    assert.equal((await restCall(MAIN, 'search_text', SEARCH, fresh)).status, 200, 'a well-forged token is accepted');
    const expired = signRs256(header, claims('agent', { iat: now - 4200, lifetime: 600 }), key);
    assert.equal(decodeJwt(expired).payload.exp, now - 3600);
    await assertInvalidToken(MAIN, expired, 'expired');
});

test('invalid: alg none', async () => {
    const { kid } = await signingKey();
    for (const header of [{ alg: 'none', typ: 'JWT' }, { alg: 'none', typ: 'at+jwt', kid }]) {
        const token = remember(`${b64(header)}.${b64(claims('agent'))}.`);
        await assertInvalidToken(MAIN, token, `alg none ${JSON.stringify(header)}`);
    }
});

test('invalid: HS256 keyed with the issuer public key (algorithm confusion)', async () => {
    const key = await signingKey();
    const publicPem = crypto.createPublicKey({ key, format: 'jwk' }).export({ type: 'spki', format: 'pem' });
    const input = `${b64({ alg: 'HS256', typ: 'at+jwt', kid: key.kid })}.${b64(claims('agent'))}`;
    const token = remember(`${input}.${crypto.createHmac('sha256', publicPem).update(input).digest('base64url')}`);
    await assertInvalidToken(MAIN, token, 'HS256 with the public key');
});

test("invalid: another issuer's token", async () => {
    const token = await tokenFor('agent', { op: OTHER_OP });
    assert.equal(decodeJwt(token).payload.iss, OTHER_OP.issuer);
    assert.equal(decodeJwt(token).payload.aud, MAIN.url);
    await assertInvalidToken(MAIN, token, 'another issuer');
    // Another issuer's key under the real issuer's name: unknown kid, refetch, still refused.
    const otherKey = await signingKey(OTHER_OP);
    await assertInvalidToken(MAIN, signRs256({ alg: 'RS256', typ: 'at+jwt', kid: otherKey.kid }, claims('agent'), otherKey), "the real issuer's name, another issuer's key");
});

test("invalid: signed by a stranger's key under the real issuer and kid", async () => {
    const { kid } = await signingKey();
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const token = signRs256({ alg: 'RS256', typ: 'at+jwt', kid }, claims('agent'), privateKey);
    await assertInvalidToken(MAIN, token, "a stranger's key");
});

test('invalid: a payload re-encoded with a wider scope, signature kept', async () => {
    const genuine = await tokenFor('reader');
    const { parts, payload } = decodeJwt(genuine);
    assert.equal(payload.scope, READ);
    const tampered = remember([parts[0], b64({ ...payload, scope: `${READ} ${HEAVY}` }), parts[2]].join('.'));
    await assertInvalidToken(MAIN, tampered, 'tampered payload');
    // The genuine one is fine.
    assert.equal((await restCall(MAIN, 'search_text', SEARCH, genuine)).status, 200);
});

test('key rotation: a token under a new kid is accepted without a restart', async () => {
    const before = await tokenFor('agent');
    const oldKid = decodeJwt(before).header.kid;
    assert.equal((await restCall(MAIN, 'search_text', SEARCH, before)).status, 200);
    // Past the refresh interval (1 s) since the server last fetched the keys.
    await sleep(1_500);
    const rotated = await fetch(`${OP.admin}/rotate`, { method: 'POST' });
    assert.equal(rotated.status, 200);
    const { kid: newKid } = await rotated.json();
    assert.notEqual(newKid, oldKid);

    const after = await tokenFor('agent');
    assert.equal(decodeJwt(after).header.kid, newKid);
    const rest = await restCall(MAIN, 'search_text', SEARCH, after);
    assert.equal(rest.status, 200, rest.text);
    assert.equal(rest.json.ok, true);
    await withToken(MAIN, after, async (client) => {
        const result = await client.callTool({ name: 'search_text', arguments: SEARCH });
        assert.equal(result.structuredContent.ok, true, JSON.stringify(result));
    });
    // The old key is still published: its tokens still pass.
    assert.equal((await restCall(MAIN, 'search_text', SEARCH, before)).status, 200);
});

test('a continuation resumes with a fresh token of the same client, not with another client', async () => {
    const first = await tokenFor('agent');
    const page = await withToken(MAIN, first, async (client) => {
        const result = await client.callTool({ name: 'search_text', arguments: SEARCH });
        assert.equal(result.structuredContent.ok, true, JSON.stringify(result));
        return result.structuredContent;
    });
    // The page's `next-page` action is the same search continued, the token among its
    // arguments (its one place: `completeness` has none); every call below follows it as given.
    assert.ok(!('continuation' in page.completeness), JSON.stringify(page.completeness));
    const nextPage = (page.next_actions ?? []).filter((action) => action.id === 'next-page');
    assert.equal(nextPage.length, 1, JSON.stringify(page.next_actions));
    const [action] = nextPage;
    assert.ok(!('continuation_arg' in action), JSON.stringify(action));
    const { continuation } = action.arguments;
    assert.equal(typeof continuation, 'string', JSON.stringify(action));
    assert.ok(continuation.length > 0, JSON.stringify(action));
    assert.equal(action.tool, 'search_text');
    assert.deepEqual(action.arguments, { ...SEARCH, continuation });
    const follow = { name: action.tool, arguments: action.arguments };
    const whole = await restCall(MAIN, 'search_text', { ...SEARCH, limit: 4 }, first);
    const expected = occurrences(whole.json).slice(2, 4);

    const again = await tokenFor('agent');
    assert.notEqual(again, first, 'another token string');
    assert.deepEqual(
        [decodeJwt(again).payload.iss, decodeJwt(again).payload.sub],
        [decodeJwt(first).payload.iss, decodeJwt(first).payload.sub],
        'same caller',
    );
    await withToken(MAIN, again, async (client) => {
        const result = await client.callTool(follow);
        const envelope = result.structuredContent;
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.deepEqual(occurrences(envelope), expected, 'the next page');
        assert.equal(envelope.completeness.offset, 2);
    });
    // Over REST too.
    const rest = await restCall(MAIN, action.tool, action.arguments, again);
    assert.equal(rest.status, 200, rest.text);
    assert.deepEqual(occurrences(rest.json), expected);

    for (const other of ['other-agent', 'reader']) {
        const token = await tokenFor(other);
        await withToken(MAIN, token, async (client) => {
            const result = await client.callTool(follow);
            assert.equal(result.isError, true, `${other}: ${JSON.stringify(result)}`);
            assert.equal(result.structuredContent.error.code, 'CONTINUATION_SCOPE_MISMATCH', other);
        });
        const refused = await restCall(MAIN, action.tool, action.arguments, token);
        assert.equal(refused.status, 422, refused.text);
        assert.equal(refused.json.envelope.error.code, 'CONTINUATION_SCOPE_MISMATCH', other);
    }
});

test('--auth-filter-listing: each caller sees the tools its scopes cover', async () => {
    const reader = await tokenFor('reader', { resource: FILTERED.url });
    const agent = await tokenFor('agent', { resource: FILTERED.url });
    const readable = TOOLS.filter((name) => name !== 'graph_export');
    for (const [token, expected] of [[reader, readable], [agent, TOOLS]]) {
        await withToken(FILTERED, token, async (client) => {
            const { tools } = await client.listTools();
            assert.deepEqual(names(tools), expected);
        });
        const rest = await call(FILTERED, 'GET', '/tools', { token });
        assert.equal(rest.status, 200, rest.text);
        assert.deepEqual(rest.json.tools.map((tool) => tool.name).sort(), expected);
    }
    // Hidden is hidden when called too: an unknown tool (`404`, no challenge), whose
    // `available` names only what the caller may call.
    const hidden = await restCall(FILTERED, 'graph_export', {}, reader);
    assert.equal(hidden.status, 404, hidden.text);
    assert.equal(hidden.headers.get('www-authenticate'), null);
    assert.equal(hidden.json.envelope.error.code, 'unknown_tool', hidden.text);
    assert.deepEqual([...hidden.json.envelope.error.data.available].sort(), readable);
    // A token for the main server is not one for this one.
    await assertInvalidToken(FILTERED, await tokenFor('agent'), "the other server's audience");
});

test(
    'an MCP session opened by one subject is not usable by another',
    async () => {
        const agent = await tokenFor('agent');
        const other = await tokenFor('other-agent');
        const opened = await initialize(MAIN, agent);
        assert.equal(opened.status, 200, opened.text);
        const session = opened.headers.get('mcp-session-id');
        assert.ok(session);
        const headers = {
            accept: 'application/json, text/event-stream',
            'mcp-session-id': session,
            'mcp-protocol-version': '2025-06-18',
        };
        await call(MAIN, 'POST', '/mcp', { token: agent, headers, body: { jsonrpc: '2.0', method: 'notifications/initialized' } });
        const hijack = await call(MAIN, 'POST', '/mcp', { token: other, headers, body: { jsonrpc: '2.0', id: 2, method: 'tools/list' } });
        const deleted = await call(MAIN, 'DELETE', '/mcp', { token: other, headers });
        const still = await call(MAIN, 'POST', '/mcp', { token: agent, headers, body: { jsonrpc: '2.0', id: 3, method: 'tools/list' } });
        await call(MAIN, 'DELETE', '/mcp', { token: agent, headers });
        // Another subject's request naming the session is answered as one naming no session.
        assert.equal(hijack.status, 404, `another subject used the session: ${hijack.text.slice(0, 200)}`);
        assert.equal(deleted.status, 404, 'another subject deleted the session');
        assert.equal(still.status, 200, `the owner lost its session: ${still.status} ${still.text}`);
    },
);

test('no token or signature ever shows in the servers trace output or in an answer', async () => {
    await Promise.race([Promise.allSettled(PENDING), sleep(5_000)]);
    const output = SERVERS.map((server) => server.output).join('\n');
    const lines = output.split('\n').filter(Boolean);
    // The check can fail: the servers logged at trace level, auth decisions included.
    assert.ok(lines.length > 150, `only ${lines.length} lines of server output`);
    assert.ok(lines.filter((line) => line.includes(' TRACE ')).length > 20, 'trace level is on');
    assert.ok(output.includes('CallToolRequest'), 'the MCP requests were logged');
    assert.ok(lines.filter((line) => line.includes('envelope_mcp::http::auth')).length > 20, 'the auth layer logged its refusals');
    assert.ok(TOKENS.size >= 20, `only ${TOKENS.size} tokens`);
    assert.ok(ANSWERS.length > 50, `only ${ANSWERS.length} answers recorded`);
    const answers = ANSWERS.join('\n');
    const leaks = [];
    for (const token of TOKENS) {
        const signature = token.split('.')[2];
        const needles = [['token', token]];
        // An `alg: none` token has no signature; a short one could show by chance.
        if (signature && signature.length >= 16) needles.push(['signature', signature]);
        for (const [what, needle] of needles) {
            if (output.includes(needle)) leaks.push(`${what} ${needle.slice(0, 24)}… in the server output`);
            if (answers.includes(needle)) leaks.push(`${what} ${needle.slice(0, 24)}… in an answer`);
        }
    }
    assert.deepEqual(leaks, []);
});

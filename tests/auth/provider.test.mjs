// Tests of the loopback test identity provider (provider.mjs).
//
//   npm ci --prefix tests/auth && node --test tests/auth/provider.test.mjs

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import crypto from 'node:crypto';
import { once } from 'node:events';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const PROVIDER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'provider.mjs');
const RESOURCE = 'http://127.0.0.1:9/mcp';
const OPAQUE_RESOURCE = 'http://127.0.0.1:9/opaque';

// Starts provider.mjs and resolves once it printed its JSON line.
async function startProvider(args = []) {
  const child = spawn(process.execPath, [PROVIDER, ...args], { stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8');
  child.stderr.setEncoding('utf8');
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`provider did not start in 20s; stderr:\n${stderr}`)), 20_000);
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
      const newline = stdout.indexOf('\n');
      if (newline !== -1) {
        clearTimeout(timer);
        resolve(JSON.parse(stdout.slice(0, newline)));
      }
    });
    child.on('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`provider exited with ${code} before it was ready; stderr:\n${stderr}`));
    });
  });
  const info = await ready;
  return {
    ...info,
    child,
    stdout: () => stdout,
    stderr: () => stderr,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        await once(child, 'exit');
      }
    },
  };
}

function basic(clientId, secret = `${clientId}-secret`) {
  return `Basic ${Buffer.from(`${encodeURIComponent(clientId)}:${encodeURIComponent(secret)}`).toString('base64')}`;
}

async function postForm(url, form, headers = {}) {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers },
    body: new URLSearchParams(form),
  });
  return { status: res.status, body: await res.json() };
}

async function token(op, clientId, { resource, scope, post = false } = {}) {
  const form = { grant_type: 'client_credentials' };
  if (resource !== undefined) form.resource = resource;
  if (scope !== undefined) form.scope = scope;
  if (post) {
    return postForm(op.token_endpoint, { ...form, client_id: clientId, client_secret: `${clientId}-secret` });
  }
  return postForm(op.token_endpoint, form, { authorization: basic(clientId) });
}

async function accessToken(op, clientId, options) {
  const { status, body } = await token(op, clientId, options);
  assert.equal(status, 200, JSON.stringify(body));
  return body;
}

function decodeJwt(jwt) {
  const parts = jwt.split('.');
  assert.equal(parts.length, 3, 'a JWS compact serialization');
  const [header, payload] = parts.slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')));
  return { header, payload, parts };
}

async function getJson(url) {
  const res = await fetch(url);
  assert.equal(res.status, 200, `GET ${url}`);
  return res.json();
}

// Verifies an RS256 JWT against a JWKS with node's crypto only.
function verifyRs256(jwt, jwks) {
  const { header, parts } = decodeJwt(jwt);
  const jwk = jwks.keys.find((key) => key.kid === header.kid);
  if (!jwk) return false;
  const key = crypto.createPublicKey({ key: jwk, format: 'jwk' });
  return crypto.verify(
    'RSA-SHA256',
    Buffer.from(`${parts[0]}.${parts[1]}`),
    key,
    Buffer.from(parts[2], 'base64url'),
  );
}

function signRs256(header, payload, privateJwk) {
  const encode = (value) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const input = `${encode(header)}.${encode(payload)}`;
  const key = crypto.createPrivateKey({ key: privateJwk, format: 'jwk' });
  return `${input}.${crypto.sign('RSA-SHA256', Buffer.from(input), key).toString('base64url')}`;
}

async function introspect(op, tokenValue, clientId = 'agent') {
  return postForm(op.introspection_endpoint, { token: tokenValue }, { authorization: basic(clientId) });
}

describe('provider', () => {
  let op;
  let discovery;

  before(async () => {
    op = await startProvider();
    discovery = await getJson(`${op.issuer}/.well-known/openid-configuration`);
    // Endpoints as the discovery document names them.
    op.token_endpoint = discovery.token_endpoint;
    op.introspection_endpoint = discovery.introspection_endpoint;
  });

  after(async () => {
    await op?.stop();
  });

  test('prints one JSON line with issuer and admin on 127.0.0.1', () => {
    assert.match(op.issuer, /^http:\/\/127\.0\.0\.1:\d+$/);
    assert.equal(op.admin, `${op.issuer}/admin`);
  });

  test('serves OpenID discovery', () => {
    assert.equal(discovery.issuer, op.issuer);
    assert.equal(discovery.token_endpoint, `${op.issuer}/token`);
    assert.equal(discovery.jwks_uri, `${op.issuer}/jwks`);
    assert.equal(discovery.introspection_endpoint, `${op.issuer}/token/introspection`);
    assert.ok(discovery.grant_types_supported.includes('client_credentials'));
    assert.ok(discovery.token_endpoint_auth_methods_supported.includes('client_secret_basic'));
    assert.ok(discovery.token_endpoint_auth_methods_supported.includes('client_secret_post'));
    for (const scope of ['workspace:read', 'workspace:heavy']) {
      assert.ok(discovery.scopes_supported.includes(scope), scope);
    }
  });

  test('also serves RFC 8414 metadata at /.well-known/oauth-authorization-server', async () => {
    const metadata = await getJson(`${op.issuer}/.well-known/oauth-authorization-server`);
    assert.equal(metadata.issuer, op.issuer);
    assert.equal(metadata.token_endpoint, discovery.token_endpoint);
    assert.equal(metadata.jwks_uri, discovery.jwks_uri);
    assert.equal(metadata.introspection_endpoint, discovery.introspection_endpoint);
  });

  test('every published key has a kid and is an RS256 signing key', async () => {
    const jwks = await getJson(discovery.jwks_uri);
    assert.ok(jwks.keys.length >= 1);
    for (const key of jwks.keys) {
      assert.equal(typeof key.kid, 'string');
      assert.ok(key.kid.length > 0);
      assert.equal(key.kty, 'RSA');
      assert.equal(key.alg, 'RS256');
      assert.equal(key.use, 'sig');
      assert.equal(key.d, undefined, 'no private parts at jwks_uri');
    }
  });

  test('agent gets an RS256 JWT for a resource, verifiable against the JWKS', async () => {
    const response = await accessToken(op, 'agent', { resource: RESOURCE, scope: 'workspace:read' });
    assert.equal(response.token_type, 'Bearer');
    assert.equal(response.scope, 'workspace:read');
    assert.equal(response.expires_in, 600);

    const { header, payload } = decodeJwt(response.access_token);
    assert.deepEqual(Object.keys(header).sort(), ['alg', 'kid', 'typ']);
    assert.equal(header.alg, 'RS256');
    assert.equal(header.typ, 'at+jwt');

    const jwks = await getJson(discovery.jwks_uri);
    assert.ok(jwks.keys.some((key) => key.kid === header.kid), 'kid is in the JWKS');
    assert.ok(verifyRs256(response.access_token, jwks), 'signature verifies');

    assert.deepEqual(Object.keys(payload).sort(), ['aud', 'client_id', 'exp', 'iat', 'iss', 'jti', 'scope', 'sub']);
    assert.equal(payload.iss, op.issuer);
    assert.equal(payload.aud, RESOURCE);
    assert.equal(payload.scope, 'workspace:read');
    assert.equal(payload.sub, 'agent');
    assert.equal(payload.client_id, 'agent');
    assert.equal(payload.exp - payload.iat, 600);
    assert.ok(Math.abs(payload.iat - Date.now() / 1000) < 60);
    assert.equal(typeof payload.jti, 'string');
  });

  test('a tampered token does not verify', async () => {
    const { access_token: jwt } = await accessToken(op, 'agent', { resource: RESOURCE, scope: 'workspace:read' });
    const { header, payload, parts } = decodeJwt(jwt);
    const forged = [
      parts[0],
      Buffer.from(JSON.stringify({ ...payload, scope: 'workspace:read workspace:heavy' })).toString('base64url'),
      parts[2],
    ].join('.');
    assert.ok(header.kid);
    assert.equal(verifyRs256(forged, await getJson(discovery.jwks_uri)), false);
  });

  test('client_secret_post works as well as client_secret_basic', async () => {
    const response = await accessToken(op, 'agent', { resource: RESOURCE, scope: 'workspace:heavy', post: true });
    assert.equal(response.scope, 'workspace:heavy');
    assert.equal(decodeJwt(response.access_token).payload.sub, 'agent');
  });

  test('a wrong secret is invalid_client', async () => {
    const { status, body } = await postForm(
      op.token_endpoint,
      { grant_type: 'client_credentials', resource: RESOURCE },
      { authorization: basic('agent', 'wrong') },
    );
    assert.equal(status, 401);
    assert.equal(body.error, 'invalid_client');
  });

  test('no scope requested: the client gets all of its scopes', async () => {
    const response = await accessToken(op, 'agent', { resource: RESOURCE });
    assert.equal(response.scope, 'workspace:read workspace:heavy');
    assert.equal(decodeJwt(response.access_token).payload.scope, 'workspace:read workspace:heavy');
  });

  test('OpenID scopes are dropped from a resource token request', async () => {
    const response = await accessToken(op, 'agent', { resource: RESOURCE, scope: 'openid workspace:read' });
    assert.equal(response.scope, 'workspace:read');
  });

  test('reader asking for workspace:heavy as well gets only workspace:read', async () => {
    const response = await accessToken(op, 'reader', { resource: RESOURCE, scope: 'workspace:read workspace:heavy' });
    assert.equal(response.scope, 'workspace:read');
    const { payload } = decodeJwt(response.access_token);
    assert.equal(payload.scope, 'workspace:read');
    assert.equal(payload.sub, 'reader');
  });

  test('reader asking only for workspace:heavy is refused with invalid_scope', async () => {
    const { status, body } = await token(op, 'reader', { resource: RESOURCE, scope: 'workspace:heavy' });
    assert.equal(status, 400);
    assert.equal(body.error, 'invalid_scope');
  });

  test('other-agent has its own subject', async () => {
    const { payload } = decodeJwt((await accessToken(op, 'other-agent', { resource: RESOURCE })).access_token);
    assert.equal(payload.sub, 'other-agent');
    assert.equal(payload.scope, 'workspace:read workspace:heavy');
  });

  test('localhost resources are served too, with aud exactly as requested', async () => {
    const resource = 'http://localhost:8080/some/path';
    const { payload } = decodeJwt((await accessToken(op, 'agent', { resource })).access_token);
    assert.equal(payload.aud, resource);
  });

  test('a non-loopback resource is invalid_target', async () => {
    const { status, body } = await token(op, 'agent', { resource: 'https://mcp.example.com/mcp' });
    assert.equal(status, 400);
    assert.equal(body.error, 'invalid_target');
  });

  test('short-lived tokens live one second', async () => {
    const response = await accessToken(op, 'short-lived', { resource: RESOURCE, scope: 'workspace:read' });
    assert.equal(response.expires_in, 1);
    const { payload } = decodeJwt(response.access_token);
    assert.equal(payload.exp - payload.iat, 1);
    assert.equal(payload.sub, 'short-lived');
  });

  test('opaque tokens for an /opaque resource introspect as active', async () => {
    const response = await accessToken(op, 'agent', { resource: OPAQUE_RESOURCE, scope: 'workspace:read' });
    assert.equal(response.access_token.split('.').length, 1, 'not a JWT');
    // Any static client may introspect any token.
    for (const caller of ['agent', 'reader']) {
      const { status, body } = await introspect(op, response.access_token, caller);
      assert.equal(status, 200);
      assert.equal(body.active, true);
      assert.equal(body.scope, 'workspace:read');
      assert.equal(body.sub, 'agent');
      assert.equal(body.client_id, 'agent');
      assert.equal(body.aud, OPAQUE_RESOURCE);
      assert.equal(body.iss, op.issuer);
      assert.equal(body.token_type, 'Bearer');
      assert.equal(body.exp - body.iat, 600);
    }
  });

  test('the admin API counts introspection requests', async () => {
    const before = (await getJson(`${op.admin}/introspections`)).introspections;
    await introspect(op, 'counted-1');
    await introspect(op, 'counted-2');
    assert.equal((await getJson(`${op.admin}/introspections`)).introspections, before + 2);
  });

  test('an unknown token introspects as inactive', async () => {
    const { status, body } = await introspect(op, 'not-a-token-this-provider-issued');
    assert.equal(status, 200);
    assert.deepEqual(body, { active: false });
  });

  test('introspection needs client authentication', async () => {
    const { status, body } = await postForm(op.introspection_endpoint, { token: 'x' });
    assert.ok(status === 400 || status === 401, `status ${status}`);
    assert.ok(['invalid_request', 'invalid_client'].includes(body.error), body.error);
  });

  test('JWT access tokens are not introspectable (oidc-provider rejects structured tokens)', async () => {
    const { access_token: jwt } = await accessToken(op, 'agent', { resource: RESOURCE });
    const { status, body } = await introspect(op, jwt);
    assert.equal(status, 400);
    assert.equal(body.error, 'unsupported_token_type');
  });

  test('an expired opaque token introspects as inactive', async () => {
    const { access_token: opaque } = await accessToken(op, 'short-lived', { resource: OPAQUE_RESOURCE });
    assert.equal((await introspect(op, opaque)).body.active, true);
    await new Promise((resolve) => { setTimeout(resolve, 2100); });
    assert.deepEqual((await introspect(op, opaque)).body, { active: false });
  });

  test('stdout carried only the JSON line', () => {
    assert.equal(op.stdout().split('\n').filter(Boolean).length, 1, op.stdout());
  });
});

describe('key rotation', () => {
  let op;

  before(async () => {
    op = await startProvider();
    op.token_endpoint = `${op.issuer}/token`;
    op.introspection_endpoint = `${op.issuer}/token/introspection`;
  });

  after(async () => {
    await op?.stop();
  });

  test('rotate signs with a new key and keeps the old one published; retire drops it', async () => {
    const jwksUri = `${op.issuer}/jwks`;
    const first = await accessToken(op, 'agent', { resource: RESOURCE });
    const oldKid = decodeJwt(first.access_token).header.kid;
    const opaque = await accessToken(op, 'agent', { resource: OPAQUE_RESOURCE });

    const status = await getJson(op.admin);
    assert.equal(status.kid, oldKid);
    assert.deepEqual(status.kids, [oldKid]);

    const rotated = await fetch(`${op.admin}/rotate`, { method: 'POST' });
    assert.equal(rotated.status, 200);
    const { kid: newKid, kids } = await rotated.json();
    assert.notEqual(newKid, oldKid);
    assert.deepEqual(kids, [newKid, oldKid]);

    const jwks = await getJson(jwksUri);
    assert.deepEqual(jwks.keys.map((key) => key.kid), [newKid, oldKid]);

    const second = await accessToken(op, 'agent', { resource: RESOURCE });
    const { header, payload } = decodeJwt(second.access_token);
    assert.equal(header.kid, newKid);
    assert.equal(payload.iss, op.issuer, 'same issuer after the rebuild');
    assert.ok(verifyRs256(second.access_token, jwks));
    assert.ok(verifyRs256(first.access_token, jwks), 'earlier token still verifies');
    assert.equal((await introspect(op, opaque.access_token)).body.active, true, 'earlier opaque token still active');

    // The private signing key, for forging tokens in tests.
    const privateJwk = await getJson(`${op.admin}/keys`);
    assert.equal(privateJwk.kid, newKid);
    assert.equal(privateJwk.alg, 'RS256');
    assert.equal(typeof privateJwk.d, 'string');
    const forged = signRs256(
      { alg: 'RS256', typ: 'at+jwt', kid: newKid },
      { ...payload, iss: 'http://127.0.0.1:1' },
      privateJwk,
    );
    assert.ok(verifyRs256(forged, jwks), 'a forged token verifies; only its claims can tell it apart');

    const retired = await fetch(`${op.admin}/retire`, { method: 'POST' });
    assert.equal(retired.status, 200);
    assert.deepEqual(await retired.json(), { kid: newKid, kids: [newKid] });
    const after = await getJson(jwksUri);
    assert.deepEqual(after.keys.map((key) => key.kid), [newKid]);
    assert.equal(verifyRs256(first.access_token, after), false, 'the old kid is gone');
    assert.ok(verifyRs256(second.access_token, after));
    assert.equal(decodeJwt((await accessToken(op, 'agent', { resource: RESOURCE })).access_token).header.kid, newKid);
  });

  test('unknown admin routes are 404', async () => {
    const res = await fetch(`${op.admin}/nope`, { method: 'POST' });
    assert.equal(res.status, 404);
    await res.body?.cancel();
  });
});

describe('command line', () => {
  test('--resource adds a resource and is the default one', async () => {
    const extra = 'https://mcp.example.test/mcp';
    const op = await startProvider(['--resource', extra]);
    try {
      op.token_endpoint = `${op.issuer}/token`;
      const byDefault = decodeJwt((await accessToken(op, 'agent', { scope: 'workspace:read' })).access_token).payload;
      assert.equal(byDefault.aud, extra);
      assert.equal(byDefault.scope, 'workspace:read');
      const named = decodeJwt((await accessToken(op, 'agent', { resource: extra })).access_token).payload;
      assert.equal(named.aud, extra);
    } finally {
      await op.stop();
    }
  });

  test('without --resource, a request naming no resource gets an opaque token without aud', async () => {
    const op = await startProvider();
    try {
      op.token_endpoint = `${op.issuer}/token`;
      op.introspection_endpoint = `${op.issuer}/token/introspection`;
      const response = await accessToken(op, 'agent', { scope: 'workspace:read' });
      assert.equal(response.access_token.split('.').length, 1, 'opaque');
      const { body } = await introspect(op, response.access_token);
      assert.equal(body.active, true);
      assert.equal(body.aud, undefined);
    } finally {
      await op.stop();
    }
  });

  test('--port picks the port', async () => {
    // Find a free port, then ask for it.
    const { createServer } = await import('node:net');
    const probe = createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address();
    probe.close();
    await once(probe, 'close');
    const op = await startProvider(['--port', String(port)]);
    try {
      assert.equal(op.issuer, `http://127.0.0.1:${port}`);
    } finally {
      await op.stop();
    }
  });

  test('exits when its stdin closes', async () => {
    const op = await startProvider();
    const exited = once(op.child, 'exit');
    op.child.stdin.end();
    const [code] = await exited;
    assert.equal(code, 0);
  });

  test('exits on SIGTERM', async () => {
    const op = await startProvider();
    const exited = once(op.child, 'exit');
    op.child.kill('SIGTERM');
    const [code] = await exited;
    assert.equal(code, 0);
  });
});

#!/usr/bin/env node
// Test identity provider for envelope's OAuth 2.1 resource-server tests.
//
// A real OpenID provider (panva's `oidc-provider`) on loopback, configured for
// the client-credentials grant with RFC 8707 resource indicators (JWT access
// tokens signed RS256, audience = the requested resource), RFC 7662
// introspection, and a small admin API for key rotation. See README.md.
//
//   node tests/auth/provider.mjs [--port N] [--resource URL]...
//
// Prints exactly one JSON line on stdout once listening, e.g.
//   {"issuer":"http://127.0.0.1:41234","admin":"http://127.0.0.1:41234/admin",...}
// and logs only to stderr. Runs until SIGTERM/SIGINT, or until its stdin ends
// when stdin is a pipe or socket (so a test that dies does not leave it behind).
//
// This is a loopback test tool: the admin endpoints have no authentication and
// hand out private signing keys on purpose. Never expose it beyond 127.0.0.1.

import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import { parseArgs } from 'node:util';

import Provider, { errors } from 'oidc-provider';

// stdout carries the one JSON line; oidc-provider's notices use console.info.
console.log = console.error;
console.info = console.error;

const HOST = '127.0.0.1';

// The scope set of every resource server this provider issues tokens for.
const RESOURCE_SCOPES = ['workspace:read', 'workspace:heavy'];

// Lifetime of client-credentials access tokens, in seconds.
const DEFAULT_TTL = 600;
const SHORT_TTL = 1;

const CLIENTS = [
  { client_id: 'agent', scope: 'workspace:read workspace:heavy' },
  { client_id: 'reader', scope: 'workspace:read' },
  { client_id: 'other-agent', scope: 'workspace:read workspace:heavy' },
  { client_id: 'short-lived', scope: 'workspace:read workspace:heavy' },
];

function usage() {
  process.stderr.write(`usage: node provider.mjs [--port N] [--resource URL]...

  --port N        port to listen on at ${HOST} (default 0: an ephemeral port)
  --resource URL  a resource indicator accepted besides any http(s)://127.0.0.1,
                  localhost or [::1] URL (repeatable); the first one is also the
                  default resource of a token request that names none
`);
}

let args;
try {
  args = parseArgs({
    options: {
      port: { type: 'string', default: '0' },
      resource: { type: 'string', multiple: true, default: [] },
      help: { type: 'boolean', short: 'h', default: false },
    },
    strict: true,
  }).values;
} catch (err) {
  process.stderr.write(`provider.mjs: ${err.message}\n`);
  usage();
  process.exit(2);
}
if (args.help) {
  usage();
  process.exit(0);
}
const port = Number(args.port);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  process.stderr.write(`provider.mjs: invalid --port ${args.port}\n`);
  process.exit(2);
}
const extraResources = args.resource;
for (const resource of extraResources) {
  if (!URL.canParse(resource)) {
    process.stderr.write(`provider.mjs: --resource must be an absolute URL: ${resource}\n`);
    process.exit(2);
  }
}

// ---------------------------------------------------------------------------
// Keys. Newest first: oidc-provider signs with the first key that fits RS256,
// and publishes all of them at jwks_uri.

function newSigningKey() {
  const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
  const jwk = privateKey.export({ format: 'jwk' });
  // RFC 7638 thumbprint: the required members, lexicographic order, no spaces.
  const kid = crypto
    .createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url');
  return { ...jwk, kid, alg: 'RS256', use: 'sig' };
}

let keys = [newSigningKey()];

// ---------------------------------------------------------------------------
// Resource servers and scope policy.

function isLoopbackResource(url) {
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const host = url.hostname;
  return host === 'localhost' || host === '[::1]' || /^127\.\d+\.\d+\.\d+$/.test(host);
}

// The scopes `client` may hold on any resource: its registered scope within
// the resource servers' scope set.
function grantableScopes(client) {
  const registered = new Set((client.scope ?? '').split(' ').filter(Boolean));
  return RESOURCE_SCOPES.filter((scope) => registered.has(scope));
}

async function getResourceServerInfo(ctx, resourceIndicator, client) {
  const url = URL.parse(resourceIndicator);
  if (!url || !(isLoopbackResource(url) || extraResources.includes(resourceIndicator))) {
    throw new errors.InvalidTarget('this test provider only serves loopback or --resource resource indicators');
  }
  const grantable = grantableScopes(client);

  // Scope policy for a client-credentials request naming this resource (runs
  // before oidc-provider validates the requested scope):
  //  - scopes outside the resource scope set (openid, offline_access, unknown
  //    ones) are dropped;
  //  - if none is left, the client gets every resource scope it may hold
  //    (RFC 6749 §3.3 "pre-defined default value");
  //  - otherwise it gets the requested ones it may hold, the others dropped;
  //  - if that leaves nothing (e.g. reader asking only for workspace:heavy):
  //    invalid_scope.
  // The token response's `scope` tells the client what it got.
  if (ctx.oidc.route === 'token' && ctx.oidc.params.grant_type === 'client_credentials') {
    const requested = (ctx.oidc.params.scope ?? '').split(' ').filter((scope) => RESOURCE_SCOPES.includes(scope));
    if (requested.length === 0) {
      ctx.oidc.params.scope = grantable.join(' ') || undefined;
    } else {
      const granted = requested.filter((scope) => grantable.includes(scope));
      if (granted.length === 0) {
        throw new errors.InvalidScope('none of the requested scopes may be granted to this client', requested.join(' '));
      }
      ctx.oidc.params.scope = granted.join(' ');
    }
  }

  return {
    // aud is the resource indicator exactly as requested.
    scope: grantable.join(' '),
    // A resource whose path ends in /opaque gets opaque tokens (for RFC 7662
    // introspection tests); every other one gets RS256 JWTs (RFC 9068).
    accessTokenFormat: url.pathname.endsWith('/opaque') ? 'opaque' : 'jwt',
    jwt: { sign: { alg: 'RS256' } },
  };
}

// ---------------------------------------------------------------------------
// Storage. oidc-provider's own in-memory adapter has one store per Provider
// instance; this one is shared by all of them, so opaque tokens issued before
// a key rotation (which rebuilds the Provider) still introspect after it.

const store = new Map(); // `${model}:${id}` -> { payload, expiresAt (ms) }

function sweep(now) {
  for (const [key, entry] of store) {
    if (entry.expiresAt <= now) store.delete(key);
  }
}

class SharedMemoryAdapter {
  constructor(model) {
    this.model = model;
  }

  key(id) {
    return `${this.model}:${id}`;
  }

  async upsert(id, payload, expiresIn) {
    const now = Date.now();
    sweep(now);
    const expiresAt = typeof expiresIn === 'number' ? now + expiresIn * 1000 : Infinity;
    store.set(this.key(id), { payload: structuredClone(payload), expiresAt });
  }

  async find(id) {
    const entry = store.get(this.key(id));
    if (!entry) return undefined;
    if (entry.expiresAt <= Date.now()) {
      store.delete(this.key(id));
      return undefined;
    }
    return entry.payload;
  }

  async findBy(field, value) {
    for (const [key, entry] of store) {
      if (key.startsWith(`${this.model}:`) && entry.payload[field] === value) {
        return entry.expiresAt > Date.now() ? entry.payload : undefined;
      }
    }
    return undefined;
  }

  findByUid(uid) {
    return this.findBy('uid', uid);
  }

  findByUserCode(userCode) {
    return this.findBy('userCode', userCode);
  }

  async consume(id) {
    const entry = store.get(this.key(id));
    if (entry) entry.payload.consumed = Math.floor(Date.now() / 1000);
  }

  async destroy(id) {
    store.delete(this.key(id));
  }

  async revokeByGrantId(grantId) {
    for (const [key, entry] of store) {
      if (entry.payload.grantId === grantId) store.delete(key);
    }
  }
}

// ---------------------------------------------------------------------------
// The provider. Rebuilt (same issuer, same port) whenever the key set changes,
// since oidc-provider reads its keystore once.

function configuration() {
  return {
    clients: CLIENTS.map((client) => ({
      ...client,
      client_secret: `${client.client_id}-secret`,
      grant_types: ['client_credentials'],
      response_types: [],
      redirect_uris: [],
      // oidc-provider accepts client_secret_post as well from a client
      // registered with either secret method.
      token_endpoint_auth_method: 'client_secret_basic',
    })),
    jwks: { keys },
    adapter: SharedMemoryAdapter,
    // Client scopes must be drawn from here; it is also discovery's
    // scopes_supported.
    scopes: ['openid', 'offline_access', ...RESOURCE_SCOPES],
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      // Any authenticated client may introspect any token.
      introspection: { enabled: true, allowedPolicy: async () => true },
      resourceIndicators: {
        enabled: true,
        // A token request without `resource` gets the first --resource URL as
        // its resource; with no --resource it gets none, and oidc-provider then
        // issues an opaque token without `aud` or API scopes (not usable at a
        // resource server). Both MCP SDKs send `resource` once they have read
        // the server's protected-resource metadata.
        defaultResource: async (_ctx, _client, oneOf) => oneOf ?? extraResources[0],
        getResourceServerInfo,
      },
    },
    // Client-credentials tokens have no account, so oidc-provider sets the JWT
    // `sub` to the client id but leaves it out of introspection responses; an
    // extra claim puts the same `sub` in both.
    extraTokenClaims: async (_ctx, token) => (token.kind === 'ClientCredentials' ? { sub: token.clientId } : undefined),
    ttl: {
      // Pins iat and exp together so exp - iat is exactly the lifetime.
      ClientCredentials(_ctx, token, client) {
        const ttl = client?.clientId === 'short-lived' ? SHORT_TTL : DEFAULT_TTL;
        token.iat ??= Math.floor(Date.now() / 1000);
        token.exp ??= token.iat + ttl;
        return ttl;
      },
      AccessToken: DEFAULT_TTL,
    },
    clientBasedCORS: () => false,
  };
}

let issuer;
let handler;

function rebuild() {
  const provider = new Provider(issuer, configuration());
  provider.on('server_error', (ctx, err) => console.error(`provider: server_error on ${ctx.path}:`, err));
  provider.on('grant.error', (_ctx, err) => console.error(`provider: token request refused: ${err.message} (${err.error_description ?? ''})`));
  provider.on('introspection.error', (_ctx, err) => console.error(`provider: introspection refused: ${err.message}`));
  handler = provider.callback();
}

// ---------------------------------------------------------------------------
// Admin API (no auth: loopback test tool, see the top of this file).

function sendJson(res, status, body) {
  const text = `${JSON.stringify(body)}\n`;
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
  res.end(text);
}

// Introspection requests received (POSTs to the introspection endpoint, answered
// or not), so a test can tell how often a resource server asked.
let introspections = 0;

function keyState() {
  return { kid: keys[0].kid, kids: keys.map((key) => key.kid) };
}

function admin(req, res, pathname) {
  req.resume();
  const route = `${req.method} ${pathname.replace(/\/+$/, '')}`;
  switch (route) {
    case 'GET /admin':
      return sendJson(res, 200, { issuer, ...keyState() });
    case 'POST /admin/rotate':
      keys = [newSigningKey(), ...keys];
      rebuild();
      console.error(`provider: rotated; signing with ${keys[0].kid}`);
      return sendJson(res, 200, keyState());
    case 'POST /admin/retire':
      keys = [keys[0]];
      rebuild();
      console.error(`provider: retired all keys but ${keys[0].kid}`);
      return sendJson(res, 200, keyState());
    case 'GET /admin/keys':
      return sendJson(res, 200, keys[0]);
    case 'GET /admin/introspections':
      return sendJson(res, 200, { introspections });
    default:
      return sendJson(res, 404, {
        error: 'not_found',
        routes: ['GET /admin', 'POST /admin/rotate', 'POST /admin/retire', 'GET /admin/keys', 'GET /admin/introspections'],
      });
  }
}

// ---------------------------------------------------------------------------

const server = http.createServer((req, res) => {
  const { pathname } = new URL(req.url, 'http://localhost');
  if (pathname === '/admin' || pathname.startsWith('/admin/')) {
    admin(req, res, pathname);
  } else if (handler) {
    if (req.method === 'POST' && pathname === '/token/introspection') introspections += 1;
    handler(req, res);
  } else {
    sendJson(res, 503, { error: 'temporarily_unavailable' });
  }
});

function shutdown(reason) {
  console.error(`provider: exiting (${reason})`);
  process.exit(0);
}
process.on('SIGTERM', () => shutdown('SIGTERM'));
process.on('SIGINT', () => shutdown('SIGINT'));

// Exit when the parent closes our stdin, but only if stdin is a pipe or a
// socket: /dev/null or a closed stdin would end at once, and a terminal never.
let stdinIsPipe = false;
try {
  const stat = fs.fstatSync(0);
  stdinIsPipe = stat.isFIFO() || stat.isSocket();
} catch {
  // fd 0 closed: nothing to watch.
}
if (stdinIsPipe) {
  process.stdin.on('end', () => shutdown('stdin closed'));
  process.stdin.on('error', () => shutdown('stdin error'));
  process.stdin.resume();
}

server.on('error', (err) => {
  console.error(`provider: ${err.message}`);
  process.exit(1);
});

server.listen(port, HOST, () => {
  issuer = `http://${HOST}:${server.address().port}`;
  rebuild();
  const ready = {
    issuer,
    admin: `${issuer}/admin`,
    jwks_uri: `${issuer}/jwks`,
    token_endpoint: `${issuer}/token`,
    introspection_endpoint: `${issuer}/token/introspection`,
  };
  process.stdout.write(`${JSON.stringify(ready)}\n`);
  console.error(`provider: listening at ${issuer}`);
});

// Interop: the example `workspace_server` driven by the official TypeScript MCP SDK.
//
// Every test runs over both transports the server offers: stdio (the SDK spawns the binary) and
// streamable HTTP (one server process on a free loopback port per transport block). The binary
// is `target/debug/examples/workspace_server` (override with `WORKSPACE_SERVER_BIN`); build it
// first with `cargo build --workspace --all-features --tests --bins --examples`. The served root is a
// fixture tree made fresh in a temporary directory (see `fixture.mjs`).
//
// What is checked is the MCP mapping of `docs/CONTRACT.md`, from the client's side: the listing has all six tools and
// their schemas compile as JSON Schema 2020-12; every call result carries the envelope as
// `structuredContent`, valid against the tool's output schema (checked twice: by the SDK's own
// `Client.callTool`, which validates once the tools were listed, and by Ajv 2020 here),
// mirrored as compact JSON in the first text content, with `isError === !ok` and the request
// id and tier in `_meta`; the tool's own failures (wrong argument types, a missing file) are
// `isError` results with a `validation` or `not_found` envelope, while an unknown tool is a
// JSON-RPC error; `workspace_stats` reports progress to an `onprogress` callback.
//
// Last, an agent's walk over stdio, on a tree of real source (a copy of every `*.rs` file under
// this repository's `envelope-core/src/`, as tests/interop/test_agent_walk.py serves): the
// commonest identifier there (counted, not hard-coded; it must occur at least 100 times) is
// searched with `limit: 20`, and the `next-page` action of each page is followed 4 times by
// calling its `tool` with its `arguments` exactly as `structuredContent.next_actions` holds them
// (the token is among them; the client adds nothing and reads no `completeness.continuation`,
// which no longer exists): 5 pages of 20, 100 distinct rows, each page starting where the last
// ended, and each page's text content the same JSON as its `structuredContent`.
//
// Run: `npm ci --prefix tests/interop-ts && node --test tests/interop-ts/`.

import assert from 'node:assert/strict';
import {
    copyFileSync,
    existsSync,
    mkdirSync,
    mkdtempSync,
    readdirSync,
    readFileSync,
    realpathSync,
    rmSync,
    statSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ErrorCode, McpError } from '@modelcontextprotocol/sdk/types.js';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

import {
    ENVELOPE_SERVER_OCCURRENCES,
    GRAPH_EDGES,
    GRAPH_NODES,
    NOTES,
    VISIBLE,
    makeFixture,
    removeFixture,
} from './fixture.mjs';
import { LATE_PROGRESS, runSession, startHttpServer } from './servers.mjs';

// Every warning printed while the suite runs fails it: the SDK's own output validator (Ajv,
// `strict: false`) warns about any schema keyword or format it does not know, and schemas that
// are portable give it nothing to warn about. Regression test for #11: schemars' `uint64`, …
// formats drew one warning per compile.
const WARNINGS = [];
for (const level of ['warn', 'error']) {
    const print = console[level];
    console[level] = (...args) => {
        WARNINGS.push(args.map(String).join(' '));
        print(...args);
    };
}

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

// The example keeps its paging key under the user's state directory; the servers this suite
// starts keep it in a directory of this run's instead, so nothing outside it is touched.
process.env.XDG_STATE_HOME = mkdtempSync(join(tmpdir(), 'envelope-interop-ts-state-'));
const BIN = process.env.WORKSPACE_SERVER_BIN
    ? resolve(process.env.WORKSPACE_SERVER_BIN)
    : resolve(REPO, 'target/debug/examples/workspace_server');

const TOOLS = ['change_impact', 'graph_export', 'list_files', 'read_file', 'search_text', 'workspace_stats'];
const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
const VERDICTS = ['SAFE', 'CAUTION', 'REVIEW', 'UNSAFE', 'INFO', 'WARN', 'ERROR', 'NOT_FOUND'];
const CATEGORIES = [
    'transient',
    'validation',
    'permission',
    'not_found',
    'unavailable',
    'internal',
    'module_disabled',
];
const TIERS = ['lite', 'standard', 'heavy'];
/** The tags the example advertises on every transport (HTTP adds `streamable_http`). */
const CAPABILITIES = [
    'standardized_error_envelope',
    'canonical_verdicts',
    'request_ids',
    'complexity_tier',
    'idempotency_declared',
    'tokens_estimated',
    'budget_trimming',
    'completeness',
    'next_actions',
    'continuations',
    'toon_output',
    'progress',
];

/** Per test: spawning, listing and a dozen calls take well under a second; this is a hang. */
const TIMEOUT_MS = 120_000;

/** workspace_stats calls per transport in the progress test: a race loses only some reports. */
const PROGRESS_CALLS = 20;

/** Per-call controls every tool accepts (`docs/CONTRACT.md`). */
const CONTROLS = { response_mode: 'full', output_format: 'json', compact_only: false };

/** What `meta` holds only under `response_mode: 'full'`; the default `compact` mode keeps
 * `request_id`, `truncated` and the trim and drift markers that apply. */
const FULL_ONLY_META = [
    'tool',
    'complexity_tier',
    'idempotent',
    'latency_ms',
    'tokens_estimated',
    'tokens_method',
    'tokens_saved',
    'tokens_saved_pct',
    'baseline_method',
    'layer',
    'schema_version',
    'client_request_id',
    'capabilities',
];
const SCHEMA_VERSION = 3;

const sorted = (values) => [...values].sort();

/**
 * Arguments each tool must accept, with what the answer must say about the fixture.
 * `check(envelope)` sees an envelope already known to be valid and `ok`.
 */
const GOOD_CALLS = [
    {
        tool: 'search_text',
        arguments: { query: 'EnvelopeServer', limit: 5 },
        check(envelope) {
            assert.equal(envelope.data.occurrences.length, 5);
            assert.equal(envelope.completeness.returned, 5);
            assert.equal(envelope.completeness.total, ENVELOPE_SERVER_OCCURRENCES);
            assert.equal(envelope.completeness.truncated, true);
            assert.ok(envelope.next_step.includes(`5 of ${ENVELOPE_SERVER_OCCURRENCES}`), envelope.next_step);
        },
    },
    {
        tool: 'search_text',
        arguments: { query: 'EnvelopeServer' },
        check(envelope) {
            const paths = envelope.data.occurrences.map((hit) => hit.path);
            assert.equal(paths.length, ENVELOPE_SERVER_OCCURRENCES);
            assert.equal(envelope.completeness.complete, true);
            // Hidden and `target` directories are never searched: the summary counts the
            // files searched.
            assert.ok(paths.every((path) => VISIBLE.includes(path)), paths.join(', '));
            assert.ok(envelope.summary_line.endsWith(` of ${VISIBLE.length} files`), envelope.summary_line);
        },
    },
    {
        tool: 'search_text',
        arguments: { query: String.raw`fn\s+\w+`, regex: true, path_glob: '**/*.rs', limit: 3 },
        check(envelope) {
            assert.equal(envelope.data.occurrences.length, 3);
            assert.ok(envelope.data.occurrences.every((hit) => hit.path.endsWith('.rs')));
            assert.equal(envelope.completeness.total, 4);
        },
    },
    {
        tool: 'search_text',
        arguments: { query: 'no-such-text-7f3a' },
        check(envelope) {
            assert.deepEqual(envelope.data.occurrences, []);
            assert.equal(typeof envelope.empty_reason, 'string');
            assert.equal(typeof envelope.diagnosis, 'string');
        },
    },
    {
        tool: 'read_file',
        arguments: { path: 'Cargo.toml', start_line: 1, end_line: 2 },
        check(envelope) {
            assert.equal(envelope.data.path, 'Cargo.toml');
            assert.equal(envelope.data.content, '[workspace]\nmembers = ["crates/demo"]\n');
            assert.equal(envelope.data.total_lines, 3);
        },
    },
    {
        tool: 'read_file',
        arguments: { path: 'crates/demo/src/util.rs' },
        check(envelope) {
            assert.equal(envelope.data.content, 'pub fn answer() -> u32 {\n    42\n}\n');
        },
    },
    {
        tool: 'list_files',
        arguments: { glob: '**/*.toml', limit: 5 },
        check(envelope) {
            assert.deepEqual(envelope.data.files, ['Cargo.toml', 'crates/demo/Cargo.toml']);
            assert.equal(envelope.completeness.complete, true);
        },
    },
    {
        tool: 'list_files',
        arguments: {},
        check(envelope) {
            // The default page (200) is smaller than the tree.
            assert.deepEqual(envelope.data.files, VISIBLE.slice(0, 200));
            assert.equal(envelope.completeness.total, VISIBLE.length);
            assert.equal(envelope.completeness.truncated, true);
        },
    },
    {
        tool: 'workspace_stats',
        arguments: {},
        check(envelope) {
            assert.equal(envelope.data.files, VISIBLE.length);
            assert.equal(envelope.data.by_extension.txt.files, NOTES);
            assert.equal(envelope.data.by_extension.rs.files, 3);
        },
    },
    {
        tool: 'graph_export',
        arguments: {},
        check(envelope) {
            assert.deepEqual(envelope.data.nodes.map((node) => node.id), GRAPH_NODES);
            const edges = envelope.data.edges.map(
                (edge) => `${edge.source} -> ${edge.target} (${edge.kind})`,
            );
            assert.deepEqual(sorted(edges), sorted(GRAPH_EDGES));
            assert.equal(envelope.completeness.complete, true);
        },
    },
    {
        tool: 'graph_export',
        arguments: { max_nodes: 3 },
        check(envelope) {
            // The three Rust files are the best connected.
            assert.deepEqual(envelope.data.nodes.map((node) => node.id), [
                'crates/demo/src/lib.rs',
                'crates/demo/src/server.rs',
                'crates/demo/src/util.rs',
            ]);
            assert.equal(envelope.data.edges.length, 4);
            assert.equal(envelope.completeness.total, GRAPH_NODES.length);
            assert.equal(envelope.completeness.truncated, true);
        },
    },
];

/** Arguments of the wrong type: a `validation` error naming `field` in `error.data.field`. */
const BAD_CALLS = [
    { tool: 'search_text', arguments: { query: 42 }, field: 'query' },
    { tool: 'search_text', arguments: { query: 'x', limit: 'ten' }, field: 'limit' },
    { tool: 'search_text', arguments: { query: 'x', regex: 'yes' }, field: 'regex' },
    { tool: 'read_file', arguments: { path: ['not', 'a', 'string'] }, field: 'path' },
    { tool: 'read_file', arguments: { path: 'Cargo.toml', start_line: 'one' }, field: 'start_line' },
    { tool: 'list_files', arguments: { limit: 'many' }, field: 'limit' },
    { tool: 'list_files', arguments: { limit: -1 }, field: 'limit' },
    { tool: 'list_files', arguments: { glob: 7 }, field: 'glob' },
    { tool: 'graph_export', arguments: { max_nodes: 'all' }, field: 'max_nodes' },
    { tool: 'workspace_stats', arguments: { response_mode: 7 }, field: 'response_mode' },
];

/** Required arguments left out: a `validation` error whose message names the field. */
const MISSING_ARGUMENTS = [
    { tool: 'search_text', arguments: {}, field: 'query' },
    { tool: 'read_file', arguments: {}, field: 'path' },
];

/** Paths that do not exist under the root. */
const MISSING_PATHS = ['no/such/dir/file-7f3a.txt', 'does-not-exist.rs'];

/** Paths that leave the root: never served. */
const ESCAPING_PATHS = ['../../../../../../etc/hostname', '/etc/hostname'];

// --- JSON Schema 2020-12 ---------------------------------------------------------------------

/**
 * Ajv for JSON Schema 2020-12: a schema must be valid against the 2020-12 meta-schema, and
 * unknown keywords or formats are errors rather than silently ignored (`strictSchema`). Ajv's
 * other strict checks are style lints, not validity, and refuse plain 2020-12 such as
 * `"then": {"properties": {"x": {"maxItems": 0}}}` (no `type` beside `maxItems`) or
 * `"not": {"required": ["error"]}`, so they are off.
 */
function makeAjv() {
    const ajv = new Ajv2020({
        strictSchema: true,
        strictNumbers: true,
        strictTypes: false,
        strictTuples: false,
        strictRequired: false,
        allErrors: true,
    });
    // Only JSON Schema's own formats: `strictSchema` then refuses any other, such as `uint64`.
    addFormats(ajv);
    return ajv;
}

const describeErrors = (errors) =>
    (errors ?? []).map((error) => `${error.instancePath || '/'} ${error.message}`).join('; ');

/** Compiles the listing's schemas: `{ name → { tool, input, output } }` of Ajv validators. */
function compileListing(tools) {
    const ajv = makeAjv();
    const compiled = {};
    for (const tool of tools) {
        let input;
        let output;
        assert.doesNotThrow(() => {
            input = ajv.compile(tool.inputSchema);
        }, `${tool.name}'s inputSchema does not compile under Ajv 2020`);
        assert.doesNotThrow(() => {
            output = ajv.compile(tool.outputSchema);
        }, `${tool.name}'s outputSchema does not compile under Ajv 2020`);
        compiled[tool.name] = { tool, input, output };
    }
    return compiled;
}

// --- processes and sessions ------------------------------------------------------------------

/** One HTTP server for `root` on a free loopback port: `{ url, log, stop() }`. */
const startServer = (root) => startHttpServer(BIN, ['--root', root], { cwd: root });

/**
 * Runs `body(client, listing, wire)` on a fresh session over `transport` (see `runSession` for
 * `wire`). `listing` maps each tool's name to its compiled schemas. A failure carries the
 * server's log.
 */
async function withSession(transport, root, http, body) {
    const client = new Client({ name: 'envelope-interop-ts', version: '0.0.0' });
    const clientTransport =
        transport === 'stdio'
            ? new StdioClientTransport({
                  command: BIN,
                  args: ['--root', root],
                  cwd: root,
                  // The SDK passes a child only a few variables by default; the state directory too.
                  env: { ...getDefaultEnvironment(), XDG_STATE_HOME: process.env.XDG_STATE_HOME },
                  stderr: 'pipe',
              })
            : new StreamableHTTPClientTransport(new URL(http.url));
    await runSession(client, transport, clientTransport, http, async (wire) => {
        const listing = compileListing(await listTools(client));
        await body(client, listing, wire);
    });
}

/** Every listed tool, following `nextCursor`. The SDK caches output validators from this. */
async function listTools(client) {
    const tools = [];
    let cursor;
    do {
        const page = await client.listTools(cursor ? { cursor } : {});
        tools.push(...page.tools);
        cursor = page.nextCursor;
    } while (cursor);
    return tools;
}

/** A tool call through the SDK; `Client.callTool` validates `structuredContent` itself. */
async function call(client, name, args, options) {
    return client.callTool({ name, arguments: args }, undefined, options);
}

const show = (value) => JSON.stringify(value);

/**
 * The MCP mapping of one call result; returns the envelope. `context` is the call's arguments
 * (or what names the call in a failure): when they ask for `response_mode: 'full'`, `meta`
 * carries the stamps (tool, tier, schema version) that the default `compact` mode leaves out.
 */
function checkResult(result, entry, context) {
    const where = `${entry.tool.name} ${show(context)}`;
    const full = context?.response_mode === 'full';
    const envelope = result.structuredContent;
    assert.ok(
        envelope !== null && typeof envelope === 'object' && !Array.isArray(envelope),
        `${where}: no structuredContent in ${show(result)}`,
    );
    assert.ok(
        entry.output(envelope),
        `${where}: structuredContent violates the outputSchema: ${describeErrors(entry.output.errors)}\n${show(envelope)}`,
    );

    assert.equal(typeof envelope.ok, 'boolean', where);
    // The MCP mapping: `isError = !ok`, sent either way (an absent `isError` would mean false).
    assert.equal(typeof result.isError, 'boolean', `${where}: isError is not sent`);
    assert.equal(result.isError, !envelope.ok, `${where}: isError contradicts the envelope`);
    assert.ok(VERDICTS.includes(envelope.verdict), where);
    if (envelope.ok) {
        assert.ok('data' in envelope && !('error' in envelope), where);
        assert.notEqual(envelope.verdict, 'ERROR', where);
    } else {
        assert.ok('error' in envelope && !('data' in envelope), where);
        assert.equal(envelope.verdict, 'ERROR', where);
        assert.ok(CATEGORIES.includes(envelope.error.category), where);
        assert.equal(typeof envelope.error.message, 'string', where);
        assert.ok(envelope.error.message.length > 0, where);
        assert.equal(typeof envelope.error.retryable, 'boolean', where);
    }

    // The first text content mirrors the envelope as compact JSON.
    assert.ok(result.content.length > 0, `${where}: no content`);
    const [first] = result.content;
    assert.equal(first.type, 'text', where);
    assert.deepEqual(JSON.parse(first.text), envelope, `${where}: text and structuredContent differ`);
    // JSON strings escape their newlines, so a raw one is pretty-printing.
    assert.ok(!first.text.includes('\n'), `${where}: the text is not compact JSON`);

    const { meta } = envelope;
    assert.match(meta.request_id, ULID, where);
    // Every answer, an error's included, says whether the budget cut it.
    assert.equal(typeof meta.truncated, 'boolean', `${where}: ${show(meta)}`);
    if (full) {
        assert.equal(meta.tool, entry.tool.name, where);
        assert.ok(TIERS.includes(meta.complexity_tier), where);
        assert.equal(meta.schema_version, SCHEMA_VERSION, where);
        assert.equal(entry.tool._meta?.['rs.envelope/tier'], meta.complexity_tier, where);
    } else {
        // The default `compact` mode leaves the observability stamps to `full`.
        const stamped = FULL_ONLY_META.filter((key) => key in meta);
        assert.deepEqual(stamped, [], `${where}: compact meta ${show(meta)}`);
    }
    assert.ok(result._meta, `${where}: result _meta is missing`);
    assert.equal(result._meta['rs.envelope/request_id'], meta.request_id, where);
    assert.ok(TIERS.includes(result._meta['rs.envelope/tier']), where);
    assert.equal(entry.tool._meta?.['rs.envelope/tier'], result._meta['rs.envelope/tier'], where);
    // Every result, an error's included, says what the server supports.
    for (const tag of CAPABILITIES) {
        assert.ok(result._meta['rs.envelope/capabilities']?.includes(tag), `${where}: ${tag}`);
    }
    return envelope;
}

// --- the suite -------------------------------------------------------------------------------

let root;

before(() => {
    assert.ok(
        existsSync(BIN),
        `${BIN} is missing: run \`cargo build --workspace --all-features --tests --bins --examples\` first`,
    );
    root = makeFixture();
});

after(() => {
    if (root) removeFixture(root);
    rmSync(process.env.XDG_STATE_HOME, { recursive: true, force: true });
});

for (const transport of ['stdio', 'http']) {
    describe(`over ${transport}`, () => {
        let http;

        before(async () => {
            if (transport === 'http') http = await startServer(root);
        });

        after(async () => {
            await http?.stop();
        });

        const session = (body) => withSession(transport, root, http, body);

        test('the listing has all six tools, and every schema compiles as 2020-12', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                assert.deepEqual(sorted(Object.keys(listing)), TOOLS);
                for (const [name, { tool }] of Object.entries(listing)) {
                    assert.ok(tool.description, name);
                    assert.equal(tool.inputSchema.type, 'object', name);
                    assert.ok(tool.outputSchema, `${name} has no outputSchema`);
                    assert.equal(tool.outputSchema.type, 'object', name);
                    // What the example declares, and nothing it did not: a read-only tool lists
                    // no destructiveHint (meaningless beside readOnlyHint: true).
                    assert.deepEqual(
                        Object.keys(tool.annotations ?? {}).sort(),
                        ['idempotentHint', 'openWorldHint', 'readOnlyHint', 'title'],
                        name,
                    );
                    assert.equal(tool.annotations.readOnlyHint, true, name);
                    assert.equal(tool.annotations.openWorldHint, false, name);
                    assert.equal(tool.annotations.title, tool.title, name);
                    assert.ok(TIERS.includes(tool._meta?.['rs.envelope/tier']), name);
                    // The project's prefix only: nothing under the reserved ones.
                    for (const key of Object.keys(tool._meta)) {
                        assert.ok(
                            !key.startsWith('io.modelcontextprotocol/') && !key.startsWith('mcp'),
                            `${name} _meta key ${key}`,
                        );
                    }
                }
                // compileListing already compiled every schema; the SDK compiled the output
                // schemas too (listTools caches its validators).
            }));

        test('the input schemas agree with the good and the bad arguments', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                for (const { tool, arguments: args } of GOOD_CALLS) {
                    const { input } = listing[tool];
                    assert.ok(input(args), `${tool} ${show(args)}: ${describeErrors(input.errors)}`);
                    const controlled = { ...args, ...CONTROLS };
                    assert.ok(input(controlled), `${tool} ${show(controlled)}: ${describeErrors(input.errors)}`);
                }
                // The lean listing (the default) leaves the per-call controls out of every input
                // schema and names them once, in the instructions; the server still refuses a
                // bad one (the next test but one).
                const instructions = client.getInstructions() ?? '';
                for (const control of Object.keys(CONTROLS)) {
                    assert.ok(instructions.includes(`\`${control}\``), `${control} is not in the instructions: ${instructions}`);
                    for (const [name, { tool }] of Object.entries(listing)) {
                        assert.ok(!(control in (tool.inputSchema.properties ?? {})), `${name} lists ${control}`);
                    }
                }
                for (const { tool, arguments: args, field } of [...BAD_CALLS, ...MISSING_ARGUMENTS]) {
                    if (field in CONTROLS) continue;
                    assert.equal(listing[tool].input(args), false, `${tool}'s inputSchema accepts ${show(args)}`);
                }
            }));

        test('good calls answer ok envelopes that match the fixture', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                for (const { tool, arguments: args, check } of GOOD_CALLS) {
                    const result = await call(client, tool, args);
                    const envelope = checkResult(result, listing[tool], args);
                    assert.equal(envelope.ok, true, `${tool} ${show(args)}: ${show(envelope)}`);
                    check(envelope);
                }
                // With the per-call controls too, `meta` in full: stamped with the tool.
                for (const { tool, arguments: args } of GOOD_CALLS) {
                    const controlled = { ...args, ...CONTROLS };
                    const result = await call(client, tool, controlled);
                    const envelope = checkResult(result, listing[tool], controlled);
                    assert.equal(envelope.ok, true, `${tool} ${show(controlled)}: ${show(envelope)}`);
                    assert.ok(!envelope.warnings?.length, show(envelope.warnings));
                }
            }));

        test('arguments of the wrong type are isError results with a validation envelope naming the field', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                for (const { tool, arguments: bad, field } of BAD_CALLS) {
                    // An error's `meta` too: compact by default, stamped under `full` (unless
                    // `response_mode` is the bad argument).
                    const variants = 'response_mode' in bad ? [bad] : [bad, { ...bad, response_mode: 'full' }];
                    for (const args of variants) {
                        const result = await call(client, tool, args);
                        const envelope = checkResult(result, listing[tool], args);
                        const where = `${tool} ${show(args)}: ${show(envelope)}`;
                        assert.equal(result.isError, true, where);
                        assert.equal(envelope.error.category, 'validation', where);
                        assert.equal(envelope.error.retryable, false, where);
                        assert.equal(envelope.error.data?.field, field, where);
                        assert.ok(envelope.error.message.includes(field), where);
                    }
                }
                for (const { tool, arguments: args, field } of MISSING_ARGUMENTS) {
                    const result = await call(client, tool, args);
                    const envelope = checkResult(result, listing[tool], args);
                    const where = `${tool} ${show(args)}: ${show(envelope)}`;
                    assert.equal(result.isError, true, where);
                    assert.equal(envelope.error.category, 'validation', where);
                    assert.ok(envelope.error.message.includes(`\`${field}\``), where);
                }
            }));

        test('read_file of a missing path is a not_found isError result', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                for (const path of MISSING_PATHS) {
                    const result = await call(client, 'read_file', { path });
                    const envelope = checkResult(result, listing.read_file, { path });
                    assert.equal(result.isError, true, show(envelope));
                    assert.equal(envelope.error.category, 'not_found', show(envelope));
                    assert.equal(envelope.error.retryable, false, show(envelope));
                }
            }));

        test('paths outside the root are refused as isError results', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                for (const path of ESCAPING_PATHS) {
                    const result = await call(client, 'read_file', { path });
                    const envelope = checkResult(result, listing.read_file, { path });
                    assert.equal(result.isError, true, show(envelope));
                    assert.ok(
                        ['permission', 'validation', 'not_found'].includes(envelope.error.category),
                        show(envelope),
                    );
                }
            }));

        test('an unknown tool is a JSON-RPC error (-32602), and the session survives it', { timeout: TIMEOUT_MS }, () =>
            session(async (client, listing) => {
                await assert.rejects(call(client, 'no_such_tool', {}), (error) => {
                    assert.ok(error instanceof McpError, `not an McpError: ${error}`);
                    assert.equal(error.code, ErrorCode.InvalidParams, String(error));
                    assert.equal(error.code, -32602);
                    return true;
                });
                const args = { path: 'Cargo.toml', end_line: 1 };
                const result = await call(client, 'read_file', args);
                const envelope = checkResult(result, listing.read_file, args);
                assert.equal(envelope.ok, true, show(envelope));
            }));

        // The server's side is checked on the wire: every report, in order, before the result.
        // The SDK's callback may miss the last reports of a call. `Protocol` dispatches a
        // notification on a microtask but a response synchronously, so when both arrive in one
        // read (stdio, mostly) the response retires the progress handler first and the SDK
        // reports "Received a progress notification for an unknown token" through `onerror`
        // instead of calling `onprogress` (typescript-sdk issue #2580, open for 1.32.2). So the
        // callback must get the reports in order and every one it misses must be such an error.
        test('workspace_stats reports progress to the onprogress callback', { timeout: TIMEOUT_MS }, (t) =>
            session(async (client, listing, wire) => {
                const total = VISIBLE.length;
                let delivered = 0;
                let dropped = 0;
                for (let round = 0; round < PROGRESS_CALLS; round++) {
                    const seen = wire.messages.length;
                    const errors = wire.errors.length;
                    const events = [];
                    const result = await call(client, 'workspace_stats', {}, {
                        onprogress: (progress) => events.push(progress),
                    });
                    const envelope = checkResult(result, listing.workspace_stats, { round });
                    assert.equal(envelope.ok, true, show(envelope));

                    // On the wire: the reports for this call's token, then its response.
                    const messages = wire.messages.slice(seen);
                    const answer = messages.findIndex((message) => 'id' in message && !('method' in message));
                    assert.ok(answer >= 0, `round ${round}: no response on the wire`);
                    const token = messages[answer].id;
                    const reports = messages.filter((message) => message.method === 'notifications/progress');
                    const where = `round ${round}: ${show(reports.map((report) => report.params))}`;
                    assert.ok(
                        reports.every((report) => report.params.progressToken === token),
                        `progress for another token, ${where}`,
                    );
                    assert.ok(
                        messages.slice(answer + 1).every((message) => message.method !== 'notifications/progress'),
                        `progress sent after the result, ${where}`,
                    );
                    // Start (0), every 100 files, and the end.
                    const values = reports.map((report) => report.params.progress);
                    assert.deepEqual(values, [0, 100, 200, total], where);
                    for (const report of reports) {
                        assert.equal(report.params.total, total, where);
                        assert.equal(typeof report.params.message, 'string', where);
                    }

                    // Through the SDK: a prefix of the reports, the rest reported as late.
                    const expected = reports.slice(0, events.length).map(({ params }) => {
                        const { progressToken: _token, ...rest } = params;
                        return rest;
                    });
                    assert.deepEqual(events, expected, where);
                    const late = wire.errors.slice(errors);
                    assert.equal(late.length, reports.length - events.length, `${where}; ${late.join('; ')}`);
                    for (const error of late) {
                        assert.match(String(error), LATE_PROGRESS);
                    }
                    delivered += events.length;
                    dropped += late.length;
                }
                // Without a callback, no progress token is sent and the call still answers.
                const seen = wire.messages.length;
                const result = await call(client, 'workspace_stats', {});
                assert.equal(checkResult(result, listing.workspace_stats, {}).ok, true);
                assert.ok(
                    wire.messages.slice(seen).every((message) => message.method !== 'notifications/progress'),
                    'progress sent without a progress token',
                );
                // Some reports reach the callback: the race loses the last ones of a call, rarely all.
                assert.ok(delivered > 0, `no progress reached the callback in ${PROGRESS_CALLS} calls`);
                t.diagnostic(`${delivered} progress reports reached the callback, ${dropped} lost to the SDK's race`);
            }));
    });
}

// --- an agent walk: paging by the next-page action, copied verbatim ---------------------------

/** The walk's sources: every `*.rs` file under this directory, recursively. */
const WALK_SOURCES = join(REPO, 'envelope-core', 'src');
/** The page size the first search asks for; the `next-page` actions carry it on. */
const WALK_PAGE = 20;
/** Pages read: the first search, then this many follows plus one. */
const WALK_PAGES = 5;
const WALK_HITS = WALK_PAGE * WALK_PAGES;

/**
 * A copy of every `*.rs` file under `WALK_SOURCES`, at its path relative to the repository
 * (`envelope-core/src/…`), byte for byte, in a fresh temporary directory: `{ root, texts }`,
 * `texts` the files' contents.
 */
function makeWalkTree() {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'envelope-interop-ts-walk-')));
    const texts = [];
    for (const rel of readdirSync(WALK_SOURCES, { recursive: true }).sort()) {
        const source = join(WALK_SOURCES, rel);
        if (!rel.endsWith('.rs') || !statSync(source).isFile()) continue;
        const target = join(root, 'envelope-core', 'src', rel);
        mkdirSync(dirname(target), { recursive: true });
        copyFileSync(source, target);
        texts.push(readFileSync(source, 'utf8'));
    }
    assert.ok(texts.length > 0, `no *.rs file under ${WALK_SOURCES}`);
    return { root, texts };
}

/**
 * The word the walk searches, `{ word, occurrences }`: the identifier of at least five
 * characters that occurs most often in `texts` as a whole word (ties: the first in code-unit
 * order), and how many occurrences `search_text` finds of it: as a literal, case-sensitive
 * substring, line by line, left to right without overlap.
 */
function commonestWord(texts) {
    const counts = new Map();
    for (const text of texts) {
        for (const [word] of text.matchAll(/[A-Za-z_][A-Za-z0-9_]{4,}/g)) {
            counts.set(word, (counts.get(word) ?? 0) + 1);
        }
    }
    const [[word]] = [...counts].sort(([a, m], [b, n]) => n - m || (a < b ? -1 : a > b ? 1 : 0));
    let occurrences = 0;
    for (const text of texts) {
        for (const line of text.split('\n')) occurrences += line.split(word).length - 1;
    }
    return { word, occurrences };
}

describe('an agent walk over stdio: search_text paged by its next-page action, copied verbatim', () => {
    let tree;

    before(() => {
        tree = makeWalkTree();
    });

    after(() => {
        if (tree) removeFixture(tree.root);
    });

    test(`${WALK_PAGES} pages of ${WALK_PAGE}, ${WALK_HITS} distinct rows, every follow the shown next-page action verbatim`, { timeout: TIMEOUT_MS }, () =>
        withSession('stdio', tree.root, undefined, async (client, listing) => {
            const { word, occurrences } = commonestWord(tree.texts);
            assert.ok(
                occurrences >= WALK_HITS,
                `the commonest identifier, \`${word}\`, occurs ${occurrences} times: the walk reads ${WALK_HITS}`,
            );
            const first = { query: word, limit: WALK_PAGE };
            let request = { name: 'search_text', arguments: first };
            const rows = [];
            const tokens = new Set();
            // Each follow: the action as the page showed it, and the request made from it.
            const follows = [];
            let pages = 0;
            for (;;) {
                const result = await call(client, request.name, request.arguments);
                const where = `page ${pages + 1} (${show(request)})`;
                const envelope = checkResult(result, listing[request.name], request.arguments);
                pages += 1;
                // The text a client without structured output reads is the same answer.
                assert.equal(result.content[0].type, 'text', where);
                assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent, where);
                assert.equal(envelope.ok, true, `${where}: ${show(envelope)}`);
                const { completeness } = envelope;
                assert.equal(completeness.total, occurrences, `${where}: ${show(completeness)}`);
                // Each page starts where the last one ended.
                assert.equal(completeness.offset ?? 0, rows.length, `${where}: ${show(completeness)}`);
                assert.equal(envelope.data.occurrences.length, WALK_PAGE, `${where}: ${show(completeness)}`);
                assert.equal(completeness.returned, WALK_PAGE, `${where}: ${show(completeness)}`);
                // The token's one place is the next-page action's arguments.
                assert.ok(!('continuation' in completeness), `${where}: ${show(completeness)}`);
                rows.push(...envelope.data.occurrences);

                const actions = envelope.next_actions ?? [];
                assert.ok(actions.every((action) => !('continuation_arg' in action)), `${where}: ${show(actions)}`);
                const nextPages = actions.filter((action) => action.id === 'next-page');
                assert.equal(nextPages.length, rows.length < occurrences ? 1 : 0, `${where}: ${show(actions)}`);
                if (pages === WALK_PAGES) break;
                const [action] = nextPages;
                const token = action.arguments.continuation;
                assert.equal(typeof token, 'string', `${where}: ${show(action)}`);
                assert.ok(token.length > 0 && !tokens.has(token), `${where}: ${show(action)}`);
                tokens.add(token);
                // The same search, continued: its arguments are the first call's plus the token.
                assert.equal(action.tool, 'search_text', `${where}: ${show(action)}`);
                assert.deepEqual(action.arguments, { ...first, continuation: token }, `${where}: ${show(action)}`);
                // Followed as given: the action's own `tool` and `arguments`, nothing added.
                request = { name: action.tool, arguments: action.arguments };
                follows.push({ shown: structuredClone(action), request: structuredClone(request) });
            }

            assert.equal(pages, WALK_PAGES);
            assert.equal(follows.length, WALK_PAGES - 1);
            for (const { shown, request: made } of follows) {
                assert.deepEqual(made, { name: shown.tool, arguments: shown.arguments });
            }
            assert.equal(rows.length, WALK_HITS);
            const places = new Set(rows.map((hit) => show([hit.path, hit.line, hit.column])));
            assert.equal(places.size, WALK_HITS, `${WALK_HITS - places.size} rows came twice`);
            assert.ok(rows.every((hit) => hit.text.includes(word)), 'a row without the word');
        }));
});

// Last, after both transports: the SDK and Ajv printed no warning at all (the servers' own
// logs are collected per test, not printed).
test('the suite\'s Ajv refuses a non-standard format, so a listing using one fails it', () => {
    assert.throws(() => makeAjv().compile({ type: 'integer', format: 'uint64' }), /unknown format/);
});

test('no warning was printed while the suite ran', () => {
    assert.deepEqual(WARNINGS, []);
});

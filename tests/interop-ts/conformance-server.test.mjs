// Interop: the conformance server's envelope tools driven by the official TypeScript MCP SDK.
//
// Every test runs over both transports the server offers: stdio (the SDK spawns the binary) and
// streamable HTTP (one server process on a free loopback port per transport block). The binary
// is `target/debug/conformance-server` (override with `CONFORMANCE_SERVER`); build it first with
// `cargo build --workspace --all-features --tests --bins --examples`.
//
// What is checked, from the client's side:
// - media (`docs/CONTRACT.md`, "Media beside the envelope"): the result parses under the SDK's
//   `CallToolResultSchema` (the wire message too, not only what `callTool` hands back), its
//   first block is text mirroring `structuredContent` as JSON, each attachment after it parses
//   under the SDK's `ImageContentSchema`, `AudioContentSchema` or `EmbeddedResourceSchema` with
//   base64 that decodes to the file it claims to be, and `meta.attachments` notes every block,
//   in order, `delivery: 'sent'`, with `bytes` the decoded size;
// - elicitation: with `capabilities: { elicitation: {} }` and a handler set for
//   `ElicitRequestSchema`, `test_elicitation` asks a flat object schema and answers what the
//   handler did (accept with its content, decline); a client without the capability is never
//   asked, and the tool answers `elicitation_unavailable`;
// - progress: `test_tool_with_progress` sends its three reports (0, 50, 100 of 100) before the
//   result, and `onprogress` gets them in order.
//
// Run: `npm ci --prefix tests/interop-ts && node --test tests/interop-ts/conformance-server.test.mjs`.

import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
    AudioContentSchema,
    CallToolResultSchema,
    ElicitRequestSchema,
    EmbeddedResourceSchema,
    ImageContentSchema,
    TextContentSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { runSession, startHttpServer } from './servers.mjs';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.CONFORMANCE_SERVER
    ? resolve(process.env.CONFORMANCE_SERVER)
    : resolve(REPO, 'target/debug/conformance-server');
const BUILD = 'cargo build --workspace --all-features --tests --bins --examples';

const ULID = /^[0-7][0-9A-HJKMNP-TV-Z]{25}$/;
/** Per test: a session and a few calls take well under a second; this is a hang. */
const TIMEOUT_MS = 120_000;

const PNG_MAGIC = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Each media tool's blocks after the envelope's text mirror, in order. */
const MEDIA = {
    test_image_content: [{ type: 'image', mimeType: 'image/png' }],
    test_audio_content: [{ type: 'audio', mimeType: 'audio/wav' }],
    test_embedded_resource: [
        {
            type: 'resource',
            mimeType: 'text/plain',
            uri: 'test://embedded-resource',
            text: 'This is an embedded resource content.',
        },
    ],
    test_multiple_content_types: [
        { type: 'image', mimeType: 'image/png' },
        {
            type: 'resource',
            mimeType: 'application/json',
            uri: 'test://mixed-content-resource',
            text: '{"test":"data","value":123}',
        },
    ],
};
const BLOCK_SCHEMAS = { image: ImageContentSchema, audio: AudioContentSchema, resource: EmbeddedResourceSchema };

const ELICIT_MESSAGE = 'Who are you?';
const ELICIT_ANSWER = { username: 'ada', email: 'ada@example.org' };

const show = (value) => JSON.stringify(value);

// --- processes and sessions ------------------------------------------------------------------

/** One HTTP server on a free loopback port: `{ url, log, stop() }`. */
const startServer = () => startHttpServer(BIN, [], { cwd: REPO });

/**
 * Runs `body(client, wire)` on a fresh session over `transport` (see `runSession` for `wire`).
 * `options.elicit`, when given, is the `elicitation/create` handler, and the client declares
 * `elicitation`; without it the client declares nothing. A failure carries the server's log.
 */
async function withSession(transport, http, options, body) {
    const capabilities = options.elicit ? { elicitation: {} } : {};
    const client = new Client({ name: 'envelope-interop-ts', version: '0.0.0' }, { capabilities });
    if (options.elicit) client.setRequestHandler(ElicitRequestSchema, options.elicit);
    const clientTransport =
        transport === 'stdio'
            ? new StdioClientTransport({
                  command: BIN,
                  args: ['--stdio'],
                  cwd: REPO,
                  env: getDefaultEnvironment(),
                  stderr: 'pipe',
              })
            : new StreamableHTTPClientTransport(new URL(http.url));
    await runSession(client, transport, clientTransport, http, async (wire) => {
        // Listed first, so `callTool` validates `structuredContent` against the output schemas.
        await client.listTools();
        await body(client, wire);
    });
}

/** A tool call through the SDK, parsed with its `CallToolResultSchema`. */
async function call(client, name, args, options) {
    return client.callTool({ name, arguments: args }, CallToolResultSchema, options);
}

/** The envelope of one result: `structuredContent`, mirrored as JSON by the first block (SDK
 * text content), with `isError === !ok` and the request id in `meta` and `_meta`. */
function checkEnvelope(result, where) {
    const envelope = result.structuredContent;
    assert.ok(envelope && typeof envelope === 'object', `${where}: no structuredContent in ${show(result)}`);
    assert.equal(typeof envelope.ok, 'boolean', where);
    assert.equal(result.isError, !envelope.ok, `${where}: isError contradicts the envelope`);
    assert.ok(result.content.length > 0, `${where}: no content`);
    const first = TextContentSchema.parse(result.content[0]);
    assert.deepEqual(JSON.parse(first.text), envelope, `${where}: text and structuredContent differ`);
    assert.match(envelope.meta.request_id, ULID, where);
    assert.equal(result._meta?.['rs.envelope/request_id'], envelope.meta.request_id, where);
    return envelope;
}

/** The one response on the wire since `seen` messages, and the messages before it. */
function responseOnTheWire(wire, seen, where) {
    const messages = wire.messages.slice(seen);
    const answer = messages.findIndex((message) => 'id' in message && !('method' in message));
    assert.ok(answer >= 0, `${where}: no response on the wire`);
    return { messages, answer };
}

/** Strict base64: decodes, and encodes back to the very same text. */
function decodeBase64(data, where) {
    const bytes = Buffer.from(data, 'base64');
    assert.equal(bytes.toString('base64'), data, `${where}: not canonical base64`);
    return bytes;
}

// --- the suite -------------------------------------------------------------------------------

before(() => {
    assert.ok(existsSync(BIN), `${BIN} is missing: run \`${BUILD}\` first`);
});

for (const transport of ['stdio', 'http']) {
    describe(`conformance server over ${transport}`, () => {
        let http;

        before(async () => {
            if (transport === 'http') http = await startServer();
        });

        after(async () => {
            await http?.stop();
        });

        const session = (options, body) => withSession(transport, http, options, body);

        for (const [tool, expected] of Object.entries(MEDIA)) {
            test(`${tool}: the SDK's own content blocks, each noted in meta.attachments`, { timeout: TIMEOUT_MS }, () =>
                session({}, async (client, wire) => {
                    const seen = wire.messages.length;
                    const result = await call(client, tool, {});
                    // What the wire carried parses under the SDK's schema to the same result.
                    const { messages, answer } = responseOnTheWire(wire, seen, tool);
                    const parsed = CallToolResultSchema.safeParse(messages[answer].result);
                    assert.ok(parsed.success, `${tool}: ${parsed.error}`);
                    assert.deepEqual(parsed.data, result, tool);

                    const envelope = checkEnvelope(result, tool);
                    assert.equal(envelope.ok, true, show(envelope));
                    const blocks = result.content.slice(1);
                    assert.deepEqual(
                        blocks.map((block) => block.type),
                        expected.map((want) => want.type),
                        `${tool}: ${show(blocks)}`,
                    );
                    const notes = blocks.map((raw, index) => {
                        const want = expected[index];
                        const where = `${tool} block ${index + 1}`;
                        const block = BLOCK_SCHEMAS[want.type].parse(raw);
                        if (want.type === 'resource') {
                            const { resource } = block;
                            assert.equal(resource.uri, want.uri, where);
                            assert.equal(resource.mimeType, want.mimeType, where);
                            assert.equal(resource.text, want.text, where);
                            assert.ok(!('blob' in resource), where);
                            return {
                                kind: 'resource',
                                mime_type: want.mimeType,
                                bytes: Buffer.byteLength(resource.text, 'utf8'),
                                uri: want.uri,
                                delivery: 'sent',
                            };
                        }
                        assert.equal(block.mimeType, want.mimeType, where);
                        const bytes = decodeBase64(block.data, where);
                        if (want.type === 'image') {
                            assert.ok(bytes.subarray(0, 8).equals(PNG_MAGIC), `${where}: not a PNG`);
                        } else {
                            assert.equal(bytes.subarray(0, 4).toString('latin1'), 'RIFF', where);
                            assert.equal(bytes.subarray(8, 12).toString('latin1'), 'WAVE', where);
                        }
                        return { kind: want.type, mime_type: want.mimeType, bytes: bytes.length, delivery: 'sent' };
                    });
                    assert.deepEqual(envelope.meta.attachments, notes, tool);
                }));
        }

        for (const [action, answer, expected] of [
            ['accept', { action: 'accept', content: ELICIT_ANSWER }, { action: 'accept', content: ELICIT_ANSWER }],
            ['decline', { action: 'decline' }, { action: 'decline', content: null }],
        ]) {
            test(`test_elicitation: the handler's ${action} is the tool's answer`, { timeout: TIMEOUT_MS }, () => {
                const asked = [];
                const elicit = async (request) => {
                    asked.push(request.params);
                    return answer;
                };
                return session({ elicit }, async (client) => {
                    const result = await call(client, 'test_elicitation', { message: ELICIT_MESSAGE });
                    const envelope = checkEnvelope(result, action);
                    assert.equal(asked.length, 1, show(asked));
                    const [params] = asked;
                    assert.equal(params.message, ELICIT_MESSAGE);
                    assert.ok(params.mode === undefined || params.mode === 'form', show(params));
                    const schema = params.requestedSchema;
                    assert.equal(schema?.type, 'object', show(params));
                    assert.deepEqual(Object.keys(schema.properties).sort(), ['email', 'username'], show(schema));
                    assert.deepEqual([...schema.required].sort(), ['email', 'username'], show(schema));
                    assert.equal(envelope.ok, true, show(envelope));
                    assert.deepEqual(envelope.data, expected, show(envelope));
                });
            });
        }

        test('test_elicitation: a client without the capability is never asked: elicitation_unavailable', { timeout: TIMEOUT_MS }, () =>
            session({}, async (client, wire) => {
                const seen = wire.messages.length;
                const result = await call(client, 'test_elicitation', { message: ELICIT_MESSAGE });
                const asks = wire.messages.slice(seen).filter((message) => message.method === 'elicitation/create');
                assert.deepEqual(asks, [], 'the server asked a client that declared no elicitation');
                const envelope = checkEnvelope(result, 'unavailable');
                assert.equal(result.isError, true);
                assert.equal(envelope.error.code, 'elicitation_unavailable', show(envelope));
                assert.equal(envelope.error.category, 'unavailable', show(envelope));
                assert.equal(envelope.error.retryable, false, show(envelope));
            }));

        test('test_tool_with_progress: three reports before the result, in order through onprogress', { timeout: TIMEOUT_MS }, () =>
            session({}, async (client, wire) => {
                const seen = wire.messages.length;
                const errors = wire.errors.length;
                const events = [];
                const result = await call(client, 'test_tool_with_progress', {}, {
                    onprogress: (progress) => events.push(progress),
                });
                const envelope = checkEnvelope(result, 'progress');
                assert.equal(envelope.ok, true, show(envelope));

                // On the wire: the reports for this call's token, then its response.
                const { messages, answer } = responseOnTheWire(wire, seen, 'progress');
                const token = messages[answer].id;
                const reports = messages.filter((message) => message.method === 'notifications/progress');
                const where = show(reports.map((report) => report.params));
                assert.ok(reports.every((report) => report.params.progressToken === token), where);
                assert.ok(
                    messages.slice(answer + 1).every((message) => message.method !== 'notifications/progress'),
                    `progress sent after the result: ${where}`,
                );
                const sent = reports.map(({ params }) => {
                    const { progressToken: _token, ...rest } = params;
                    return rest;
                });
                assert.deepEqual(sent, [0, 50, 100].map((progress) => ({ progress, total: 100, message: 'working' })), where);

                // Through the SDK: a prefix of the reports, any rest reported as late (its race).
                assert.deepEqual(events, sent.slice(0, events.length), where);
                assert.ok(events.length > 0, `no progress reached onprogress: ${where}`);
                const late = wire.errors.slice(errors);
                assert.equal(late.length, sent.length - events.length, late.join('; '));
            }));
    });
}

// What an upstream asks of its client while a call runs, relayed by envelope-proxy to the
// client of that call, and a client's cancellation relayed upstream, driven by the official
// TypeScript SDK: its sampling and elicitation handlers answer the reference server
// (@modelcontextprotocol/server-everything, pinned) through the proxy; the proxy's own test
// upstream (envelope-proxy/tests/fixtures/upstream.py) tells which cancellations and log
// messages crossed.
//
// Run: `npm ci --prefix tests/proxy && node --test tests/proxy/relay.test.mjs`.

import assert from 'node:assert/strict';
import { resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';

import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    LoggingMessageNotificationSchema,
    ResourceListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';

import { ASKED, HERE, connect, envelopeOf, proxied } from './servers.mjs';

const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];
const FIXTURE = ['python3', resolve(HERE, '../../envelope-proxy/tests/fixtures/upstream.py')];
const TIMEOUT_MS = 120_000;

describe('the upstream’s requests reach the client of the call', { timeout: TIMEOUT_MS }, () => {
    let proxy;
    const sampled = [];
    const elicited = [];
    let resourcesChanged = 0;

    before(async () => {
        proxy = await connect(proxied(EVERYTHING), {
            capabilities: ASKED,
            prepare: (client) => {
                client.setRequestHandler(CreateMessageRequestSchema, (request) => {
                    sampled.push(request.params);
                    return {
                        model: 'suite-model',
                        role: 'assistant',
                        content: { type: 'text', text: 'hello from the client' },
                        stopReason: 'endTurn',
                    };
                });
                client.setNotificationHandler(ResourceListChangedNotificationSchema, () => {
                    resourcesChanged += 1;
                });
                client.setRequestHandler(ElicitRequestSchema, (request) => {
                    elicited.push(request.params);
                    return { action: 'accept', content: { name: 'Ada Lovelace', check: true } };
                });
            },
        });
    });

    after(async () => {
        await proxy?.close();
    });

    test('sampling: the client’s model answers the upstream', async () => {
        const result = await proxy.callTool({
            name: 'trigger-sampling-request',
            arguments: { prompt: 'say hi', maxTokens: 20 },
        });
        const envelope = envelopeOf(result);
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.match(JSON.stringify(envelope.data), /hello from the client/);
        assert.match(JSON.stringify(envelope.data), /suite-model/);
        assert.equal(sampled.length, 1);
        assert.match(sampled[0].messages[0].content.text, /say hi/);
        assert.equal(sampled[0].systemPrompt, 'You are a helpful test server.');
    });

    test('elicitation: the client’s user answers the upstream', async () => {
        const result = await proxy.callTool({ name: 'trigger-elicitation-request', arguments: {} });
        const envelope = envelopeOf(result);
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.match(JSON.stringify(envelope.data), /Ada Lovelace/);
        assert.equal(elicited.length, 1);
        assert.equal(elicited[0].requestedSchema.properties.name.type, 'string');
    });

    test('a resource the upstream adds is told to the client, and listed', async () => {
        const before = (await proxy.listResources()).resources.map((resource) => resource.uri);
        assert.ok(!before.some((uri) => uri.endsWith('/notes.txt.gz')), before.join(', '));
        const result = await proxy.callTool({
            name: 'gzip-file-as-resource',
            arguments: {
                name: 'notes.txt.gz',
                data: 'data:text/plain;base64,aGVsbG8gZnJvbSB0aGUgc3VpdGU=',
                outputType: 'resourceLink',
            },
        });
        assert.equal(envelopeOf(result).ok, true, JSON.stringify(result));
        for (let waited = 0; resourcesChanged === 0 && waited < 100; waited += 1) {
            await new Promise((done) => setTimeout(done, 50));
        }
        assert.ok(resourcesChanged > 0, 'the upstream’s notifications/resources/list_changed was not told');
        const listed = (await proxy.listResources()).resources.map((resource) => resource.uri);
        assert.ok(listed.some((uri) => uri.endsWith('/notes.txt.gz')), listed.join(', '));
    });
});

describe('cancellation, log messages and pictures cross the proxy', { timeout: TIMEOUT_MS }, () => {
    let proxy;
    const logged = [];
    const sampled = [];

    before(async () => {
        proxy = await connect(proxied(FIXTURE, ['--upstream-timeout', '30']), {
            capabilities: ASKED,
            prepare: (client) => {
                client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
                    logged.push(notification.params);
                });
                client.setRequestHandler(CreateMessageRequestSchema, (request) => {
                    sampled.push(request.params);
                    return {
                        model: 'vision-model',
                        role: 'assistant',
                        content: { type: 'image', data: 'd29ybGQ=', mimeType: 'image/png' },
                        stopReason: 'endTurn',
                    };
                });
            },
        });
    });

    test('a sampling that shows an image, and an image answered, cross whole', async () => {
        const answered = envelopeOf(await proxy.callTool({ name: 'ask', arguments: { what: 'sample_image' } }));
        assert.equal(answered.ok, true, JSON.stringify(answered));
        assert.equal(sampled.length, 1);
        assert.deepEqual(sampled[0].messages[0].content, { type: 'image', data: 'aGVsbG8=', mimeType: 'image/png' });
        assert.equal(sampled[0].messages[1].content.text, 'What is in the picture?');
        assert.equal(sampled[0].modelPreferences.hints[0].name, 'vision');
        // What the upstream was sent back, as it reports it.
        assert.equal(answered.data.model, 'vision-model', JSON.stringify(answered));
        assert.deepEqual(answered.data.content, { type: 'image', data: 'd29ybGQ=', mimeType: 'image/png' });
    });

    after(async () => {
        await proxy?.close();
    });

    test('a call the client cancels is cancelled upstream', async () => {
        const abort = new AbortController();
        const hanging = proxy.callTool({ name: 'hang', arguments: {} }, undefined, { signal: abort.signal });
        setTimeout(() => abort.abort('changed my mind'), 300);
        await assert.rejects(hanging);
        let told = [];
        for (let attempt = 0; attempt < 50 && told.length === 0; attempt += 1) {
            const said = envelopeOf(await proxy.callTool({ name: 'cancellations', arguments: {} }));
            told = said.data;
            if (told.length === 0) await new Promise((done) => setTimeout(done, 100));
        }
        assert.equal(told.length, 1, JSON.stringify(told));
        assert.equal(told[0].reason, 'the client cancelled the call');
    });

    test('what the upstream logs during a call reaches its client', async () => {
        await proxy.setLoggingLevel('info');
        const said = envelopeOf(await proxy.callTool({ name: 'chatty', arguments: {} }));
        assert.equal(said.data, 'said');
        for (let attempt = 0; attempt < 50 && logged.length === 0; attempt += 1) {
            await new Promise((done) => setTimeout(done, 20));
        }
        assert.ok(
            logged.some((message) => message.data === 'upstream says hi' && message.level === 'info'),
            JSON.stringify(logged),
        );
    });
});

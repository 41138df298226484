// envelope-proxy in front of the official reference server (@modelcontextprotocol/server-everything,
// pinned), driven by the official TypeScript SDK: its tools answered as envelopes (structured
// content, text, media), and its prompts, resources and completion forwarded as they are, the
// same through the proxy as directly.
//
// Run: `npm ci --prefix tests/proxy && node --test tests/proxy/everything.test.mjs`.

import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { ASKED, connect, directly, envelopeOf, proxied, sameTools, textOf } from './servers.mjs';

const EVERYTHING = ['node', 'node_modules/@modelcontextprotocol/server-everything/dist/index.js', 'stdio'];
const TIMEOUT_MS = 120_000;

describe('envelope-proxy in front of server-everything', { timeout: TIMEOUT_MS }, () => {
    let direct;
    let proxy;

    before(async () => {
        // Declaring what the proxy declares upstream: the same tools are listed both ways.
        direct = await connect(directly(EVERYTHING), { capabilities: ASKED });
        proxy = await connect(proxied(EVERYTHING));
    });

    after(async () => {
        await proxy?.close();
        await direct?.close();
    });

    test('the tools are the upstream’s, their annotations as it declares them', async () => {
        const { upstream, fronted } = await sameTools(assert, direct, proxy);
        for (const [name, tool] of upstream) {
            assert.equal(fronted.get(name).description, tool.description, name);
        }
    });

    test('text, structured content and media become the envelope’s data and attachments', async () => {
        const echo = envelopeOf(await proxy.callTool({ name: 'echo', arguments: { message: 'hello' } }));
        assert.equal(echo.ok, true);
        assert.match(JSON.stringify(echo.data), /hello/);

        const sum = await direct.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } });
        const summed = envelopeOf(await proxy.callTool({ name: 'get-sum', arguments: { a: 2, b: 3 } }));
        assert.equal(summed.ok, true);
        assert.equal(summed.data, textOf(sum));

        const structured = await direct.callTool({ name: 'get-structured-content', arguments: { location: 'New York' } });
        const fronted = envelopeOf(
            await proxy.callTool({ name: 'get-structured-content', arguments: { location: 'New York' } }),
        );
        assert.deepEqual(fronted.data, structured.structuredContent);

        const image = await proxy.callTool({ name: 'get-tiny-image', arguments: {} });
        const envelope = envelopeOf(image);
        assert.equal(envelope.ok, true);
        const images = image.content.filter((block) => block.type === 'image');
        assert.equal(images.length, 1, JSON.stringify(envelope.meta));
        const upstreamImage = (await direct.callTool({ name: 'get-tiny-image', arguments: {} })).content.find(
            (block) => block.type === 'image',
        );
        assert.equal(images[0].data, upstreamImage.data);
    });

    test('the upstream’s progress reaches the client, every report before the answer', async () => {
        // The upstream reports each of its steps, the last one just before it answers.
        const steps = 3;
        const relayed = [];
        const result = await proxy.callTool(
            { name: 'trigger-long-running-operation', arguments: { duration: 0.3, steps } },
            undefined,
            { onprogress: (progress) => relayed.push([progress.progress, progress.total]) },
        );
        assert.equal(envelopeOf(result).ok, true);
        assert.deepEqual(
            relayed,
            Array.from({ length: steps }, (_, step) => [step + 1, steps]),
        );
    });

    test('a call the upstream refuses is a typed envelope', async () => {
        const refused = envelopeOf(await proxy.callTool({ name: 'get-sum', arguments: { a: 'two' } }));
        assert.equal(refused.ok, false);
        assert.equal(refused.error.retryable, false, JSON.stringify(refused.error));
    });

    test('prompts, resources and completion are forwarded as they are', async () => {
        const prompts = await direct.listPrompts();
        assert.deepEqual((await proxy.listPrompts()).prompts, prompts.prompts);
        const simple = prompts.prompts.find((prompt) => !(prompt.arguments ?? []).some((arg) => arg.required));
        assert.ok(simple, 'a prompt without required arguments');
        assert.deepEqual(
            (await proxy.getPrompt({ name: simple.name })).messages,
            (await direct.getPrompt({ name: simple.name })).messages,
        );

        const resources = await direct.listResources();
        assert.deepEqual((await proxy.listResources()).resources, resources.resources);
        const first = resources.resources[0];
        assert.deepEqual(
            (await proxy.readResource({ uri: first.uri })).contents,
            (await direct.readResource({ uri: first.uri })).contents,
        );
        const templates = await direct.listResourceTemplates();
        assert.deepEqual((await proxy.listResourceTemplates()).resourceTemplates, templates.resourceTemplates);

        const withArgument = prompts.prompts.find((prompt) => (prompt.arguments ?? []).length > 0);
        if (withArgument && direct.getServerCapabilities()?.completions) {
            const request = {
                ref: { type: 'ref/prompt', name: withArgument.name },
                argument: { name: withArgument.arguments[0].name, value: '' },
            };
            assert.deepEqual((await proxy.complete(request)).completion, (await direct.complete(request)).completion);
        }
    });
});

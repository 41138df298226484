// envelope-proxy in front of the official filesystem server (@modelcontextprotocol/server-filesystem,
// pinned), driven by the official TypeScript SDK as a model would drive it: call a tool, read
// the envelope, follow the `next-page` action exactly as the answer gives it.
//
// The proxy is `target/debug/envelope-proxy` (override with `ENVELOPE_PROXY`); build it first
// with `cargo build --workspace --all-features --tests --bins --examples`.
//
// Run: `npm ci --prefix tests/proxy && node --test tests/proxy/filesystem.test.mjs`.

import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';

import { BUDGET_CHARS, connect, directly, envelopeOf, nextPage, proxied, sameTools, textOf } from './servers.mjs';

const FILESYSTEM = 'node_modules/@modelcontextprotocol/server-filesystem/dist/index.js';
const TIMEOUT_MS = 300_000;

/** A megabyte of text the proxy was not written against: lines of random words, seeded. */
function megabyte() {
    const words = ['river', 'stone', 'cloud', 'ember', 'frost', 'lantern', 'copper', 'meadow', 'quartz', 'harbor'];
    let seed = 20261206;
    const next = () => {
        seed = (seed * 1103515245 + 12345) % 2147483648;
        return seed;
    };
    const lines = [];
    let size = 0;
    while (size < 1_000_000) {
        // Now and then a line far longer than a page holds: it is sent in pieces.
        const count = next() % 97 === 0 ? 9_000 : 1 + (next() % 24);
        const line = Array.from({ length: count }, () => words[next() % words.length]).join(' ');
        lines.push(line);
        size += line.length + 1;
    }
    return lines.join('\n') + '\n';
}

describe('envelope-proxy in front of server-filesystem', { timeout: TIMEOUT_MS }, () => {
    let dir;
    let text;
    let proxy;
    let direct;

    before(async () => {
        dir = mkdtempSync(join(tmpdir(), 'envelope-proxy-fs-'));
        text = megabyte();
        writeFileSync(join(dir, 'big.txt'), text);
        writeFileSync(join(dir, 'small.txt'), 'hello\n');
        direct = await connect(directly(['node', FILESYSTEM, dir]));
        proxy = await connect(proxied(['node', FILESYSTEM, dir]));
    });

    after(async () => {
        await proxy?.close();
        await direct?.close();
        if (dir) rmSync(dir, { recursive: true, force: true });
    });

    test('every tool is listed with its annotations exactly as the upstream declares them', async () => {
        const { upstream, fronted } = await sameTools(assert, direct, proxy);
        for (const [tool, declared] of upstream) {
            for (const name of Object.keys(declared.inputSchema.properties ?? {})) {
                assert.ok(fronted.get(tool).inputSchema.properties[name], `${tool}.${name} is listed`);
            }
        }
        const read = fronted.get('read_text_file');
        assert.ok(read.inputSchema.properties.continuation, 'a read-only tool lists its paging argument');
    });

    test('a megabyte read through the proxy: every answer within the budget, every byte reached by next-page', async () => {
        const path = join(dir, 'big.txt');
        const whole = await direct.callTool({ name: 'read_text_file', arguments: { path } });
        const shownDirectly = textOf(whole).length;
        assert.ok(shownDirectly >= text.length, `the upstream answers the whole file at once (${shownDirectly})`);

        let result = await proxy.callTool({ name: 'read_text_file', arguments: { path } });
        const rows = [];
        let pages = 0;
        let largest = 0;
        for (;;) {
            pages += 1;
            const shown = textOf(result).length;
            largest = Math.max(largest, shown);
            assert.ok(shown <= BUDGET_CHARS, `page ${pages} shows ${shown} characters, over ${BUDGET_CHARS}`);
            const envelope = envelopeOf(result);
            assert.equal(envelope.ok, true, JSON.stringify(envelope).slice(0, 500));
            rows.push(...envelope.data);
            const next = nextPage(envelope);
            if (!next) break;
            // The action exactly as given: its tool, its arguments, nothing filled in.
            result = await proxy.callTool({ name: next.tool, arguments: next.arguments });
        }
        assert.equal(rows.join(''), text, 'the pages joined are the file');
        assert.ok(pages > 20, `${pages} pages`);
        console.log(
            `1 MB through server-filesystem: directly one answer of ${shownDirectly} characters; ` +
                `through the proxy ${pages} pages, the largest ${largest} characters`,
        );
    });

    test('a small file is answered whole, as text', async () => {
        const result = await proxy.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'small.txt') } });
        const envelope = envelopeOf(result);
        assert.equal(envelope.ok, true);
        assert.deepEqual(envelope.data, { content: 'hello\n' });
        assert.equal(nextPage(envelope), undefined);
    });

    test("the upstream's failures are typed, never guessed retryable", async () => {
        const missing = envelopeOf(
            await proxy.callTool({ name: 'read_text_file', arguments: { path: join(dir, 'nope.txt') } }),
        );
        assert.equal(missing.ok, false);
        assert.equal(missing.error.code, 'upstream_tool_error');
        assert.equal(missing.error.category, 'not_found', JSON.stringify(missing.error));
        assert.equal(missing.error.retryable, false);

        const outside = envelopeOf(await proxy.callTool({ name: 'read_text_file', arguments: { path: '/etc/hostname' } }));
        assert.equal(outside.ok, false);
        assert.equal(outside.error.category, 'permission', JSON.stringify(outside.error));
        assert.equal(outside.error.retryable, false);
    });

    test('a write is forwarded once and answered as an envelope', async () => {
        const path = join(dir, 'written.txt');
        const envelope = envelopeOf(
            await proxy.callTool({ name: 'write_file', arguments: { path, content: 'written once\n' } }),
        );
        assert.equal(envelope.ok, true, JSON.stringify(envelope));
        assert.ok(existsSync(path));
        assert.equal(readFileSync(path, 'utf8'), 'written once\n');
    });
});

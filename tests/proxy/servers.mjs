// What the proxy suites share: the upstream spoken to directly or through envelope-proxy, both
// over stdio with the official TypeScript SDK's client, and how an answer reads.

import { existsSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';

export const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
export const PROXY = process.env.ENVELOPE_PROXY
    ? resolve(process.env.ENVELOPE_PROXY)
    : resolve(REPO, 'target/debug/envelope-proxy');
const BUILD = 'cargo build --workspace --all-features --tests --bins --examples';

/** The budget of one answer, in characters: envelope-budget's `AGENT_BUDGET_CHARS`. */
export const BUDGET_CHARS = 32_000;

/** The upstream `command` (program and arguments, run in this directory), spoken to directly. */
export function directly(command) {
    const [program, ...args] = command;
    return { command: program, args, cwd: HERE };
}

/** The upstream `command` behind envelope-proxy; `options` go before the `--`. */
export function proxied(command, options = []) {
    if (!existsSync(PROXY)) {
        throw new Error(`${PROXY} is missing; build it with \`${BUILD}\``);
    }
    return { command: PROXY, args: [...options, '--', ...command], cwd: HERE };
}

/**
 * What envelope-proxy declares to its upstream, which it relays to its own client: a client
 * spoken to directly declares the same, so that an upstream that lists tools by its client's
 * capabilities (server-everything) lists the same ones both ways.
 */
export const ASKED = { sampling: {}, elicitation: { form: {} } };

/**
 * A client of the official SDK connected over stdio to what `spawn` describes, declaring
 * `capabilities`; `prepare(client)` runs before it connects (to set its request handlers).
 */
export async function connect(spawn, { capabilities = {}, prepare } = {}) {
    const transport = new StdioClientTransport({
        ...spawn,
        env: { ...getDefaultEnvironment(), RUST_LOG: 'warn' },
        stderr: 'inherit',
    });
    const client = new Client({ name: 'envelope-proxy-suite', version: '0.0.0' }, { capabilities });
    prepare?.(client);
    await client.connect(transport);
    return client;
}

/**
 * The tools `proxy` lists beside those `direct` lists: the same names, and for each, the
 * upstream's own `annotations` exactly. Returns both listings, each tool by name.
 */
export async function sameTools(assert, direct, proxy) {
    const upstream = (await direct.listTools()).tools;
    const fronted = (await proxy.listTools()).tools;
    assert.deepEqual(fronted.map((tool) => tool.name).sort(), upstream.map((tool) => tool.name).sort());
    const byName = (tools) => new Map(tools.map((tool) => [tool.name, tool]));
    const listed = byName(fronted);
    for (const tool of upstream) {
        assert.deepEqual(listed.get(tool.name).annotations, tool.annotations, tool.name);
    }
    return { upstream: byName(upstream), fronted: listed };
}

/** The text a model is shown of `result`: its text blocks, joined. */
export function textOf(result) {
    return (result.content ?? [])
        .filter((block) => block.type === 'text')
        .map((block) => block.text)
        .join('\n');
}

/** The envelope `result` carries as its structured content. */
export function envelopeOf(result) {
    if (!result.structuredContent) {
        throw new Error(`no envelope in ${JSON.stringify(result).slice(0, 500)}`);
    }
    return result.structuredContent;
}

/** The `next-page` action an envelope offers, if any. */
export function nextPage(envelope) {
    return (envelope.next_actions ?? []).find((action) => action.id === 'next-page');
}

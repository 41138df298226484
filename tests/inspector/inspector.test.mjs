// The MCP Inspector's CLI (pinned in package.json), run as a new user would run it against the
// workspace_server example: it lists the tools and calls every one of them, and nothing it
// prints may be a warning. The Inspector validates each result against the tool's listed
// output schema with Ajv, which warns about any keyword or format it does not know, so a
// listing that is not portable shows up here. Regression test for #11.
//
// Run after `cargo build --workspace --all-features --tests --bins --examples` and `npm ci` here:
//     node --test tests/inspector/inspector.test.mjs

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

import { makeFixture, removeFixture } from '../interop-ts/fixture.mjs';

const run = promisify(execFile);
const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');
const BIN = process.env.WORKSPACE_SERVER_BIN
    ? resolve(process.env.WORKSPACE_SERVER_BIN)
    : resolve(REPO, 'target/debug/examples/workspace_server');
const INSPECTOR = resolve(HERE, 'node_modules/.bin/mcp-inspector');

/** One good call per tool: the listing must hold exactly these, and each must answer ok. */
const CALLS = {
    change_impact: { path: 'crates/demo/src/util.rs' },
    graph_export: { max_nodes: 5 },
    list_files: { glob: '*.rs', limit: 2 },
    read_file: { path: 'Cargo.toml', end_line: 2 },
    search_text: { query: 'EnvelopeServer', limit: 2 },
    workspace_stats: {},
};

/** The full `meta`, which stamps the tool's tier (the default `compact` one leaves it out). */
const FULL = { response_mode: 'full' };

/** Lines that are a warning, whoever printed them. */
const WARNING = /\b(warn(ing)?|unknown format|strict mode)\b/i;

let root;
let state;

before(() => {
    assert.ok(
        existsSync(BIN),
        `${BIN} is missing: run \`cargo build --workspace --all-features --tests --bins --examples\` first`,
    );
    assert.ok(existsSync(INSPECTOR), `${INSPECTOR} is missing: run \`npm ci\` in ${HERE}`);
    root = makeFixture();
    state = mkdtempSync(join(tmpdir(), 'envelope-inspector-state-'));
});

after(() => {
    if (root) removeFixture(root);
    if (state) rmSync(state, { recursive: true, force: true });
});

/** Runs the Inspector's CLI with `args` against the example; its parsed stdout. */
async function inspect(args) {
    const { stdout, stderr } = await run(
        INSPECTOR,
        ['--cli', BIN, '--root', root, ...args],
        // The server's own log goes to stderr too; only warnings are looked for there.
        {
            // The server keeps its paging key in a directory of this run's, not the fixture.
            env: { ...process.env, RUST_LOG: 'warn', XDG_STATE_HOME: state },
            maxBuffer: 64 << 20,
            timeout: 60_000,
        },
    );
    // Ajv and the SDK warn on stderr; stdout must be the result alone, so it parses whole.
    const warnings = stderr.split('\n').filter((line) => WARNING.test(line));
    assert.deepEqual(warnings, [], `the Inspector printed warnings for ${args.join(' ')}`);
    return JSON.parse(stdout);
}

/** `--tool-arg key=value` pairs: the Inspector reads each value as JSON when it parses. */
const toolArgs = (args) =>
    Object.entries(args).flatMap(([key, value]) => [
        '--tool-arg',
        `${key}=${typeof value === 'string' ? value : JSON.stringify(value)}`,
    ]);

test('the Inspector lists every tool without a warning', async () => {
    const { tools } = await inspect(['--method', 'tools/list']);
    assert.deepEqual(tools.map((tool) => tool.name).sort(), Object.keys(CALLS).sort());
    for (const tool of tools) {
        assert.ok(tool.outputSchema, `${tool.name} lists an output schema`);
        assert.equal(tool.annotations?.readOnlyHint, true, tool.name);
    }
});

for (const [name, args] of Object.entries(CALLS)) {
    test(`the Inspector calls ${name} without a warning`, async () => {
        const result = await inspect(['--method', 'tools/call', '--tool-name', name, ...toolArgs({ ...args, ...FULL })]);
        assert.notEqual(result.isError, true, JSON.stringify(result));
        assert.equal(result.structuredContent?.ok, true, JSON.stringify(result));
        assert.equal(result._meta?.['rs.envelope/tier'], result.structuredContent.meta.complexity_tier);
    });
}

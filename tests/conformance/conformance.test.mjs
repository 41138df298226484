// The official MCP conformance suite (@modelcontextprotocol/conformance), two pinned releases
// side by side (package.json aliases them as conformance-0.1 and conformance-0.2):
//
// - against the conformance server (`target/debug/conformance-server`, the crate
//   `envelope-conformance`, which serves every fixture the suite calls for):
//   - 0.1.16, every server scenario (`--suite all`: the active ones and the two it still calls
//     pending, json-schema-2020-12 and server-sse-polling), must exit 0;
//   - 0.2.0-alpha.12 at `--suite all --spec-version 2026-07-28` (the draft scenarios too:
//     stateless requests, header validation, cache hints, multi-round input, every message
//     against the spec's schema): every scenario it selects must pass, but
//     those `not-applicable.json` names, each with its reason; an entry that passes, or that
//     the suite no longer runs, is stale and fails too, and each entry must be named in the
//     README's conformance section, so what we do not conform to is said where users read;
// - against the workspace_server example, which has no fixture tools, resources or prompts:
//   the 0.1.16 scenarios that need none, one by one, in each wire dialect it speaks.
//
// A scenario passes when none of its checks is a FAILURE: the CLI's own exit code counts the
// same way (a WARNING is printed here, and fails nothing). Results are read per scenario from
// the directory the CLI writes (`-o`): one `server-<scenario>-<ISO time>/checks.json` each, an
// array of `{ id, name, description, status, errorMessage?, details? }`.
//
// Both releases import `fs.globSync` (Node 22), so each runs under `node20-globsync.mjs`,
// which does nothing on Node 22 and later. Run after
//     cargo build --workspace --all-features --tests --bins --examples
//     cargo build --workspace --all-features --tests --bins --examples
//     npm ci --prefix tests/conformance
// with `node --test tests/conformance/conformance.test.mjs`. CONFORMANCE_SERVER and
// WORKSPACE_SERVER (or WORKSPACE_SERVER_BIN, as the other suites read it) point at other
// binaries.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

import { startHttpServer } from '../interop-ts/servers.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO = resolve(HERE, '../..');

const CONFORMANCE_SERVER = process.env.CONFORMANCE_SERVER
    ? resolve(process.env.CONFORMANCE_SERVER)
    : resolve(REPO, 'target/debug/conformance-server');
const WORKSPACE_SERVER_ENV = process.env.WORKSPACE_SERVER ?? process.env.WORKSPACE_SERVER_BIN;
const WORKSPACE_SERVER = WORKSPACE_SERVER_ENV
    ? resolve(WORKSPACE_SERVER_ENV)
    : resolve(REPO, 'target/debug/examples/workspace_server');

/** Each release's CLI, called by path: both packages name their bin `conformance`, so
 * `node_modules/.bin` holds only one of them. */
const SUITES = {
    '0.1.16': resolve(HERE, 'node_modules/conformance-0.1/dist/index.js'),
    '0.2.0-alpha.12': resolve(HERE, 'node_modules/conformance-0.2/dist/index.js'),
};
const SHIM = pathToFileURL(resolve(HERE, 'node20-globsync.mjs')).href;

/** The protocol revision 0.2.0-alpha.12 is run at, with `--suite all`: its default `--suite
 * active` selects 20 server scenarios and leaves out the 20 this release still calls draft
 * (server-stateless, caching, http-header-validation, input-required-result-*, ...), which the
 * new revision is mostly about. */
const SPEC_VERSION = '2026-07-28';

/** Scenario → why the conformance server does not pass it at SPEC_VERSION. */
const NOT_APPLICABLE = JSON.parse(readFileSync(resolve(HERE, 'not-applicable.json'), 'utf8'));

/** The 0.1.16 scenarios that need no fixture on the server, so the example can pass them;
 * `logging-set-level` needs it to answer `logging/setLevel`, which it must. */
const EXAMPLE_SCENARIOS = [
    'server-initialize',
    'ping',
    'tools-list',
    'dns-rebinding-protection',
    'server-sse-multiple-streams',
    'logging-set-level',
];

/** A whole suite takes seconds; minutes is a hang. (0.2.0-alpha.12 also stops any one scenario
 * after 30 s, its `--timeout` default; 0.1.16 has no such flag.) */
const SUITE_TIMEOUT_MS = 10 * 60_000;
const SCENARIO_TIMEOUT_MS = 2 * 60_000;

// Each server keeps its state (the example: its paging key) in a directory of this run's.
const STATE = mkdtempSync(join(tmpdir(), 'envelope-conformance-state-'));
const RESULTS = mkdtempSync(join(tmpdir(), 'envelope-conformance-results-'));
after(() => {
    rmSync(STATE, { recursive: true, force: true });
    rmSync(RESULTS, { recursive: true, force: true });
});

// --- servers -----------------------------------------------------------------------------------

/** Every child still running, killed should the run end without `stop()` reaching it. */
const CHILDREN = new Set();
process.on('exit', () => {
    for (const child of CHILDREN) child.kill('SIGKILL');
});

/** Starts `bin ...args --http 127.0.0.1:<free port>`; `{ url, log, stop() }` once `/mcp`
 * answers HTTP (`startHttpServer` is shared with the interop suites; it imports only `node:`
 * builtins, so this folder's `node_modules` need not hold the SDK). */
async function startServer(bin, args, build) {
    assert.ok(existsSync(bin), `${bin} is missing: run \`${build}\` first`);
    return startHttpServer(bin, args, {
        cwd: REPO,
        env: { ...process.env, XDG_STATE_HOME: STATE, RUST_LOG: process.env.RUST_LOG ?? 'warn' },
        probe: 'http',
        pollMs: 100,
        children: CHILDREN,
    });
}

// --- the suite ---------------------------------------------------------------------------------

/** Runs one release's `server` command against `url`; `{ code, signal, output, dir }`, with the
 * results in `dir`. */
async function runSuite(version, url, args, timeoutMs) {
    const cli = SUITES[version];
    assert.ok(existsSync(cli), `${cli} is missing: run \`npm ci --prefix tests/conformance\` first`);
    const dir = mkdtempSync(join(RESULTS, `${version}-`));
    const child = spawn(process.execPath, ['--import', SHIM, cli, 'server', '--url', url, '-o', dir, ...args], {
        cwd: HERE,
        stdio: ['ignore', 'pipe', 'pipe'],
    });
    CHILDREN.add(child);
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    const [code, signal] = await new Promise((ok) => child.once('exit', (...end) => ok(end)));
    clearTimeout(timer);
    CHILDREN.delete(child);
    // The CLI colours its report whatever NO_COLOR says; CI logs read better without.
    output = output.replace(/\x1b\[[0-9;]*m/g, '');
    assert.equal(signal, null, `conformance ${version} ${args.join(' ')} was killed (${signal}) after ${timeoutMs} ms:\n${output}`);
    return { code, output, dir };
}

/** The scenarios a full run went through, in order, from its own report of them; the count it
 * announced must match, so a change in that report cannot pass for an empty run. */
function scenariosRun(output) {
    const announced = output.match(/^Running .+ \((\d+) scenarios\) against /m);
    assert.ok(announced, `the suite did not say how many scenarios it runs:\n${output}`);
    const names = [...output.matchAll(/^=== Running scenario: (\S+) ===$/gm)].map((m) => m[1]);
    assert.equal(names.length, Number(announced[1]), `the suite announced ${announced[1]} scenarios but ran:\n${names.join('\n')}`);
    assert.ok(names.length > 0, `the suite selected no scenario:\n${output}`);
    return names;
}

/** Scenario → its checks, from `server-<scenario>-<time>/checks.json` in `dir`. */
function readResults(dir) {
    const results = new Map();
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
        const match = entry.isDirectory() && entry.name.match(/^server-(.+)-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$/);
        if (!match) continue;
        const file = join(dir, entry.name, 'checks.json');
        if (existsSync(file)) results.set(match[1], JSON.parse(readFileSync(file, 'utf8')));
    }
    return results;
}

/** What went wrong in `scenario` (no results, or its failed checks), one line each; empty if it
 * passed. */
function failuresOf(scenario, results) {
    const checks = results.get(scenario);
    if (!checks) return ['no checks.json was written: the scenario did not complete'];
    if (checks.length === 0) return ['it recorded no checks'];
    return checks
        .filter((check) => check.status === 'FAILURE')
        .map((check) => `${check.id}: ${check.errorMessage ?? check.description}`);
}

/** Prints `[version] scenario: passed|failed` (failed checks and warnings indented below), and
 * returns the failures. */
function report(version, scenario, results, excused = false) {
    const failures = failuresOf(scenario, results);
    const warnings = (results.get(scenario) ?? []).filter((check) => check.status === 'WARNING');
    const note = excused ? ' (listed in not-applicable.json)' : '';
    console.log(`[${version}] ${scenario}: ${failures.length === 0 ? 'passed' : 'failed'}${note}`);
    for (const line of failures) console.log(`    ✗ ${line}`);
    for (const check of warnings) console.log(`    ! ${check.id}: ${check.errorMessage ?? check.description}`);
    return failures;
}

/** `{ scenario: [failed checks] }` for every failed scenario, for an assertion's message. */
const describeFailures = (failed) =>
    Object.entries(failed)
        .map(([scenario, lines]) => `${scenario}:\n${lines.map((line) => `    ${line}`).join('\n')}`)
        .join('\n');

/** The README's conformance section: from the first heading naming "conformance" to the next
 * heading at its level or above. */
function readmeConformanceSection() {
    const lines = readFileSync(resolve(REPO, 'README.md'), 'utf8').split('\n');
    const start = lines.findIndex((line) => /^#{1,6} .*conformance/i.test(line));
    if (start < 0) return null;
    const level = lines[start].match(/^#+/)[0].length;
    const end = lines.findIndex((line, i) => i > start && (line.match(/^(#+) /)?.[1].length ?? 7) <= level);
    return lines.slice(start, end < 0 ? undefined : end).join('\n');
}

// --- the conformance server --------------------------------------------------------------------

describe('the conformance server', () => {
    let server;
    before(async () => {
        server = await startServer(
            CONFORMANCE_SERVER,
            [],
            'cargo build --workspace --all-features --tests --bins --examples',
        );
    });
    after(() => server?.stop());

    test('passes every server scenario of conformance 0.1.16', { timeout: SUITE_TIMEOUT_MS }, async () => {
        const { code, output, dir } = await runSuite('0.1.16', server.url, ['--suite', 'all'], SUITE_TIMEOUT_MS);
        const results = readResults(dir);
        const failed = {};
        for (const scenario of scenariosRun(output)) {
            const failures = report('0.1.16', scenario, results);
            if (failures.length > 0) failed[scenario] = failures;
        }
        assert.deepEqual(Object.keys(failed), [], `failed scenarios:\n${describeFailures(failed)}\n--- server log ---\n${server.log.text}`);
        assert.equal(code, 0, `every scenario passed, yet conformance 0.1.16 exited ${code}:\n${output}`);
    });

    test(`passes conformance 0.2.0-alpha.12, every suite at ${SPEC_VERSION}, but what not-applicable.json says`, { timeout: SUITE_TIMEOUT_MS }, async () => {
        for (const [scenario, reason] of Object.entries(NOT_APPLICABLE)) {
            assert.ok(typeof reason === 'string' && reason.trim() !== '', `not-applicable.json: ${scenario} needs a reason`);
        }
        const { code, output, dir } = await runSuite('0.2.0-alpha.12', server.url, ['--suite', 'all', '--spec-version', SPEC_VERSION], SUITE_TIMEOUT_MS);
        // 0 when all pass, 1 when some fail; anything else is the CLI itself failing.
        assert.ok(code === 0 || code === 1, `conformance 0.2.0-alpha.12 exited ${code}:\n${output}`);
        const results = readResults(dir);
        const ran = scenariosRun(output);
        const failed = {};
        for (const scenario of ran) {
            const failures = report('0.2.0-alpha.12', scenario, results, NOT_APPLICABLE[scenario] !== undefined);
            if (failures.length > 0 && NOT_APPLICABLE[scenario] === undefined) failed[scenario] = failures;
        }
        // An entry for a scenario that now passes, or that this release no longer selects,
        // would excuse a future failure nobody looked at.
        const stale = Object.keys(NOT_APPLICABLE).filter(
            (scenario) => !ran.includes(scenario) || failuresOf(scenario, results).length === 0,
        );
        assert.deepEqual(Object.keys(failed), [], `failed scenarios:\n${describeFailures(failed)}\n--- server log ---\n${server.log.text}`);
        assert.deepEqual(stale, [], 'stale entries in not-applicable.json: each passes, or is no longer run; remove them');
    });
});

test('the README names every scenario not-applicable.json excuses', () => {
    const names = Object.keys(NOT_APPLICABLE);
    if (names.length === 0) return;
    const section = readmeConformanceSection();
    assert.ok(section !== null, 'README.md has no conformance section (a heading naming "conformance") to explain not-applicable.json in');
    // Whole names only: `tools-call` must not be found inside `tools-call-image`.
    const words = new Set(section.split(/[^\w/-]+/));
    const missing = names.filter((name) => !words.has(name));
    assert.deepEqual(missing, [], "README.md's conformance section does not name these not-applicable scenarios");
});

// --- the example -------------------------------------------------------------------------------

/** The wires the example answers in (`--dialect`): its own, and the four source contracts'. The
 * listing's output schemas follow the dialect, so `tools-list` checks each of them. */
const DIALECTS = ['envelope', 'pincher', 'cos', 'tsa', 'frigg'];

for (const dialect of DIALECTS) describe(`the workspace_server example, in the ${dialect} dialect`, () => {
    let server;
    before(async () => {
        server = await startServer(
            WORKSPACE_SERVER,
            ['--root', REPO, '--dialect', dialect],
            'cargo build --workspace --all-features --tests --bins --examples',
        );
    });
    after(() => server?.stop());

    for (const scenario of EXAMPLE_SCENARIOS) {
        test(`passes ${scenario} (conformance 0.1.16, ${dialect})`, { timeout: SCENARIO_TIMEOUT_MS }, async () => {
            const { code, output, dir } = await runSuite('0.1.16', server.url, ['--scenario', scenario], SCENARIO_TIMEOUT_MS);
            const failures = report('0.1.16', scenario, readResults(dir));
            assert.deepEqual(failures, [], `${scenario} failed; the CLI said:\n${output}\n--- server log ---\n${server.log.text}`);
            assert.equal(code, 0, `${scenario} passed, yet conformance 0.1.16 exited ${code}:\n${output}`);
        });
    }
});

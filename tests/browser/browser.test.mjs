// The REST gateway called from a real browser: the distribution's headless Chromium, driven by
// puppeteer-core (pinned in package.json; it downloads no browser). A page served from one
// origin calls the example server's gateway on another through `fetch`, so every call goes
// through CORS as a browser app's would (the preflight for a JSON body and the `Envelope-*`
// headers included).
//
// What is checked: a budgeted call is cut to the agent budget and says so (a `read-on` action
// and the lines it stopped at); the same call opted out with `apply_budget=false` or
// `Envelope-Apply-Budget: false` reads the whole file; an error is a problem the page can read,
// with `X-Request-ID` exposed; a page from an origin the server does not list cannot read an
// answer at all.
//
// The browser is `/usr/bin/chromium` (override with `CHROMIUM`), which `.ci/run` installs with
// `apt-get install chromium`; the server binary is `target/debug/examples/workspace_server`
// (override with `WORKSPACE_SERVER_BIN`). Without Chromium the suite is skipped, unless
// `ENVELOPE_REQUIRE_CHROMIUM` is set, as CI sets it.
//
// Run: `npm ci --prefix tests/browser && node --test tests/browser/`.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect as tcpConnect, createServer as createTcpServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';

import puppeteer from 'puppeteer-core';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const BIN = process.env.WORKSPACE_SERVER_BIN
    ? resolve(process.env.WORKSPACE_SERVER_BIN)
    : resolve(REPO, 'target/debug/examples/workspace_server');
const CHROMIUM = process.env.CHROMIUM ?? '/usr/bin/chromium';
const REQUIRED = Boolean(process.env.ENVELOPE_REQUIRE_CHROMIUM);

// A file well past the agent budget of 32,000 characters (some 60,000), in a root of its own.
const LONG_FILE = 'long.txt';
const LONG_FILE_LINES = 800;

/** A free loopback port. */
async function freePort() {
    return new Promise((done, fail) => {
        const server = createTcpServer();
        server.once('error', fail);
        server.listen(0, '127.0.0.1', () => {
            const { port } = server.address();
            server.close(() => done(port));
        });
    });
}

/** Resolves once something accepts connections on `port`. */
async function waitForPort(port, process) {
    for (let attempt = 0; attempt < 300; attempt += 1) {
        if (process.exitCode !== null) {
            throw new Error(`the server exited with ${process.exitCode}`);
        }
        const open = await new Promise((done) => {
            const socket = tcpConnect(port, '127.0.0.1');
            socket.once('connect', () => {
                socket.destroy();
                done(true);
            });
            socket.once('error', () => done(false));
        });
        if (open) {
            return;
        }
        await sleep(50);
    }
    throw new Error(`nothing listens on ${port}`);
}

/** An origin for pages: a blank page on `port`. */
async function servePage(port) {
    const server = createServer((_request, response) => {
        response.writeHead(200, { 'content-type': 'text/html' });
        response.end('<!doctype html><title>envelope gateway from a browser</title>');
    });
    await new Promise((done) => server.listen(port, '127.0.0.1', done));
    return server;
}

/**
 * `fetch` from the page at `origin`: the status, the headers the page may read, and the body
 * as JSON (or the error's message when the browser refused to hand the answer over).
 */
async function fetchFrom(page, url, init) {
    return page.evaluate(
        async ({ url, init }) => {
            try {
                const response = await fetch(url, init);
                return {
                    status: response.status,
                    contentType: response.headers.get('content-type'),
                    requestId: response.headers.get('x-request-id'),
                    body: await response.json(),
                };
            } catch (error) {
                return { refused: String(error) };
            }
        },
        { url, init },
    );
}

describe('the gateway from headless Chromium', { skip: !existsSync(CHROMIUM) && !REQUIRED && `no Chromium at ${CHROMIUM}` }, () => {
    let server;
    let browser;
    let pageServers = [];
    let gateway;
    let allowedOrigin;
    let foreignOrigin;
    const state = mkdtempSync(join(tmpdir(), 'envelope-browser-state-'));

    before(async () => {
        assert.ok(existsSync(CHROMIUM), `no Chromium at ${CHROMIUM}: apt-get install chromium`);
        assert.ok(existsSync(BIN), `${BIN} is missing: cargo build --workspace --all-features --tests --bins --examples`);
        const [serverPort, pagePort, foreignPort] = [await freePort(), await freePort(), await freePort()];
        gateway = `http://127.0.0.1:${serverPort}`;
        allowedOrigin = `http://127.0.0.1:${pagePort}`;
        foreignOrigin = `http://127.0.0.1:${foreignPort}`;
        pageServers = [await servePage(pagePort), await servePage(foreignPort)];
        const root = join(state, 'root');
        mkdirSync(root);
        const lines = Array.from({ length: LONG_FILE_LINES }, (_, n) => `line ${n + 1}: ${'the quick brown fox '.repeat(3)}\n`);
        writeFileSync(join(root, LONG_FILE), lines.join(''));
        server = spawn(
            BIN,
            ['--root', join(state, 'root'), '--http', `127.0.0.1:${serverPort}`, '--stateless', '--cors-origin', allowedOrigin],
            {
                stdio: ['ignore', 'ignore', 'inherit'],
                // Warnings and errors only, should a test fail.
                env: { RUST_LOG: 'warn', ...process.env, XDG_STATE_HOME: state },
            },
        );
        await waitForPort(serverPort, server);
        browser = await puppeteer.launch({
            executablePath: CHROMIUM,
            headless: true,
            // As root (CI's containers) Chromium will not start sandboxed.
            args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
        });
    });

    after(async () => {
        await browser?.close();
        server?.kill('SIGTERM');
        for (const pageServer of pageServers) {
            pageServer.close();
        }
        rmSync(state, { recursive: true, force: true });
    });

    async function openPage(origin) {
        const page = await browser.newPage();
        await page.goto(`${origin}/`);
        return page;
    }

    const readLongFile = { path: LONG_FILE };
    const post = (body, headers = {}) => ({
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify(body),
    });

    test('a budgeted call is cut to the agent budget and says where it stopped', async () => {
        const page = await openPage(allowedOrigin);
        const answer = await fetchFrom(page, `${gateway}/tools/read_file`, post(readLongFile));
        assert.equal(answer.status, 200, JSON.stringify(answer));
        assert.equal(answer.contentType, 'application/json');
        const envelope = answer.body;
        assert.equal(envelope.ok, true);
        assert.ok(envelope.data.end_line < LONG_FILE_LINES, `${envelope.data.end_line} of ${LONG_FILE_LINES} lines`);
        assert.ok(envelope.next_actions.some((action) => action.id === 'read-on'));
        assert.equal(answer.requestId, envelope.meta.request_id, 'X-Request-ID is exposed to the page');
        await page.close();
    });

    for (const [how, url, headers] of [
        ['the query parameter', '/tools/read_file?apply_budget=false', {}],
        ['the header', '/tools/read_file', { 'Envelope-Apply-Budget': 'false' }],
    ]) {
        test(`opting out with ${how} reads the whole file`, async () => {
            const page = await openPage(allowedOrigin);
            const answer = await fetchFrom(page, `${gateway}${url}`, post(readLongFile, headers));
            assert.equal(answer.status, 200, JSON.stringify(answer));
            const envelope = answer.body;
            assert.equal(envelope.ok, true);
            assert.equal(envelope.data.end_line, LONG_FILE_LINES);
            assert.ok(!(envelope.next_actions ?? []).some((action) => action.id === 'read-on'));
            await page.close();
        });
    }

    test('an error is a problem the page can read', async () => {
        const page = await openPage(allowedOrigin);
        const answer = await fetchFrom(page, `${gateway}/tools/read_file`, post({ path: 'no/such/file.txt' }));
        assert.equal(answer.status, 404, JSON.stringify(answer));
        assert.equal(answer.contentType, 'application/problem+json');
        assert.equal(answer.body.status, 404);
        assert.equal(answer.body.envelope.error.category, 'not_found');
        assert.equal(answer.body.detail, answer.body.envelope.error.message);
        assert.equal(answer.requestId, answer.body.envelope.meta.request_id);
        await page.close();
    });

    test('a page from an origin the server does not list cannot read an answer', async () => {
        const page = await openPage(foreignOrigin);
        const answer = await fetchFrom(page, `${gateway}/tools/read_file`, post(readLongFile));
        assert.ok(answer.refused, `the browser handed over ${JSON.stringify(answer).slice(0, 200)}`);
        await page.close();
    });
});

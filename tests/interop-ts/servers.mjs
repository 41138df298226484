// The processes and sessions the TypeScript suites share: a free loopback port, a server binary
// started with `--http` and waited for, its output kept for a failure's message, and the
// connect / check / close frame around one SDK session.
//
// Only `node:` builtins are imported here, never the SDK: `tests/conformance/` imports this
// module too, and its `node_modules` holds the conformance CLI, not this folder's packages. The
// SDK's objects (a `Client`, its transports) are made by the caller and handed in.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { connect as tcpConnect, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** A port free on 127.0.0.1 a moment ago (another process may take it before the server binds
 * it: `startHttpServer` then tries another). */
export async function freePort() {
    const server = createServer();
    await new Promise((ok, fail) => {
        server.once('error', fail);
        server.listen(0, '127.0.0.1', ok);
    });
    const { port } = server.address();
    await new Promise((ok) => server.close(ok));
    return port;
}

/** Whether 127.0.0.1:`port` accepts a TCP connection. */
function accepts(port) {
    return new Promise((ok) => {
        const socket = tcpConnect({ host: '127.0.0.1', port });
        socket.setTimeout(500);
        socket.once('connect', () => {
            socket.destroy();
            ok(true);
        });
        socket.once('timeout', () => {
            socket.destroy();
            ok(false);
        });
        socket.once('error', () => ok(false));
    });
}

/** Whether anything answers HTTP at `url`: any status will do, a refused connection will not. */
async function answers(url) {
    for (const method of ['POST', 'GET']) {
        try {
            await fetch(url, { method, signal: AbortSignal.timeout(2_000) });
            return true;
        } catch {
            // Not listening yet (or this method hung): try the other, then again.
        }
    }
    return false;
}

/** A fresh log for `collect`. */
export const newLog = () => ({ text: '', total: 0 });

/** Collects a child's output into `log` (`text`: its last 20,000 characters; `total`: how many
 * there were), to show when a test fails. */
export function collect(stream, log) {
    stream?.on('data', (chunk) => {
        const text = chunk.toString();
        log.text = (log.text + text).slice(-20_000);
        log.total += text.length;
    });
}

/** What `log` got since it had `start` characters. */
export const logSince = (log, start) => (log.total > start ? log.text.slice(-(log.total - start)) : '');

/**
 * Starts `bin ...args --http 127.0.0.1:<free port>`; `{ url, log, stop() }` once it is ready,
 * `url` being its `/mcp` endpoint. Options: `cwd`, `env` (default: this process's), `probe` —
 * `'tcp'` (the port accepts a connection; the interop suites, whose servers answer on `/mcp` as
 * soon as they listen) or `'http'` (`/mcp` answers a request at all; the conformance suite's
 * check before it hands the URL to the CLI) — `pollMs` between probes, and `children`, a `Set`
 * that holds the child while it runs (for a caller that kills leftovers at exit). Three ports
 * are tried, since another process may take one between the probe and the bind.
 */
export async function startHttpServer(bin, args, { cwd, env, probe = 'tcp', pollMs = 50, children } = {}) {
    for (let attempt = 1; ; attempt++) {
        const port = await freePort();
        const url = `http://127.0.0.1:${port}/mcp`;
        const log = newLog();
        const child = spawn(bin, [...args, '--http', `127.0.0.1:${port}`], {
            cwd,
            env,
            stdio: ['ignore', 'pipe', 'pipe'],
        });
        children?.add(child);
        collect(child.stdout, log);
        collect(child.stderr, log);
        let exited = false;
        child.once('exit', () => {
            exited = true;
            children?.delete(child);
        });
        const stop = async () => {
            if (exited) return;
            const gone = new Promise((ok) => child.once('exit', ok));
            child.kill('SIGTERM');
            const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
            await gone;
            clearTimeout(timer);
        };
        const ready = probe === 'http' ? () => answers(url) : () => accepts(port);
        const deadline = Date.now() + 30_000;
        while (!exited && Date.now() < deadline) {
            if (await ready()) return { url, log, stop };
            await sleep(pollMs);
        }
        // Lost the port between probing and binding, or never listened: try another.
        await stop();
        if (attempt === 3) {
            assert.fail(`${bin} did not answer at ${url} (${exited ? 'it exited' : 'timed out'}); its log:\n${log.text}`);
        }
    }
}

/** What the SDK reports through `onerror` for a progress report it dispatched too late
 * (typescript-sdk issue #2580; see the progress test in interop.test.mjs). */
export const LATE_PROGRESS = /Received a progress notification for an unknown token/;

/**
 * Connects `client` over `clientTransport` and runs `body(wire)`, then closes the session (over
 * HTTP, terminating it on the server first). `transport` is `'stdio'` (`clientTransport` spawned
 * the server with `stderr: 'pipe'`, and its stderr is the log) or `'http'` (`http` is what
 * `startHttpServer` answered, its log shared by every session). A failure carries the part of
 * the server's log this session wrote. `wire` records what the session saw: `messages`, every
 * message from the server in arrival order (before the SDK dispatches it), and `errors`, what
 * the SDK reported through `Client.onerror`; any error but `LATE_PROGRESS` fails the session.
 */
export async function runSession(client, transport, clientTransport, http, body) {
    const wire = { messages: [], errors: [] };
    client.onerror = (error) => wire.errors.push(error);
    let log = http?.log;
    if (transport === 'stdio') {
        log = newLog();
        collect(clientTransport.stderr, log);
    }
    // The HTTP server's log is shared by every session: show only this session's part.
    const logStart = log.total;
    // `Client.connect` wraps the transport's `onmessage`, calling this one first.
    clientTransport.onmessage = (message) => wire.messages.push(message);
    try {
        await client.connect(clientTransport);
        await body(wire);
        // The client met no protocol error, but for the SDK's own progress race.
        const unexpected = wire.errors.filter((error) => !LATE_PROGRESS.test(String(error)));
        assert.deepEqual(unexpected.map(String), [], 'the SDK reported errors on this session');
    } catch (error) {
        const text = logSince(log, logStart);
        if (error instanceof Error && text) {
            error.message += `\n--- server log (${transport}) ---\n${text}`;
        }
        throw error;
    } finally {
        if (transport === 'http' && clientTransport.sessionId) {
            await clientTransport.terminateSession().catch(() => {});
        }
        await client.close();
    }
}

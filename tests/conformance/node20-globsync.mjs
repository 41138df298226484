// Lets the MCP conformance suite's CLI load on Node 20, which CI runs: use it as
//     node --import ./node20-globsync.mjs node_modules/conformance-0.1/dist/index.js ...
//
// Why it exists: both pinned releases of @modelcontextprotocol/conformance (0.1.16 and
// 0.2.0-alpha.12) ship one bundled `dist/index.js` that starts with
// `import { globSync } from "fs"`. `fs.globSync` arrived in Node 22, so on Node 20 the import
// fails at link time ("does not provide an export named 'globSync'") and no command runs at
// all. The only caller is the tier report (`tier-check`, which scans a results directory for
// `**/checks.json`); the `server` and `client` commands this repo runs never reach it.
//
// What it does: on Node < 22 only (whenever `fs.globSync` is missing), it registers this same
// file as a module-resolution hook (`module.register`, loaded with `?hooks` so the hook thread
// does not register itself again). The hook sends every ESM import of `fs` or `node:fs` to a
// small data: module that re-exports all of `node:fs`, plus a `globSync` that throws a clear
// error should anything ever call it — a tier report would fail loudly, never scan nothing.
// The data: module's own `node:fs` import is let through, or it would import itself. Only ESM
// `import`s are redirected; `require('fs')` is untouched. On Node 22 and later this file does
// nothing, and can be dropped with Node 20.

import fs from 'node:fs';
import { register } from 'node:module';

const HOOKS = new URL(import.meta.url).searchParams.has('hooks');

/** `node:fs`, and the `globSync` Node 20 lacks, which refuses to run. */
const FS_WITH_GLOBSYNC = `data:text/javascript,${encodeURIComponent(`
import fs from 'node:fs';
export * from 'node:fs';
export default fs;
export function globSync() {
    throw new Error(
        'fs.globSync needs Node >= 22: on ' + process.version + ' it is stubbed by ' +
            'tests/conformance/node20-globsync.mjs only so that the conformance CLI loads; ' +
            'run this command (the tier report) on Node 22 or later',
    );
}
`)}`;

if (!HOOKS && typeof fs.globSync !== 'function') {
    const hooks = new URL(import.meta.url);
    hooks.searchParams.set('hooks', '');
    register(hooks.href);
}

/** The resolve hook (run in the hook thread only): `fs` and `node:fs` become the module above,
 * except for its own import of the real one. */
export async function resolve(specifier, context, next) {
    if ((specifier === 'fs' || specifier === 'node:fs') && context.parentURL !== FS_WITH_GLOBSYNC) {
        return { url: FS_WITH_GLOBSYNC, shortCircuit: true };
    }
    return next(specifier, context);
}

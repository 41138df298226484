// The workspace the interop suite serves: a small tree in a temporary directory, made fresh for
// each run so that every expected number below is known exactly.
//
// It holds a Cargo workspace (so `read_file Cargo.toml` finds `[workspace]`), a Rust crate whose
// modules use one another, a Python package and two JavaScript modules (so `graph_export` has
// real edges of every kind), a hidden directory and a `target` directory (which no walk may
// enter), and a few hundred notes (so `workspace_stats` reports progress between its first and
// its last notification: the server reports every 100 files).

import { mkdtempSync, mkdirSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';

/** Relative path → contents. */
const FILES = {
    'Cargo.toml': '[workspace]\nmembers = ["crates/demo"]\nresolver = "2"\n',
    'README.md': '# demo\n\nThe `EnvelopeServer` answers every call with an envelope.\n',
    'crates/demo/Cargo.toml': '[package]\nname = "demo"\nversion = "0.1.0"\nedition = "2021"\n',
    'crates/demo/src/lib.rs': [
        '//! The demo crate.',
        'mod server;',
        'mod util;',
        '',
        'use crate::server::EnvelopeServer;',
        '',
        'pub fn run() -> EnvelopeServer {',
        '    EnvelopeServer::new(util::answer())',
        '}',
        '',
    ].join('\n'),
    'crates/demo/src/server.rs': [
        'use crate::util::answer;',
        '',
        'pub struct EnvelopeServer {',
        '    pub answer: u32,',
        '}',
        '',
        'impl EnvelopeServer {',
        '    pub fn new(answer: u32) -> Self {',
        '        EnvelopeServer { answer }',
        '    }',
        '',
        '    pub fn default_answer() -> u32 {',
        '        answer()',
        '    }',
        '}',
        '',
    ].join('\n'),
    'crates/demo/src/util.rs': 'pub fn answer() -> u32 {\n    42\n}\n',
    'py/app/__init__.py': '',
    'py/app/main.py': 'from app import helpers\n\n\ndef main():\n    return helpers.greet("EnvelopeServer")\n',
    'py/app/helpers.py': 'def greet(name):\n    return f"hello {name}"\n',
    'web/index.mjs': "import { greet } from './greet.mjs';\n\nconsole.log(greet('EnvelopeServer'));\n",
    'web/greet.mjs': 'export function greet(name) {\n    return `hello ${name}`;\n}\n',
    // Never walked: hidden files and directories, and what `.gitignore` leaves out.
    '.gitignore': 'target/\n',
    '.hidden/secret.rs': 'pub struct EnvelopeServer;\n',
    'target/debug/build.rs': 'pub struct EnvelopeServer;\n',
};

/** How many notes `notes/` holds. */
export const NOTES = 250;

for (let i = 0; i < NOTES; i++) {
    FILES[`notes/note-${String(i).padStart(3, '0')}.txt`] = `note ${i}\n`;
}

/** The relative paths every walk sees, sorted. */
export const VISIBLE = Object.keys(FILES)
    .filter((rel) => !rel.startsWith('.') && !rel.startsWith('target/'))
    .sort();

/** Occurrences of `EnvelopeServer` in the visible files (README 1, lib.rs 3, server.rs 3,
 * main.py 1, index.mjs 1); the hidden and `target` copies would make it 11. */
export const ENVELOPE_SERVER_OCCURRENCES = 9;

/** The graph's files: the Rust, Python and JavaScript sources. */
export const GRAPH_NODES = VISIBLE.filter((rel) => /\.(rs|py|mjs)$/.test(rel));

/** Edges the graph must hold, as `source -> target (kind)`. */
export const GRAPH_EDGES = [
    'crates/demo/src/lib.rs -> crates/demo/src/server.rs (mod)',
    'crates/demo/src/lib.rs -> crates/demo/src/util.rs (mod)',
    'crates/demo/src/lib.rs -> crates/demo/src/server.rs (use)',
    'crates/demo/src/server.rs -> crates/demo/src/util.rs (use)',
    'py/app/main.py -> py/app/helpers.py (import)',
    'web/index.mjs -> web/greet.mjs (import)',
];

/** Makes the workspace; returns its real path (the server canonicalizes its root). */
export function makeFixture() {
    const root = realpathSync(mkdtempSync(join(tmpdir(), 'envelope-interop-ts-')));
    for (const [rel, text] of Object.entries(FILES)) {
        const path = join(root, rel);
        mkdirSync(dirname(path), { recursive: true });
        writeFileSync(path, text);
    }
    return root;
}

export function removeFixture(root) {
    rmSync(root, { recursive: true, force: true });
}

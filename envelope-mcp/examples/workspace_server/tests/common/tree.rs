//! The fixture every test serves: a small tree under the system's temp dir, and the server the
//! example builds over it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::EnvelopeServer;

/// The paging key of these tests: fixed, so a second server can share it.
pub(crate) fn test_key() -> ContinuationKey {
    ContinuationKey::new(1, [7; 32])
}

/// A directory tree under the system's temp dir, removed when dropped.
pub(crate) struct Tree {
    pub(crate) root: PathBuf,
}

impl Tree {
    /// The fixture every test uses: a tiny Rust crate, a Python package, a TypeScript pair, and
    /// everything a walk must skip.
    pub(crate) fn new(name: &str) -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "envelope-workspace-server-{}-{name}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let root = std::env::temp_dir().join(unique);
        let _ = std::fs::remove_dir_all(&root);
        let tree = Tree { root };
        tree.write("README.md", "# Demo\nneedle here\n");
        tree.write(
            "notes/many.txt",
            "needle needle\nneedle needle\nneedle needle\n",
        );
        tree.write(
            "src/lib.rs",
            "mod a;\npub mod b;\nmod missing;\nuse crate::b::Thing;\n// needle in a comment\n",
        );
        tree.write(
            "src/a.rs",
            "mod inner;\nuse crate::b::{Thing, helper};\nfn needle() {}\n",
        );
        tree.write("src/a/inner.rs", "use crate::a;\n");
        tree.write("src/b/mod.rs", "pub struct Thing;\npub fn helper() {}\n");
        tree.write(
            "app/main.py",
            "import os\nimport util\nfrom pkg import mod\n",
        );
        tree.write("app/util.py", "X = 1\n");
        tree.write("app/pkg/__init__.py", "");
        tree.write("app/pkg/mod.py", "from . import helpers\n");
        tree.write("web/index.ts", "import { x } from './lib/x';\n");
        tree.write("web/lib/x.ts", "export const x = 1;\n");
        tree.write("long.txt", &"0123456789".repeat(6_000));
        // Everything below is skipped by walks.
        tree.write_bytes("notes/data.bin", b"needle \xff\xfe binary");
        tree.write(".hidden/secret.txt", "needle\n");
        // What `.gitignore` files leave out is never walked; `!` lets a path back in.
        tree.write(".gitignore", "target/\nnode_modules/\n*.log\n");
        tree.write("notes/.gitignore", "drafts/\n!keep.log\n");
        tree.write("notes/drafts/plan.txt", "needle\n");
        tree.write("notes/build.log", "needle\n");
        tree.write("notes/keep.log", "kept\n");
        tree.write("target/debug/out.txt", "needle\n");
        tree.write("node_modules/pkg/index.js", "needle\n");
        tree.write("big.txt", &"needle\n".repeat(2 * 1024 * 1024 / 7 + 1));
        tree
    }

    pub(crate) fn write(&self, rel: &str, contents: &str) {
        self.write_bytes(rel, contents.as_bytes());
    }

    pub(crate) fn write_bytes(&self, rel: &str, contents: &[u8]) {
        let path = self.root.join(rel);
        let dir = path.parent().expect("fixture paths have a parent");
        std::fs::create_dir_all(dir).expect("the temp dir is writable");
        std::fs::write(path, contents).expect("the temp dir is writable");
    }

    pub(crate) fn server(&self) -> EnvelopeServer {
        self.server_with(Continuations::new(test_key()))
    }

    pub(crate) fn server_with(&self, continuations: Continuations) -> EnvelopeServer {
        workspace_server::server(
            workspace_server::Workspace::open(&self.root).expect("the fixture is a directory"),
            continuations,
            &[],
        )
    }

    /// The root as the server sees it: symlinks resolved.
    pub(crate) fn canonical_root(&self) -> PathBuf {
        self.root.canonicalize().expect("the fixture exists")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The text files a walk must find, sorted.
pub(crate) const TEXT_FILES: [&str; 14] = [
    "README.md",
    "app/main.py",
    "app/pkg/__init__.py",
    "app/pkg/mod.py",
    "app/util.py",
    "long.txt",
    "notes/keep.log",
    "notes/many.txt",
    "src/a.rs",
    "src/a/inner.rs",
    "src/b/mod.rs",
    "src/lib.rs",
    "web/index.ts",
    "web/lib/x.ts",
];

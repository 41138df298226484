//! `workspace_server`: one directory tree served over MCP, every answer an envelope. The
//! example server of `envelope-mcp`, organised as a small crate: text search, file reads, file
//! listings, statistics, an import graph and a change-impact check, over the tree it is given.
//!
//! Run it with `cargo run -p envelope-mcp --example workspace_server -- --help`; the command
//! line is [`cli`]. Tests build the same server with [`server`], or their own toolset from the
//! tools in [`tools`].
//!
//! | module | owns |
//! |---|---|
//! | [`server`] | the server: the workspace and its tools, configured |
//! | [`cli`] | the command line: options, the continuation key, serving and one-off calls |
//! | [`tools`] | one file per tool |
//! | `workspace` | the served root, held open, and reading a file beneath it (with its size and time) |
//! | `walk` | which files are in the tree (`.gitignore` honoured), and the paging snapshot |
//! | `imports` | the import parser behind `graph_export` and `change_impact` |
//! | `paths`, `errors`, `progress` | what several tools share |
//!
//! Imports go one way: `cli` → `server` → [`tools`] → `walk` → `workspace`, with
//! `imports`, `paths`, `errors` and `progress` below the tools; modules import each item from the
//! module that defines it, never through this root's re-exports.
//!
//! Invariant: no tool reads or lists anything outside the served root, even while the tree
//! changes under it. Every directory and file is opened relative to a handle on the root (with
//! `cap-std`, which resolves each path beneath it and refuses one that leads outside), never by
//! an absolute path that a symlink swapped in mid-walk could redirect. Walks skip what the tree's
//! `.gitignore` files leave out (matched with ripgrep's `ignore` crate), hidden files and
//! directories (`.git` among them), symlinks, files over 2 MiB and files that are not UTF-8, and
//! visit paths in sorted order, so the same tree always gives the same answer.

pub mod cli;
mod errors;
mod imports;
mod paths;
mod plain_listing;
mod progress;
mod server;
pub mod tools;
mod walk;
mod workspace;

pub use plain_listing::plain_listing;
pub use server::{Limits, server, server_with};
pub use workspace::Workspace;

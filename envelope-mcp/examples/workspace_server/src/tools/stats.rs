//! `workspace_stats`: files and bytes per extension, and what the walk left out.

use std::collections::BTreeMap;
use std::path::Path;

use envelope_core::{Notice, Reply, ToolContext, ToolResult, tool};
use serde::Serialize;
use serde_json::json;

use crate::errors::cancelled;
use crate::paths::file_name;
use crate::progress::Progress;
use crate::walk::walk;
use crate::workspace::{Contents, Workspace};

/// Files and bytes of one extension.
#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub struct Tally {
    files: usize,
    bytes: u64,
}

/// What `workspace_stats` answers.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Stats {
    /// Text files counted.
    files: usize,
    /// Their bytes.
    bytes: u64,
    /// Per lower-cased extension; `(none)` for files without one.
    by_extension: BTreeMap<String, Tally>,
    /// Files left out, by why.
    skipped: Skipped,
}

/// Files a walk left out, by why.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Skipped {
    /// Over 2 MiB.
    too_large: usize,
    /// Not UTF-8.
    binary: usize,
    /// Could not be read, or the walk could not enter them.
    unreadable: usize,
}

/// Count the workspace's text files and their bytes, in total and by extension, reporting
/// progress as it walks.
#[tool(
    tier = standard,
    read_only,
    open_world = false,
    title = "Workspace statistics",
    blocking,
    scopes = ["workspace:read"]
)]
pub fn workspace_stats(ctx: &ToolContext) -> ToolResult<Reply<Stats>> {
    let workspace = ctx.state::<Workspace>()?;
    // First the walk, so that progress has a total to count towards.
    let walk = walk(workspace);
    let progress = Progress::start(ctx, walk.files.len(), "files");
    let mut stats = Stats {
        files: 0,
        bytes: 0,
        by_extension: BTreeMap::new(),
        skipped: Skipped {
            too_large: walk.too_large,
            binary: 0,
            unreadable: walk.failures,
        },
    };
    for (index, file) in walk.files.iter().enumerate() {
        if ctx.is_cancelled() {
            return Err(cancelled("workspace_stats"));
        }
        match workspace.read_text(&file.rel) {
            Contents::Text(text) => {
                let bytes = text.len() as u64;
                stats.files += 1;
                stats.bytes += bytes;
                let tally = stats.by_extension.entry(extension(&file.rel)).or_default();
                tally.files += 1;
                tally.bytes += bytes;
            }
            Contents::Binary => stats.skipped.binary += 1,
            Contents::Unreadable(_) => stats.skipped.unreadable += 1,
        }
        progress.step(index + 1);
    }
    progress.finish();
    let summary = format!(
        "{} text files, {} bytes, {} extensions",
        stats.files,
        stats.bytes,
        stats.by_extension.len()
    );
    let mut reply = Reply::new(stats).summary_line(summary);
    if walk.failures > 0 {
        reply = reply.warning(
            Notice::warning(
                "partial_walk",
                "some entries could not be read; the counts leave them out",
            )
            .with_data(json!({ "entries": walk.failures })),
        );
    }
    Ok(reply)
}

/// The lower-cased extension of a relative path; `(none)` without one (`Makefile`,
/// `.gitignore`).
fn extension(rel: &str) -> String {
    Path::new(file_name(rel))
        .extension()
        .and_then(|ext| ext.to_str())
        .map_or_else(|| "(none)".to_owned(), str::to_lowercase)
}

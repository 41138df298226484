//! `list_files`: the workspace's text files, paged, optionally through a glob. Strict about
//! its arguments: an unknown one is refused, not ignored.

use envelope_core::paging::{PageCount, Pager, Paging};
use envelope_core::{EmptyReason, Reply, ToolContext, ToolResult, Unit, Verdict, tool};
use serde::{Deserialize, Serialize};

use crate::errors::cancelled;
use crate::tools::page::MAX_PAGE_LIMIT;
use crate::walk::{FileStamps, PathFilter, walk};
use crate::workspace::{Contents, Workspace};

/// `list_files`'s default page size.
const DEFAULT_LIST_LIMIT: usize = 200;

/// The arguments of `list_files`; also what its next-page action is built from.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub struct ListFilesArgs {
    /// Only list files matching this glob: without `/` it matches file names (`*.rs`), with
    /// `/` the whole relative path (`src/**/*.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    glob: Option<String>,
    /// Return at most this many paths (default 200, from 1 to 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Where the next page starts: set by the `next-page` action, which is called as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(ListFilesArgs);

/// One page of `list_files`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FileList {
    /// Relative paths, sorted.
    files: Vec<String>,
}

/// List the workspace's text files as sorted relative paths, optionally only those matching
/// a glob. `completeness` counts every file that qualified, even past `limit`.
#[tool(
    tier = lite,
    read_only,
    open_world = false,
    title = "List files",
    blocking,
    strict_args,
    scopes = ["workspace:read"]
)]
pub fn list_files(ctx: &ToolContext, args: ListFilesArgs) -> ToolResult<Reply<FileList>> {
    let filter = args
        .glob
        .as_deref()
        .map(|pattern| PathFilter::new("glob", pattern))
        .transpose()?;
    let workspace = ctx.state::<Workspace>()?;
    let walk = walk(workspace);
    let scanned = walk.files.len();
    let in_scope = walk.in_scope(filter.as_ref());
    let paging = Paging::new(Unit::FILE, DEFAULT_LIST_LIMIT)
        .with_max_limit(MAX_PAGE_LIMIT)
        .with_scope(workspace.root().display().to_string())
        .with_snapshot(&FileStamps(&in_scope))
        .with_advice("narrow `glob`");
    let paging = Pager::<list_files>::open(ctx, &args, paging)?;
    let mut files = Vec::new();
    let mut found = 0;
    let in_filter = in_scope.len();
    let mut unreadable = 0;
    for file in in_scope {
        if ctx.is_cancelled() {
            return Err(cancelled("list_files"));
        }
        // Only text files are served, so only text files are listed.
        match workspace.read_text(&file.rel) {
            Contents::Text(_) => {}
            Contents::Binary => continue,
            Contents::Unreadable(_) => {
                unreadable += 1;
                continue;
            }
        }
        found += 1;
        if paging.takes(found - 1) {
            files.push(file.rel.clone());
        }
    }
    let returned = files.len();
    let reply = Reply::new(FileList { files });
    // An empty answer's diagnosis says it all; a summary would only repeat it.
    let reply = if found > 0 {
        reply.summary_line(format!(
            "{found} {}{}",
            Unit::FILE.noun(found),
            paging.starts_at()
        ))
    } else {
        reply
    };
    let count = walk.tally(PageCount::new(returned, found), unreadable);
    let reply = paging.finish(ctx, &args, reply, count)?;
    if found > 0 {
        return Ok(reply);
    }
    let reply = reply.verdict(Verdict::NotFound);
    Ok(match args.glob.as_deref().filter(|_| in_filter == 0) {
        Some(pattern) => reply.empty(
            EmptyReason::FiltersExcludedAll,
            format!("`glob` `{pattern}` matched none of {scanned} files"),
        ),
        None => reply.empty(
            EmptyReason::NoMatch,
            "the workspace has no text files that qualify",
        ),
    })
}

//! The tools of the `workspace_server` example, and the server that serves them: text search,
//! file reads, file listings, statistics and an import graph over one directory tree.
//!
//! Invariant: no tool reads or lists anything outside the served root, even while the tree
//! changes under it. Every directory and file is opened relative to a handle on the root (with
//! `cap-std`, which resolves each path beneath it and refuses one that leads outside), never by
//! an absolute path that a symlink swapped in mid-walk could redirect. Walks skip what the tree's
//! `.gitignore` files leave out (matched with ripgrep's `ignore` crate), hidden files and
//! directories (`.git` among them), symlinks, files over 2 MiB and files that are not UTF-8, and
//! visit paths in sorted order, so the same tree always gives the same answer.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ffi::OsString;
use std::io::{self, Read};
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, LazyLock};

use cap_std::fs::{Dir, MetadataExt, OpenOptions};

use envelope_core::paging::{
    Continuations, PageCount, Pager, Paging, Snapshot, TargetBinding, conflicting_target_input,
    target_not_found,
};
use envelope_core::{
    Completeness, EmptyReason, IncompleteReason, NextAction, Notice, Reply, Role, ToolContext,
    ToolError, ToolResult, TruncationReason, Unit, Verdict, tool, toolset,
};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use globset::{GlobBuilder, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};
use serde_json::json;

/// Files larger than this are skipped by walks and refused by `read_file`.
const MAX_FILE_BYTES: u64 = 2 * 1024 * 1024;
/// Directories no walk enters, besides hidden ones (whose names start with a dot).
/// `.gitignore` files longer than this are not read (the walk goes on as if there were none).
const MAX_GITIGNORE_BYTES: u64 = 256 * 1024;
/// `search_text`'s default page size.
const DEFAULT_SEARCH_LIMIT: usize = 50;
/// `list_files`'s default page size.
const DEFAULT_LIST_LIMIT: usize = 200;
/// The largest page either tool builds: a bigger `limit` is refused. Rows past the page are
/// counted, never built, so a match-everything search holds one page in memory, not every
/// match (which once took 264 MB to send 30 KB).
const MAX_PAGE_LIMIT: usize = 1_000;
/// The longest `query` or `path_glob`, in bytes. A compiled pattern costs memory in proportion
/// to its length; past this one, the caller gets a `validation` error instead.
const MAX_PATTERN_BYTES: usize = 4_096;
/// What a compiled `query` may cost, in bytes (the `regex` crate's size limits).
const MAX_REGEX_BYTES: usize = 1 << 20;
/// A matched line longer than this is shown as a window around the match.
const MAX_LINE_CHARS: usize = 400;
/// Long tools report progress after every this many files.
const PROGRESS_EVERY: usize = 100;
/// Walks do not enter directories nested deeper than this below the root (they count as walk
/// failures): every level being walked holds its directory open.
const MAX_WALK_DEPTH: usize = 128;

/// What the server tells the client's model about itself.
const INSTRUCTIONS: &str = "Read-only access to one directory tree (the workspace). \
Paths are relative to the workspace root and use `/`. Start with `list_files` or `search_text`, \
read what they point at with `read_file`, and use `workspace_stats` or `graph_export` for an \
overview. Every answer is an envelope: branch on `ok`, `verdict`, `completeness`, \
`empty_reason` and `next_actions` rather than on prose.";

// ---------------------------------------------------------------------------------------------
// The server
// ---------------------------------------------------------------------------------------------

/// The served directory, shared with every tool as server state.
#[derive(Debug)]
pub(crate) struct Workspace {
    /// Canonical (symlinks resolved): how absolute paths in requests are recognized, and the
    /// scope continuations are bound to.
    root: PathBuf,
    /// The root, held open: everything is opened beneath it.
    dir: Dir,
}

impl Workspace {
    /// The workspace rooted at `root`, which must be a directory.
    pub(crate) fn open(root: impl AsRef<Path>) -> io::Result<Workspace> {
        let root = root.as_ref().canonicalize()?;
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotADirectory,
                format!("{} is not a directory", root.display()),
            ));
        }
        let dir = Dir::open_ambient_dir(&root, cap_std::ambient_authority())?;
        Ok(Workspace { root, dir })
    }

    /// The canonical root.
    pub(crate) fn root(&self) -> &Path {
        &self.root
    }

    /// What `rel` is, symlinks followed without leaving the root; nothing is opened for read.
    fn metadata(&self, rel: &str) -> io::Result<cap_std::fs::Metadata> {
        self.dir.metadata(rel)
    }

    /// The text of the regular file at `rel`, opened beneath the root. What is opened is
    /// checked again, so a file swapped since the walk (for a FIFO, a device or a larger file)
    /// is not read: the open does not wait for a FIFO's writer, and no more than
    /// [`MAX_FILE_BYTES`] is ever read.
    fn read_text(&self, rel: &str) -> Contents {
        let mut options = OpenOptions::new();
        options.read(true);
        #[cfg(unix)]
        cap_std::fs::OpenOptionsExt::custom_flags(&mut options, libc::O_NONBLOCK);
        let read = || -> io::Result<Vec<u8>> {
            let file = self.dir.open_with(rel, &options)?;
            let metadata = file.metadata()?;
            if !metadata.is_file() || metadata.len() > MAX_FILE_BYTES {
                return Err(io::Error::other(format!(
                    "`{rel}` is no longer a regular file of at most {MAX_FILE_BYTES} bytes"
                )));
            }
            let mut bytes = Vec::with_capacity(metadata.len() as usize);
            file.take(MAX_FILE_BYTES + 1).read_to_end(&mut bytes)?;
            if bytes.len() as u64 > MAX_FILE_BYTES {
                return Err(io::Error::other(format!("`{rel}` grew while being read")));
            }
            Ok(bytes)
        };
        match read() {
            Ok(bytes) => match String::from_utf8(bytes) {
                Ok(text) => Contents::Text(text),
                Err(_) => Contents::Binary,
            },
            Err(error) => Contents::Unreadable(error),
        }
    }
}

/// The server: `workspace` served with its tools; `continuations` seals the paging tokens of
/// `search_text` and `list_files` (servers holding the same key accept each other's). The
/// capability tags it advertises are the ones its configuration supports, each proven by
/// `tests/workspace_server.rs`; serving over HTTP adds `streamable_http`.
/// The `disabled` modules are switched off (`--disable-module graph` turns off
/// `graph_export`, which then answers `module_disabled`).
pub(crate) fn server(
    workspace: Workspace,
    continuations: Continuations,
    disabled: &[String],
) -> EnvelopeServer {
    let config = EnvelopeConfig::new("workspace_server", env!("CARGO_PKG_VERSION"))
        .with_instructions(INSTRUCTIONS)
        .with_continuations(continuations)
        .with_state(Arc::new(workspace));
    let config = disabled.iter().fold(config, |config, module| {
        config.disable_module(module.clone())
    });
    EnvelopeServer::new(
        toolset![
            search_text,
            read_file,
            list_files,
            workspace_stats,
            graph_export,
            change_impact
        ],
        config,
    )
}

// ---------------------------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------------------------

/// A `validation` error naming the argument at fault, shaped like the ones argument decoding
/// produces (`data.field`).
fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::validation(message)
        .with_code("invalid_argument")
        .with_data(json!({ "field": field }))
}

/// Refuses a pattern argument longer than [`MAX_PATTERN_BYTES`].
fn bounded_pattern(field: &str, pattern: &str) -> ToolResult<()> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(
            field,
            format!(
                "`{field}` is {} bytes long; at most {MAX_PATTERN_BYTES} are accepted",
                pattern.len()
            ),
        ));
    }
    Ok(())
}

/// The error a long tool stops with when the caller cancelled. Not `transient`: the caller
/// withdrew the call, so retrying it unchanged is not what anyone asked for.
fn cancelled(tool: &str) -> ToolError {
    ToolError::unavailable(format!(
        "`{tool}` was cancelled by the caller before it finished"
    ))
    .with_code("cancelled")
    .with_retryable(false)
}

/// A path filter from a glob. A pattern without `/` matches file names anywhere (`*.rs`);
/// one with `/` matches the whole relative path, and `*` then stops at `/` (`src/**/*.rs`).
struct PathFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathFilter {
    fn new(field: &str, pattern: &str) -> ToolResult<PathFilter> {
        bounded_pattern(field, pattern)?;
        let glob = GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|error| invalid(field, format!("`{field}` is not a valid glob: {error}")))?;
        Ok(PathFilter {
            matcher: glob.compile_matcher(),
            whole_path: pattern.contains('/'),
        })
    }

    fn matches(&self, rel: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            self.matcher.is_match(file_name(rel))
        }
    }
}

fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// The directory part of a relative path: `""` at the root.
fn parent_dir(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir` joined with the relative `path`, `.` and `..` resolved; `None` when it climbs out of
/// the root.
fn join_rel(dir: &str, path: &str) -> Option<String> {
    let mut parts: Vec<&str> = dir.split('/').filter(|part| !part.is_empty()).collect();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            part => parts.push(part),
        }
    }
    Some(parts.join("/"))
}

// ---------------------------------------------------------------------------------------------
// Walking
// ---------------------------------------------------------------------------------------------

/// A file a walk found: not yet known to be text.
struct Candidate {
    /// Relative to the root, `/`-separated.
    rel: String,
    /// Size in bytes and modification time (nanoseconds since the epoch, 0 when unknown), as
    /// the walk read them: what the paging snapshot is made of.
    len: u64,
    modified: u128,
}

/// What one walk found.
struct Walk {
    /// Sorted by relative path.
    files: Vec<Candidate>,
    /// Files skipped for being over [`MAX_FILE_BYTES`].
    too_large: usize,
    /// Entries the walk could not read (a directory without permission, say).
    failures: usize,
}

impl Walk {
    /// The files a filter keeps (every file without one), in walk order.
    fn in_scope(&self, filter: Option<&PathFilter>) -> Vec<&Candidate> {
        self.files
            .iter()
            .filter(|file| filter.is_none_or(|filter| filter.matches(&file.rel)))
            .collect()
    }

    /// `count`, honest about what the walk could not see: directories it failed to list and
    /// the `unreadable` files in scope.
    fn tally(&self, mut count: PageCount, unreadable: usize) -> PageCount {
        if self.failures > 0 {
            count = count.incomplete_because(IncompleteReason::WalkFailure);
        }
        if unreadable > 0 {
            count = count.incomplete_because(IncompleteReason::UnreadableCandidate);
        }
        count
    }
}

/// A directory a walk has listed but not yet entered.
struct Subdir {
    /// Its parent, held open until every subdirectory listed in it has been entered.
    parent: Arc<Dir>,
    name: OsString,
    rel: String,
    depth: usize,
    /// Device and inode as listed: the directory entered must be this one.
    id: (u64, u64),
    /// The `.gitignore` files of its parent and above, deepest last.
    ignores: Ignores,
}

/// The `.gitignore` rules that apply in one directory: its own and its ancestors', deepest
/// last. Matched as git does: the deepest file that says anything about a path decides, and
/// `!pattern` lets a path back in.
type Ignores = Arc<Vec<ignore::gitignore::Gitignore>>;

/// `ignores` with `dir`'s own `.gitignore` added, when it has a readable one.
fn with_gitignore(ignores: &Ignores, dir: &Dir, rel: &str) -> Ignores {
    let text = dir
        .open(".gitignore")
        .ok()
        .filter(|file| {
            file.metadata()
                .is_ok_and(|metadata| metadata.is_file() && metadata.len() <= MAX_GITIGNORE_BYTES)
        })
        .and_then(|mut file| {
            let mut text = String::new();
            file.read_to_string(&mut text).ok().map(|_| text)
        });
    let Some(text) = text else {
        return Arc::clone(ignores);
    };
    let mut builder = ignore::gitignore::GitignoreBuilder::new(rel);
    for line in text.lines() {
        // A line that is not a valid pattern is skipped, as git skips it.
        let _ = builder.add_line(None, line);
    }
    match builder.build() {
        Ok(gitignore) => {
            let mut all = ignores.as_ref().clone();
            all.push(gitignore);
            Arc::new(all)
        }
        Err(_) => Arc::clone(ignores),
    }
}

/// Whether the `.gitignore` rules leave `rel` out.
fn ignored(ignores: &Ignores, rel: &str, is_dir: bool) -> bool {
    ignores
        .iter()
        .rev()
        .map(|gitignore| gitignore.matched(rel, is_dir))
        .find(|matched| !matched.is_none())
        .is_some_and(|matched| matched.is_ignore())
}

/// Walks the workspace; see the module's invariant for what is skipped. Iterative, and every
/// directory is opened relative to its parent's handle.
fn walk(workspace: &Workspace) -> Walk {
    let mut found = Walk {
        files: Vec::new(),
        too_large: 0,
        failures: 0,
    };
    let mut pending = Vec::new();
    match workspace.dir.try_clone() {
        Ok(root) => list(
            &mut found,
            &mut pending,
            Arc::new(root),
            "",
            0,
            &Arc::new(Vec::new()),
        ),
        Err(_) => found.failures += 1,
    }
    while let Some(subdir) = pending.pop() {
        let Ok(dir) = subdir.parent.open_dir(&subdir.name) else {
            found.failures += 1;
            continue;
        };
        // Replaced since it was listed (by a symlink, say): not entered.
        let entered = dir
            .dir_metadata()
            .is_ok_and(|metadata| (metadata.dev(), metadata.ino()) == subdir.id);
        if !entered {
            found.failures += 1;
            continue;
        }
        list(
            &mut found,
            &mut pending,
            Arc::new(dir),
            &subdir.rel,
            subdir.depth,
            &subdir.ignores,
        );
    }
    // By the whole relative path, not directory by directory as the walk visits them.
    found.files.sort_by(|a, b| a.rel.cmp(&b.rel));
    found
}

/// Lists `dir` (at `rel`, `depth` levels below the root): its files into `found`, its
/// subdirectories onto `pending`, leaving out what `.gitignore` files leave out.
fn list(
    found: &mut Walk,
    pending: &mut Vec<Subdir>,
    dir: Arc<Dir>,
    rel: &str,
    depth: usize,
    ignores: &Ignores,
) {
    let ignores = with_gitignore(ignores, &dir, rel);
    let Ok(entries) = dir.entries() else {
        found.failures += 1;
        return;
    };
    for entry in entries {
        let Ok(entry) = entry else {
            found.failures += 1;
            continue;
        };
        let name = entry.file_name();
        // A path that is not UTF-8 cannot be named in a JSON answer; leave it out.
        let Some(text) = name.to_str() else {
            continue;
        };
        let child = if rel.is_empty() {
            text.to_owned()
        } else {
            format!("{rel}/{text}")
        };
        // The entry's own type: a symlink is neither a file nor a directory here.
        let (Ok(file_type), Ok(metadata)) = (entry.file_type(), entry.metadata()) else {
            found.failures += 1;
            continue;
        };
        if file_type.is_dir() {
            // Hidden directories (`.git` among them) are skipped, as ripgrep skips them.
            if text.starts_with('.') || ignored(&ignores, &child, true) {
                continue;
            }
            if depth + 1 > MAX_WALK_DEPTH {
                found.failures += 1;
                continue;
            }
            pending.push(Subdir {
                parent: Arc::clone(&dir),
                name,
                rel: child,
                depth: depth + 1,
                id: (metadata.dev(), metadata.ino()),
                ignores: Arc::clone(&ignores),
            });
        } else if file_type.is_file() {
            // Hidden files are skipped too, as ripgrep skips them.
            if text.starts_with('.') || ignored(&ignores, &child, false) {
                continue;
            }
            if metadata.len() > MAX_FILE_BYTES {
                found.too_large += 1;
                continue;
            }
            let stamp = FileStamp::of(&metadata);
            found.files.push(Candidate {
                rel: child,
                len: stamp.len,
                modified: stamp.modified,
            });
        }
    }
}

/// A file's contents, if it is text.
enum Contents {
    Text(String),
    /// Not UTF-8: skipped like any binary file.
    Binary,
    /// Could not be read at all.
    Unreadable(io::Error),
}

/// One file's size and modification time (nanoseconds since the epoch, 0 when unknown): the
/// snapshot a target ref into the file is bound to. Any write moves it.
struct FileStamp {
    len: u64,
    modified: u128,
}

impl FileStamp {
    fn of(metadata: &cap_std::fs::Metadata) -> FileStamp {
        let modified = metadata
            .modified()
            .ok()
            .map(cap_std::time::SystemTime::into_std)
            .and_then(|time| time.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |since| since.as_nanos());
        FileStamp {
            len: metadata.len(),
            modified,
        }
    }
}

impl Snapshot for FileStamp {
    fn digest(&self) -> String {
        format!("{}:{}", self.len, self.modified)
    }
}

/// The files a paged tool walked: their paths, sizes and modification times are the snapshot
/// its continuations are bound to. Any change to one of them moves it, which makes an earlier
/// page's continuation stale.
///
/// Limit: an edit that keeps a file's size and modification time (a same-length rewrite whose
/// time is then set back) is not seen; reading every file in scope on every page to hash its
/// contents would cost what paging saves. `tests/workspace_server.rs` pins the limit.
struct FileStamps<'a>(&'a [&'a Candidate]);

impl Snapshot for FileStamps<'_> {
    fn digest(&self) -> String {
        use sha2::{Digest, Sha256};
        // SHA-256 over a fixed layout: every build of the server, on every replica, agrees.
        let mut hasher = Sha256::new();
        for file in self.0 {
            hasher.update((file.rel.len() as u64).to_be_bytes());
            hasher.update(file.rel.as_bytes());
            hasher.update(file.len.to_be_bytes());
            hasher.update(file.modified.to_be_bytes());
        }
        hasher
            .finalize()
            .iter()
            .map(|byte| format!("{byte:02x}"))
            .collect()
    }
}

/// Reports progress through a long walk: once when the total is known, every
/// [`PROGRESS_EVERY`] files, and at the end.
struct Progress<'a> {
    ctx: &'a ToolContext,
    total: usize,
    noun: &'static str,
}

impl<'a> Progress<'a> {
    fn start(ctx: &'a ToolContext, total: usize, noun: &'static str) -> Self {
        ctx.report_progress(
            0.0,
            Some(total as f64),
            Some(&format!("found {total} {noun}")),
        );
        Progress { ctx, total, noun }
    }

    fn step(&self, done: usize) {
        if done.is_multiple_of(PROGRESS_EVERY) && done < self.total {
            self.report(done);
        }
    }

    fn finish(&self) {
        // Progress must increase from one notification to the next; with nothing to do, the
        // first report already said all there is.
        if self.total > 0 {
            self.report(self.total);
        }
    }

    fn report(&self, done: usize) {
        let message = format!("{done} of {} {}", self.total, self.noun);
        self.ctx
            .report_progress(done as f64, Some(self.total as f64), Some(&message));
    }
}

// ---------------------------------------------------------------------------------------------
// search_text
// ---------------------------------------------------------------------------------------------

/// The arguments of `search_text`; also what its retry actions are built from.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct SearchTextArgs {
    /// What to look for: a literal string, or a regular expression when `regex` is true.
    query: String,
    /// Treat `query` as a regular expression (Rust `regex` syntax, matched line by line).
    /// Default false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    regex: Option<bool>,
    /// Only search files matching this glob: without `/` it matches file names (`*.rs`), with
    /// `/` the whole relative path (`src/**/*.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path_glob: Option<String>,
    /// Return at most this many occurrences (default 50, from 1 to 1000); the total counts
    /// all. A page may hold fewer when the response budget fills first
    /// (`truncation_reasons: ["budget_limit"]`); its continuation goes on from there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// The next page: `completeness.continuation` of the previous page, with the request
    /// otherwise unchanged (`limit` may change). Stale once a file in scope changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(SearchTextArgs);

/// One match.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Occurrence {
    /// Relative to the root.
    path: String,
    /// 1-based.
    line: usize,
    /// 1-based, in characters (Unicode scalar values) from the start of the line.
    column: usize,
    /// This hit, sealed: pass it as `target_ref` to `read_file` to read around it. Stale once
    /// the file changes; the stale answer offers the search again.
    target_ref: String,
    /// The line, or a window of it around the match when the line is very long.
    text: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct SearchHits {
    occurrences: Vec<Occurrence>,
    /// Text files the search read.
    files_searched: usize,
}

/// Search the workspace's text files for a literal string (or, with `regex: true`, a regular
/// expression) and return each occurrence with its path, 1-based line and column, and line
/// text. `completeness.total` is the exact number of occurrences, even when only the first
/// `limit` are returned. An empty result says why in `empty_reason`.
#[tool(tier = lite, read_only, open_world = false, title = "Search text", blocking)]
pub(crate) fn search_text(
    ctx: &ToolContext,
    args: SearchTextArgs,
) -> ToolResult<Reply<SearchHits>> {
    if args.query.is_empty() {
        return Err(invalid("query", "`query` must not be empty"));
    }
    bounded_pattern("query", &args.query)?;
    let regex_mode = args.regex.unwrap_or(false);
    // A literal search is a regex search for the escaped literal: one matching loop for both.
    let pattern = if regex_mode {
        args.query.clone()
    } else {
        regex::escape(&args.query)
    };
    let matcher = RegexBuilder::new(&pattern)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build()
        .map_err(|error| {
            invalid(
                "query",
                format!("`query` is not a valid regular expression: {error}"),
            )
        })?;
    let filter = args
        .path_glob
        .as_deref()
        .map(|pattern| PathFilter::new("path_glob", pattern))
        .transpose()?;
    search(
        ctx.state::<Workspace>()?,
        ctx,
        args,
        &matcher,
        filter.as_ref(),
    )
}

fn search(
    workspace: &Workspace,
    ctx: &ToolContext,
    args: SearchTextArgs,
    matcher: &Regex,
    filter: Option<&PathFilter>,
) -> ToolResult<Reply<SearchHits>> {
    let walk = walk(workspace);
    let in_scope = walk.in_scope(filter);
    let paging = Paging::new(Unit::OCCURRENCE, DEFAULT_SEARCH_LIMIT)
        .with_max_limit(MAX_PAGE_LIMIT)
        .with_scope(workspace.root().display().to_string())
        .with_snapshot(&FileStamps(&in_scope))
        .with_advice("narrow `query` or `path_glob`");
    let paging = Pager::<search_text>::open(ctx, &args, paging)?;
    let targets = HitRefs::new(ctx, workspace, &args)?;
    let mut occurrences = Vec::new();
    // What the rows built so far will take in the answer, roughly. A page ends before its
    // rows outgrow their share of the response budget, and its continuation goes on from the
    // next match; past the budget, the trimmer would cut rows and drop the continuation.
    let mut built_chars = 0;
    let row_budget = ctx.response_budget().map(|budget| budget / 4 * 3);
    let mut budget_full = false;
    let mut total = 0;
    let in_filter = in_scope.len();
    let mut files_searched = 0;
    let mut files_with_hits = 0;
    let mut unreadable = 0;
    // The baseline: what a recursive grep of the same scope would have put in the agent's
    // context, every matching line of it, in bytes.
    let mut grep_bytes = 0;
    for file in in_scope {
        if ctx.is_cancelled() {
            return Err(cancelled("search_text"));
        }
        let text = match workspace.read_text(&file.rel) {
            Contents::Text(text) => text,
            Contents::Binary => continue,
            Contents::Unreadable(_) => {
                unreadable += 1;
                continue;
            }
        };
        files_searched += 1;
        let before = total;
        for (index, line) in text.lines().enumerate() {
            // Columns are counted on from the previous match, so a long line with many
            // matches costs its length once, not once per match.
            let mut column = Column::default();
            let matched_before = total;
            for found in matcher.find_iter(line) {
                // A pattern that can match nothing (`a*`) would report every position.
                if found.is_empty() {
                    continue;
                }
                total += 1;
                // Off the page, matches are only counted, so the total stays exact.
                if !budget_full && paging.takes(total - 1) {
                    let (line_no, column_no) = (index + 1, column.at(line, found.start()));
                    let occurrence = Occurrence {
                        target_ref: targets.seal(file, line_no, column_no)?,
                        path: file.rel.clone(),
                        line: line_no,
                        column: column_no,
                        text: excerpt(line, found.start()),
                    };
                    // Measured as the budget stage will measure it: escapes and the token
                    // estimate (punctuation and accented text weigh more than a byte each).
                    built_chars += ctx.response_size(&occurrence).unwrap_or_else(|| {
                        occurrence.path.len()
                            + occurrence.text.len()
                            + occurrence.target_ref.len()
                            + ROW_OVERHEAD
                    });
                    // The first row is always kept, so every page makes progress.
                    budget_full = !occurrences.is_empty()
                        && row_budget.is_some_and(|budget| built_chars > budget);
                    if !budget_full {
                        occurrences.push(occurrence);
                    }
                }
            }
            // What `grep -rn` prints for the line: `path:line:text`.
            if total > matched_before {
                grep_bytes += file.rel.len() + digits(index + 1) + line.len() + 3;
            }
        }
        if total > before {
            files_with_hits += 1;
        }
    }

    let returned = occurrences.len();
    let summary = format!(
        "{total} {} in {files_with_hits} of {files_searched} files searched{}",
        Unit::OCCURRENCE.noun(total),
        paging.starts_at()
    );
    let reply = Reply::new(SearchHits {
        occurrences,
        files_searched,
    })
    .summary_line(summary)
    // About four bytes a token: `meta.tokens_saved` compares this page with it.
    .baseline("grep_recursive", grep_bytes.div_ceil(4) as u64);
    let mut count = PageCount::new(returned, total);
    if budget_full {
        count = count.ended_by(TruncationReason::BudgetLimit);
    }
    let reply = paging.finish(ctx, &args, reply, walk.tally(count, unreadable))?;
    if total > 0 {
        return Ok(reply.verdict(Verdict::Info));
    }

    // Nothing found: say why, and offer the call most likely to help.
    let reply = reply.verdict(Verdict::NotFound);
    let regex_mode = args.regex.unwrap_or(false);
    if let Some(pattern) = args.path_glob.as_deref().filter(|_| in_filter == 0) {
        let diagnosis = format!(
            "`path_glob` `{pattern}` matched none of the {} files in the workspace",
            walk.files.len()
        );
        // A new request starts from the first page.
        let wider = SearchTextArgs {
            path_glob: None,
            continuation: None,
            ..args.clone()
        };
        let action = NextAction::call::<search_text>(
            "search-without-path-glob",
            Role::BroadenScope,
            0,
            wider,
            "search every file instead of only those matching `path_glob`",
        )
        .map_err(ToolError::internal)?;
        Ok(reply
            .empty(EmptyReason::FiltersExcludedAll, diagnosis)
            .next_actions([action]))
    } else if !regex_mode && looks_like_regex(&args.query) && Regex::new(&args.query).is_ok() {
        let diagnosis = format!(
            "the literal `{}` occurs nowhere, and it contains regular-expression \
             metacharacters; it may have been meant as a pattern",
            args.query
        );
        let as_regex = SearchTextArgs {
            regex: Some(true),
            continuation: None,
            ..args.clone()
        };
        let action = NextAction::call::<search_text>(
            "retry-as-regex",
            Role::Retry,
            0,
            as_regex,
            "repeat the search with `query` read as a regular expression",
        )
        .map_err(ToolError::internal)?;
        Ok(reply
            .empty(EmptyReason::QueryLooksLikeRegex, diagnosis)
            .next_actions([action]))
    } else {
        let what = if regex_mode { "pattern" } else { "literal" };
        let diagnosis = format!(
            "the {what} `{}` occurs in none of the {files_searched} text files searched",
            args.query
        );
        Ok(reply.empty(EmptyReason::NoMatch, diagnosis))
    }
}

/// The tool family that accepts a `search_text` hit's `target_ref`.
const FILE_TARGETS: &str = "workspace.file";
/// A hit's ref carries its search (to offer it again when the ref is stale) up to this size:
/// refs ride on every hit, so they are kept short.
const MAX_REF_SEARCH_BYTES: usize = 160;
/// Lines of context `read_file` returns on each side of a hit by default, and at most.
const DEFAULT_CONTEXT_LINES: usize = 3;
const MAX_CONTEXT_LINES: usize = 200;

/// Seals the `target_ref` of each hit of one search: the file, line and column, and the search
/// itself when it is short, bound to the file's stamp.
struct HitRefs<'a> {
    continuations: &'a Continuations,
    session: &'a str,
    scope: String,
    search: Option<serde_json::Value>,
}

impl<'a> HitRefs<'a> {
    fn new(ctx: &'a ToolContext, workspace: &Workspace, args: &SearchTextArgs) -> ToolResult<Self> {
        // A new search starts from its first page.
        let search = serde_json::to_value(SearchTextArgs {
            continuation: None,
            limit: None,
            ..args.clone()
        })
        .ok()
        .filter(|search| search.to_string().len() <= MAX_REF_SEARCH_BYTES);
        Ok(HitRefs {
            continuations: ctx.state::<Continuations>()?,
            session: ctx.principal().unwrap_or_default(),
            scope: workspace.root().display().to_string(),
            search,
        })
    }

    fn seal(&self, file: &Candidate, line: usize, column: usize) -> ToolResult<String> {
        // Short keys: the ref is opaque, and rides on every hit.
        let mut target = json!({ "p": file.rel, "l": line, "c": column });
        if let Some(search) = &self.search {
            target["s"] = search.clone();
        }
        let stamp = FileStamp {
            len: file.len,
            modified: file.modified,
        };
        let binding = TargetBinding::new(FILE_TARGETS, self.session).with_scope(&self.scope);
        self.continuations.seal_target(&binding, &stamp, &target)
    }
}

/// How many decimal digits `n` takes.
fn digits(n: usize) -> usize {
    n.checked_ilog10().map_or(1, |log| log as usize + 1)
}

/// Whether a query has characters that mean something in a regular expression and rarely
/// appear in a literal search. A lone `.` does not count: it is common in literals
/// (`foo.bar`).
fn looks_like_regex(query: &str) -> bool {
    query.contains([
        '\\', '*', '+', '?', '|', '(', ')', '[', ']', '{', '}', '^', '$',
    ])
}

/// What an occurrence adds to the answer besides its path and text, roughly: its keys,
/// numbers and punctuation.
const ROW_OVERHEAD: usize = 48;

/// The 1-based character column of matches along one line, counted on from the last one asked
/// for: asked in increasing order, a line costs its length once.
#[derive(Default)]
struct Column {
    /// Byte offset of the last match asked for, and its 0-based character column.
    byte: usize,
    chars: usize,
}

impl Column {
    /// The column of the match at byte `start`, at or after the last one asked for.
    fn at(&mut self, line: &str, start: usize) -> usize {
        self.chars += line[self.byte..start].chars().count();
        self.byte = start;
        self.chars + 1
    }
}

/// The line as an occurrence shows it: whole when short, else a window of [`MAX_LINE_CHARS`]
/// starting a little before the match, so that one minified file cannot flood the answer.
/// Costs the window, not the line: a 2 MiB line with a match on every character is read once
/// by the search, not once per match.
fn excerpt(line: &str, match_start: usize) -> String {
    if line.chars().nth(MAX_LINE_CHARS).is_none() {
        return line.to_owned();
    }
    // Up to a quarter of the window before the match, then the window from there.
    let start = line[..match_start]
        .char_indices()
        .rev()
        .take(MAX_LINE_CHARS / 4)
        .last()
        .map_or(match_start, |(index, _)| index);
    let end = line[start..]
        .char_indices()
        .nth(MAX_LINE_CHARS)
        .map(|(index, _)| start + index);
    let mut text = String::new();
    if start > 0 {
        text.push('…');
    }
    text.push_str(&line[start..end.unwrap_or(line.len())]);
    if end.is_some() {
        text.push('…');
    }
    text
}

// ---------------------------------------------------------------------------------------------
// read_file
// ---------------------------------------------------------------------------------------------

/// The arguments of `read_file`: a `path`, or a hit's `target_ref`.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(extend("anyOf" = [{"required": ["path"]}, {"required": ["target_ref"]}]))]
pub(crate) struct ReadFileArgs {
    /// The file, relative to the workspace root (an absolute path inside the root works too).
    /// Required unless `target_ref` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// A `search_text` hit's `target_ref`: read the lines around that hit. Not combined with
    /// `path`, `start_line` or `end_line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target_ref: Option<String>,
    /// With `target_ref`: lines of context on each side of the hit (default 3, at most 200).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(max = 200))]
    context_lines: Option<usize>,
    /// The first line to return, 1-based. Default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    start_line: Option<usize>,
    /// The last line to return, inclusive. Default: the file's last line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    end_line: Option<usize>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FileContent {
    /// Relative to the root.
    path: String,
    /// The first line returned, 1-based.
    start_line: usize,
    /// The last line returned, inclusive; `start_line - 1` when no line is returned.
    end_line: usize,
    /// Lines in the whole file.
    total_lines: usize,
    /// The lines `start_line..=end_line`, line endings included, exactly as in the file.
    content: String,
}

/// Read a text file of the workspace, whole or a range of lines (`start_line`, `end_line`,
/// 1-based and inclusive), or the lines around a `search_text` hit (`target_ref`, with
/// `context_lines`). Paths outside the workspace are refused with `permission`.
#[tool(tier = lite, read_only, open_world = false, title = "Read a file", blocking)]
pub(crate) fn read_file(ctx: &ToolContext, args: ReadFileArgs) -> ToolResult<Reply<FileContent>> {
    if let Some(token) = args.target_ref.as_deref() {
        return read_target(ctx, &args, token);
    }
    if args.context_lines.is_some() {
        return Err(invalid(
            "context_lines",
            "`context_lines` goes with `target_ref`; with `path`, pass `start_line` and `end_line`",
        ));
    }
    let Some(path) = args.path.as_deref() else {
        return Err(invalid("path", "pass `path`, or a hit's `target_ref`"));
    };
    if args.start_line == Some(0) {
        return Err(invalid(
            "start_line",
            "`start_line` is 1-based; the first line is 1",
        ));
    }
    if let (Some(start), Some(end)) = (args.start_line, args.end_line)
        && end < start
    {
        return Err(invalid(
            "end_line",
            format!("`end_line` ({end}) is before `start_line` ({start})"),
        ));
    }
    read(
        ctx,
        ctx.state::<Workspace>()?,
        path,
        args.start_line,
        args.end_line,
    )
}

/// `read_file` of a hit's `target_ref`: the lines around it, when the file is as it was.
fn read_target(
    ctx: &ToolContext,
    args: &ReadFileArgs,
    token: &str,
) -> ToolResult<Reply<FileContent>> {
    let given: Vec<&str> = [
        ("path", args.path.is_some()),
        ("start_line", args.start_line.is_some()),
        ("end_line", args.end_line.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    if !given.is_empty() {
        return Err(conflicting_target_input("target_ref", &given));
    }
    let context = args.context_lines.unwrap_or(DEFAULT_CONTEXT_LINES);
    if context > MAX_CONTEXT_LINES {
        return Err(invalid(
            "context_lines",
            format!("`context_lines` is at most {MAX_CONTEXT_LINES}"),
        ));
    }
    let workspace = ctx.state::<Workspace>()?;
    let scope = workspace.root().display().to_string();
    let binding =
        TargetBinding::new(FILE_TARGETS, ctx.principal().unwrap_or_default()).with_scope(&scope);
    let opened = ctx
        .state::<Continuations>()?
        .open_target(token, &binding, "target_ref")?;
    let target = opened.target();
    let (Some(path), Some(line)) = (
        target["p"].as_str(),
        target["l"]
            .as_u64()
            .and_then(|line| usize::try_from(line).ok()),
    ) else {
        return Err(ToolError::internal(
            "a target ref this server sealed has no path or line",
        ));
    };
    let stamp = match workspace.metadata(path) {
        Ok(metadata) if metadata.is_file() => FileStamp::of(&metadata),
        _ => return Err(target_not_found("target_ref")),
    };
    if let Err(stale) = opened.check_snapshot(&stamp) {
        return Err(stale.with_recovery(recovery(target, path)?));
    }
    let start = line.saturating_sub(context).max(1);
    read(
        ctx,
        workspace,
        path,
        Some(start),
        Some(line.saturating_add(context)),
    )
}

/// What an agent calls when a ref went stale: the search again (it is in the ref when it was
/// short), else the file at the hit's line.
fn recovery(target: &serde_json::Value, path: &str) -> ToolResult<NextAction> {
    let action = match serde_json::from_value::<SearchTextArgs>(target["s"].clone()) {
        Ok(search) => NextAction::call::<search_text>(
            "search-again",
            Role::Retry,
            0,
            search,
            "the file changed: run the search again for fresh hits and refs",
        ),
        Err(_) => NextAction::call::<read_file>(
            "read-the-file",
            Role::Retry,
            0,
            ReadFileArgs {
                path: Some(path.to_owned()),
                target_ref: None,
                context_lines: None,
                start_line: target["l"]
                    .as_u64()
                    .and_then(|line| usize::try_from(line).ok()),
                end_line: None,
            },
            "the file changed: read it from the hit's line on",
        ),
    };
    action.map_err(ToolError::internal)
}

fn read(
    ctx: &ToolContext,
    workspace: &Workspace,
    path: &str,
    start_line: Option<usize>,
    end_line: Option<usize>,
) -> ToolResult<Reply<FileContent>> {
    let rel = resolve(workspace.root(), path)?;
    let metadata = workspace
        .metadata(&rel)
        .map_err(|error| not_readable(path, &rel, error))?;
    if metadata.is_dir() {
        return Err(invalid(
            "path",
            format!("`{rel}` is a directory; use `list_files` to see its files"),
        ));
    }
    // A FIFO, socket or device would block the read, or never end: only regular files are
    // read, and that is known from the metadata, before anything is opened.
    if !metadata.is_file() {
        return Err(
            invalid("path", format!("`{rel}` is not a regular file")).with_code("not_a_file")
        );
    }
    if metadata.len() > MAX_FILE_BYTES {
        return Err(invalid(
            "path",
            format!(
                "`{rel}` is {} bytes; files over {MAX_FILE_BYTES} bytes are not served",
                metadata.len()
            ),
        )
        .with_code("file_too_large"));
    }
    let text = match workspace.read_text(&rel) {
        Contents::Text(text) => text,
        Contents::Binary => {
            return Err(invalid("path", format!("`{rel}` is not a UTF-8 text file"))
                .with_code("binary_file"));
        }
        Contents::Unreadable(error) => return Err(error.into()),
    };

    // Split after each `\n`, so the content comes back with its own line endings.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total_lines = lines.len();
    let start_line = start_line.unwrap_or(1);
    if start_line > total_lines.max(1) {
        return Err(invalid(
            "start_line",
            format!("`start_line` ({start_line}) is past the end: `{rel}` has {total_lines} lines"),
        ));
    }
    let asked_end = end_line.unwrap_or(total_lines).min(total_lines);
    // Whole lines, only as many as fit the response budget: past it, the budget stage would cut
    // `content` mid-line while `end_line` still named the last line asked for. The first line
    // is always sent.
    let mut end_line = asked_end;
    if let Some(room) = ctx.response_budget().map(|budget| budget / 4 * 3) {
        let mut used = 0;
        for (index, line) in lines[start_line - 1..asked_end].iter().enumerate() {
            used += ctx.response_size(line).unwrap_or(line.len());
            if used > room && index > 0 {
                end_line = start_line - 1 + index;
                break;
            }
        }
    }
    let content = lines[start_line - 1..end_line].concat();
    let mut summary = format!("`{rel}`: lines {start_line}–{end_line} of {total_lines}");
    let cut = end_line < asked_end;
    if cut {
        summary.push_str("; the response budget ends here");
    }
    let read_on = ReadFileArgs {
        path: Some(rel.clone()),
        target_ref: None,
        context_lines: None,
        start_line: Some(end_line + 1),
        // The range asked for, or to the end of the file.
        end_line: (asked_end < total_lines).then_some(asked_end),
    };
    let reply = Reply::new(FileContent {
        path: rel,
        start_line,
        end_line,
        total_lines,
        content,
    })
    .summary_line(summary);
    if !cut {
        return Ok(reply);
    }
    let action = NextAction::call::<read_file>(
        "read-on",
        Role::Inspect,
        0,
        read_on,
        format!(
            "read from line {} on: the response budget ended this answer",
            end_line + 1
        ),
    )
    .map_err(ToolError::internal)?;
    Ok(reply
        .next_step(format!(
            "the response budget ended the content after line {end_line} of {asked_end} asked \
             for; read on from line {} with the `read-on` action",
            end_line + 1
        ))
        .next_actions([action]))
}

/// `error.path` is outside the workspace, with the hint that fixes it.
fn outside(raw: &str) -> ToolError {
    ToolError::permission(format!("`{raw}` is outside the workspace"))
        .with_code("outside_workspace")
        .with_hint("pass a path relative to the workspace root, without `..` above it")
}

/// Resolves a requested path to the relative path below `root` it names, without asking the
/// file system: `..` that climbs above the root and absolute paths elsewhere are refused
/// before anything is opened, so the answer does not tell what exists outside. Where the path
/// leads (through symlinks) is checked as it is opened, beneath the root.
fn resolve(root: &Path, raw: &str) -> ToolResult<String> {
    if raw.is_empty() {
        return Err(invalid("path", "`path` must not be empty"));
    }
    let requested = Path::new(raw);
    // An absolute path inside the root is read as the relative path below it.
    let requested = if requested.is_absolute() {
        requested.strip_prefix(root).map_err(|_| outside(raw))?
    } else {
        requested
    };
    let mut parts: Vec<&str> = Vec::new();
    for component in requested.components() {
        match component {
            Component::Normal(part) => parts.push(
                part.to_str()
                    .ok_or_else(|| invalid("path", "`path` is not valid UTF-8"))?,
            ),
            Component::CurDir => {}
            Component::ParentDir => {
                parts.pop().ok_or_else(|| outside(raw))?;
            }
            Component::RootDir | Component::Prefix(_) => return Err(outside(raw)),
        }
    }
    if parts.is_empty() {
        // The root itself.
        return Ok(".".to_owned());
    }
    Ok(parts.join("/"))
}

/// Why `rel` (requested as `raw`) could not be looked at, named as the caller can act on it.
fn not_readable(raw: &str, rel: &str, error: io::Error) -> ToolError {
    match error.kind() {
        // `cap-std` refuses a path that leads outside the root (through a symlink, say) with
        // a permission error of its own, which carries no OS error code.
        io::ErrorKind::PermissionDenied if error.raw_os_error().is_none() => outside(raw),
        io::ErrorKind::PermissionDenied => ToolError::from(error),
        // A component longer than the file system allows.
        io::ErrorKind::InvalidFilename => invalid(
            "path",
            format!("`path` has a name too long for the file system: {error}"),
        ),
        // Missing, a file used as a directory, a symlink loop: there is no such file.
        _ => ToolError::not_found(format!("no file `{rel}` in the workspace"))
            .with_hint("use `list_files` or `search_text` to find the right path")
            .with_data(json!({ "field": "path" })),
    }
}

// ---------------------------------------------------------------------------------------------
// list_files
// ---------------------------------------------------------------------------------------------

/// The arguments of `list_files`; also what its next-page action is built from.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub(crate) struct ListFilesArgs {
    /// Only list files matching this glob: without `/` it matches file names (`*.rs`), with
    /// `/` the whole relative path (`src/**/*.rs`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    glob: Option<String>,
    /// Return at most this many paths (default 200, from 1 to 1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// The next page: `completeness.continuation` of the previous page, with the request
    /// otherwise unchanged (`limit` may change). Stale once a file in scope changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(ListFilesArgs);

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct FileList {
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
    strict_args
)]
pub(crate) fn list_files(ctx: &ToolContext, args: ListFilesArgs) -> ToolResult<Reply<FileList>> {
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
    let reply = Reply::new(FileList { files }).summary_line(format!(
        "{found} {}{}",
        Unit::FILE.noun(found),
        paging.starts_at()
    ));
    let count = walk.tally(PageCount::new(returned, found), unreadable);
    let reply = paging.finish(ctx, &args, reply, count)?;
    if found > 0 {
        return Ok(reply);
    }
    let reply = reply.verdict(Verdict::NotFound);
    Ok(match args.glob.as_deref().filter(|_| in_filter == 0) {
        Some(pattern) => reply.empty(
            EmptyReason::FiltersExcludedAll,
            format!("`glob` `{pattern}` matched none of the {scanned} files in the workspace"),
        ),
        None => reply.empty(
            EmptyReason::NoMatch,
            "the workspace has no text files that qualify",
        ),
    })
}

// ---------------------------------------------------------------------------------------------
// workspace_stats
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Default, Serialize, schemars::JsonSchema)]
pub(crate) struct Tally {
    files: usize,
    bytes: u64,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Stats {
    /// Text files counted.
    files: usize,
    /// Their bytes.
    bytes: u64,
    /// Per lower-cased extension; `(none)` for files without one.
    by_extension: BTreeMap<String, Tally>,
    /// Files left out, by why.
    skipped: Skipped,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Skipped {
    /// Over 2 MiB.
    too_large: usize,
    /// Not UTF-8.
    binary: usize,
    /// Could not be read, or the walk could not enter them.
    unreadable: usize,
}

/// Count the workspace's text files and their bytes, in total and by extension. Walks the
/// whole tree, reporting progress as it goes; stops early when the call is cancelled.
#[tool(tier = standard, read_only, open_world = false, title = "Workspace statistics", blocking)]
pub(crate) fn workspace_stats(ctx: &ToolContext) -> ToolResult<Reply<Stats>> {
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

// ---------------------------------------------------------------------------------------------
// graph_export
// ---------------------------------------------------------------------------------------------

/// The arguments of `graph_export`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct GraphExportArgs {
    /// Keep at most this many nodes, the best connected first (at least 1). Default: all.
    #[serde(default)]
    #[schemars(range(min = 1))]
    max_nodes: Option<usize>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Graph {
    /// Sorted by id.
    nodes: Vec<Node>,
    /// Sorted by source, target, kind; only between nodes present.
    edges: Vec<Edge>,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Node {
    /// The file's relative path.
    id: String,
    /// Always `file`.
    kind: &'static str,
    /// `rust`, `python`, `javascript` or `typescript`.
    language: &'static str,
    lines: usize,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, schemars::JsonSchema)]
pub(crate) struct Edge {
    source: String,
    target: String,
    /// `mod` (Rust `mod x;`), `use` (Rust `use crate::…`) or `import` (Python, JS/TS).
    kind: &'static str,
}

/// Export the workspace's source files (Rust, Python, JavaScript, TypeScript) as a graph:
/// files are nodes; edges are Rust `mod x;` and `use crate::…`, Python `import x` and
/// `from x import y`, and JS/TS relative imports, each resolved to a file of the workspace
/// (references that resolve to no file are left out). `max_nodes` keeps the best connected
/// files.
#[tool(
    tier = heavy,
    read_only,
    open_world = false,
    title = "Import graph",
    module = "graph",
    blocking
)]
pub(crate) fn graph_export(ctx: &ToolContext, args: GraphExportArgs) -> ToolResult<Reply<Graph>> {
    if args.max_nodes == Some(0) {
        return Err(invalid("max_nodes", "`max_nodes` must be at least 1"));
    }
    export_graph(ctx.state::<Workspace>()?, ctx, args.max_nodes)
}

fn export_graph(
    workspace: &Workspace,
    ctx: &ToolContext,
    max_nodes: Option<usize>,
) -> ToolResult<Reply<Graph>> {
    let walk = walk(workspace);
    let sources: Vec<(&Candidate, Language)> = walk
        .files
        .iter()
        .filter_map(|file| Language::of(&file.rel).map(|language| (file, language)))
        .collect();

    // Pass 1: read each source file once, keep its node and its raw references.
    let progress = Progress::start(ctx, sources.len(), "source files");
    let mut nodes = Vec::new();
    let mut references = Vec::new();
    let mut unreadable = 0;
    for (index, (file, language)) in sources.iter().enumerate() {
        if ctx.is_cancelled() {
            return Err(cancelled("graph_export"));
        }
        match workspace.read_text(&file.rel) {
            Contents::Text(text) => {
                nodes.push(Node {
                    id: file.rel.clone(),
                    kind: "file",
                    language: language.name(),
                    lines: text.lines().count(),
                });
                references.push((file.rel.as_str(), language.references(&text)));
            }
            Contents::Binary => {}
            Contents::Unreadable(_) => unreadable += 1,
        }
        progress.step(index + 1);
    }
    progress.finish();

    // Pass 2: resolve references against the files that are nodes.
    let ids: BTreeSet<&str> = nodes.iter().map(|node| node.id.as_str()).collect();
    let mut edges = BTreeSet::new();
    for (source, found) in &references {
        for reference in found {
            for (target, kind) in reference.resolve(source, &ids) {
                if target != *source {
                    edges.insert(Edge {
                        source: (*source).to_owned(),
                        target,
                        kind,
                    });
                }
            }
        }
    }
    let mut edges: Vec<Edge> = edges.into_iter().collect();

    let total = nodes.len();
    if let Some(max) = max_nodes
        && max < total
    {
        keep_best_connected(&mut nodes, &mut edges, max);
    }
    let mut reasons = Vec::new();
    if walk.failures > 0 {
        reasons.push(IncompleteReason::WalkFailure);
    }
    if unreadable > 0 {
        reasons.push(IncompleteReason::UnreadableCandidate);
    }
    // What could not be read leaves the total unproven.
    let proven = reasons.is_empty().then_some(total);
    let completeness = if nodes.len() < total {
        Completeness::truncated_page(
            Unit::FILE,
            nodes.len(),
            proven,
            TruncationReason::TopKLimit,
            None,
        )
        .and_then(|page| page.with_incomplete_reasons(reasons))
    } else if reasons.is_empty() {
        Ok(Completeness::complete(Unit::FILE, total))
    } else {
        Completeness::incomplete(Unit::FILE, total, None, reasons)
    }
    .map_err(ToolError::internal)?;
    let next_step = completeness.next_step("raise `max_nodes`, or leave it out for every file");
    let summary = format!("{} files, {} edges", nodes.len(), edges.len());
    let empty = nodes.is_empty();
    let mut reply = Reply::new(Graph { nodes, edges })
        .summary_line(summary)
        .completeness(completeness);
    if let Some(step) = next_step {
        reply = reply.next_step(step);
    }
    if empty {
        reply = reply.verdict(Verdict::NotFound).empty(
            EmptyReason::NoMatch,
            "the workspace has no Rust, Python, JavaScript or TypeScript files",
        );
    }
    Ok(reply)
}

/// Keeps the `max` nodes of highest degree (ties by id) and the edges between them.
fn keep_best_connected(nodes: &mut Vec<Node>, edges: &mut Vec<Edge>, max: usize) {
    let mut degree: HashMap<&str, usize> = HashMap::new();
    for edge in edges.iter() {
        *degree.entry(edge.source.as_str()).or_default() += 1;
        *degree.entry(edge.target.as_str()).or_default() += 1;
    }
    let mut ranked: Vec<(usize, &str)> = nodes
        .iter()
        .map(|node| {
            (
                degree.get(node.id.as_str()).copied().unwrap_or(0),
                node.id.as_str(),
            )
        })
        .collect();
    ranked.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(b.1)));
    let kept: BTreeSet<String> = ranked
        .into_iter()
        .take(max)
        .map(|(_, id)| id.to_owned())
        .collect();
    nodes.retain(|node| kept.contains(&node.id));
    edges.retain(|edge| kept.contains(&edge.source) && kept.contains(&edge.target));
}

#[derive(Debug, Clone, Copy)]
enum Language {
    Rust,
    Python,
    JavaScript,
    TypeScript,
}

impl Language {
    fn of(rel: &str) -> Option<Language> {
        match file_name(rel).rsplit_once('.')?.1 {
            "rs" => Some(Language::Rust),
            "py" => Some(Language::Python),
            "js" | "jsx" | "mjs" | "cjs" => Some(Language::JavaScript),
            "ts" | "tsx" | "mts" | "cts" => Some(Language::TypeScript),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Language::Rust => "rust",
            Language::Python => "python",
            Language::JavaScript => "javascript",
            Language::TypeScript => "typescript",
        }
    }

    /// The references a file makes, unresolved. Line-based and regex-based: good enough for
    /// the common forms, and it never needs a parser for each language.
    fn references(self, text: &str) -> Vec<Reference> {
        match self {
            Language::Rust => rust_references(text),
            Language::Python => python_references(text),
            Language::JavaScript | Language::TypeScript => js_references(text),
        }
    }
}

/// A reference from one file to another, before it is resolved to a path.
#[derive(Debug)]
enum Reference {
    /// Rust `mod name;`.
    RustMod(String),
    /// Rust `use crate::a::b::C;`: the segments after `crate`.
    RustUse(Vec<String>),
    /// Python `import a.b` (`level` 0, no names) or `from ..a import b, c` (`level` 2).
    Python {
        level: usize,
        module: Vec<String>,
        names: Vec<String>,
    },
    /// A JS/TS relative module specifier: `./x`, `../y/z`.
    Js(String),
}

fn regex(pattern: &str) -> Regex {
    Regex::new(pattern).expect("the pattern is a valid constant")
}

static RUST_MOD: LazyLock<Regex> = LazyLock::new(|| {
    regex(
        r"(?m)^\s*(?:#\[[^\]]*\]\s*)*(?:pub(?:\s*\([^)]*\))?\s+)?mod\s+(?:r#)?([A-Za-z_][A-Za-z0-9_]*)\s*;",
    )
});
static RUST_USE: LazyLock<Regex> = LazyLock::new(|| regex(r"(?s)\buse\s+crate::(.*?);"));
static PY_IMPORT: LazyLock<Regex> = LazyLock::new(|| regex(r"^\s*import\s+(.+)$"));
static PY_FROM: LazyLock<Regex> =
    LazyLock::new(|| regex(r"^\s*from\s+(\.*)\s*([A-Za-z_][\w.]*)?\s+import\s+(.+)$"));
static JS_IMPORT: LazyLock<Regex> =
    LazyLock::new(|| regex(r#"(?:\bfrom|\bimport)\s*['"](\.{1,2}/[^'"\n]*)['"]"#));

/// The text with `//` comments cut, so commented-out code adds no edges.
fn strip_line_comments(text: &str) -> String {
    text.lines()
        .map(|line| line.find("//").map_or(line, |at| &line[..at]))
        .collect::<Vec<_>>()
        .join("\n")
}

fn rust_references(text: &str) -> Vec<Reference> {
    let code = strip_line_comments(text);
    let mut found: Vec<Reference> = RUST_MOD
        .captures_iter(&code)
        .map(|captures| Reference::RustMod(captures[1].to_owned()))
        .collect();
    for captures in RUST_USE.captures_iter(&code) {
        let mut paths = Vec::new();
        expand_use_tree(&captures[1], &mut Vec::new(), &mut paths, 0);
        found.extend(paths.into_iter().map(Reference::RustUse));
    }
    found
}

/// Groups nested deeper than this in one `use` are not expanded: real code nests a few, and a
/// workspace may be an untrusted repository whose `use crate::{a::{…}}` nests thousands deep.
const MAX_USE_NESTING: usize = 32;

/// Expands a use tree (`a::{b, c::D as E}`) into the segments of each path it names, `nesting`
/// groups down; deeper than [`MAX_USE_NESTING`], the rest of the tree is left out, so the
/// recursion (and the rescanning each level does) stays bounded.
fn expand_use_tree(
    tree: &str,
    prefix: &mut Vec<String>,
    out: &mut Vec<Vec<String>>,
    nesting: usize,
) {
    if nesting > MAX_USE_NESTING {
        return;
    }
    let tree = tree.trim();
    let (head, group) = match tree.find('{') {
        Some(open) if tree.ends_with('}') => (&tree[..open], Some(&tree[open + 1..tree.len() - 1])),
        _ => (tree, None),
    };
    let depth = prefix.len();
    for segment in head.split("::") {
        // `b as c` names `b`; `*` and `self` add nothing to the path.
        match segment.split_whitespace().next().unwrap_or("") {
            "" | "*" | "self" => {}
            segment => prefix.push(segment.trim_start_matches("r#").to_owned()),
        }
    }
    match group {
        Some(group) => {
            for part in split_top_level(group) {
                expand_use_tree(part, prefix, out, nesting + 1);
            }
        }
        None => out.push(prefix.clone()),
    }
    prefix.truncate(depth);
}

/// Splits on commas outside braces.
fn split_top_level(group: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (at, ch) in group.char_indices() {
        match ch {
            '{' => depth += 1,
            '}' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                parts.push(&group[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    parts.push(&group[start..]);
    parts
}

fn python_references(text: &str) -> Vec<Reference> {
    let mut found = Vec::new();
    for line in text.lines() {
        let line = line.find('#').map_or(line, |at| &line[..at]);
        if let Some(captures) = PY_FROM.captures(line) {
            let names = captures[3]
                .split(',')
                .filter_map(|name| {
                    let name =
                        name.trim_matches(|c: char| c == '(' || c == ')' || c.is_whitespace());
                    name.split_whitespace().next().map(str::to_owned)
                })
                .filter(|name| name != "*")
                .collect();
            found.push(Reference::Python {
                level: captures[1].len(),
                module: dotted(captures.get(2).map_or("", |m| m.as_str())),
                names,
            });
        } else if let Some(captures) = PY_IMPORT.captures(line) {
            for module in captures[1].split(',') {
                if let Some(module) = module.split_whitespace().next() {
                    found.push(Reference::Python {
                        level: 0,
                        module: dotted(module),
                        names: Vec::new(),
                    });
                }
            }
        }
    }
    found
}

fn dotted(module: &str) -> Vec<String> {
    module
        .split('.')
        .filter(|part| !part.is_empty())
        .map(str::to_owned)
        .collect()
}

fn js_references(text: &str) -> Vec<Reference> {
    let code = strip_line_comments(text);
    JS_IMPORT
        .captures_iter(&code)
        .map(|captures| Reference::Js(captures[1].to_owned()))
        .collect()
}

/// Extensions a JS/TS specifier without one may resolve to, in order.
const JS_EXTENSIONS: [&str; 8] = ["ts", "tsx", "js", "jsx", "mjs", "cjs", "mts", "cts"];

impl Reference {
    /// The files of `ids` this reference from `source` points at, with the edge kind.
    fn resolve(&self, source: &str, ids: &BTreeSet<&str>) -> Vec<(String, &'static str)> {
        let first = |candidates: Vec<String>| {
            candidates
                .into_iter()
                .find(|candidate| ids.contains(candidate.as_str()))
        };
        let dir = parent_dir(source);
        match self {
            Reference::RustMod(name) => {
                let base = rust_module_dir(source);
                first(vec![
                    format!("{base}{name}.rs"),
                    format!("{base}{name}/mod.rs"),
                ])
                .map(|target| vec![(target, "mod")])
                .unwrap_or_default()
            }
            Reference::RustUse(segments) => {
                let Some(src) = rust_src_dir(source) else {
                    return Vec::new();
                };
                // The longest prefix of the path that is a module file: `a::b::C` is `C` in
                // `a/b.rs` unless `a/b/C.rs` exists.
                (1..=segments.len())
                    .rev()
                    .find_map(|len| {
                        let module = segments[..len].join("/");
                        first(vec![
                            format!("{src}/{module}.rs"),
                            format!("{src}/{module}/mod.rs"),
                        ])
                    })
                    .map(|target| vec![(target, "use")])
                    .unwrap_or_default()
            }
            Reference::Python {
                level,
                module,
                names,
            } => {
                let bases: Vec<String> = if *level == 0 {
                    // An absolute import may be rooted at any directory on the way up to the
                    // workspace root (each could be on `sys.path`); the nearest wins.
                    let mut bases = vec![dir.to_owned()];
                    let mut up = dir;
                    while !up.is_empty() {
                        up = parent_dir(up);
                        bases.push(up.to_owned());
                    }
                    bases
                } else {
                    // `from . import` is the file's own package; each further dot goes up one.
                    let mut base = Some(dir.to_owned());
                    for _ in 1..*level {
                        base = base.and_then(|base| join_rel(&base, ".."));
                    }
                    base.into_iter().collect()
                };
                bases
                    .iter()
                    .find_map(|base| {
                        // `from a import b` may import the submodule `a/b.py`; else `a` itself.
                        let submodules: Vec<String> = names
                            .iter()
                            .filter_map(|name| python_module(base, module, Some(name), &first))
                            .collect();
                        if submodules.is_empty() {
                            python_module(base, module, None, &first).map(|target| vec![target])
                        } else {
                            Some(submodules)
                        }
                    })
                    .unwrap_or_default()
                    .into_iter()
                    .map(|target| (target, "import"))
                    .collect()
            }
            Reference::Js(specifier) => {
                let Some(base) = join_rel(dir, specifier) else {
                    return Vec::new();
                };
                let mut candidates = vec![base.clone()];
                candidates.extend(JS_EXTENSIONS.iter().map(|ext| format!("{base}.{ext}")));
                candidates.extend(
                    JS_EXTENSIONS
                        .iter()
                        .map(|ext| format!("{base}/index.{ext}")),
                );
                // TypeScript's ESM style names the emitted `.js` for a `.ts` source.
                if let Some(stem) = [".js", ".jsx", ".mjs", ".cjs"]
                    .iter()
                    .find_map(|ext| base.strip_suffix(ext))
                {
                    candidates
                        .extend(["ts", "tsx", "mts", "cts"].map(|ext| format!("{stem}.{ext}")));
                }
                first(candidates)
                    .map(|target| vec![(target, "import")])
                    .unwrap_or_default()
            }
        }
    }
}

/// The Python module `module` (plus `name`, if given) under `base`: `x.py` or `x/__init__.py`.
fn python_module(
    base: &str,
    module: &[String],
    name: Option<&String>,
    first: &impl Fn(Vec<String>) -> Option<String>,
) -> Option<String> {
    let mut parts: Vec<&str> = module.iter().map(String::as_str).collect();
    parts.extend(name.map(String::as_str));
    let path = join_rel(base, &parts.join("/"))?;
    let prefix = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    let mut candidates = Vec::new();
    if !parts.is_empty() {
        candidates.push(format!("{path}.py"));
    }
    candidates.push(format!("{prefix}__init__.py"));
    first(candidates)
}

/// The directory the `mod x;` items of a Rust file live in, with a trailing `/` (or empty at
/// the root). Crate roots and `mod.rs` keep theirs beside them; any other `a.rs` keeps them in
/// `a/`.
fn rust_module_dir(source: &str) -> String {
    let dir = parent_dir(source);
    let name = file_name(source);
    let crate_root = matches!(name, "lib.rs" | "main.rs" | "mod.rs" | "build.rs")
        || matches!(file_name(dir), "bin" | "tests" | "examples" | "benches");
    let module_dir = if crate_root {
        dir.to_owned()
    } else {
        let stem = name.strip_suffix(".rs").unwrap_or(name);
        join_rel(dir, stem).unwrap_or_default()
    };
    if module_dir.is_empty() {
        module_dir
    } else {
        format!("{module_dir}/")
    }
}

/// The `src` directory of the crate a Rust file belongs to: its nearest ancestor named `src`.
fn rust_src_dir(source: &str) -> Option<String> {
    let parts: Vec<&str> = source.split('/').collect();
    let dirs = &parts[..parts.len().saturating_sub(1)];
    let at = dirs.iter().rposition(|part| *part == "src")?;
    Some(dirs[..=at].join("/"))
}

// ---------------------------------------------------------------------------------------------
// change_impact
// ---------------------------------------------------------------------------------------------

/// The arguments of `change_impact`.
#[derive(Debug, Deserialize, schemars::JsonSchema)]
pub(crate) struct ChangeImpactArgs {
    /// The file about to change, relative to the workspace root.
    path: String,
}

#[derive(Debug, Serialize, schemars::JsonSchema)]
pub(crate) struct Impact {
    /// The file about to change.
    path: String,
    /// Files that import it directly, sorted.
    direct: Vec<String>,
    /// Files that reach it through imports, directly or not: its blast radius.
    transitive: usize,
}

/// How many files may reach a change before it needs review, and before it is a blocker.
const REVIEW_AT: usize = 4;
const UNSAFE_AT: usize = 11;

/// Grade the risk of changing one source file from the import graph: `SAFE` when nothing
/// imports it, `CAUTION` for a few dependents, `REVIEW` for more, `UNSAFE` when a large part of
/// the workspace reaches it. `data.direct` lists the direct importers.
#[tool(
    tier = standard,
    read_only,
    open_world = false,
    title = "Change impact",
    module = "graph",
    blocking
)]
pub(crate) fn change_impact(
    ctx: &ToolContext,
    args: ChangeImpactArgs,
) -> ToolResult<Reply<Impact>> {
    let workspace = ctx.state::<Workspace>()?;
    let rel = resolve(workspace.root(), &args.path)?;
    let graph = export_graph(workspace, ctx, None)?.into_envelope();
    let Some(graph) = graph.data() else {
        return Err(ToolError::internal(
            "the import graph came back without data",
        ));
    };
    if !graph.nodes.iter().any(|node| node.id == rel) {
        return Err(ToolError::not_found(format!(
            "`{rel}` is not a Rust, Python, JavaScript or TypeScript file of the workspace"
        ))
        .with_code("not_a_source_file")
        .with_data(json!({ "field": "path" })));
    }
    // Importers of each file, then everyone who reaches `rel` through them.
    let mut importers: HashMap<&str, Vec<&str>> = HashMap::new();
    for edge in &graph.edges {
        importers
            .entry(edge.target.as_str())
            .or_default()
            .push(edge.source.as_str());
    }
    let mut direct: Vec<String> = importers
        .get(rel.as_str())
        .map(|sources| sources.iter().map(|source| (*source).to_owned()).collect())
        .unwrap_or_default();
    direct.sort();
    direct.dedup();
    let mut reached: BTreeSet<&str> = BTreeSet::new();
    let mut pending = vec![rel.as_str()];
    while let Some(file) = pending.pop() {
        for importer in importers.get(file).into_iter().flatten() {
            if *importer != rel && reached.insert(importer) {
                pending.push(importer);
            }
        }
    }
    let transitive = reached.len();
    let verdict = match transitive {
        0 => Verdict::Safe,
        n if n < REVIEW_AT => Verdict::Caution,
        n if n < UNSAFE_AT => Verdict::Review,
        _ => Verdict::Unsafe,
    };
    let summary = format!(
        "`{rel}`: {} direct and {transitive} transitive importers",
        direct.len()
    );
    let step = match verdict {
        Verdict::Safe => "nothing imports it; change it and run its own tests".to_owned(),
        Verdict::Caution => "read the direct importers before changing its interface".to_owned(),
        _ => format!(
            "{transitive} files reach it: inspect the importers in `data.direct` before acting"
        ),
    };
    Ok(Reply::new(Impact {
        path: rel,
        direct,
        transitive,
    })
    .verdict(verdict)
    .summary_line(summary)
    .next_step(step))
}

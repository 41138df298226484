//! Walking the workspace: which files are in it, and the snapshot paging is bound to.

use std::ffi::OsString;
use std::io::Read;
use std::sync::Arc;

use cap_std::fs::{Dir, MetadataExt};
use envelope_core::paging::{PageCount, Snapshot};
use envelope_core::{IncompleteReason, ToolResult};
use globset::{GlobBuilder, GlobMatcher};

use crate::errors::{bounded_pattern, invalid};
use crate::paths::file_name;
use crate::workspace::{FileStamp, MAX_FILE_BYTES, Workspace};

/// `.gitignore` files longer than this are not read (the walk goes on as if there were none).
const MAX_GITIGNORE_BYTES: u64 = 256 * 1024;

/// Walks do not enter directories nested deeper than this below the root (they count as walk
/// failures): every level being walked holds its directory open.
const MAX_WALK_DEPTH: usize = 128;

/// A path filter from a glob. A pattern without `/` matches file names anywhere (`*.rs`);
/// one with `/` matches the whole relative path, and `*` then stops at `/` (`src/**/*.rs`).
pub(crate) struct PathFilter {
    matcher: GlobMatcher,
    whole_path: bool,
}

impl PathFilter {
    pub(crate) fn new(field: &str, pattern: &str) -> ToolResult<PathFilter> {
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

    pub(crate) fn matches(&self, rel: &str) -> bool {
        if self.whole_path {
            self.matcher.is_match(rel)
        } else {
            self.matcher.is_match(file_name(rel))
        }
    }
}

/// A file a walk found: not yet known to be text.
pub(crate) struct Candidate {
    /// Relative to the root, `/`-separated.
    pub(crate) rel: String,
    /// Size in bytes and modification time (nanoseconds since the epoch, 0 when unknown), as
    /// the walk read them (both 0 from [`walk_names`]): what the paging snapshot is made of.
    pub(crate) len: u64,
    pub(crate) modified: u128,
}

/// What one walk found.
pub(crate) struct Walk {
    /// Sorted by relative path.
    pub(crate) files: Vec<Candidate>,
    /// Files skipped for being over [`MAX_FILE_BYTES`].
    pub(crate) too_large: usize,
    /// Entries the walk could not read (a directory without permission, say).
    pub(crate) failures: usize,
}

impl Walk {
    /// The files a filter keeps (every file without one), in walk order.
    pub(crate) fn in_scope(&self, filter: Option<&PathFilter>) -> Vec<&Candidate> {
        self.files
            .iter()
            .filter(|file| filter.is_none_or(|filter| filter.matches(&file.rel)))
            .collect()
    }

    /// `count`, honest about what the walk could not see: directories it failed to list and
    /// the `unreadable` files in scope.
    pub(crate) fn tally(&self, mut count: PageCount, unreadable: usize) -> PageCount {
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
pub(crate) fn walk(workspace: &Workspace) -> Walk {
    walk_with(workspace, None)
}

/// [`walk`] without asking any file its size and time, handing each file to `each` as soon
/// as it is listed: a tool that opens every file anyway takes both from the open file
/// ([`Workspace::read_stamped`]), spares the walk a `stat` per file, and can start on the
/// first files while the walk lists the rest. The candidates' `len` and `modified` are 0, and
/// files over [`MAX_FILE_BYTES`] are among them.
pub(crate) fn walk_names(workspace: &Workspace, each: &mut dyn FnMut(&Candidate)) -> Walk {
    walk_with(workspace, Some(each))
}

/// The walk; `names_to`, when given, gets every file unstamped as it is listed.
fn walk_with(workspace: &Workspace, mut names_to: Option<&mut dyn FnMut(&Candidate)>) -> Walk {
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
            &mut names_to,
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
            &mut names_to,
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
    names_to: &mut Option<&mut dyn FnMut(&Candidate)>,
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
        // The entry's own type, as the listing gives it: a symlink is neither a file nor a
        // directory here. Its metadata is asked only of what the walk keeps.
        let Ok(file_type) = entry.file_type() else {
            found.failures += 1;
            continue;
        };
        let skipped = |is_dir| text.starts_with('.') || ignored(&ignores, &child, is_dir);
        if file_type.is_dir() {
            // Hidden directories (`.git` among them) are skipped, as ripgrep skips them.
            if skipped(true) {
                continue;
            }
            if depth + 1 > MAX_WALK_DEPTH {
                found.failures += 1;
                continue;
            }
            let Ok(metadata) = entry.metadata() else {
                found.failures += 1;
                continue;
            };
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
            if skipped(false) {
                continue;
            }
            if let Some(each) = names_to {
                let file = Candidate {
                    rel: child,
                    len: 0,
                    modified: 0,
                };
                each(&file);
                found.files.push(file);
                continue;
            }
            let Ok(metadata) = entry.metadata() else {
                found.failures += 1;
                continue;
            };
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

/// The files a paged tool walked: their paths, sizes and modification times are the snapshot
/// its continuations are bound to. Any change to one of them moves it, which makes an earlier
/// page's continuation stale.
///
/// Limit: an edit that keeps a file's size and modification time (a same-length rewrite whose
/// time is then set back) is not seen; reading every file in scope on every page to hash its
/// contents would cost what paging saves. This crate's `tests/paging.rs` pins the limit.
pub(crate) struct FileStamps<'a>(pub(crate) &'a [&'a Candidate]);

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

//! `search_text`: every occurrence of a literal or a pattern, paged, each page carrying one
//! sealed `target_ref` for its hits that `read_file` accepts with a hit's path and line; the
//! declared baseline is a recursive grep.

use envelope_core::paging::{
    Continuations, MAX_TARGET_BYTES, PageCount, Pager, Paging, Snapshot, TargetBinding,
};
use envelope_core::{
    EmptyReason, NextAction, Reply, Role, ToolContext, ToolError, ToolResult, TruncationReason,
    Unit, Verdict, tool,
};
use std::sync::{Mutex, mpsc};

use grep_matcher::LineTerminator;
use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::sinks::UTF8;
use grep_searcher::{Searcher, SearcherBuilder};
use regex::{Regex, RegexBuilder};
use serde::{Deserialize, Serialize};

use crate::errors::{bounded_pattern, cancelled, invalid};
use crate::tools::page::MAX_PAGE_LIMIT;
use crate::walk::{Candidate, FileStamps, PathFilter, Walk, walk_names};
use crate::workspace::{Contents, FileStamp, MAX_FILE_BYTES, Workspace};

/// `search_text`'s default page size.
const DEFAULT_SEARCH_LIMIT: usize = 50;

/// What a compiled `query` may cost, in bytes (the `regex` crate's size limits).
const MAX_REGEX_BYTES: usize = 1 << 20;

/// A matched line longer than this is shown as a window around the match.
const MAX_LINE_CHARS: usize = 400;

/// In a compact form (`compact_only`, `output_format: toon`), a matched line longer than this
/// is shown as a window around the match, enough to recognize the hit. `completeness.shortened`
/// says so, and the page's `full-rows` action shows it whole.
const COMPACT_LINE_CHARS: usize = 48;

/// The arguments of `search_text`; also what its retry actions are built from.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
pub struct SearchTextArgs {
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
    /// all.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 1000))]
    limit: Option<usize>,
    /// Where the next page starts: set by the `next-page` action, which is called as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(SearchTextArgs);

/// One match.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct Occurrence {
    /// Relative to the root.
    path: String,
    /// 1-based.
    line: usize,
    /// 1-based, in characters (Unicode scalar values) from the start of the line.
    column: usize,
    /// The line, or a window of it around the match (`…` marks each cut end) when it is over
    /// 400 characters, or over 48 in a compact form (`compact_only`, `output_format: toon`;
    /// `completeness.shortened` names `text`).
    text: String,
}

/// One page of `search_text`.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct SearchHits {
    occurrences: Vec<Occurrence>,
    /// Every hit of this page, sealed once: pass it to `read_file` as `target_ref` with a
    /// hit's `path` and `line` to read around that hit as it was found. Stale once the hit's
    /// file changes; the stale answer offers the search again. Absent on an empty page.
    #[serde(skip_serializing_if = "Option::is_none")]
    target_ref: Option<String>,
}

/// Search the workspace's text files for a literal string (or, with `regex: true`, a regular
/// expression) and return each occurrence with its path, 1-based line and column, and line
/// text. `completeness.total` counts every occurrence, past `limit` too.
#[tool(
    tier = lite,
    read_only,
    open_world = false,
    title = "Search text",
    blocking,
    scopes = ["workspace:read"]
)]
pub fn search_text(ctx: &ToolContext, args: SearchTextArgs) -> ToolResult<Reply<SearchHits>> {
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
    // The walk only names the files, and hands each to the scanning threads as soon as it is
    // listed: every file is opened anyway, and its size and time are taken from the open file.
    // Every file is counted first, on every core; then the page's rows are built from the few
    // files the page falls in, in order.
    let lines = line_matcher(matcher.as_str())?;
    let (walk, scanned) = walk_and_scan(workspace, ctx, filter, &lines, matcher)?;
    let (in_scope, scans) = in_scope_files(scanned);
    let in_scope: Vec<&Candidate> = in_scope.iter().collect();
    let paging = Paging::new(Unit::OCCURRENCE, DEFAULT_SEARCH_LIMIT)
        .with_max_limit(MAX_PAGE_LIMIT)
        .with_scope(workspace.root().display().to_string())
        .with_snapshot(&FileStamps(&in_scope))
        .with_advice("narrow `query` or `path_glob`");
    let paging = Pager::<search_text>::open(ctx, &args, paging)?;
    let mut targets = HitRefs::new(ctx, workspace, &args)?;
    let files_searched = scans.iter().filter(|scan| scan.text).count();
    let files_with_hits = scans.iter().filter(|scan| scan.occurrences > 0).count();
    let unreadable = scans.iter().filter(|scan| scan.unreadable).count();
    // The baseline: what a recursive grep of the same scope would have put in the agent's
    // context, every matching line of it, in bytes.
    let grep_bytes: usize = scans.iter().map(|scan| scan.grep_bytes).sum();
    let page = paging.page();
    let PageRows {
        occurrences,
        total,
        budget_full,
        shortened,
    } = page_rows(
        workspace,
        ctx,
        matcher,
        &paging,
        &in_scope,
        &scans,
        &mut targets,
    )?;

    let returned = occurrences.len();
    // Only a whole result gets a summary: a page that leaves rows out says its numbers in its
    // `next_step` ("showing 20 of 373 occurrences") and `completeness`, which a summary would
    // repeat.
    let leaves_rows_out = page.start.min(total) + returned < total;
    let summary = (page.start == 0 && !leaves_rows_out).then(|| {
        format!(
            "{total} {} in {files_with_hits} of {files_searched} files",
            Unit::OCCURRENCE.noun(total)
        )
    });
    let reply = Reply::new(SearchHits {
        occurrences,
        target_ref: targets.seal()?,
    });
    // An empty answer's diagnosis says it all; a summary would only repeat it.
    let reply = match summary.filter(|_| total > 0) {
        Some(summary) => reply.summary_line(summary),
        None => reply,
    };
    // About four bytes a token: `meta.tokens_saved` compares this page with it.
    let reply = reply.baseline("grep_recursive", grep_bytes.div_ceil(4) as u64);
    let mut count = PageCount::new(returned, total);
    if shortened {
        count = count.shortened("text");
    }
    if budget_full {
        count = count.ended_by(TruncationReason::BudgetLimit);
    }
    let reply = paging.finish(ctx, &args, reply, walk.tally(count, unreadable))?;
    if total > 0 {
        return Ok(reply.verdict(Verdict::Info));
    }
    not_found(reply, &args, &walk, in_scope.len(), files_searched)
}

/// The scanned files in scope, each with its scan, in the walk's order. Files over the size
/// limit are left out, as the stamping walk leaves them out.
fn in_scope_files(scanned: Vec<(String, FileScan)>) -> (Vec<Candidate>, Vec<FileScan>) {
    scanned
        .into_iter()
        .filter(|(_, scan)| !scan.too_large)
        .map(|(rel, scan)| {
            let stamp = scan.stamp.unwrap_or(FileStamp {
                len: 0,
                modified: 0,
            });
            let file = Candidate {
                rel,
                len: stamp.len,
                modified: stamp.modified,
            };
            (file, scan)
        })
        .unzip()
}

/// The rows of one page of `search_text`, and what building them found.
struct PageRows {
    /// The page's rows, in order.
    occurrences: Vec<Occurrence>,
    /// Every occurrence in scope, on this page or not.
    total: usize,
    /// The page ended before its rows outgrew their share of the response budget.
    budget_full: bool,
    /// Some row shows a window of its line that a compact form cut.
    shortened: bool,
}

/// Builds the rows of `paging`'s page from the files it falls in, in order, and counts every
/// other match of `scans` so the total stays exact; `targets` covers each row's file.
fn page_rows(
    workspace: &Workspace,
    ctx: &ToolContext,
    matcher: &Regex,
    paging: &Pager<search_text>,
    in_scope: &[&Candidate],
    scans: &[FileScan],
    targets: &mut HitRefs<'_>,
) -> ToolResult<PageRows> {
    let mut occurrences = Vec::new();
    // What the rows built so far will take in the answer, roughly. A page ends before its
    // rows outgrow their share of the response budget, and its continuation goes on from the
    // next match; past the budget, the trimmer would cut rows and drop the continuation.
    let mut built_chars = 0;
    let row_budget = ctx.response_budget().map(|budget| budget / 4 * 3);
    let mut budget_full = false;
    let mut total = 0;
    let page = paging.page();
    let window = line_window(ctx);
    let mut shortened = false;
    for (file, scan) in in_scope.iter().zip(scans) {
        let first = total;
        total += scan.occurrences;
        // Off the page, matches are only counted, so the total stays exact.
        let on_page = first < page.start + page.size && total > page.start;
        if budget_full || !on_page {
            continue;
        }
        if ctx.is_cancelled() {
            return Err(cancelled("search_text"));
        }
        // Changed since it was counted: its rows are not built, rather than misnumbered.
        let Contents::Text(text) = workspace.read_text(&file.rel) else {
            continue;
        };
        let mut index_in_file = first;
        for (index, line) in text.lines().enumerate() {
            // Columns are counted on from the previous match, so a long line with many
            // matches costs its length once, not once per match.
            let mut column = Column::default();
            // A pattern that can match nothing (`a*`) would report every position.
            for found in matcher.find_iter(line).filter(|found| !found.is_empty()) {
                index_in_file += 1;
                if budget_full || !paging.takes(index_in_file - 1) {
                    continue;
                }
                let (line_no, column_no) = (index + 1, column.at(line, found.start()));
                let occurrence = Occurrence {
                    path: file.rel.clone(),
                    line: line_no,
                    column: column_no,
                    text: excerpt(line, found.start(), window),
                };
                let cut_by_window = window < MAX_LINE_CHARS && occurrence.text != line;
                built_chars += row_size(ctx, &occurrence);
                // The first row is always kept, so every page makes progress.
                budget_full = !occurrences.is_empty()
                    && row_budget.is_some_and(|budget| built_chars > budget);
                if !budget_full {
                    targets.cover(file);
                    occurrences.push(occurrence);
                    shortened |= cut_by_window;
                }
            }
            if index_in_file >= total {
                break;
            }
        }
    }
    Ok(PageRows {
        occurrences,
        total,
        budget_full,
        shortened,
    })
}

/// How many characters of a matched line an occurrence shows before it is cut to a window. In
/// a compact form a long line is shown as a short window of it: a declared cut.
fn line_window(ctx: &ToolContext) -> usize {
    if ctx.controls().compacts_rows() {
        COMPACT_LINE_CHARS
    } else {
        MAX_LINE_CHARS
    }
}

/// What `occurrence` will take in the answer, measured as the budget stage will measure it:
/// escapes and the token estimate (punctuation and accented text weigh more than a byte each).
fn row_size(ctx: &ToolContext, occurrence: &Occurrence) -> usize {
    ctx.response_size(occurrence)
        .unwrap_or_else(|| occurrence.path.len() + occurrence.text.len() + ROW_OVERHEAD)
}

/// Finishes the `reply` of a search that found nothing. `in_filter` counts the files
/// `path_glob` kept.
fn not_found(
    reply: Reply<SearchHits>,
    args: &SearchTextArgs,
    walk: &Walk,
    in_filter: usize,
    files_searched: usize,
) -> ToolResult<Reply<SearchHits>> {
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
            "no match for the {what} `{}` in {files_searched} text files",
            args.query
        );
        Ok(reply.empty(EmptyReason::NoMatch, diagnosis))
    }
}

/// What the counting pass learned of one file.
#[derive(Debug, Default)]
struct FileScan {
    /// Its size and time, from the open file; `None` when it could not be opened.
    stamp: Option<FileStamp>,
    /// Over the size limit: not read, and not in scope.
    too_large: bool,
    /// Read as text (not binary, not unreadable).
    text: bool,
    /// Could not be read.
    unreadable: bool,
    /// Non-empty matches, line by line.
    occurrences: usize,
    /// What `grep -rn` would print for its matching lines: `path:line:text`, in bytes.
    grep_bytes: usize,
}

/// The query as ripgrep's line-oriented matcher: it finds the lines that can hold a match
/// without visiting the others one by one, and never matches across a line break (`\r\n`
/// counts as one, so `$` matches before it, as `str::lines` splits).
fn line_matcher(pattern: &str) -> ToolResult<RegexMatcher> {
    RegexMatcherBuilder::new()
        .line_terminator(Some(b'\n'))
        .crlf(true)
        .size_limit(MAX_REGEX_BYTES)
        .dfa_size_limit(MAX_REGEX_BYTES)
        .build(pattern)
        .map_err(|error| {
            invalid(
                "query",
                format!("`query` is not a valid regular expression: {error}"),
            )
        })
}

/// A searcher for [`line_matcher`]'s matcher: lines end at `\n`, a `\r` before it included.
fn line_searcher() -> Searcher {
    SearcherBuilder::new()
        .line_terminator(LineTerminator::crlf())
        .line_number(true)
        .build()
}

/// Walks the workspace and counts the matches of every file in scope while the walk goes on:
/// the walk hands each file it lists to as many scanning threads as the machine has cores.
/// Returns the walk and every file's path and scan, sorted by path (the walk's order).
fn walk_and_scan(
    workspace: &Workspace,
    ctx: &ToolContext,
    filter: Option<&PathFilter>,
    lines: &RegexMatcher,
    matcher: &Regex,
) -> ToolResult<(Walk, Vec<(String, FileScan)>)> {
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let (send, receive) = mpsc::channel::<String>();
    let receive = Mutex::new(receive);
    let (walk, scanned) = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut searcher = line_searcher();
                    let mut found = Vec::new();
                    loop {
                        // The walk is over once the channel is empty and its sender gone.
                        let next = match receive.lock() {
                            Ok(receive) => receive.recv(),
                            Err(_) => return Err(ToolError::internal("a search thread panicked")),
                        };
                        let Ok(rel) = next else {
                            return Ok(found);
                        };
                        if ctx.is_cancelled() {
                            return Err(cancelled("search_text"));
                        }
                        let scan = scan(workspace, &rel, &mut searcher, lines, matcher);
                        found.push((rel, scan));
                    }
                })
            })
            .collect();
        let walk = walk_names(workspace, &mut |file| {
            if filter.is_none_or(|filter| filter.matches(&file.rel)) {
                // A send fails only once every scanner stopped (cancelled): nothing is left to
                // scan then anyway.
                let _ = send.send(file.rel.clone());
            }
        });
        drop(send);
        let scanned = workers
            .into_iter()
            .map(|worker| {
                worker
                    .join()
                    .unwrap_or_else(|_| Err(ToolError::internal("a search thread panicked")))
            })
            .collect::<ToolResult<Vec<_>>>();
        (walk, scanned)
    });
    let mut scanned: Vec<(String, FileScan)> = scanned?.into_iter().flatten().collect();
    scanned.sort_by(|a, b| a.0.cmp(&b.0));
    Ok((walk, scanned))
}

/// Counts one file's matches: `lines` finds the lines that can hold one, `matcher` counts the
/// non-empty matches in each.
fn scan(
    workspace: &Workspace,
    rel: &str,
    searcher: &mut Searcher,
    lines: &RegexMatcher,
    matcher: &Regex,
) -> FileScan {
    let (contents, stamp) = workspace.read_stamped(rel);
    let too_large = stamp
        .as_ref()
        .is_some_and(|stamp| stamp.len > MAX_FILE_BYTES);
    let text = match contents {
        Contents::Text(text) => text,
        Contents::Binary => {
            return FileScan {
                stamp,
                ..FileScan::default()
            };
        }
        Contents::Unreadable(_) => {
            return FileScan {
                stamp,
                too_large,
                unreadable: !too_large,
                ..FileScan::default()
            };
        }
    };
    let mut scan = FileScan {
        stamp,
        text: true,
        ..FileScan::default()
    };
    let sink = UTF8(|line_no, line: &str| {
        let line = line.strip_suffix('\n').unwrap_or(line);
        let line = line.strip_suffix('\r').unwrap_or(line);
        let found = matcher
            .find_iter(line)
            .filter(|found| !found.is_empty())
            .count();
        if found > 0 {
            scan.occurrences += found;
            scan.grep_bytes += rel.len() + digits(line_no as usize) + line.len() + 3;
        }
        Ok(true)
    });
    // The text is in memory and valid UTF-8, and the searcher and matcher agree: searching
    // cannot fail. Were it to, the file counts as unreadable rather than as matching nothing.
    if searcher.search_slice(lines, text.as_bytes(), sink).is_err() {
        return FileScan {
            unreadable: true,
            ..FileScan::default()
        };
    }
    scan
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refs_search_decodes_to_the_search_from_its_first_page() {
        for (regex, glob) in [
            (None, None),
            (Some(false), Some("src/**")),
            (Some(true), Some("")),
        ] {
            let args = SearchTextArgs {
                query: "fn ñ\u{0}".to_owned(),
                regex,
                path_glob: glob.map(str::to_owned),
                limit: Some(5),
                continuation: Some("token".to_owned()),
            };
            let decoded = decode_search(&encode_search(&args)).expect("decodes");
            assert_eq!(
                serde_json::to_value(decoded).expect("json"),
                serde_json::to_value(SearchTextArgs {
                    limit: None,
                    continuation: None,
                    ..args
                })
                .expect("json")
            );
        }
        assert!(decode_search(&[9, b'x']).is_none(), "unknown flags");
        assert!(decode_search(&[0, 0xC3]).is_none(), "not UTF-8");
        assert!(decode_search(&[]).is_none());
    }

    #[test]
    fn the_line_searcher_counts_every_match_of_every_line() {
        let lines = line_matcher("needle$").expect("a valid pattern");
        let matcher = Regex::new("needle$").expect("a valid pattern");
        let mut found = Vec::new();
        let text = "a needle\r\nno\nneedle, needle\nthe needle";
        let sink = UTF8(|line_no, line: &str| {
            let line = line.trim_end_matches(['\r', '\n']);
            found.push((line_no, matcher.find_iter(line).count()));
            Ok(true)
        });
        line_searcher()
            .search_slice(&lines, text.as_bytes(), sink)
            .expect("the searcher and matcher agree");
        // `$` matches before `\r\n` and at the end of the text, not before a comma.
        assert_eq!(found, [(1, 1), (4, 1)]);
    }
}

/// The tool family that accepts a `search_text` hit's `target_ref`.
pub(crate) const FILE_TARGETS: &str = "workspace.file";
/// Lines of context `read_file` returns on each side of a hit by default, and at most.
pub(crate) const DEFAULT_CONTEXT_LINES: usize = 3;
pub(crate) const MAX_CONTEXT_LINES: usize = 200;

/// Seals the one `target_ref` of a page: every file a hit of the page is in, with its stamp,
/// and the search itself when it is short (to offer it again when the ref is stale).
struct HitRefs<'a> {
    continuations: &'a Continuations,
    session: &'a str,
    scope: String,
    search: Option<Vec<u8>>,
    files: Vec<(String, FileStamp)>,
}

impl<'a> HitRefs<'a> {
    fn new(ctx: &'a ToolContext, workspace: &Workspace, args: &SearchTextArgs) -> ToolResult<Self> {
        let search = Some(encode_search(args)).filter(|search| search.len() <= MAX_TARGET_BYTES);
        Ok(HitRefs {
            continuations: ctx.state::<Continuations>()?,
            session: ctx.caller_binding(),
            scope: workspace.root().display().to_string(),
            search,
            files: Vec::new(),
        })
    }

    /// The page has a hit in `file`. Hits come file by file, so a repeat is the last one.
    fn cover(&mut self, file: &Candidate) {
        if self.files.last().is_some_and(|(rel, _)| *rel == file.rel) {
            return;
        }
        let stamp = FileStamp {
            len: file.len,
            modified: file.modified,
        };
        self.files.push((file.rel.clone(), stamp));
    }

    /// The page's ref, or `None` when it has no hit.
    fn seal(&self) -> ToolResult<Option<String>> {
        if self.files.is_empty() {
            return Ok(None);
        }
        let targets: Vec<(&str, &dyn Snapshot)> = self
            .files
            .iter()
            .map(|(rel, stamp)| (rel.as_str(), stamp as &dyn Snapshot))
            .collect();
        let binding = TargetBinding::new(FILE_TARGETS, self.session).with_scope(&self.scope);
        self.continuations
            .seal_target(&binding, &targets, self.search.as_deref())
            .map(Some)
    }
}

// The search a page's ref carries, in as few bytes as it can be (each costs the agent about a
// token on every page): one flag byte (bit 0: `regex` given, bit 1: its value), the query,
// then, when there is a `path_glob`, the byte 0xFF (never part of UTF-8) and the glob.
const REGEX_GIVEN: u8 = 1;
const REGEX_ON: u8 = 2;
const GLOB_MARK: u8 = 0xFF;

/// `args` as the search a ref offers again: from the first page, at the default page size.
fn encode_search(args: &SearchTextArgs) -> Vec<u8> {
    let flags = match args.regex {
        None => 0,
        Some(false) => REGEX_GIVEN,
        Some(true) => REGEX_GIVEN | REGEX_ON,
    };
    let mut out = vec![flags];
    out.extend_from_slice(args.query.as_bytes());
    if let Some(glob) = &args.path_glob {
        out.push(GLOB_MARK);
        out.extend_from_slice(glob.as_bytes());
    }
    out
}

/// The search [`encode_search`] wrote, or `None` for bytes it did not write.
pub(crate) fn decode_search(bytes: &[u8]) -> Option<SearchTextArgs> {
    let (&flags, rest) = bytes.split_first()?;
    let regex = match flags {
        0 => None,
        REGEX_GIVEN => Some(false),
        flags if flags == REGEX_GIVEN | REGEX_ON => Some(true),
        _ => return None,
    };
    let (query, glob) = match rest.iter().position(|&byte| byte == GLOB_MARK) {
        Some(at) => (&rest[..at], Some(&rest[at + 1..])),
        None => (rest, None),
    };
    let text = |bytes: &[u8]| String::from_utf8(bytes.to_vec()).ok();
    Some(SearchTextArgs {
        query: text(query)?,
        regex,
        path_glob: match glob {
            Some(glob) => Some(text(glob)?),
            None => None,
        },
        limit: None,
        continuation: None,
    })
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

/// The line as an occurrence shows it: whole when it has at most `window` characters, else a
/// window of that many starting a little before the match, so that one minified file cannot
/// flood the answer. Costs the window, not the line: a 2 MiB line with a match on every
/// character is read once by the search, not once per match.
fn excerpt(line: &str, match_start: usize, window: usize) -> String {
    if line.chars().nth(window).is_none() {
        return line.to_owned();
    }
    // Up to a quarter of the window before the match, then the window from there.
    let start = line[..match_start]
        .char_indices()
        .rev()
        .take(window / 4)
        .last()
        .map_or(match_start, |(index, _)| index);
    let end = line[start..]
        .char_indices()
        .nth(window)
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

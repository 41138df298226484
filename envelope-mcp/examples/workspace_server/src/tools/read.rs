//! `read_file`: whole lines of one file, by path, or around a `search_text` hit by the page's
//! `target_ref` and the hit's path and line; a stale or vanished target is refused with the
//! call that recovers.

use envelope_core::paging::{
    Continuations, TargetBinding, conflicting_target_input, target_not_found,
};
use envelope_core::{
    Completeness, NextAction, Reply, Role, ToolContext, ToolError, ToolResult, TruncationReason,
    Unit, tool,
};
use serde::{Deserialize, Serialize};

use crate::errors::invalid;
use crate::paths::{not_readable, resolve};
use crate::tools::search::{
    DEFAULT_CONTEXT_LINES, FILE_TARGETS, MAX_CONTEXT_LINES, decode_search, search_text,
};
use crate::workspace::{Contents, FileStamp, MAX_FILE_BYTES, Workspace};

/// The arguments of `read_file`: a `path`, and for a search hit the page's `target_ref` and the
/// hit's `line`.
#[derive(Debug, Clone, Deserialize, Serialize, schemars::JsonSchema)]
#[schemars(extend("required" = ["path"], "dependentRequired" = {"target_ref": ["line"]}))]
pub struct ReadFileArgs {
    /// The file, relative to the workspace root (an absolute path inside the root works too);
    /// for a search hit, the hit's `path`. Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    path: Option<String>,
    /// The `target_ref` of a `search_text` page, with one of its hits' `path` and `line`: read
    /// the lines around that hit, refused if its file changed since the search. Not combined
    /// with `start_line` or `end_line`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    target_ref: Option<String>,
    /// With `target_ref`: the hit's `line`, 1-based.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    line: Option<usize>,
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

/// What `read_file` answers: a run of whole lines of one file.
#[derive(Debug, Serialize, schemars::JsonSchema)]
pub struct FileContent {
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
/// 1-based and inclusive), or the lines around a `search_text` hit (the page's `target_ref`
/// with the hit's `path` and `line`, and `context_lines`). Paths outside the workspace are
/// refused with `permission`.
#[tool(
    tier = lite,
    read_only,
    open_world = false,
    title = "Read a file",
    blocking,
    scopes = ["workspace:read"]
)]
pub fn read_file(ctx: &ToolContext, args: ReadFileArgs) -> ToolResult<Reply<FileContent>> {
    if let Some(token) = args.target_ref.as_deref() {
        return read_target(ctx, &args, token);
    }
    for (name, given) in [
        ("line", args.line.is_some()),
        ("context_lines", args.context_lines.is_some()),
    ] {
        if given {
            return Err(invalid(
                name,
                format!(
                    "`{name}` goes with `target_ref`; with `path` alone, pass `start_line` and \
                     `end_line`"
                ),
            ));
        }
    }
    let Some(path) = args.path.as_deref() else {
        return Err(invalid("path", "pass `path`"));
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
        "start_line",
    )
}

/// `read_file` of a hit, by its page's `target_ref`: the lines around it, when the file is as
/// the search found it.
fn read_target(
    ctx: &ToolContext,
    args: &ReadFileArgs,
    token: &str,
) -> ToolResult<Reply<FileContent>> {
    let given: Vec<&str> = [
        ("start_line", args.start_line.is_some()),
        ("end_line", args.end_line.is_some()),
    ]
    .into_iter()
    .filter_map(|(name, present)| present.then_some(name))
    .collect();
    if !given.is_empty() {
        return Err(conflicting_target_input("target_ref", &given));
    }
    let (Some(path), Some(line)) = (args.path.as_deref(), args.line) else {
        return Err(invalid(
            if args.path.is_none() { "path" } else { "line" },
            "`target_ref` goes with the hit's `path` and `line`",
        ));
    };
    if line == 0 {
        return Err(invalid("line", "`line` is 1-based; the first line is 1"));
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
    let binding = TargetBinding::new(FILE_TARGETS, ctx.caller_binding()).with_scope(&scope);
    let opened = ctx
        .state::<Continuations>()?
        .open_target(token, &binding, "target_ref")?;
    let rel = resolve(workspace.root(), path)?;
    // An expired ref is stale whatever became of its file.
    if let Err(stale) = opened.check_fresh() {
        return Err(stale.with_recovery(recovery(opened.payload(), &rel, line)?));
    }
    // A location the ref never held is the caller's mix-up, not a change: said as such, and
    // checked before the file, so that a file the ref never covered is not reported gone.
    opened.check_covers(&rel)?;
    // A file the ref covered that is gone: the search the ref came from is offered again
    // (when the ref holds it), as the error's hint says.
    let stamp = match workspace.metadata(&rel) {
        Ok(metadata) if metadata.is_file() => FileStamp::of(&metadata),
        _ => {
            let gone = target_not_found("target_ref");
            return Err(match search_again(opened.payload(), "the file is gone") {
                Some(action) => gone.with_recovery(action.map_err(ToolError::internal)?),
                None => gone,
            });
        }
    };
    if let Err(stale) = opened.check_snapshot(&rel, &stamp) {
        return Err(stale.with_recovery(recovery(opened.payload(), &rel, line)?));
    }
    let start = line.saturating_sub(context).max(1);
    read(
        ctx,
        workspace,
        &rel,
        Some(start),
        Some(line.saturating_add(context)),
        "line",
    )
}

/// What an agent calls when a ref went stale: the search again (it is in the ref when it was
/// short), else the file from the hit's line on.
fn recovery(search: Option<&[u8]>, path: &str, line: usize) -> ToolResult<NextAction> {
    let action = match search_again(search, "the file changed") {
        Some(action) => action,
        None => NextAction::call::<read_file>(
            "read-the-file",
            Role::Retry,
            0,
            ReadFileArgs {
                path: Some(path.to_owned()),
                target_ref: None,
                line: None,
                context_lines: None,
                start_line: Some(line),
                end_line: None,
            },
            "the file changed: read it from the hit's line on",
        ),
    };
    action.map_err(ToolError::internal)
}

/// The search a ref was issued from, offered again (`why` says what became of the file), when
/// the ref holds it.
fn search_again(
    search: Option<&[u8]>,
    why: &str,
) -> Option<Result<NextAction, envelope_core::CoreError>> {
    let search = search.and_then(decode_search)?;
    Some(NextAction::call::<search_text>(
        "search-again",
        Role::Retry,
        0,
        search,
        format!("{why}: run the search again for fresh hits and refs"),
    ))
}

/// The lines `start_line..=end_line` of `path`, as many as the budget holds. `start_field` is
/// the argument a start past the end is blamed on: `start_line`, or a hit's `line`.
fn read(
    ctx: &ToolContext,
    workspace: &Workspace,
    path: &str,
    start_line: Option<usize>,
    end_line: Option<usize>,
    start_field: &str,
) -> ToolResult<Reply<FileContent>> {
    let (rel, text) = read_regular_text(workspace, path)?;

    // Split after each `\n`, so the content comes back with its own line endings.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let total_lines = lines.len();
    let start_line = start_line.unwrap_or(1);
    if start_line > total_lines.max(1) {
        return Err(invalid(
            start_field,
            format!("`{start_field}` is past the end: `{rel}` has {total_lines} lines"),
        ));
    }
    let asked_end = end_line.unwrap_or(total_lines).min(total_lines);
    let end_line = last_line_in_budget(ctx, &lines, start_line, asked_end);
    let content = lines[start_line - 1..end_line].concat();
    let cut = end_line < asked_end;
    let read_on = ReadFileArgs {
        path: Some(rel.clone()),
        target_ref: None,
        line: None,
        context_lines: None,
        start_line: Some(end_line + 1),
        // The range asked for, or to the end of the file.
        end_line: (asked_end < total_lines).then_some(asked_end),
    };
    // `data` says which lines these are; only a cut is worth a line of its own.
    let summary = cut.then(|| {
        format!(
            "`{rel}`: lines {start_line}–{end_line} of {total_lines}; the response budget ends here"
        )
    });
    let reply = Reply::new(FileContent {
        path: rel,
        start_line,
        end_line,
        total_lines,
        content,
    });
    let Some(summary) = summary else {
        return Ok(reply);
    };
    let reply = reply.summary_line(summary);
    cut_by_budget(reply, read_on, start_line, end_line, asked_end)
}

/// The relative path of `path` and its text, when it is a regular UTF-8 text file within the
/// size limit; else the error that says which it is not.
fn read_regular_text(workspace: &Workspace, path: &str) -> ToolResult<(String, String)> {
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
    Ok((rel, text))
}

/// The last line to send of `start_line..=asked_end`: whole lines, only as many as fit the
/// response budget.
fn last_line_in_budget(
    ctx: &ToolContext,
    lines: &[&str],
    start_line: usize,
    asked_end: usize,
) -> usize {
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
    end_line
}

/// Finishes the `reply` the response budget cut at `end_line`: the `read-on` action (calling
/// `read_on`), and `completeness` and `next_step` saying which lines of those asked for it
/// carries.
fn cut_by_budget(
    reply: Reply<FileContent>,
    read_on: ReadFileArgs,
    start_line: usize,
    end_line: usize,
    asked_end: usize,
) -> ToolResult<Reply<FileContent>> {
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
    // The cut is typed, not only told: `completeness` says which lines of the range asked for
    // (counted from the file's first line) this answer carries, and that the budget ended it.
    let completeness = Completeness::truncated_page(
        Unit::custom("line").map_err(ToolError::internal)?,
        end_line + 1 - start_line,
        Some(asked_end),
        TruncationReason::BudgetLimit,
        None,
    )
    .and_then(|page| page.with_offset(start_line - 1))
    .map_err(ToolError::internal)?;
    Ok(reply
        .completeness(completeness)
        .next_step(format!(
            "the response budget ended the content after line {end_line} of {asked_end} asked \
             for; read on from line {} with the `read-on` action",
            end_line + 1
        ))
        .next_actions([action]))
}

//! Relative paths: naming, joining, and resolving what a caller asked for.

use std::io;
use std::path::{Component, Path};

use envelope_core::{ToolError, ToolResult};
use serde_json::json;

use crate::errors::invalid;

pub(crate) fn file_name(rel: &str) -> &str {
    rel.rsplit('/').next().unwrap_or(rel)
}

/// The directory part of a relative path: `""` at the root.
pub(crate) fn parent_dir(rel: &str) -> &str {
    rel.rsplit_once('/').map_or("", |(dir, _)| dir)
}

/// `dir` joined with the relative `path`, `.` and `..` resolved; `None` when it climbs out of
/// the root.
pub(crate) fn join_rel(dir: &str, path: &str) -> Option<String> {
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
pub(crate) fn resolve(root: &Path, raw: &str) -> ToolResult<String> {
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
pub(crate) fn not_readable(raw: &str, rel: &str, error: io::Error) -> ToolError {
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

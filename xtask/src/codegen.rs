//! What every generator shares: the workspace root, and the one function that writes a
//! generated file or, in check mode, fails when the committed one differs.

use std::fs;
use std::path::{Path, PathBuf};

/// Whether a generator writes its files or only checks them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Write what differs.
    Overwrite,
    /// Fail, naming each file that differs, and write nothing.
    Check,
}

impl Mode {
    /// `--check` or nothing.
    pub(crate) fn from_args(args: &[&str]) -> Option<Mode> {
        match args {
            [] => Some(Mode::Overwrite),
            ["--check"] => Some(Mode::Check),
            _ => None,
        }
    }
}

pub(crate) fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."))
}

/// Writes `contents` to `path` (overwrite) or fails when they differ (check). Text is compared
/// with line endings normalised, so a checkout with `\r\n` is not stale; `command` is what
/// regenerates the file.
pub(crate) fn ensure_file_contents(
    path: &Path,
    contents: &[u8],
    mode: Mode,
    command: &str,
) -> Result<(), String> {
    let normalise = |bytes: &[u8]| -> Vec<u8> {
        match std::str::from_utf8(bytes) {
            Ok(text) => text.replace("\r\n", "\n").into_bytes(),
            Err(_) => bytes.to_vec(),
        }
    };
    let current = fs::read(path).ok();
    if current.as_deref().map(normalise) == Some(normalise(contents)) {
        return Ok(());
    }
    let display = path
        .strip_prefix(workspace_root())
        .unwrap_or(path)
        .display()
        .to_string();
    match mode {
        Mode::Check => Err(format!(
            "{display} is out of date; run `{command}` and commit it"
        )),
        Mode::Overwrite => {
            if let Some(parent) = path.parent() {
                fs::create_dir_all(parent)
                    .map_err(|error| format!("cannot create {}: {error}", parent.display()))?;
            }
            fs::write(path, contents)
                .map_err(|error| format!("cannot write {display}: {error}"))?;
            eprintln!("updated {display}");
            Ok(())
        }
    }
}

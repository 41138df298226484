//! The key that seals paging tokens, as a server's command line finds it.

use std::path::{Path, PathBuf};

use envelope_core::paging::{ContinuationKey, Continuations};

/// The paging key of the program `program`: from `key_file`, else from the environment
/// variable `key_var` (64 hex characters), else the one kept in the user's state directory
/// (`<state>/envelope/<program>.key`, made on first use), else (no state directory can hold it)
/// a fresh one that only this process accepts, said on stderr.
///
/// Servers holding one key accept each other's tokens; a server restarted with its kept key
/// still opens the tokens it gave out.
pub fn continuations(
    program: &str,
    key_file: Option<&Path>,
    key_var: &str,
) -> Result<Continuations, String> {
    const KEY_ID: u32 = 1;
    let read = |path: &Path| -> Result<ContinuationKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
        ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{}`: {error}", path.display()))
    };
    let key = match (key_file, std::env::var(key_var)) {
        (Some(path), _) => read(path)?,
        (None, Ok(text)) => ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{key_var}`: {error}"))?,
        (None, Err(std::env::VarError::NotUnicode(_))) => {
            return Err(format!("`{key_var}` is not valid UTF-8"));
        }
        (None, Err(std::env::VarError::NotPresent)) => match kept_key_file(program) {
            Ok(path) => read(&path).map_err(|error| {
                format!(
                    "{error}; delete the file to make a new key, or pass `--continuation-key-file`"
                )
            })?,
            Err(why) => {
                eprintln!(
                    "{program}: {why}; paging tokens work only in this process \
                     (pass `--continuation-key-file` or set `{key_var}` to share them)"
                );
                ContinuationKey::generate(KEY_ID)
                    .map_err(|error| format!("cannot make a continuation key: {error}"))?
            }
        },
    };
    Ok(Continuations::new(key))
}

/// The key file kept for this user, made on first use: `$XDG_STATE_HOME/envelope/` (when it is
/// absolute), else `~/.local/state/envelope/`, `<program>.key`, readable only by its owner
/// on Unix. Processes making it at once agree: each writes a draft of its own, and the first to
/// link its draft into place wins; nobody ever reads a half-written key.
fn kept_key_file(program: &str) -> Result<PathBuf, String> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .ok_or("neither XDG_STATE_HOME nor HOME is an absolute path to keep a key under")?;
    let dir = state.join("envelope");
    let path = dir.join(format!("{program}.key"));
    if path.exists() {
        return Ok(path);
    }
    let cannot =
        |what: &Path, error: std::io::Error| format!("cannot make `{}`: {error}", what.display());
    std::fs::create_dir_all(&dir).map_err(|error| cannot(&dir, error))?;
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| format!("cannot make a key: {error}"))?;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    // A random draft name: two processes of one PID (containers sharing a home) never share it.
    let draft = dir.join(format!("{program}.key.{}", &hex[..16]));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&draft).and_then(|mut file| {
        use std::io::Write;
        file.write_all(format!("{hex}\n").as_bytes())?;
        // On disk before it is linked in: a crash never leaves an empty key in place.
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&draft, &path));
    let _ = std::fs::remove_file(&draft);
    match linked {
        Ok(()) => Ok(path),
        // Another process made it first: use theirs.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(path),
        Err(error) => Err(cannot(&path, error)),
    }
}

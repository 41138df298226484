//! The command line of `workspace_server`.
//!
//! ```text
//! workspace_server [--root DIR]                    serve over stdio
//! workspace_server [--root DIR] --http ADDR        serve streamable HTTP at http://ADDR/mcp
//! workspace_server [--root DIR] call TOOL ['JSON'] call one tool, print its envelope
//! workspace_server [--root DIR] list               print the tool listing
//! ```
//!
//! `--continuation-key-file PATH` (or `WORKSPACE_SERVER_CONTINUATION_KEY`, 64 hex characters)
//! sets the key that seals paging tokens and target refs, so that servers sharing it accept
//! each other's. Without one, the key kept in your state directory is used (made on first use
//! and, on Unix, readable only by you): the `next-page` action one `call` prints then works
//! pasted into the next `call`, and a restarted server still opens the tokens it gave out.
//!
//! Logs go to stderr; on stdio, stdout carries only the protocol.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use envelope_core::paging::{ContinuationKey, Continuations};
use serde_json::Value;

const USAGE: &str = "\
usage:
  workspace_server [--root DIR]                    serve over stdio
  workspace_server [--root DIR] --http ADDR        serve streamable HTTP at http://ADDR/mcp
  workspace_server [--root DIR] call TOOL ['JSON'] call one tool and print its envelope
  workspace_server [--root DIR] list               print the tool listing as JSON

Options:
  --root DIR                     the directory to serve (default: the current one)
  --disable-module NAME          switch a module off (repeatable); `graph` holds graph_export,
                                 which then answers `module_disabled`
  --continuation-key-file PATH   the key that seals paging tokens: 64 hex characters, shared
                                 by servers that must accept each other's tokens (also
                                 WORKSPACE_SERVER_CONTINUATION_KEY; default: the key kept in
                                 $XDG_STATE_HOME/envelope/workspace_server.key, else
                                 ~/.local/state/envelope/workspace_server.key, made on first
                                 use and, on Unix, readable only by you)

ADDR is like 127.0.0.1:8765; JSON defaults to {}.
`call` exits 0 when the envelope is ok and 2 otherwise.";

/// The environment variable holding the continuation key, as hex.
const KEY_VAR: &str = "WORKSPACE_SERVER_CONTINUATION_KEY";

/// What the command line asks for.
#[derive(Debug)]
enum Command {
    Stdio,
    Http(SocketAddr),
    Call { tool: String, arguments: Value },
    List,
    Help,
}

#[derive(Debug)]
struct Options {
    root: PathBuf,
    key_file: Option<PathBuf>,
    /// Modules switched off: their tools answer `module_disabled`.
    disabled: Vec<String>,
    command: Command,
}

/// Parses the arguments after the program name. Options come first; the first word that is
/// not an option starts the command.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
    let mut root = None;
    let mut key_file = None;
    let mut disabled = Vec::new();
    let mut http = None;
    let mut command = Vec::new();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "-h" | "--help" => {
                return Ok(Options {
                    root: PathBuf::from("."),
                    key_file: None,
                    disabled: Vec::new(),
                    command: Command::Help,
                });
            }
            "--root" => {
                let dir = args.next().ok_or("`--root` needs a directory")?;
                if root.replace(PathBuf::from(dir)).is_some() {
                    return Err("`--root` given twice".into());
                }
            }
            "--continuation-key-file" => {
                let path = args
                    .next()
                    .ok_or("`--continuation-key-file` needs a path")?;
                if key_file.replace(PathBuf::from(path)).is_some() {
                    return Err("`--continuation-key-file` given twice".into());
                }
            }
            "--disable-module" => {
                let module = args
                    .next()
                    .ok_or("`--disable-module` needs a module name")?;
                disabled.push(module);
            }
            "--http" => {
                let addr = args.next().ok_or("`--http` needs an address")?;
                let addr = addr
                    .parse::<SocketAddr>()
                    .map_err(|error| format!("`--http {addr}`: {error}"))?;
                if http.replace(addr).is_some() {
                    return Err("`--http` given twice".into());
                }
            }
            option if option.starts_with('-') => {
                return Err(format!("unknown option `{option}`"));
            }
            _ => {
                command.push(arg);
                command.extend(args.by_ref());
            }
        }
    }
    let command = match (command.first().map(String::as_str), http) {
        (None, None) => Command::Stdio,
        (None, Some(addr)) => Command::Http(addr),
        (Some(_), Some(_)) => return Err("`--http` serves; it takes no command".into()),
        (Some("list"), None) if command.len() == 1 => Command::List,
        (Some("call"), None) if (2..=3).contains(&command.len()) => {
            let arguments = match command.get(2) {
                Some(json) => serde_json::from_str(json)
                    .map_err(|error| format!("the JSON arguments do not parse: {error}"))?,
                None => Value::Object(Default::default()),
            };
            Command::Call {
                tool: command[1].clone(),
                arguments,
            }
        }
        (Some("call"), None) => return Err("`call` takes a tool name and one JSON object".into()),
        (Some(other), None) => return Err(format!("unknown command `{other}`")),
    };
    Ok(Options {
        disabled,
        root: root.unwrap_or_else(|| PathBuf::from(".")),
        key_file,
        command,
    })
}

/// The paging key: from the key file, else from [`KEY_VAR`], else the one kept in the user's
/// state directory ([`kept_key_file`]), else (no state directory can hold it) a fresh one that
/// only this process accepts.
fn continuations(key_file: Option<&Path>) -> Result<Continuations, String> {
    const KEY_ID: u32 = 1;
    let read = |path: &Path| -> Result<ContinuationKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
        ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{}`: {error}", path.display()))
    };
    let key = match (key_file, std::env::var(KEY_VAR)) {
        (Some(path), _) => read(path)?,
        (None, Ok(text)) => ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{KEY_VAR}`: {error}"))?,
        (None, Err(std::env::VarError::NotUnicode(_))) => {
            return Err(format!("`{KEY_VAR}` is not valid UTF-8"));
        }
        (None, Err(std::env::VarError::NotPresent)) => match kept_key_file() {
            Ok(path) => read(&path).map_err(|error| {
                format!(
                    "{error}; delete the file to make a new key, or pass `--continuation-key-file`"
                )
            })?,
            Err(why) => {
                eprintln!(
                    "workspace_server: {why}; paging tokens work only in this process \
                     (pass `--continuation-key-file` or set `{KEY_VAR}` to share them)"
                );
                ContinuationKey::generate(KEY_ID)
                    .map_err(|error| format!("cannot make a continuation key: {error}"))?
            }
        },
    };
    Ok(Continuations::new(key))
}

/// The key file kept for this user, made on first use: `$XDG_STATE_HOME/envelope/` (when it is
/// absolute), else `~/.local/state/envelope/`, `workspace_server.key`, readable only by its owner
/// on Unix. Processes making it at once agree: each writes a draft of its own, and the first to
/// link its draft into place wins; nobody ever reads a half-written key.
fn kept_key_file() -> Result<PathBuf, String> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .ok_or("neither XDG_STATE_HOME nor HOME is an absolute path to keep a key under")?;
    let dir = state.join("envelope");
    let path = dir.join("workspace_server.key");
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
    let draft = dir.join(format!("workspace_server.key.{}", &hex[..16]));
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

/// Runs the command line given to this process, and says how it went: 0 when it served or the
/// called tool's envelope is ok, 2 for a usage error or an envelope that is not ok.
pub fn main() -> ExitCode {
    match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run()),
        Err(error) => {
            eprintln!("workspace_server: cannot start the runtime: {error}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> ExitCode {
    // `std::env::args` panics on an argument that is not UTF-8; say so instead.
    let args: Result<Vec<String>, String> = std::env::args_os()
        .skip(1)
        .map(|arg| {
            arg.into_string().map_err(|arg| {
                format!(
                    "the argument `{}` is not valid UTF-8",
                    arg.to_string_lossy()
                )
            })
        })
        .collect();
    let options = match args.and_then(|args| parse(args.into_iter())) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("workspace_server: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if let Command::Help = options.command {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    // Tool failures are logged here with their request id; stdout stays the protocol's.
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let workspace = match crate::Workspace::open(&options.root) {
        Ok(workspace) => workspace,
        Err(error) => {
            eprintln!(
                "workspace_server: cannot serve `{}`: {error}\n\n{USAGE}",
                options.root.display()
            );
            return ExitCode::from(2);
        }
    };
    let continuations = match continuations(options.key_file.as_deref()) {
        Ok(continuations) => continuations,
        Err(message) => {
            eprintln!("workspace_server: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let root = workspace.root().display().to_string();
    let server = crate::server(workspace, continuations, &options.disabled);

    match options.command {
        Command::Stdio => {
            tracing::info!(%root, "serving over stdio");
            match server.serve_stdio().await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("workspace_server: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Http(addr) => {
            eprintln!("workspace_server: serving {root} at http://{addr}/mcp");
            match server.serve_http(addr).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("workspace_server: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        Command::Call { tool, arguments } => {
            let Some(prepared) = server.call(&tool, arguments).await else {
                let available: Vec<&str> = server.tools().iter().map(|t| t.name.as_ref()).collect();
                eprintln!(
                    "workspace_server: unknown tool `{tool}`; available: {}",
                    available.join(", ")
                );
                return ExitCode::from(2);
            };
            match serde_json::to_string_pretty(&prepared.structured) {
                Ok(text) => println!("{text}"),
                Err(error) => {
                    eprintln!("workspace_server: cannot print the envelope: {error}");
                    return ExitCode::FAILURE;
                }
            }
            if prepared.structured["ok"] == true {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
        Command::List => match serde_json::to_string_pretty(server.tools()) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("workspace_server: cannot print the listing: {error}");
                ExitCode::FAILURE
            }
        },
        // Answered before the workspace was opened.
        Command::Help => ExitCode::SUCCESS,
    }
}

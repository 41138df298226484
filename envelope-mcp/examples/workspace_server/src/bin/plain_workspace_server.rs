//! `plain_workspace_server`: the example's `search_text` and `read_file` rows served the way a
//! plain MCP server serves them, the baseline the envelope server is measured against
//! (`tests/interop/test_agent_walk.py`: the tokens an agent framework shows its model for the
//! same walk over both).
//!
//! ```text
//! plain_workspace_server --root DIR                        serve DIR over stdio
//! plain_workspace_server --root DIR --http ADDR [--stateless] [--json-response]
//!                                                          serve streamable HTTP at ADDR/mcp
//! plain_workspace_server --root DIR --http ADDR --bare     a bare axum handler at ADDR/mcp
//! ```
//!
//! Over HTTP it is what a plain rmcp server on axum is: rmcp's `StreamableHttpService` nested
//! at `/mcp`, served by `axum::serve` (HTTP/1.1, and HTTP/2 over cleartext with prior
//! knowledge) with `TCP_NODELAY`, sessions in rmcp's `LocalSessionManager` unless
//! `--stateless`. It is the
//! baseline the load bench (`cargo xtask load-bench`) measures the envelope server against.
//! `--bare` answers `tools/call` of `read_file` with no MCP machinery at all: an axum handler
//! that reads the JSON-RPC request, reads the lines and writes the same JSON-RPC result the
//! plain tool gives, the limit of what an HTTP server on this stack can do (reported, not a
//! target).
//!
//! Written as an rmcp server usually is, with rmcp's own `#[tool_router]` and `#[tool]`, and
//! nothing of envelope's: each tool answers one text content of compact JSON and no
//! `structuredContent`, pages by `offset`, and fails with an `isError` result holding a
//! sentence.
//!
//! - `search_text {query, limit = 50, offset = 0}` →
//!   `{"occurrences":[{"path","line","column","text"}…],"total":N}`: every non-empty literal
//!   occurrence, files in sorted relative-path order (`/` separators), lines 1-based, columns
//!   1-based in characters, matches left to right, `text` the whole line.
//! - `read_file {path, start_line = 1, end_line = last}` →
//!   `{"path","start_line","end_line","total_lines","content"}`, `content` the lines with their
//!   endings, as in the file.
//!
//! On a plain tree (no `.gitignore`, no binary or oversized files, no line over 400
//! characters) these are the very rows the envelope server's `search_text` returns. The walk
//! skips hidden entries and symlinks, as the envelope server's does, and files that are not
//! UTF-8; it honours no `.gitignore`.

use std::fs;
use std::net::SocketAddr;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

use clap::Parser;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, ServiceExt, tool, tool_handler, tool_router};
use serde::{Deserialize, Serialize};

/// `search_text`'s default page size, the envelope server's too.
const DEFAULT_LIMIT: usize = 50;

/// Serve one directory tree over MCP, as a plain rmcp server: plain JSON, offset paging.
#[derive(Debug, Parser)]
#[command(name = "plain_workspace_server", version)]
struct Options {
    /// The directory to serve.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,

    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// Over HTTP, keep no sessions: every POST is answered on its own.
    #[arg(long, requires = "http")]
    stateless: bool,

    /// Over HTTP, answer a POST with a JSON body rather than an event stream.
    #[arg(long, requires = "http")]
    json_response: bool,

    /// Over HTTP, refuse a request body over N bytes (rmcp's own default is 4 MiB).
    #[arg(long, value_name = "N", requires = "http")]
    max_request_bytes: Option<usize>,

    /// Over HTTP, a bare axum handler answering `read_file` calls, without rmcp.
    #[arg(long, requires = "http", conflicts_with_all = ["stateless", "json_response"])]
    bare: bool,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SearchTextArgs {
    /// The literal string to look for.
    query: String,
    /// Return at most this many occurrences (default 50); `total` counts all.
    #[serde(default)]
    limit: Option<usize>,
    /// Skip this many occurrences first (default 0): the next page starts at the previous
    /// page's offset plus its length.
    #[serde(default)]
    offset: Option<usize>,
}

#[derive(Debug, Serialize)]
struct Occurrence {
    path: String,
    line: usize,
    column: usize,
    text: String,
}

#[derive(Debug, Serialize)]
struct SearchPage {
    occurrences: Vec<Occurrence>,
    total: usize,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct ReadFileArgs {
    /// The file, relative to the served directory.
    path: String,
    /// The first line to return, 1-based (default 1).
    #[serde(default)]
    start_line: Option<usize>,
    /// The last line to return, inclusive (default: the file's last line).
    #[serde(default)]
    end_line: Option<usize>,
}

#[derive(Debug, Serialize)]
struct FileLines {
    path: String,
    start_line: usize,
    end_line: usize,
    total_lines: usize,
    content: String,
}

/// The server: the directory it serves, and rmcp's router over the two tools.
#[derive(Debug, Clone)]
struct PlainWorkspace {
    root: PathBuf,
}

#[tool_router]
impl PlainWorkspace {
    // The tools are synchronous: a plain server reads its files inline, and the fixture trees
    // it serves are small.

    /// Search the directory's text files for a literal string and return each occurrence with
    /// its path, 1-based line and column, and line text, `limit` at a time from `offset`;
    /// `total` is the number of all occurrences.
    #[tool]
    fn search_text(&self, Parameters(args): Parameters<SearchTextArgs>) -> Result<String, String> {
        if args.query.is_empty() {
            return Err("`query` must not be empty".into());
        }
        let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
        let offset = args.offset.unwrap_or(0);
        let mut occurrences = Vec::new();
        let mut total = 0;
        for rel in walk(&self.root)? {
            // Not UTF-8 (or gone since the walk): not a text file, not searched.
            let Ok(text) = fs::read_to_string(self.root.join(&rel)) else {
                continue;
            };
            for (index, line) in text.lines().enumerate() {
                for (start, _) in line.match_indices(args.query.as_str()) {
                    // Off the page, matches are only counted, so `total` stays exact.
                    if total >= offset && total - offset < limit {
                        occurrences.push(Occurrence {
                            path: rel.clone(),
                            line: index + 1,
                            column: line[..start].chars().count() + 1,
                            text: line.to_owned(),
                        });
                    }
                    total += 1;
                }
            }
        }
        to_json(&SearchPage { occurrences, total })
    }

    /// Read a text file of the directory, whole or the lines `start_line` to `end_line`
    /// (1-based, inclusive).
    #[tool]
    fn read_file(&self, Parameters(args): Parameters<ReadFileArgs>) -> Result<String, String> {
        let rel = Path::new(&args.path);
        // Only paths beneath the root: nothing outside the served directory is read.
        if !rel
            .components()
            .all(|part| matches!(part, Component::Normal(_) | Component::CurDir))
        {
            return Err(format!(
                "`{}` is not a path inside the served directory",
                args.path
            ));
        }
        let text = fs::read_to_string(self.root.join(rel))
            .map_err(|error| format!("cannot read `{}`: {error}", args.path))?;
        let lines: Vec<&str> = text.split_inclusive('\n').collect();
        let total_lines = lines.len();
        let start_line = args.start_line.unwrap_or(1).max(1);
        if let Some(end) = args.end_line
            && end < start_line
        {
            return Err(format!(
                "`end_line` ({end}) is before `start_line` ({start_line})"
            ));
        }
        // Past the last line nothing is returned, and `end_line` is `start_line - 1`.
        let end_line = args
            .end_line
            .unwrap_or(total_lines)
            .min(total_lines)
            .max(start_line - 1);
        let content = lines
            .get(start_line - 1..end_line)
            .map(|run| run.concat())
            .unwrap_or_default();
        to_json(&FileLines {
            path: args.path,
            start_line,
            end_line,
            total_lines,
            content,
        })
    }
}

#[tool_handler(name = "plain-workspace-server", version = "0.1.0")]
impl ServerHandler for PlainWorkspace {}

/// Every regular file beneath `root`, as `/`-separated relative paths in sorted order: the
/// whole tree's paths sorted as strings, as the envelope server orders them (not directory by
/// directory, which orders `a/b` and `a-b` the other way). Hidden entries and symlinks are
/// left out.
fn walk(root: &Path) -> Result<Vec<String>, String> {
    let mut files = Vec::new();
    let mut pending = vec![String::new()];
    while let Some(dir) = pending.pop() {
        let entries = fs::read_dir(root.join(&dir))
            .map_err(|error| format!("cannot list `{}`: {error}", root.join(&dir).display()))?;
        for entry in entries {
            let entry = entry.map_err(|error| format!("cannot list `{dir}`: {error}"))?;
            let name = entry.file_name();
            let Some(name) = name.to_str().filter(|name| !name.starts_with('.')) else {
                continue;
            };
            let rel = if dir.is_empty() {
                name.to_owned()
            } else {
                format!("{dir}/{name}")
            };
            // The entry's own type: a symlink is neither followed nor listed.
            match entry.file_type() {
                Ok(kind) if kind.is_dir() => pending.push(rel),
                Ok(kind) if kind.is_file() => files.push(rel),
                _ => {}
            }
        }
    }
    files.sort();
    Ok(files)
}

/// The answer as a plain tool gives it: one text content of compact JSON.
fn to_json(value: &impl Serialize) -> Result<String, String> {
    serde_json::to_string(value).map_err(|error| format!("cannot encode the answer: {error}"))
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    let options = Options::parse();
    let server = PlainWorkspace {
        root: options.root.clone(),
    };
    let Some(addr) = options.http else {
        // rmcp's stream transport over the process's own standard input and output.
        let running = server
            .serve((tokio::io::stdin(), tokio::io::stdout()))
            .await
            .expect("the MCP handshake over stdio");
        running.waiting().await.expect("the server task");
        return std::process::ExitCode::SUCCESS;
    };
    let router = if options.bare {
        bare::router(server)
    } else {
        streamable_http(server, &options)
    };
    let listener = match tokio::net::TcpListener::bind(addr).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("plain_workspace_server: cannot listen on {addr}: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    // TCP_NODELAY, as the envelope server sets it: an event stream's answer goes out in more
    // than one write, and without it each call in a session waits 40 ms for the client's
    // delayed acknowledgement. The baseline is a careful plain server, not a slow one.
    use axum::serve::ListenerExt;
    let listener = listener.tap_io(|tcp| {
        let _ = tcp.set_nodelay(true);
    });
    match axum::serve(listener, router).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("plain_workspace_server: {error}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// rmcp's streamable HTTP service at `/mcp`, configured from the command line and otherwise
/// left at rmcp's defaults, as a plain server mounts it.
fn streamable_http(server: PlainWorkspace, options: &Options) -> axum::Router {
    use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
    use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};

    let mut config = StreamableHttpServerConfig::default()
        .with_json_response(options.json_response)
        .with_legacy_session_mode(!options.stateless)
        // The load bench addresses it as 127.0.0.1 and as localhost; rmcp's default host
        // check (DNS rebinding) admits loopback names only, which is what it is served on.
        .disable_allowed_hosts();
    if let Some(limit) = options.max_request_bytes {
        config = config.with_max_request_body_bytes(limit);
    }
    let sessions = Arc::new(LocalSessionManager::default());
    let service = StreamableHttpService::new(move || Ok(server.clone()), sessions, config);
    axum::Router::new().nest_service("/mcp", service)
}

/// The limit of the stack: a JSON-RPC `tools/call` of `read_file` answered by one axum
/// handler, with the same result a plain rmcp tool gives (one text content), and nothing of
/// MCP's (no initialization, no sessions, no other method).
mod bare {
    use axum::body::Bytes;
    use axum::extract::State;
    use axum::http::{StatusCode, header};
    use axum::response::{IntoResponse, Response};
    use axum::routing::post;
    use rmcp::handler::server::wrapper::Parameters;
    use serde::Deserialize;
    use serde_json::{Value, json};

    use super::{PlainWorkspace, ReadFileArgs};

    #[derive(Deserialize)]
    struct Request {
        #[serde(default)]
        id: Value,
        method: String,
        #[serde(default)]
        params: Option<Call>,
    }

    #[derive(Deserialize)]
    struct Call {
        name: String,
        #[serde(default)]
        arguments: Value,
    }

    pub(super) fn router(server: PlainWorkspace) -> axum::Router {
        axum::Router::new()
            .route("/mcp", post(answer))
            .with_state(server)
    }

    async fn answer(State(server): State<PlainWorkspace>, body: Bytes) -> Response {
        let request: Request = match serde_json::from_slice(&body) {
            Ok(request) => request,
            Err(error) => return (StatusCode::BAD_REQUEST, error.to_string()).into_response(),
        };
        let id = request.id;
        let call = match request.params {
            Some(call) if request.method == "tools/call" && call.name == "read_file" => call,
            _ => {
                return json_body(&json!({
                    "jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "only tools/call of read_file"}
                }));
            }
        };
        let answer = serde_json::from_value::<ReadFileArgs>(call.arguments)
            .map_err(|error| error.to_string())
            .and_then(|args| server.read_file(Parameters(args)));
        let (text, is_error) = match answer {
            Ok(text) => (text, false),
            Err(text) => (text, true),
        };
        json_body(&json!({
            "jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}], "isError": is_error}
        }))
    }

    fn json_body(value: &Value) -> Response {
        (
            [(header::CONTENT_TYPE, "application/json")],
            value.to_string(),
        )
            .into_response()
    }
}

//! The golden answers: a fixed set of calls, over every surface (the Rust `call`, stdio's
//! lines, streamable HTTP's `/mcp`, the REST gateway) and in every dialect a call may ask for,
//! each answer kept in `tests/golden/answers.json` with what varies from run to run (request
//! ids, latencies, sealed tokens) replaced by a placeholder.
//!
//! A change that should not change the wire keeps this test passing as it is; a change that
//! should shows its every difference in the file's diff, for review. `ENVELOPE_BLESS=1 cargo
//! test --all-features -p workspace-server --test golden` writes the file anew.

mod common;

use std::collections::BTreeMap;
use std::net::SocketAddr;

use envelope_core::paging::Continuations;
use envelope_core::{Arguments, Dialect, DialectSet};
use envelope_mcp::EnvelopeServer;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use workspace_server::{Limits, Workspace};

use common::raw_http::{http_exchange, open_session, serve_on_loopback};
use common::tree::{Tree, test_key};

/// Where the answers are kept.
const GOLDEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden/answers.json");

/// One call of the fixed set: a name for it, the tool, and its arguments as the JSON text a
/// client sends (text, so that a key given twice reaches the server as sent).
struct Case {
    name: &'static str,
    tool: &'static str,
    arguments: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "search, first page",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":2}"#,
    },
    Case {
        name: "search, compact",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":2,"compact_only":true}"#,
    },
    Case {
        name: "search, full meta",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":1,"response_mode":"full"}"#,
    },
    Case {
        name: "search, toon",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":2,"output_format":"toon"}"#,
    },
    Case {
        name: "search, nothing found",
        tool: "search_text",
        arguments: r#"{"query":"absent-from-every-file"}"#,
    },
    Case {
        name: "search, an unknown argument",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":1,"colour":"blue"}"#,
    },
    Case {
        name: "search, a bad argument",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":"two"}"#,
    },
    Case {
        name: "search, a continuation that is no token",
        tool: "search_text",
        arguments: r#"{"query":"needle","continuation":"not-a-token"}"#,
    },
    Case {
        name: "search, arguments that are no object",
        tool: "search_text",
        arguments: r#"["needle"]"#,
    },
    Case {
        name: "read, a small file",
        tool: "read_file",
        arguments: r#"{"path":"README.md"}"#,
    },
    Case {
        name: "read, a file over the budget",
        tool: "read_file",
        arguments: r#"{"path":"long.txt"}"#,
    },
    Case {
        name: "read, outside the root",
        tool: "read_file",
        arguments: r#"{"path":"../outside.txt"}"#,
    },
    Case {
        name: "list, a directory",
        tool: "list_files",
        arguments: r#"{"path":"src","limit":3}"#,
    },
    Case {
        name: "stats",
        tool: "workspace_stats",
        arguments: r#"{}"#,
    },
    Case {
        name: "a control given twice: dialect",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":1,"dialect":"tsa","dialect":"cos"}"#,
    },
    Case {
        name: "a control given twice: an unknown dialect first",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":1,"dialect":"bogus","dialect":"cos"}"#,
    },
    Case {
        name: "a control given twice: response_mode",
        tool: "search_text",
        arguments: r#"{"query":"needle","limit":1,"response_mode":"full","response_mode":"compact"}"#,
    },
];

/// The surfaces a call reaches the server by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Surface {
    /// `EnvelopeServer::call`, as the example's `call` command runs it.
    Call,
    /// Newline-delimited JSON-RPC, as over stdio.
    Stdio,
    /// Streamable HTTP's `/mcp`.
    Mcp,
    /// The REST gateway's `POST /tools/{name}` (the envelope's own dialect only).
    Rest,
}

impl Surface {
    const ALL: [Surface; 4] = [Surface::Call, Surface::Stdio, Surface::Mcp, Surface::Rest];

    fn name(self) -> &'static str {
        match self {
            Surface::Call => "call",
            Surface::Stdio => "stdio",
            Surface::Mcp => "mcp",
            Surface::Rest => "rest",
        }
    }
}

/// The example over `tree`, answering in the envelope's dialect, a call free to ask for any.
fn server(tree: &Tree) -> EnvelopeServer {
    workspace_server::server_with(
        Workspace::open(&tree.root).expect("the fixture is a directory"),
        Continuations::new(test_key()),
        &[],
        Limits {
            call_dialects: DialectSet::ALL,
            ..Limits::default()
        },
    )
}

/// `arguments` with the call's `dialect` control added, as text: a key given twice stays so.
fn in_dialect(arguments: &str, dialect: Dialect) -> String {
    if dialect == Dialect::Envelope {
        return arguments.to_owned();
    }
    match arguments.strip_suffix('}') {
        Some(open) if open.trim_end().ends_with('{') => {
            format!(r#"{open}"dialect":"{}"}}"#, dialect.name())
        }
        Some(open) => format!(r#"{open},"dialect":"{}"}}"#, dialect.name()),
        None => arguments.to_owned(),
    }
}

/// A stdio session on the server: the writer to send lines to and the reader of its answers.
struct Stdio {
    reader: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    writer: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    next_id: u64,
}

impl Stdio {
    async fn open(server: EnvelopeServer) -> Stdio {
        let (reader, writer, _serving) = common::lines::serve_lines_in_memory(server);
        let mut stdio = Stdio {
            reader: BufReader::new(reader),
            writer,
            next_id: 1,
        };
        stdio
            .request(
                r#""method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"golden","version":"0"}}"#,
            )
            .await;
        stdio
            .send(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#)
            .await;
        stdio
    }

    async fn send(&mut self, line: &str) {
        self.writer
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("the server reads");
    }

    /// Sends a request whose members after `jsonrpc` and `id` are `rest`; its answer.
    async fn request(&mut self, rest: &str) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&format!(r#"{{"jsonrpc":"2.0","id":{id},{rest}}}"#))
            .await;
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(
                std::time::Duration::from_secs(20),
                self.reader.read_line(&mut line),
            )
            .await
            .expect("the server answers in time")
            .expect("reads");
            assert!(read > 0, "the server hung up");
            let message: Value = serde_json::from_str(&line).expect("a JSON line");
            if message["id"] == id {
                return message;
            }
        }
    }
}

/// The answers of one server, by surface.
struct Surfaces {
    server: EnvelopeServer,
    stdio: Stdio,
    addr: SocketAddr,
    session: String,
}

impl Surfaces {
    async fn open(tree: &Tree) -> Surfaces {
        let stdio = Stdio::open(server(tree)).await;
        let addr = serve_on_loopback(server(tree)).await;
        let session = open_session(addr).await;
        Surfaces {
            server: server(tree),
            stdio,
            addr,
            session,
        }
    }

    /// What `surface` answers a call of `tool` with `arguments` (JSON text): for the MCP
    /// surfaces, the tool result (or the JSON-RPC error); for REST, the status and body; for
    /// `call`, the envelope.
    async fn answer(&mut self, surface: Surface, tool: &str, arguments: &str) -> Value {
        match surface {
            Surface::Call => {
                let arguments = Arguments::from_json(arguments).expect("JSON arguments");
                let prepared = self.server.call(tool, arguments).await.expect("a tool");
                prepared.structured
            }
            Surface::Stdio => {
                let answer = self
                    .stdio
                    .request(&format!(
                        r#""method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}"#
                    ))
                    .await;
                answer
                    .get("result")
                    .or(answer.get("error"))
                    .cloned()
                    .unwrap_or(answer)
            }
            Surface::Mcp => {
                let body = format!(
                    r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
                );
                let request = raw_post(self.addr, "/mcp", Some(&self.session), &body);
                let (head, body) = http_exchange(self.addr, request, |body| {
                    sse_answer(&dechunk(body)).is_some()
                })
                .await;
                let body = dechunk(&body);
                match sse_answer(&body) {
                    Some(answer) => answer
                        .get("result")
                        .or(answer.get("error"))
                        .cloned()
                        .unwrap_or(answer),
                    None => json!({ "status": status_of(&head), "body": parse_body(&body) }),
                }
            }
            Surface::Rest => {
                let request = raw_post(self.addr, &format!("/tools/{tool}"), None, arguments);
                let (head, body) = http_exchange(self.addr, request, |_| false).await;
                json!({ "status": status_of(&head), "body": parse_body(&body) })
            }
        }
    }
}

/// A `POST` of `body` to `path`, as JSON, sent as written (a `Value` would keep one of a key
/// given twice); over `/mcp`, in `session`, accepting SSE.
fn raw_post(addr: SocketAddr, path: &str, session: Option<&str>, body: &str) -> String {
    let extra = match session {
        Some(session) => {
            format!("accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n")
        }
        None => "connection: close\r\n".to_owned(),
    };
    format!(
        "POST {path} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{extra}\
         content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

/// `body` as sent in HTTP/1.1 chunks (RFC 9112 §7.1), joined: as much as has arrived whole.
/// A body that is not chunked is returned as it is.
fn dechunk(body: &str) -> String {
    let bytes = body.as_bytes();
    let mut joined = Vec::new();
    let mut at = 0;
    while let Some(line_end) = bytes[at..].windows(2).position(|pair| pair == b"\r\n") {
        let size = std::str::from_utf8(&bytes[at..at + line_end])
            .ok()
            .and_then(|size| usize::from_str_radix(size.trim(), 16).ok());
        let Some(size) = size else {
            // No chunk size: the body is not chunked.
            return if at == 0 {
                body.to_owned()
            } else {
                String::from_utf8_lossy(&joined).into_owned()
            };
        };
        let start = at + line_end + 2;
        if size == 0 || start + size > bytes.len() {
            break;
        }
        joined.extend_from_slice(&bytes[start..start + size]);
        at = start + size + 2;
        if at > bytes.len() {
            break;
        }
    }
    String::from_utf8_lossy(&joined).into_owned()
}

/// The answer to request 7 among the server-sent events of `body`, once it is there whole.
fn sse_answer(body: &str) -> Option<Value> {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message["id"] == 7)
}

fn status_of(head: &str) -> u16 {
    head.split_whitespace()
        .nth(1)
        .and_then(|status| status.parse().ok())
        .expect("a status line")
}

fn parse_body(body: &str) -> Value {
    serde_json::from_str(body.trim()).unwrap_or_else(|_| Value::String(body.trim().to_owned()))
}

/// What varies from run to run, replaced where it stands: the server's sealed tokens, request
/// ids (ULIDs) and latencies, and in an answer holding a sealed token the token counts (a
/// token's random nonce tokenizes to a count of its own). The same volatile text inside a
/// longer string (a text mirror, a TOON body) is replaced there too.
struct Normalizer {
    continuations: Continuations,
    volatile: BTreeMap<String, String>,
    /// Whether the answer holds a sealed token, whose nonce moves its token counts.
    counts_vary: bool,
}

/// Keys whose values are a request's own: its id, when it was answered, how long it took.
/// The longest text kept whole in the golden file.
const MAX_KEPT_CHARS: usize = 240;

/// FNV-1a, 64 bits: a hash that is the same on every machine and in every Rust release.
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The token counts, which a sealed token's nonce moves.
const COUNT_KEYS: &[&str] = &[
    "tokens_estimated",
    "tokens_used",
    "tokens_saved",
    "tokens_saved_pct",
];

const VOLATILE_KEYS: &[&str] = &[
    "request_id",
    "requestId",
    "rs.envelope/request_id",
    "latency_ms",
    "latencyMs",
    "elapsed_ms",
    "duration_ms",
];

impl Normalizer {
    fn new() -> Self {
        Normalizer {
            continuations: Continuations::new(test_key()),
            volatile: BTreeMap::new(),
            counts_vary: false,
        }
    }

    fn placeholder(&mut self, kind: &str, text: &str) -> String {
        let next = self.volatile.len();
        self.volatile
            .entry(text.to_owned())
            .or_insert_with(|| format!("<{kind}:{next}>"))
            .clone()
    }

    /// First pass: every volatile string, by the key it stands under or by being a token.
    fn collect(&mut self, value: &Value, key: Option<&str>) {
        match value {
            Value::String(text) if key.is_some_and(|key| VOLATILE_KEYS.contains(&key)) => {
                self.placeholder("id", text);
            }
            Value::String(text) if self.continuations.recognize(text).is_some() => {
                self.placeholder("token", text);
                self.counts_vary = true;
            }
            // A token inside text (a TOON row, prose): each word long enough to be one.
            Value::String(text) => {
                let words =
                    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'));
                for word in words.filter(|word| word.len() >= 16) {
                    if self.continuations.recognize(word).is_some() {
                        self.placeholder("token", word);
                        self.counts_vary = true;
                    }
                }
            }
            Value::Array(items) => items.iter().for_each(|item| self.collect(item, key)),
            Value::Object(object) => object
                .iter()
                .for_each(|(key, value)| self.collect(value, Some(key))),
            _ => {}
        }
    }

    /// Second pass: each volatile string replaced, alone or inside a longer one; latencies
    /// zeroed.
    fn replace(&self, value: &mut Value, key: Option<&str>) {
        match value {
            Value::Number(_) if key.is_some_and(|key| VOLATILE_KEYS.contains(&key)) => {
                *value = json!(0);
            }
            Value::Number(_)
                if self.counts_vary && key.is_some_and(|key| COUNT_KEYS.contains(&key)) =>
            {
                *value = json!("<count>");
            }
            Value::String(text) => {
                if let Ok(mut inner) = serde_json::from_str::<Value>(text)
                    && (inner.is_object() || inner.is_array())
                {
                    // A text mirror: normalized as what it mirrors, then written back.
                    self.replace(&mut inner, None);
                    *text = serde_json::to_string(&inner).expect("a value serializes");
                    return;
                }
                for (volatile, placeholder) in &self.volatile {
                    if text.contains(volatile.as_str()) {
                        *text = text.replace(volatile.as_str(), placeholder);
                    }
                }
                // A TOON or prose latency, or count: `latency_ms: 3`.
                let counts = if self.counts_vary { COUNT_KEYS } else { &[] };
                for key in VOLATILE_KEYS.iter().chain(counts) {
                    let marker = format!("{key}: ");
                    let mut at = 0;
                    while let Some(start) = text[at..].find(&marker) {
                        let from = at + start + marker.len();
                        let end = text[from..]
                            .find(|c: char| !(c.is_ascii_digit() || c == '-' || c == '.'))
                            .map_or(text.len(), |end| from + end);
                        text.replace_range(from..end, "0");
                        at = from;
                    }
                }
                // A long text (a file's content) is kept as its length, its start and a hash:
                // enough to see that it changed, without a copy of it in every answer.
                if text.chars().count() > MAX_KEPT_CHARS {
                    let start: String = text.chars().take(48).collect();
                    *text = format!(
                        "<{} chars, fnv {:016x}, from {start:?}>",
                        text.chars().count(),
                        fnv1a(text.as_bytes())
                    );
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| self.replace(item, key)),
            Value::Object(object) => object
                .iter_mut()
                .for_each(|(key, value)| self.replace(value, Some(key))),
            _ => {}
        }
    }

    fn normalize(&mut self, mut value: Value) -> Value {
        mark_mirrors(&mut value);
        self.collect(&value, None);
        // Tokens and ids inside text mirrors are collected from the parsed mirror too.
        let mut texts = Vec::new();
        gather_texts(&value, &mut texts);
        for text in texts {
            if let Ok(inner) = serde_json::from_str::<Value>(&text) {
                self.collect(&inner, None);
            }
        }
        self.replace(&mut value, None);
        value
    }
}

/// A text block that is the structured content as JSON, as most are, said so instead of
/// copied: the golden file keeps what differs from it (a TOON mirror, a dialect's own text).
fn mark_mirrors(result: &mut Value) {
    let Some(structured) = result.get("structuredContent").cloned() else {
        return;
    };
    let Some(blocks) = result.get_mut("content").and_then(Value::as_array_mut) else {
        return;
    };
    for block in blocks {
        let mirrors = block["text"]
            .as_str()
            .and_then(|text| serde_json::from_str::<Value>(text).ok())
            .is_some_and(|text| text == structured);
        if mirrors {
            block["text"] = json!("<structuredContent as JSON>");
        }
    }
}

fn gather_texts(value: &Value, texts: &mut Vec<String>) {
    match value {
        Value::String(text) => texts.push(text.clone()),
        Value::Array(items) => items.iter().for_each(|item| gather_texts(item, texts)),
        Value::Object(object) => object.values().for_each(|value| gather_texts(value, texts)),
        _ => {}
    }
}

/// The next-page call a model would copy from `answer` (read through its dialect), as JSON
/// text: `(tool, arguments)`.
fn next_page(surface: Surface, dialect: Dialect, answer: &Value) -> Option<(String, String)> {
    let envelope = match surface {
        Surface::Call => answer.clone(),
        Surface::Rest => answer["body"].clone(),
        Surface::Stdio | Surface::Mcp => answer["structuredContent"].clone(),
    };
    let envelope = envelope_dialect::view(dialect, &envelope);
    let action = envelope["next_actions"]
        .as_array()?
        .iter()
        .find(|action| action["id"] == envelope_core::paging::NEXT_PAGE)?;
    let arguments: &Map<String, Value> = action["arguments"].as_object()?;
    Some((
        action["tool"].as_str()?.to_owned(),
        Value::Object(arguments.clone()).to_string(),
    ))
}

/// Every answer of the fixed set, normalized, keyed `surface / dialect / case`.
async fn answers() -> Value {
    let tree = Tree::new("golden");
    let mut surfaces = Surfaces::open(&tree).await;
    let mut all = Map::new();
    for surface in Surface::ALL {
        for dialect in Dialect::ALL {
            // The REST gateway answers in the envelope's own dialect only.
            if surface == Surface::Rest && dialect != Dialect::Envelope {
                continue;
            }
            let mut cases = Map::new();
            for case in CASES {
                let arguments = in_dialect(case.arguments, dialect);
                let answer = surfaces.answer(surface, case.tool, &arguments).await;
                // The first page is followed as offered: the second page is part of the set.
                if case.name == "search, first page" {
                    let (tool, arguments) = next_page(surface, dialect, &answer)
                        .unwrap_or_else(|| panic!("{surface:?} {dialect}: no next page"));
                    let second = surfaces.answer(surface, &tool, &arguments).await;
                    cases.insert(
                        "search, second page as offered".to_owned(),
                        Normalizer::new().normalize(second),
                    );
                }
                cases.insert(case.name.to_owned(), Normalizer::new().normalize(answer));
            }
            all.insert(
                format!("{} / {}", surface.name(), dialect.name()),
                Value::Object(cases),
            );
        }
    }
    Value::Object(all)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_surface_and_dialect_answers_as_the_golden_file_says() {
    let answers = answers().await;
    let written = serde_json::to_string_pretty(&answers).expect("JSON") + "\n";
    if std::env::var_os("ENVELOPE_BLESS").is_some() {
        std::fs::create_dir_all(std::path::Path::new(GOLDEN).parent().expect("a folder"))
            .expect("the tests folder is writable");
        std::fs::write(GOLDEN, &written).expect("the golden file is writable");
        return;
    }
    let kept = std::fs::read_to_string(GOLDEN)
        .expect("the golden file exists: run with ENVELOPE_BLESS=1 to write it");
    let kept: Value = serde_json::from_str(&kept).expect("the golden file is JSON");
    let mut differences = Vec::new();
    for (group, cases) in answers.as_object().expect("an object") {
        for (case, answer) in cases.as_object().expect("an object") {
            let before = &kept[group][case];
            if before != answer {
                differences.push(format!(
                    "{group} / {case}:\n  kept:   {before}\n  now:    {answer}"
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "{} answers differ from tests/golden/answers.json (ENVELOPE_BLESS=1 writes them):\n{}",
        differences.len(),
        differences.join("\n")
    );
    assert_eq!(
        kept.as_object().map(Map::len),
        answers.as_object().map(Map::len),
        "the golden file holds other groups"
    );
}

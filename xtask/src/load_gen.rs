//! `xtask load-gen`: the load bench's generator for calls in one MCP session, which h2load
//! cannot make (each call in a session needs a JSON-RPC id of its own, and h2load posts one
//! body). Each connection sends its next call as soon as the last is answered, every call with
//! a new id, the answer (JSON, or an event stream) read to its end: over HTTP/1.1, keep-alive
//! connections a thread each; over h2c (`h2c` last), HTTP/2 connections with prior knowledge,
//! one call at a time each (as h2load's `-m 1`), on one thread as h2load runs.
//!
//! ```text
//! xtask load-gen ADDR SESSION CONNECTIONS SECONDS TOOL ARGUMENTS_JSON [h2c]
//! ```
//!
//! After a warm-up second, it counts the calls answered in SECONDS and prints one line of JSON:
//! `{"calls_per_s", "done", "errored", "statuses": {status: count}, "durations_us": [...]}`.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

/// What one connection saw in the measured seconds.
#[derive(Default)]
struct Seen {
    statuses: BTreeMap<u16, u64>,
    durations_us: Vec<u64>,
    errored: u64,
}

/// Runs the generator; see the module's documentation.
pub(crate) fn run(args: &[&str]) -> Result<(), String> {
    let (args, h2c) = match args {
        [rest @ .., "h2c"] => (rest, true),
        _ => (args, false),
    };
    let [addr, session, connections, seconds, tool, arguments] = args else {
        return Err(
            "usage: xtask load-gen ADDR SESSION CONNECTIONS SECONDS TOOL ARGUMENTS_JSON [h2c]"
                .to_owned(),
        );
    };
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| format!("`{addr}` is no address"))?;
    let connections: usize = connections
        .parse()
        .map_err(|_| "CONNECTIONS is a whole number".to_owned())?;
    let seconds: u64 = seconds
        .parse()
        .map_err(|_| "SECONDS is a whole number".to_owned())?;
    let arguments: serde_json::Value =
        serde_json::from_str(arguments).map_err(|error| format!("ARGUMENTS_JSON: {error}"))?;
    let start = Instant::now();
    let measured_from = start + Duration::from_secs(1);
    let until = measured_from + Duration::from_secs(seconds);
    let all = if h2c {
        let calls = Calls {
            addr,
            session: session.to_string(),
            tool: tool.to_string(),
            arguments,
            measured_from,
            until,
        };
        h2c_connections(calls, connections)?
    } else {
        h1_connections(
            addr,
            session,
            tool,
            &arguments,
            connections,
            measured_from,
            until,
        )?
    };
    let done = all.durations_us.len() as u64;
    let line = serde_json::json!({
        "calls_per_s": done as f64 / seconds as f64,
        "done": done,
        "errored": all.errored,
        "statuses": all.statuses.iter().map(|(status, count)| (status.to_string(), *count)).collect::<BTreeMap<_, _>>(),
        "durations_us": all.durations_us,
    });
    println!("{line}");
    Ok(())
}

impl Seen {
    /// One call's answer, counted when it started in the measured seconds and ended in them.
    fn answered(&mut self, status: u16, started: Instant, measured_from: Instant, until: Instant) {
        if started >= measured_from && Instant::now() <= until {
            *self.statuses.entry(status).or_default() += 1;
            self.durations_us
                .push(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
        }
    }

    fn add(&mut self, other: Seen) {
        for (status, count) in other.statuses {
            *self.statuses.entry(status).or_default() += count;
        }
        self.durations_us.extend(other.durations_us);
        self.errored += other.errored;
    }
}

/// The body of the call with JSON-RPC id `id`.
fn call_body(tool: &str, arguments: &serde_json::Value, id: u64) -> String {
    serde_json::json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": arguments}
    })
    .to_string()
}

/// What every h2c connection sends, and when it counts.
struct Calls {
    addr: SocketAddr,
    session: String,
    tool: String,
    arguments: serde_json::Value,
    measured_from: Instant,
    until: Instant,
}

/// `connections` HTTP/2 connections on one thread, each making calls one at a time.
fn h2c_connections(calls: Calls, connections: usize) -> Result<Seen, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|error| format!("cannot start the runtime: {error}"))?;
    let calls = std::sync::Arc::new(calls);
    runtime.block_on(async {
        let tasks: Vec<_> = (0..connections)
            .map(|index| tokio::spawn(h2c_connection(std::sync::Arc::clone(&calls), index)))
            .collect();
        let mut all = Seen::default();
        for task in tasks {
            all.add(task.await.map_err(|_| "a load task panicked".to_owned())?);
        }
        Ok(all)
    })
}

/// One HTTP/2 connection's calls until the end; a connection that fails is opened again, the
/// failure counted.
async fn h2c_connection(calls: std::sync::Arc<Calls>, index: usize) -> Seen {
    let mut seen = Seen::default();
    let mut id: u64 = (index as u64) << 32;
    let mut sender: Option<h2::client::SendRequest<bytes::Bytes>> = None;
    while Instant::now() < calls.until {
        id += 1;
        let started = Instant::now();
        let client = match sender.take() {
            Some(client) => client,
            None => match h2c_connect(calls.addr).await {
                Ok(client) => client,
                Err(_) => {
                    seen.errored += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let body = call_body(&calls.tool, &calls.arguments, id);
        match h2c_call(client, &calls, body).await {
            Ok((status, client)) => {
                seen.answered(status, started, calls.measured_from, calls.until);
                sender = Some(client);
            }
            Err(_) => seen.errored += 1,
        }
    }
    seen
}

/// An HTTP/2 connection with prior knowledge, driven by a task of its own.
async fn h2c_connect(addr: SocketAddr) -> Result<h2::client::SendRequest<bytes::Bytes>, String> {
    let tcp = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|error| error.to_string())?;
    let _ = tcp.set_nodelay(true);
    let (client, connection) = h2::client::handshake(tcp)
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Sends one call on `client` and reads its answer to the end: the status, and the client for
/// the next call.
async fn h2c_call(
    client: h2::client::SendRequest<bytes::Bytes>,
    calls: &Calls,
    body: String,
) -> Result<(u16, h2::client::SendRequest<bytes::Bytes>), String> {
    let failed = |error: h2::Error| error.to_string();
    let mut client = client.ready().await.map_err(failed)?;
    let request = http::Request::post(format!("http://{}/mcp", calls.addr))
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-06-18")
        .header("mcp-session-id", calls.session.as_str())
        .body(())
        .map_err(|error| error.to_string())?;
    let (response, mut send) = client.send_request(request, false).map_err(failed)?;
    send.send_data(bytes::Bytes::from(body), true)
        .map_err(failed)?;
    let response = response.await.map_err(failed)?;
    let status = response.status().as_u16();
    let mut body = response.into_body();
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(failed)?;
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    Ok((status, client))
}

/// `connections` HTTP/1.1 keep-alive connections, a thread each.
fn h1_connections(
    addr: SocketAddr,
    session: &str,
    tool: &str,
    arguments: &serde_json::Value,
    connections: usize,
    measured_from: Instant,
    until: Instant,
) -> Result<Seen, String> {
    let threads: Vec<_> = (0..connections)
        .map(|index| {
            let (session, tool, arguments) =
                (session.to_string(), tool.to_string(), arguments.clone());
            std::thread::spawn(move || {
                connection(
                    addr,
                    &session,
                    &tool,
                    &arguments,
                    index,
                    measured_from,
                    until,
                )
            })
        })
        .collect();
    let mut all = Seen::default();
    for thread in threads {
        all.add(
            thread
                .join()
                .map_err(|_| "a load thread panicked".to_owned())?,
        );
    }
    Ok(all)
}

/// One connection's calls until `until`; those started from `measured_from` are counted. A
/// connection that fails is opened again, the failure counted.
fn connection(
    addr: SocketAddr,
    session: &str,
    tool: &str,
    arguments: &serde_json::Value,
    index: usize,
    measured_from: Instant,
    until: Instant,
) -> Seen {
    let mut seen = Seen::default();
    let mut id: u64 = (index as u64) << 32;
    let mut stream: Option<BufReader<TcpStream>> = None;
    while Instant::now() < until {
        id += 1;
        let body = call_body(tool, arguments, id);
        let started = Instant::now();
        let reader = match stream.take() {
            Some(reader) => reader,
            None => match TcpStream::connect(addr) {
                Ok(tcp) => {
                    let _ = tcp.set_nodelay(true);
                    let _ = tcp.set_read_timeout(Some(Duration::from_secs(30)));
                    BufReader::new(tcp)
                }
                Err(_) => {
                    seen.errored += 1;
                    std::thread::sleep(Duration::from_millis(10));
                    continue;
                }
            },
        };
        match call(reader, addr, session, &body) {
            Ok((status, reader)) => {
                seen.answered(status, started, measured_from, until);
                stream = reader;
            }
            Err(_) => seen.errored += 1,
        }
    }
    seen
}

/// Sends one call and reads its answer to the end: the status, and the connection when it may
/// be used again.
fn call(
    mut reader: BufReader<TcpStream>,
    addr: SocketAddr,
    session: &str,
    body: &str,
) -> std::io::Result<(u16, Option<BufReader<TcpStream>>)> {
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         mcp-session-id: {session}\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    reader.get_mut().write_all(head.as_bytes())?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no status in `{}`", line.trim())))?;
    let (mut length, mut chunked, mut close) = (None, false, false);
    loop {
        line.clear();
        reader.read_line(&mut line)?;
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        let Some((name, value)) = header.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim().to_ascii_lowercase().as_str() {
            "content-length" => length = value.parse::<u64>().ok(),
            "transfer-encoding" => chunked = value.eq_ignore_ascii_case("chunked"),
            "connection" => close = value.eq_ignore_ascii_case("close"),
            _ => {}
        }
    }
    if chunked {
        loop {
            line.clear();
            reader.read_line(&mut line)?;
            let size = u64::from_str_radix(line.trim().split(';').next().unwrap_or(""), 16)
                .map_err(|_| std::io::Error::other("a broken chunk size"))?;
            std::io::copy(&mut (&mut reader).take(size), &mut std::io::sink())?;
            line.clear();
            reader.read_line(&mut line)?;
            if size == 0 {
                break;
            }
        }
    } else if let Some(length) = length {
        std::io::copy(&mut (&mut reader).take(length), &mut std::io::sink())?;
    } else {
        // Read to the close.
        std::io::copy(&mut reader, &mut std::io::sink())?;
        close = true;
    }
    Ok((status, (!close).then_some(reader)))
}

//! `xtask load-gen`: the load bench's generator for calls in one MCP session, which h2load
//! cannot make (each call in a session needs a JSON-RPC id of its own, and h2load posts one
//! body). HTTP/1.1 keep-alive connections, a thread each, each sending its next call as soon as
//! the last is answered, every call with a new id; the answer (JSON, or an event stream) read
//! to its end.
//!
//! ```text
//! xtask load-gen ADDR SESSION CONNECTIONS SECONDS TOOL ARGUMENTS_JSON
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
    let [addr, session, connections, seconds, tool, arguments] = args else {
        return Err(
            "usage: xtask load-gen ADDR SESSION CONNECTIONS SECONDS TOOL ARGUMENTS_JSON".to_owned(),
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
        let seen = thread
            .join()
            .map_err(|_| "a load thread panicked".to_owned())?;
        for (status, count) in seen.statuses {
            *all.statuses.entry(status).or_default() += count;
        }
        all.durations_us.extend(seen.durations_us);
        all.errored += seen.errored;
    }
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
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}
        })
        .to_string();
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
                if started >= measured_from && Instant::now() <= until {
                    *seen.statuses.entry(status).or_default() += 1;
                    seen.durations_us
                        .push(u64::try_from(started.elapsed().as_micros()).unwrap_or(u64::MAX));
                }
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

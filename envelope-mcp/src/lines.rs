//! Newline-delimited JSON-RPC over any byte stream (standard input and output, a pipe, a
//! socket), where every line gets an answer.
//!
//! rmcp's own stdio transport drops a line it cannot parse without a word, and the client then
//! waits forever. Here the lines are framed and parsed before rmcp sees them:
//!
//! - a line longer than the server's maximum request size is skipped without being held in
//!   memory, and answered `-32600` (invalid request), id `null`;
//! - a line that is not JSON (truncated, `NaN`, `1e400`, a lone surrogate, invalid UTF-8, or
//!   nested deeper than serde_json's limit of 128, refused without recursion) is answered
//!   `-32700` (parse error), id `null`;
//! - JSON that is no JSON-RPC message is answered `-32600`, with its `id` when one can be read
//!   (and is at most [`MAX_JSONRPC_ID_BYTES`] long);
//! - a request whose id is longer than [`MAX_JSONRPC_ID_BYTES`] is answered `-32600`, id `null`;
//! - a request reusing the id of one still in flight is answered `-32600` with that id, at once.
//!
//! Everything else goes to rmcp, which answers it as usual (a `tools/call` with bad arguments
//! gets a `validation` envelope).

use std::sync::Arc;

use futures::channel::mpsc;
use futures::{SinkExt, StreamExt};
use rmcp::RoleServer;
use rmcp::model::{GetExtensions, JsonRpcMessage, RequestId};
use rmcp::service::{RxJsonRpcMessage, ServiceExt, TxJsonRpcMessage};
use serde_json::{Value, json};
use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};

use crate::in_flight::{Flight, InFlight, duplicate_answer};
use crate::jsonrpc::{ControlGivenTwice, INVALID_REQUEST, PARSE_ERROR, read_call};
use crate::{EnvelopeServer, McpError};

/// The longest JSON-RPC request id, in bytes of its JSON, a server takes. Every answer echoes
/// the id: a request with a longer one is refused `-32600` (invalid request) with id `null`,
/// so that no answer repeats an unbounded value the client chose.
pub const MAX_JSONRPC_ID_BYTES: usize = 256;

/// How long an answer waits after the last notification written before it, so that a client
/// reading as lines arrive reads the two apart (one busy for longer still reads them together:
/// this narrows the window, it cannot close it).
///
/// A client may handle what one read brings in an order of its own: the official TypeScript
/// SDK handles each notification a microtask after the response read with it, and by then the
/// response has closed its request, so a call's last progress report, written just before the
/// result, was dropped. Only an answer that follows a notification waits, and only for what is
/// left of this gap.
pub(crate) const NOTICE_GAP: std::time::Duration = std::time::Duration::from_millis(2);

/// One line to write: a notification, or anything else (an answer, a request).
struct Outgoing {
    line: Vec<u8>,
    notice: bool,
}

impl Outgoing {
    fn other(line: Vec<u8>) -> Self {
        Outgoing {
            line,
            notice: false,
        }
    }
}

/// Writes each line whole, an answer no sooner than [`NOTICE_GAP`] after the notification
/// before it; returns when `outgoing` ends or `writer` fails.
async fn write_lines<W: AsyncWrite + Unpin>(
    mut writer: W,
    mut outgoing: mpsc::UnboundedReceiver<Outgoing>,
) {
    let mut last_notice: Option<tokio::time::Instant> = None;
    while let Some(Outgoing { mut line, notice }) = outgoing.next().await {
        // No timer when the gap is behind already.
        if !notice
            && let Some(gap_over) = last_notice.take().map(|written| written + NOTICE_GAP)
            && tokio::time::Instant::now() < gap_over
        {
            tokio::time::sleep_until(gap_over).await;
        }
        line.push(b'\n');
        if writer.write_all(&line).await.is_err() || writer.flush().await.is_err() {
            break;
        }
        // Counted from when the notification is out, however long writing it took.
        if notice {
            last_notice = Some(tokio::time::Instant::now());
        }
    }
}

/// Why the outgoing side stopped.
#[derive(Debug, thiserror::Error)]
#[error("the outgoing message queue is closed")]
struct Closed;

/// One line read, or why not.
enum Line {
    Text(Vec<u8>),
    TooLong,
    End,
}

/// Reads the next line of at most `max` bytes; a longer one is consumed and dropped as it
/// streams by, never held whole.
async fn next_line<R: AsyncBufRead + Unpin>(reader: &mut R, max: usize) -> std::io::Result<Line> {
    let mut line = Vec::new();
    let mut too_long = false;
    loop {
        let buffer = reader.fill_buf().await?;
        if buffer.is_empty() {
            return Ok(match (line.is_empty() && !too_long, too_long) {
                (true, _) => Line::End,
                (false, true) => Line::TooLong,
                (false, false) => Line::Text(line),
            });
        }
        let (chunk, done) = match buffer.iter().position(|byte| *byte == b'\n') {
            Some(end) => (&buffer[..end], Some(end + 1)),
            None => (buffer, None),
        };
        if !too_long {
            if line.len() + chunk.len() > max {
                too_long = true;
                line = Vec::new();
            } else {
                line.extend_from_slice(chunk);
            }
        }
        let used = done.unwrap_or(buffer.len());
        reader.consume(used);
        if done.is_some() {
            return Ok(if too_long {
                Line::TooLong
            } else {
                Line::Text(line)
            });
        }
    }
}

/// The JSON-RPC error answer for `id` (`null` when unknown).
fn error_line(id: Value, code: i64, message: &str) -> Vec<u8> {
    let answer = json!({
        "jsonrpc": "2.0",
        "id": id,
        // wire: JSON-RPC's error member, not an envelope's
        "error": { "code": code, "message": message },
    });
    // A `Value` always serializes.
    serde_json::to_vec(&answer).unwrap_or_default()
}

/// Whether `id` is short enough to echo ([`MAX_JSONRPC_ID_BYTES`]).
fn echoable(id: &Value) -> bool {
    serde_json::to_vec(id).is_ok_and(|json| json.len() <= MAX_JSONRPC_ID_BYTES)
}

/// What to do with one line: hand a message to rmcp, or answer it here.
pub(crate) fn judge(line: &[u8], max: usize) -> Result<RxJsonRpcMessage<RoleServer>, Vec<u8>> {
    let read = read_call(line).map_or_else(
        || serde_json::from_slice::<RxJsonRpcMessage<RoleServer>>(line),
        Ok,
    );
    match read {
        Ok(JsonRpcMessage::Request(request))
            if !serde_json::to_value(&request.id).is_ok_and(|id| echoable(&id)) =>
        {
            Err(error_line(
                Value::Null,
                INVALID_REQUEST,
                &format!(
                    "invalid request: the id is longer than {MAX_JSONRPC_ID_BYTES} bytes of JSON"
                ),
            ))
        }
        Ok(mut message) => {
            // A control named twice is seen in the text only: noted for the server to refuse.
            if let JsonRpcMessage::Request(request) = &mut message
                && let Some(twice) = ControlGivenTwice::of(&request.request, line)
            {
                request.request.extensions_mut().insert(twice);
            }
            Ok(message)
        }
        Err(_) => Err(match serde_json::from_slice::<Value>(line) {
            Err(error) => error_line(Value::Null, PARSE_ERROR, &format!("parse error: {error}")),
            Ok(value) => {
                // An id a client could match, if the message is a request (it has a `method`)
                // with a usable one: a malformed *answer* carries the id of one of the server's
                // own requests, which the client must not take for one of its own.
                let id = match (value.get("id"), value.get("method")) {
                    (Some(id @ (Value::String(_) | Value::Number(_))), Some(_)) if echoable(id) => {
                        id.clone()
                    }
                    _ => Value::Null,
                };
                error_line(
                    id,
                    INVALID_REQUEST,
                    &format!(
                        "invalid request: not a JSON-RPC message this server reads (at most {max} bytes)"
                    ),
                )
            }
        }),
    }
}

/// Registers an incoming request's id for as long as its handler runs (see
/// [`crate::in_flight`]). `Err` with the answer when the id is already in flight.
fn arrive(
    in_flight: &Arc<InFlight<RequestId>>,
    message: &mut RxJsonRpcMessage<RoleServer>,
) -> Result<(), Vec<u8>> {
    let JsonRpcMessage::Request(request) = message else {
        return Ok(());
    };
    let Some(flight) = Flight::begin(in_flight, request.id.clone()) else {
        let id = serde_json::to_value(&request.id).unwrap_or(Value::Null);
        return Err(serde_json::to_vec(&duplicate_answer(&id)).unwrap_or_default());
    };
    request.request.extensions_mut().insert(Arc::new(flight));
    Ok(())
}

impl EnvelopeServer {
    /// Serves newline-delimited JSON-RPC read from `reader` and written to `writer` until
    /// `reader` ends. Every line gets an answer: what rmcp cannot read is answered here with
    /// the JSON-RPC error the spec prescribes, and a line over the maximum request size
    /// ([`EnvelopeConfig::with_max_request_bytes`](crate::EnvelopeConfig::with_max_request_bytes))
    /// is refused without being read into memory.
    pub async fn serve_lines<R, W>(self, reader: R, writer: W) -> Result<(), McpError>
    where
        R: AsyncRead + Unpin + Send + 'static,
        W: AsyncWrite + Unpin + Send + 'static,
    {
        let max = self.max_request_bytes();
        // One writer owns the output, so rmcp's answers and ours never interleave mid-line.
        let (out, outgoing) = mpsc::unbounded::<Outgoing>();
        let writing = tokio::spawn(write_lines(writer, outgoing));
        let (incoming, messages) = mpsc::unbounded::<RxJsonRpcMessage<RoleServer>>();
        let replies = out.clone();
        let in_flight = Arc::new(InFlight::<RequestId>::default());
        let reading = tokio::spawn(async move {
            let mut reader = BufReader::new(reader);
            loop {
                let line = match next_line(&mut reader, max).await {
                    Ok(Line::End) | Err(_) => break,
                    Ok(Line::TooLong) => {
                        let message = format!("invalid request: larger than {max} bytes");
                        error_line(Value::Null, INVALID_REQUEST, &message)
                    }
                    Ok(Line::Text(text)) if text.iter().all(u8::is_ascii_whitespace) => continue,
                    Ok(Line::Text(text)) => match judge(&text, max)
                        .and_then(|mut message| arrive(&in_flight, &mut message).map(|()| message))
                    {
                        Ok(message) => {
                            if incoming.unbounded_send(message).is_err() {
                                break;
                            }
                            continue;
                        }
                        Err(answer) => answer,
                    },
                };
                if replies.unbounded_send(Outgoing::other(line)).is_err() {
                    break;
                }
            }
            // Dropping `incoming` ends rmcp's stream: the session closes.
        });
        let sink =
            out.sink_map_err(|_| Closed)
                .with(|message: TxJsonRpcMessage<RoleServer>| async move {
                    Ok::<_, Closed>(Outgoing {
                        notice: matches!(message, JsonRpcMessage::Notification(_)),
                        line: serde_json::to_vec(&message).unwrap_or_default(),
                    })
                });
        let running = self
            .for_session()
            .serve((Box::pin(sink), messages))
            .await
            .map_err(|error| McpError::Session(error.to_string()))?;
        let waited = running
            .waiting()
            .await
            .map_err(|error| McpError::Session(error.to_string()));
        reading.abort();
        let _ = writing.await;
        waited.map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn lines(input: &[u8], max: usize) -> Vec<&'static str> {
        let mut reader = BufReader::with_capacity(7, input);
        let mut found = Vec::new();
        loop {
            match next_line(&mut reader, max).await.expect("reads") {
                Line::End => return found,
                Line::TooLong => found.push("too long"),
                Line::Text(text) => {
                    found.push(String::from_utf8(text).expect("utf-8").leak() as &'static str)
                }
            }
        }
    }

    #[tokio::test]
    async fn lines_are_framed_and_long_ones_skipped() {
        assert_eq!(
            lines(b"short\n0123456789abcdef\nok\nlast", 8).await,
            ["short", "too long", "ok", "last"]
        );
        assert_eq!(lines(b"", 8).await, Vec::<&str>::new());
        assert_eq!(lines(b"0123456789", 8).await, ["too long"]);
    }

    #[tokio::test]
    async fn an_answer_after_a_notification_reaches_the_client_in_a_read_of_its_own() {
        use tokio::io::AsyncReadExt as _;
        let (writer, mut client) = tokio::io::duplex(1 << 16);
        let (out, outgoing) = mpsc::unbounded::<Outgoing>();
        let writing = tokio::spawn(write_lines(writer, outgoing));
        let notice = |line: &str| Outgoing {
            line: line.as_bytes().to_vec(),
            notice: true,
        };
        let answer = |line: &str| Outgoing::other(line.as_bytes().to_vec());
        for line in [notice("progress 1"), notice("progress 2"), answer("result")] {
            out.unbounded_send(line).expect("the writer is running");
        }
        drop(out);
        let mut reads = Vec::new();
        let mut buffer = [0; 256];
        loop {
            let read = client.read(&mut buffer).await.expect("reads");
            if read == 0 {
                break;
            }
            reads.push(String::from_utf8_lossy(&buffer[..read]).into_owned());
        }
        writing.await.expect("the writer ends");
        // The notifications may come together; the answer never with them.
        assert_eq!(
            reads.last().map(String::as_str),
            Some("result\n"),
            "{reads:?}"
        );
        assert_eq!(reads.concat(), "progress 1\nprogress 2\nresult\n");
    }

    #[test]
    fn what_rmcp_cannot_read_is_judged_here() {
        let answer = |line: &[u8]| -> Value {
            let Err(bytes) = judge(line, 100) else {
                panic!("{} was handed to rmcp", String::from_utf8_lossy(line));
            };
            serde_json::from_slice(&bytes).expect("an answer is JSON")
        };
        for line in [
            &b"not json"[..],
            b"{\"jsonrpc\":\"2.0\",\"id\":1,",
            b"{\"id\": NaN}",
            b"{\"x\": 1e400}",
            b"\"\\ud800\"",
            b"\xff\xfe",
        ] {
            let answer = answer(line);
            assert_eq!(answer["error"]["code"], PARSE_ERROR, "{answer}");
            assert_eq!(answer["id"], Value::Null);
        }
        let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
        assert_eq!(answer(deep.as_bytes())["error"]["code"], PARSE_ERROR);
        let request = answer(br#"{"jsonrpc":"2.0","id":7,"method":42}"#);
        assert_eq!(request["error"]["code"], INVALID_REQUEST);
        assert_eq!(request["id"], 7);
        // A malformed answer's id is one of the server's own: not echoed.
        let reply = answer(br#"{"jsonrpc":"2.0","id":7,"result":1,"error":2}"#);
        assert_eq!(reply["error"]["code"], INVALID_REQUEST);
        assert_eq!(reply["id"], Value::Null);
    }

    #[test]
    fn a_long_id_is_never_echoed() {
        let answer = |line: &str| -> Value {
            let Err(bytes) = judge(line.as_bytes(), usize::MAX) else {
                panic!("{line} was handed to rmcp");
            };
            serde_json::from_slice(&bytes).expect("an answer is JSON")
        };
        let long = "x".repeat(MAX_JSONRPC_ID_BYTES);
        let ping = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":"ping"}}"#);
        let refused = answer(&ping);
        assert_eq!(refused["error"]["code"], INVALID_REQUEST);
        assert_eq!(refused["id"], Value::Null);
        // Nor in the answer to a message that is no request.
        let broken = format!(r#"{{"jsonrpc":"2.0","id":"{long}","method":42}}"#);
        assert_eq!(answer(&broken)["id"], Value::Null);
        // An id within the limit goes through.
        let short = "x".repeat(MAX_JSONRPC_ID_BYTES - 2);
        let ping = format!(r#"{{"jsonrpc":"2.0","id":"{short}","method":"ping"}}"#);
        assert!(judge(ping.as_bytes(), usize::MAX).is_ok());
    }
}

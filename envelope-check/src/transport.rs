//! The checker's own line framing for a server on standard input and output, bounded, and
//! telling the call in progress when the server sends something no client can read.
//!
//! rmcp's client transport drops a line it cannot read (too long, not JSON, invalid UTF-8,
//! nested past serde_json's depth limit) with a log message, and the call it answered then
//! waits out its timeout, reported as "no answer". Here each such line is consumed without
//! being held past the limit and recorded in a [`Faults`] log, which the run watches: the
//! call it happened during fails `call.answered` at once, saying what the server sent.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use futures::SinkExt as _;
use futures::channel::mpsc;
use rmcp::RoleClient;
use rmcp::model::{
    CallToolResult, ClientRequest, JsonRpcMessage, JsonRpcResponse, RequestId, ServerResult,
};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use serde::Deserialize;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt as _, AsyncWrite, AsyncWriteExt as _};
use tokio::sync::Notify;
use tokio_util::codec::{Decoder as _, LinesCodec, LinesCodecError};

/// The longest line (one JSON-RPC message) the checker reads unless configured otherwise:
/// 16 MiB, rmcp's own limit on stdio and on an HTTP event. A longer answer is a finding: no
/// agent reads it either.
pub const DEFAULT_MAX_ANSWER_BYTES: usize = 16 << 20;

/// How much of the server's output is read at a time.
const READ_CHUNK: usize = 64 << 10;

/// The most faults kept unread: a server spraying garbage cannot grow the log.
const KEPT_FAULTS: usize = 64;

/// The most `tools/call` requests remembered unanswered; past it, answers are read the slow
/// way (see [`Calls`]).
const KEPT_CALLS: usize = 1024;

/// The ids of the `tools/call` requests sent and not yet answered, so that their answers are
/// read straight as `CallToolResult`.
///
/// rmcp reads any answer by trying each kind of result in turn (an untagged union of twenty),
/// building an error for every kind it is not; an answer to a call is the one read most, and
/// its kind is known from its id. A call never answered (cancelled, timed out) stays until the
/// set is full, then the set starts over: a forgotten id only costs its answer the slow way.
#[derive(Debug, Default)]
struct Calls(Mutex<HashSet<RequestId>>);

impl Calls {
    fn sent(&self, message: &TxJsonRpcMessage<RoleClient>) {
        if let JsonRpcMessage::Request(request) = message
            && matches!(request.request, ClientRequest::CallToolRequest(_))
        {
            let mut calls = self
                .0
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if calls.len() >= KEPT_CALLS {
                calls.clear();
            }
            calls.insert(request.id.clone());
        }
    }

    fn answered(&self, id: &RequestId) -> bool {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .remove(id)
    }
}

/// The members of a message that say what kind it is, read without building anything else.
#[derive(Deserialize)]
struct Shape {
    id: Option<RequestId>,
    #[serde(default, deserialize_with = "present")]
    method: bool,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

/// Whether a member is there at all, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(member: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(member).map(|_| true)
}

/// `line` read as the answer to a `tools/call` in `calls`, straight to its type; `None` for
/// anything else, which rmcp's own reading takes. An answer that is no `CallToolResult` (an
/// error, a result of another kind) is left to rmcp too, which reads it as it always did.
fn call_answer(line: &str, calls: &Calls) -> Option<RxJsonRpcMessage<RoleClient>> {
    let shape: Shape = serde_json::from_str(line).ok()?;
    let id = shape
        .id
        .filter(|_| shape.result && !shape.method && !shape.error)?;
    if !calls.answered(&id) {
        return None;
    }
    let answer: JsonRpcResponse<CallToolResult> = serde_json::from_str(line).ok()?;
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: answer.jsonrpc,
        id: answer.id,
        result: ServerResult::CallToolResult(answer.result),
    }))
}

/// What the server sent that no client can read, in order, until the run reads it.
#[derive(Debug, Default)]
pub struct Faults {
    kept: Mutex<VecDeque<String>>,
    arrived: Notify,
}

impl Faults {
    fn record(&self, fault: String) {
        let mut kept = self
            .kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if kept.len() < KEPT_FAULTS {
            kept.push_back(fault);
        }
        drop(kept);
        self.arrived.notify_one();
    }

    /// Forgets what was recorded: the next call starts clean.
    pub(crate) fn clear(&self) {
        self.kept
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clear();
    }

    /// The next fault, when one is recorded.
    pub async fn next(&self) -> String {
        loop {
            let notified = self.arrived.notified();
            if let Some(fault) = self
                .kept
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .pop_front()
            {
                return fault;
            }
            notified.await;
        }
    }
}

/// Why sending to the server failed.
#[derive(Debug, thiserror::Error)]
pub enum SendError {
    /// The server's input is closed.
    #[error("the server's input is closed")]
    Closed,
    /// A message that did not serialize (never for rmcp's own types).
    #[error("a message did not serialize: {0}")]
    Serialize(#[from] serde_json::Error),
}

/// A client transport over `read` (the server's output) and `write` (its input): lines of at
/// most `max_line` bytes, and the [`Faults`] log of what could not be read. Hand the pair to
/// rmcp's `serve`, and the log to [`run_watching`](super::run_watching).
pub fn stdio_transport<R, W>(
    read: R,
    write: W,
    max_line: usize,
) -> (
    (
        impl futures::Sink<TxJsonRpcMessage<RoleClient>, Error = SendError> + Send + Unpin + 'static,
        impl futures::Stream<Item = RxJsonRpcMessage<RoleClient>> + Send + Unpin + 'static,
    ),
    Arc<Faults>,
)
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    let faults = Arc::<Faults>::default();
    let calls = Arc::<Calls>::default();
    let (incoming, received) = mpsc::channel::<RxJsonRpcMessage<RoleClient>>(16);
    tokio::spawn(read_lines(
        read,
        max_line,
        incoming,
        Arc::clone(&faults),
        Arc::clone(&calls),
    ));
    let sink = futures::sink::unfold(
        (write, calls),
        |(mut write, calls), message: TxJsonRpcMessage<RoleClient>| async move {
            calls.sent(&message);
            let mut line = serde_json::to_vec(&message)?;
            line.push(b'\n');
            write
                .write_all(&line)
                .await
                .map_err(|_| SendError::Closed)?;
            write.flush().await.map_err(|_| SendError::Closed)?;
            Ok::<_, SendError>((write, calls))
        },
    );
    ((Box::pin(sink), received), faults)
}

/// Reads the server's lines until it closes its output or the client goes away, with
/// tokio-util's `LinesCodec`: a line is held up to `max_line` bytes, and one that passes it is
/// told the moment it does (its end may be far off, or never come), then dropped as it streams
/// by.
async fn read_lines<R: AsyncRead + Unpin>(
    mut read: R,
    max_line: usize,
    mut incoming: mpsc::Sender<RxJsonRpcMessage<RoleClient>>,
    faults: Arc<Faults>,
    calls: Arc<Calls>,
) {
    let mut codec = LinesCodec::new_with_max_length(max_line);
    let mut buffer = BytesMut::with_capacity(READ_CHUNK);
    let mut ended = false;
    loop {
        let decoded = if ended {
            codec.decode_eof(&mut buffer)
        } else {
            codec.decode(&mut buffer)
        };
        let line = match decoded {
            Ok(Some(line)) => line,
            Ok(None) if ended => return,
            Ok(None) => {
                buffer.reserve(READ_CHUNK);
                match read.read_buf(&mut buffer).await {
                    Ok(0) => ended = true,
                    Ok(_) => {}
                    Err(error) => {
                        faults.record(format!("the server's output could not be read: {error}"));
                        return;
                    }
                }
                continue;
            }
            Err(LinesCodecError::MaxLineLengthExceeded) => {
                faults.record(format!(
                    "the server sent a message longer than {max_line} bytes, the most a client \
                     reads"
                ));
                continue;
            }
            // The codec has consumed the line: what is left of the output is read on.
            Err(LinesCodecError::Io(_)) => {
                faults.record("the server sent a line that is not UTF-8".to_owned());
                continue;
            }
        };
        if line.trim().is_empty() {
            continue;
        }
        match read_message(&line, &calls) {
            Ok(Some(message)) => {
                if incoming.send(message).await.is_err() {
                    return;
                }
            }
            Ok(None) => {}
            Err(fault) => faults.record(fault),
        }
    }
}

/// One line (UTF-8: the codec refused any other) as a message; `None` for a notification of a
/// method the client does not know (rmcp ignores those too); `Err` with what is wrong with
/// anything else.
fn read_message(line: &str, calls: &Calls) -> Result<Option<RxJsonRpcMessage<RoleClient>>, String> {
    if let Some(answer) = call_answer(line, calls) {
        return Ok(Some(answer));
    }
    let error = match serde_json::from_str::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(message) => return Ok(Some(message)),
        Err(error) => error,
    };
    match serde_json::from_str::<Value>(line) {
        Err(error) => Err(format!("the server sent a line that is not JSON: {error}")),
        Ok(value) if value.get("method").is_some() && value.get("id").is_none() => Ok(None),
        Ok(_) => Err(format!(
            "the server sent JSON that is no JSON-RPC message: {error}"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unreadable_lines_say_why() {
        let calls = Calls::default();
        let fault = |line: &str| read_message(line, &calls).err().unwrap_or_default();
        assert!(fault(&"[".repeat(200)).contains("not JSON"));
        assert!(fault(r#"{"jsonrpc":"2.0","id":1}"#).contains("no JSON-RPC message"));
        let unknown = r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#;
        assert!(
            read_message(unknown, &calls).is_ok(),
            "a notification it does not know is no fault"
        );
    }

    /// What rmcp's own reading makes of `line`, as JSON.
    fn as_rmcp_reads(line: &str) -> Value {
        let message: RxJsonRpcMessage<RoleClient> = serde_json::from_str(line).expect("reads");
        serde_json::to_value(message).expect("writes")
    }

    #[test]
    fn an_answer_to_a_call_reads_straight_as_rmcp_reads_it() {
        let calls = Calls::default();
        let call = |id: u32| {
            let line = format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"echo"}}}}"#
            );
            calls.sent(&serde_json::from_str(&line).expect("a call"));
        };
        let answers = [
            r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}"#,
            r#"{"result":{"structuredContent":{"a":[1,2]},"isError":true,"content":[]},"id":2,"jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":3,"result":{"resultType":"complete","content":[],"_meta":{"k":1}}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{"structuredContent":null}}"#,
        ];
        for (id, line) in (1..).zip(answers) {
            call(id);
            let read = call_answer(line, &calls).expect("an answer to a call is read straight");
            assert_eq!(
                serde_json::to_value(read).expect("writes"),
                as_rmcp_reads(line)
            );
            assert!(
                call_answer(line, &calls).is_none(),
                "an id is answered once: a second answer is rmcp's to judge"
            );
        }
        // What is no `CallToolResult`, or answers no call sent, is rmcp's to read.
        for (id, line) in [
            (
                5,
                r#"{"jsonrpc":"2.0","id":5,"result":{"resultType":"input_required","inputRequests":{}}}"#,
            ),
            (
                6,
                r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32602,"message":"unknown tool"}}"#,
            ),
            (7, r#"{"jsonrpc":"2.0","id":7,"result":{"tools":[]}}"#),
            (0, r#"{"jsonrpc":"2.0","id":8,"result":{"content":[]}}"#),
        ] {
            if id > 0 {
                call(id);
            }
            assert!(call_answer(line, &calls).is_none(), "{line}");
        }
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_a_fault_and_the_next_line_is_read() {
        let output: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}\n[[[\n";
        let (incoming, _received) = mpsc::channel(4);
        let faults = Arc::<Faults>::default();
        read_lines(
            output,
            1 << 20,
            incoming,
            Arc::clone(&faults),
            Arc::default(),
        )
        .await;
        assert!(faults.next().await.contains("not UTF-8"));
        assert!(faults.next().await.contains("not JSON"));
    }
}

//! The checker's own line framing for a server on standard input and output, bounded, and
//! telling the call in progress when the server sends something no client can read.
//!
//! rmcp's client transport drops a line it cannot read (too long, not JSON, invalid UTF-8,
//! nested past serde_json's depth limit) with a log message, and the call it answered then
//! waits out its timeout, reported as "no answer". Here each such line is consumed without
//! being held past the limit and recorded in a [`Faults`] log, which the run watches: the
//! call it happened during fails `call.answered` at once, saying what the server sent.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use bytes::BytesMut;
use futures::SinkExt as _;
use futures::channel::mpsc;
use rmcp::RoleClient;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
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
    let (incoming, received) = mpsc::channel::<RxJsonRpcMessage<RoleClient>>(16);
    tokio::spawn(read_lines(read, max_line, incoming, Arc::clone(&faults)));
    let sink = futures::sink::unfold(
        write,
        |mut write, message: TxJsonRpcMessage<RoleClient>| async move {
            let mut line = serde_json::to_vec(&message)?;
            line.push(b'\n');
            write
                .write_all(&line)
                .await
                .map_err(|_| SendError::Closed)?;
            write.flush().await.map_err(|_| SendError::Closed)?;
            Ok::<_, SendError>(write)
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
        match read_message(&line) {
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
fn read_message(line: &str) -> Result<Option<RxJsonRpcMessage<RoleClient>>, String> {
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
        let fault = |line: &str| read_message(line).err().unwrap_or_default();
        assert!(fault(&"[".repeat(200)).contains("not JSON"));
        assert!(fault(r#"{"jsonrpc":"2.0","id":1}"#).contains("no JSON-RPC message"));
        let unknown = r#"{"jsonrpc":"2.0","method":"notifications/whatever","params":{}}"#;
        assert!(
            read_message(unknown).is_ok(),
            "a notification it does not know is no fault"
        );
    }

    #[tokio::test]
    async fn a_line_that_is_not_utf8_is_a_fault_and_the_next_line_is_read() {
        let output: &[u8] = b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"\xff\"}\n[[[\n";
        let (incoming, _received) = mpsc::channel(4);
        let faults = Arc::<Faults>::default();
        read_lines(output, 1 << 20, incoming, Arc::clone(&faults)).await;
        assert!(faults.next().await.contains("not UTF-8"));
        assert!(faults.next().await.contains("not JSON"));
    }
}

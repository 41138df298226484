//! Helpers shared by the integration tests: a tiny executor and a log capture.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::future::Future;
use std::io::Write;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use envelope_core::{Envelope, Tool, ToolContext};
use serde_json::Value;

/// Polls a future to completion on this thread. The tools under test never wait on I/O, so a
/// no-op waker and a busy loop are enough.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(output) = future.as_mut().poll(&mut cx) {
            return output;
        }
    }
}

/// Calls a tool the way a transport would and returns the envelope as the agent reads it.
pub(crate) fn call(tool: &dyn Tool, arguments: Value) -> Value {
    call_with(tool, arguments, ToolContext::new())
}

/// Calls with a given context. The payload is encoded as a transport without a budget encodes
/// it: whole, under the runtime's panic capture.
pub(crate) fn call_with(tool: &dyn Tool, arguments: Value, ctx: ToolContext) -> Value {
    let output = block_on(tool.call(arguments, ctx));
    let (output, ()) = output.encode_payload(|payload| Ok((serde_json::to_value(payload)?, ())));
    let envelope: Envelope<Value> = output.envelope;
    serde_json::to_value(&envelope).expect("envelopes serialize")
}

/// A future that is pending once, so the body's next part runs in a later poll.
pub(crate) struct YieldOnce(bool);

impl YieldOnce {
    pub(crate) fn new() -> Self {
        YieldOnce(false)
    }
}

impl Future for YieldOnce {
    type Output = ();

    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Everything `tracing` logged while `body` ran on this thread.
pub(crate) fn capture_log<R>(body: impl FnOnce() -> R) -> (R, String) {
    let buffer = Arc::new(Mutex::new(Vec::new()));
    let writer = SharedWriter(buffer.clone());
    let subscriber = tracing_subscriber::fmt()
        .with_writer(move || writer.clone())
        .with_ansi(false)
        .finish();
    let result = tracing::subscriber::with_default(subscriber, body);
    let log = String::from_utf8(buffer.lock().expect("no poisoning").clone()).expect("utf-8 log");
    (result, log)
}

#[derive(Clone)]
struct SharedWriter(Arc<Mutex<Vec<u8>>>);

impl Write for SharedWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .expect("no poisoning")
            .extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

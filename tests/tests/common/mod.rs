//! Helpers shared by the integration tests: a tiny executor and a log capture.

#![allow(dead_code)] // Each test binary uses a different subset.

use std::cell::RefCell;
use std::future::Future;
use std::io::Write;
use std::pin::pin;
use std::sync::Once;
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
///
/// One global subscriber writes each thread's events to that thread's capture. A scoped
/// subscriber per test (`with_default`) loses events when tests run in parallel: tracing caches
/// each callsite's interest and its global level hint across every live subscriber, and one
/// test's subscriber dropping while another registers can leave a callsite disabled for both.
pub(crate) fn capture_log<R>(body: impl FnOnce() -> R) -> (R, String) {
    static INSTALLED: Once = Once::new();
    INSTALLED.call_once(|| {
        let subscriber = tracing_subscriber::fmt()
            .with_writer(|| ThreadCapture)
            .with_ansi(false)
            .finish();
        tracing::subscriber::set_global_default(subscriber).expect("only this sets a subscriber");
    });
    CAPTURE.with_borrow_mut(|capture| *capture = Some(Vec::new()));
    let result = body();
    let bytes = CAPTURE.with_borrow_mut(Option::take).unwrap_or_default();
    let log = String::from_utf8(bytes).expect("utf-8 log");
    (result, log)
}

thread_local! {
    /// What this thread logged since its `capture_log` began; `None` outside one.
    static CAPTURE: RefCell<Option<Vec<u8>>> = const { RefCell::new(None) };
}

/// Writes into the current thread's capture, and nowhere outside one.
struct ThreadCapture;

impl Write for ThreadCapture {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        CAPTURE.with_borrow_mut(|capture| {
            if let Some(capture) = capture {
                capture.extend_from_slice(bytes);
            }
        });
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

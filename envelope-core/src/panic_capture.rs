//! Panic capture: a panic in a tool body (or in work it hands to another thread) is caught,
//! masked on the wire and logged once with its location and backtrace.

use std::any::Any;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::Once;
use std::task::Poll;

use crate::request_id::RequestId;
use crate::tool_error::ToolError;

thread_local! {
    /// Set while a tool's body runs on this thread, so the hook knows whose panic it sees.
    static IN_TOOL: Cell<bool> = const { Cell::new(false) };
    /// Where the last in-tool panic on this thread happened, and its backtrace.
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the library's panic hook once per process. Inside a tool body it records the
/// location and backtrace for the server log (which gets the panic instead of stderr); anywhere
/// else it hands the panic to the hook that was installed before it.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_TOOL.with(Cell::get) {
                let location = info
                    .location()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "unknown location".to_owned());
                // Only when asked for (`RUST_BACKTRACE` or `RUST_LIB_BACKTRACE`): symbolizing
                // loads the binary's debug info, about 100 MiB resident for a debug build from
                // the first panic on, and costs CPU on every one. The location is always kept.
                let backtrace = Backtrace::capture();
                let backtrace = match backtrace.status() {
                    BacktraceStatus::Captured => backtrace.to_string(),
                    _ => "disabled; set RUST_BACKTRACE=1".to_owned(),
                };
                LAST_PANIC.with(|slot| *slot.borrow_mut() = Some((location, backtrace)));
            } else {
                previous(info);
            }
        }));
    });
}

/// Marks this thread as running a tool body until dropped.
struct InTool(bool);

impl InTool {
    fn enter() -> Self {
        InTool(IN_TOOL.with(|flag| flag.replace(true)))
    }
}

impl Drop for InTool {
    fn drop(&mut self) {
        IN_TOOL.with(|flag| flag.set(self.0));
    }
}

/// A panic caught in a tool body.
#[derive(Debug)]
pub struct Panicked {
    pub(crate) message: String,
    location: String,
    backtrace: String,
}

impl Panicked {
    /// Logs the panic, once, for the call of `tool` named `request_id`: the envelope masks it.
    pub(crate) fn log(&self, tool: &str, request_id: &RequestId) {
        tracing::error!(
            tool,
            request_id = %request_id,
            pid = std::process::id(),
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
            message = %self.message,
            location = %self.location,
            backtrace = %self.backtrace,
            "tool panicked"
        );
    }

    fn from_payload(payload: Box<dyn Any + Send>) -> Self {
        // Caught on another thread by `catch_panic` and re-raised here: it knows where it was.
        let payload = match payload.downcast::<Panicked>() {
            Ok(panicked) => return *panicked,
            Err(payload) => payload,
        };
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            (*text).to_owned()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "panic with a non-string payload".to_owned()
        };
        let (location, backtrace) = LAST_PANIC
            .with(|slot| slot.borrow_mut().take())
            .unwrap_or_else(|| ("unknown location".to_owned(), "unavailable".to_owned()));
        Panicked {
            message,
            location,
            backtrace,
        }
    }
}

/// Runs work a tool hands to another thread (tokio's blocking pool, a thread of its own),
/// catching a panic there with its location and backtrace, as the tool's own body would.
///
/// Re-raise the payload in the tool with [`std::panic::resume_unwind`]: the `#[tool]` wrapper
/// then masks and logs it once, naming where it happened rather than an unknown location.
///
/// ```
/// let worker = std::thread::spawn(|| {
///     envelope_core::stage::catch_panic(|| -> u32 { panic!("on the worker") })
/// });
/// let caught = worker.join().expect("the worker itself does not panic");
/// assert!(caught.is_err());
/// // In a tool: `caught.unwrap_or_else(|payload| std::panic::resume_unwind(payload))`.
/// ```
pub fn catch_panic<R>(work: impl FnOnce() -> R) -> Result<R, Box<dyn Any + Send>> {
    install_panic_hook();
    catch_unwind_sync(work).map_err(|panicked| Box::new(panicked) as Box<dyn Any + Send>)
}

/// Runs a sync tool body, catching a panic.
pub fn catch_unwind_sync<R>(body: impl FnOnce() -> R) -> Result<R, Panicked> {
    let _in_tool = InTool::enter();
    panic::catch_unwind(AssertUnwindSafe(body)).map_err(Panicked::from_payload)
}

/// Runs a sync tool body on tokio's blocking pool (`#[tool(blocking)]`), catching a panic
/// there with its location. Outside a tokio runtime the body runs in place.
#[cfg(feature = "blocking")]
pub async fn catch_unwind_blocking<R, F>(body: F) -> Result<R, Panicked>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    install_panic_hook();
    if tokio::runtime::Handle::try_current().is_err() {
        return catch_unwind_sync(body);
    }
    match tokio::task::spawn_blocking(move || catch_unwind_sync(body)).await {
        Ok(outcome) => outcome,
        // Only a runtime shutting down cancels a blocking task; the panic case is caught inside.
        Err(error) => Err(Panicked {
            message: format!("the blocking task did not finish: {error}"),
            location: "the blocking pool".to_owned(),
            backtrace: String::new(),
        }),
    }
}

/// Stands in for the `blocking` feature when it is off, so `#[tool(blocking)]` says what to do.
#[cfg(not(feature = "blocking"))]
#[diagnostic::on_unimplemented(
    message = "`#[tool(blocking)]` needs envelope-core's `blocking` feature",
    label = "this tool's body would run on tokio's blocking pool",
    note = "enable the feature (it is on by default): `envelope-core = {{ version = \"0.1\", \
            features = [\"blocking\"] }}`, or drop `blocking`"
)]
pub trait BlockingFeature {}

/// Without the `blocking` feature, `#[tool(blocking)]` does not compile: see [`BlockingFeature`].
#[cfg(not(feature = "blocking"))]
pub async fn catch_unwind_blocking<R, F>(body: F) -> Result<R, Panicked>
where
    F: FnOnce() -> R + BlockingFeature,
{
    catch_unwind_sync(body)
}

/// Runs an async tool body, catching a panic in any poll, the first included.
pub async fn catch_unwind<F: Future>(future: F) -> Result<F::Output, Panicked> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        let _in_tool = InTool::enter();
        match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Panicked::from_payload(payload))),
        }
    })
    .await
}

/// Logs an internal error a tool answered with, once: the envelope masks its detail.
pub(crate) fn log_internal(tool: &str, request_id: &RequestId, error: &ToolError) {
    if let Some(detail) = error.detail() {
        tracing::error!(
            tool,
            request_id = %request_id,
            pid = std::process::id(),
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
            message = %detail,
            backtrace = %error.backtrace().unwrap_or("disabled; set RUST_BACKTRACE=1"),
            "tool failed with an internal error"
        );
    }
}

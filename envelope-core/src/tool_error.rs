//! The error half of the envelope: a category an agent can branch on, a retryable
//! flag it can trust, and, for `internal`, nothing that leaks the server's internals.

use std::fmt;
use std::io;
use std::time::Duration;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::CoreError;
use crate::request_id::RequestId;

/// Code of an argument refused for its value: a token changed on its way back (quoted, cut
/// short, padded) or passed under the wrong argument, a value of the wrong shape, a dialect that
/// does not exist or cannot express a control; `data.field` names the argument.
pub const INVALID_ARGUMENT: &str = crate::fields::code::INVALID_ARGUMENT;

/// The message every `internal` error carries before the library stamps a request id on it.
pub const INTERNAL_MESSAGE: &str = "internal error";

crate::wire::vocabulary! {
    /// When a tool should use this category.
    fn when;
    /// What kind of failure this is, so an agent can pick retry, fix or escalate without prose.
    ///
    /// Wire names are the snake-case strings of [`Category::as_str`].
    #[derive(Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Category {
        /// `transient`: timeouts, dropped connections, a flaky downstream.
        Transient = "transient": "Timeouts, dropped connections, a flaky downstream.",
        /// `validation`: bad input — wrong type, out of range, missing or unknown field.
        Validation = "validation": "Bad input: wrong type, out of range, missing or unknown field.",
        /// `permission`: the caller lacks rights.
        Permission = "permission": "The caller lacks rights.",
        /// `not_found`: the entity does not exist.
        NotFound = "not_found": "The requested entity does not exist.",
        /// `unavailable`: an optional dependency or backend is missing.
        Unavailable = "unavailable": "An optional dependency or backend is missing.",
        /// `internal`: anything unexpected, panics included. Masked on the wire.
        Internal = "internal": "Anything unexpected, panics included; the message is masked.",
        /// `module_disabled`: the tool's module is switched off. Only the generated gate emits it.
        ModuleDisabled = "module_disabled": "The tool's module is switched off; emitted only by the generated gate.",
    }
}

impl Category {
    /// Whether a retry can help when the error does not say otherwise.
    pub const fn retryable_default(self) -> bool {
        match self {
            Category::Transient | Category::Unavailable => true,
            Category::Validation
            | Category::Permission
            | Category::NotFound
            | Category::Internal
            | Category::ModuleDisabled => false,
        }
    }
}

/// Lets an author's own error type say its category, so `?` turns it into a [`ToolError`].
///
/// ```
/// use envelope_core::{Categorize, Category, ToolError};
///
/// #[derive(Debug, thiserror::Error)]
/// #[error("no ticket {0}")]
/// struct NoTicket(u32);
///
/// impl Categorize for NoTicket {
///     fn category(&self) -> Category {
///         Category::NotFound
///     }
/// }
///
/// let err: ToolError = NoTicket(7).into();
/// assert_eq!(err.category(), Category::NotFound);
/// assert_eq!(err.message(), "no ticket 7");
/// ```
///
/// An `internal` category is masked like any other internal error. `module_disabled` cannot be
/// claimed this way: it reads as `internal`, since only the generated gate may emit it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` has no error category, so `?` cannot turn it into a `ToolError`",
    label = "the envelope needs a category for this error",
    note = "categorize it where it happens: `.validation()?`, `.not_found()?`, `.internal()?` and \
            the like, from `envelope_core::ResultExt`, or `.map_err(ToolError::validation)?`",
    note = "for an error type of your own, implement `envelope_core::Categorize` for it"
)]
pub trait Categorize: std::error::Error {
    /// The category the error belongs to.
    fn category(&self) -> Category;

    /// A stable machine code for the error, if it has one.
    fn code(&self) -> Option<&str> {
        None
    }
}

/// Categorizes a foreign error where it happens, so `?` can pass it on: the error's message
/// becomes the [`ToolError`]'s (for `internal`, the detail kept for the log only).
///
/// ```
/// use envelope_core::{Category, ResultExt, ToolResult};
///
/// fn parse(text: &str) -> ToolResult<i64> {
///     Ok(text.parse::<i64>().validation()?)
/// }
///
/// let error = parse("seven").unwrap_err();
/// assert_eq!(error.category(), Category::Validation);
/// assert_eq!(error.message(), "invalid digit found in string");
/// ```
pub trait ResultExt<T> {
    /// The caller sent something wrong: `validation`, not retryable.
    fn validation(self) -> Result<T, ToolError>;
    /// What was asked for does not exist: `not_found`.
    fn not_found(self) -> Result<T, ToolError>;
    /// The caller may not do this: `permission`.
    fn permission(self) -> Result<T, ToolError>;
    /// A dependency is down or not configured: `unavailable`.
    fn unavailable(self) -> Result<T, ToolError>;
    /// A retry may well succeed: `transient`.
    fn transient(self) -> Result<T, ToolError>;
    /// A bug or an unexpected failure: `internal`, its message masked on the wire.
    fn internal(self) -> Result<T, ToolError>;
}

impl<T, E: fmt::Display> ResultExt<T> for Result<T, E> {
    fn validation(self) -> Result<T, ToolError> {
        self.map_err(|error| ToolError::validation(error.to_string()))
    }

    fn not_found(self) -> Result<T, ToolError> {
        self.map_err(|error| ToolError::not_found(error.to_string()))
    }

    fn permission(self) -> Result<T, ToolError> {
        self.map_err(|error| ToolError::permission(error.to_string()))
    }

    fn unavailable(self) -> Result<T, ToolError> {
        self.map_err(|error| ToolError::unavailable(error.to_string()))
    }

    fn transient(self) -> Result<T, ToolError> {
        self.map_err(|error| ToolError::transient(error.to_string()))
    }

    fn internal(self) -> Result<T, ToolError> {
        self.map_err(ToolError::internal)
    }
}

/// A failed call, as the agent reads it under `error`.
///
/// Wire shape: `{category, code?, message, retryable, hint?, retry_after_ms?, data?}`.
/// Invariants: `module_disabled` is only built by the library; an `internal` error's message is
/// fixed and never carries the original error, which is kept in [`ToolError::detail`] for the
/// server log and is never serialized.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(from = "WireToolError", into = "WireToolError")]
pub struct ToolError {
    category: Category,
    retryable: bool,
    message: String,
    // The rarely-set fields live behind one pointer, so `Result<T, ToolError>` stays small on
    // the happy path.
    extra: Option<Box<Extra>>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Extra {
    code: Option<String>,
    hint: Option<String>,
    retry_after_ms: Option<u64>,
    data: Option<Value>,
    /// The unmasked original of an internal error: for the log, never for the wire.
    detail: Option<String>,
    /// Where an internal error was made, when `RUST_BACKTRACE` asks for it: for the log only.
    backtrace: Option<String>,
    /// Calls that recover from this error: the envelope's `next_actions`, not the error's.
    recovery: Vec<crate::NextAction>,
}

/// The wire form of [`ToolError`]; its field docs are the schema's.
#[derive(Serialize, Deserialize, JsonSchema)]
#[schemars(rename = "ToolError")]
struct WireToolError {
    /// What kind of failure this is.
    category: Category,
    /// Stable machine code, such as `unknown_arg` or `STALE_CONTINUATION`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    code: Option<String>,
    /// Human-readable message; for `internal`, a fixed text naming the request id.
    message: String,
    /// Whether a retry can help.
    retryable: bool,
    /// What to change before calling again.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    hint: Option<String>,
    /// How long to wait before a retry can help.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    retry_after_ms: Option<u64>,
    /// Per-code data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    data: Option<Value>,
}

impl From<WireToolError> for ToolError {
    fn from(wire: WireToolError) -> Self {
        let extra = Extra {
            code: wire.code,
            hint: wire.hint,
            retry_after_ms: wire.retry_after_ms,
            data: wire.data,
            detail: None,
            backtrace: None,
            recovery: Vec::new(),
        };
        ToolError {
            category: wire.category,
            retryable: wire.retryable,
            message: wire.message,
            extra: (extra != Extra::default()).then(|| Box::new(extra)),
        }
    }
}

impl From<ToolError> for WireToolError {
    fn from(error: ToolError) -> Self {
        let extra = error.extra.map(|extra| *extra).unwrap_or_default();
        WireToolError {
            category: error.category,
            code: extra.code,
            message: error.message,
            retryable: error.retryable,
            hint: extra.hint,
            retry_after_ms: extra.retry_after_ms,
            data: extra.data,
        }
    }
}

impl JsonSchema for ToolError {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        WireToolError::schema_name()
    }

    fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
        WireToolError::json_schema(generator)
    }
}

impl ToolError {
    fn with_category(category: Category, message: String) -> Self {
        ToolError {
            category,
            retryable: category.retryable_default(),
            message,
            extra: None,
        }
    }

    fn extra_mut(&mut self) -> &mut Extra {
        self.extra.get_or_insert_with(Box::default)
    }

    fn extra(&self) -> Option<&Extra> {
        self.extra.as_deref()
    }

    /// A timeout, dropped connection or flaky downstream; retryable by default.
    pub fn transient(message: impl Into<String>) -> Self {
        Self::with_category(Category::Transient, message.into())
    }

    /// Bad input; the message is shown to the agent as written.
    pub fn validation(message: impl Into<String>) -> Self {
        Self::with_category(Category::Validation, message.into())
    }

    /// The caller lacks rights.
    pub fn permission(message: impl Into<String>) -> Self {
        Self::with_category(Category::Permission, message.into())
    }

    /// The entity does not exist.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::with_category(Category::NotFound, message.into())
    }

    /// An optional dependency or backend is missing; retryable by default.
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::with_category(Category::Unavailable, message.into())
    }

    /// Something unexpected. The agent sees a fixed message; `detail` goes to the server log only.
    pub fn internal(detail: impl fmt::Display) -> Self {
        let mut error = Self::with_category(Category::Internal, INTERNAL_MESSAGE.to_owned());
        error.extra_mut().detail = Some(detail.to_string());
        let backtrace = std::backtrace::Backtrace::capture();
        if backtrace.status() == std::backtrace::BacktraceStatus::Captured {
            error.extra_mut().backtrace = Some(backtrace.to_string());
        }
        error
    }

    /// Builds the error of a given category; `module_disabled` is refused and becomes `internal`.
    pub fn new(category: Category, message: impl Into<String>) -> Self {
        match category {
            Category::Internal | Category::ModuleDisabled => Self::internal(message.into()),
            _ => Self::with_category(category, message.into()),
        }
    }

    /// The error only the generated module gate emits.
    pub(crate) fn module_disabled(module: &str) -> Self {
        Self::with_category(
            Category::ModuleDisabled,
            format!("module `{module}` is disabled on this server"),
        )
        .with_code(crate::fields::code::MODULE_DISABLED)
        .with_hint(format!(
            "enable module `{module}` in the server's configuration, or use another tool"
        ))
        .with_data(serde_json::json!({ "module": module }))
    }

    /// Sets a stable machine code such as `unknown_arg` or `STALE_CONTINUATION`.
    #[must_use]
    pub fn with_code(mut self, code: impl Into<String>) -> Self {
        self.extra_mut().code = Some(code.into());
        self
    }

    /// Sets a recovery hint: what to change before calling again.
    #[must_use]
    pub fn with_hint(mut self, hint: impl Into<String>) -> Self {
        self.extra_mut().hint = Some(hint.into());
        self
    }

    /// Says how long to wait before a retry can help.
    #[must_use]
    pub fn with_retry_after(mut self, wait: Duration) -> Self {
        self.extra_mut().retry_after_ms = Some(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
        self
    }

    /// Attaches per-code data. Containers nested more than
    /// [`MAX_PAYLOAD_DEPTH`](crate::bounded::MAX_PAYLOAD_DEPTH) levels down are replaced by `null`, as
    /// the budget stage cuts a payload: the error then serializes without deep recursion,
    /// whatever the data.
    #[must_use]
    pub fn with_data(mut self, data: Value) -> Self {
        let data = if nests_deeper_than(&data, crate::bounded::MAX_PAYLOAD_DEPTH) {
            let cut = crate::bounded::to_value_within(&data, 0).unwrap_or(Value::Null);
            crate::deep::drop_deep(data);
            cut
        } else {
            data
        };
        self.extra_mut().data = Some(data);
        self
    }

    /// Offers `action` as the way out of this error (say, the search again for a stale target
    /// ref): it goes out in the failed envelope's `next_actions`.
    #[must_use]
    pub fn with_recovery(mut self, action: crate::NextAction) -> Self {
        self.extra_mut().recovery.push(action);
        self
    }

    /// Takes out the recovery actions, which travel in the envelope beside the error.
    pub(crate) fn take_recovery(&mut self) -> Vec<crate::NextAction> {
        self.extra
            .as_mut()
            .map(|extra| std::mem::take(&mut extra.recovery))
            .unwrap_or_default()
    }

    /// Overrides the category's retryable default, for the call where it is wrong.
    #[must_use]
    pub fn with_retryable(mut self, retryable: bool) -> Self {
        self.retryable = retryable;
        self
    }

    /// What kind of failure this is, which decides whether a retry can help.
    pub fn category(&self) -> Category {
        self.category
    }

    /// The stable machine code, if any.
    pub fn code(&self) -> Option<&str> {
        self.extra().and_then(|e| e.code.as_deref())
    }

    /// The message the agent sees.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Whether a retry can help.
    pub fn retryable(&self) -> bool {
        self.retryable
    }

    /// The recovery hint, if any.
    pub fn hint(&self) -> Option<&str> {
        self.extra().and_then(|e| e.hint.as_deref())
    }

    /// How long to wait before retrying, if the error says.
    pub fn retry_after(&self) -> Option<Duration> {
        self.extra()
            .and_then(|e| e.retry_after_ms)
            .map(Duration::from_millis)
    }

    /// Data whose shape the `code` defines (the field at fault, say), if any.
    pub fn data(&self) -> Option<&Value> {
        self.extra().and_then(|e| e.data.as_ref())
    }

    /// The unmasked original of an internal error, for the server log. Never serialized.
    pub fn detail(&self) -> Option<&str> {
        self.extra().and_then(|e| e.detail.as_deref())
    }

    /// Where an internal error was made, if a backtrace was captured. Never serialized.
    pub fn backtrace(&self) -> Option<&str> {
        self.extra().and_then(|e| e.backtrace.as_deref())
    }

    /// Masks an internal error's message so that it names the request id and nothing else.
    pub(crate) fn mask_with(&mut self, request_id: &RequestId) {
        if self.category == Category::Internal {
            self.message = format!(
                "{INTERNAL_MESSAGE}; the server log has the details under request id {request_id}"
            );
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.category, self.message)
    }
}

impl std::error::Error for ToolError {}

impl<E: Categorize> From<E> for ToolError {
    fn from(error: E) -> Self {
        let converted = ToolError::new(error.category(), error.to_string());
        match error.code() {
            Some(code) => converted.with_code(code),
            None => converted,
        }
    }
}

/// Maps by [`io::ErrorKind`] to the category that tells the agent what to do next:
///
/// - `not_found`: the path does not exist;
/// - `permission`: access denied, or a read-only file system;
/// - `validation`: the call named the wrong thing (a directory for a file, a bad file name, a
///   file too large to read, a target that already exists, malformed or truncated data):
///   retrying the same call cannot help, changing its arguments can;
/// - `transient`: timeouts, resets, a busy resource: the same call may work again;
/// - `unavailable`: the disk, quota or network the tool needs is not there now;
/// - `internal`: anything else, masked on the wire.
impl From<io::Error> for ToolError {
    fn from(error: io::Error) -> Self {
        ToolError::new(io_category(error.kind()), error.to_string())
    }
}

/// The category of an I/O failure of kind `kind`; see `From<io::Error>`.
fn io_category(kind: io::ErrorKind) -> Category {
    use io::ErrorKind as Kind;
    match kind {
        Kind::NotFound => Category::NotFound,
        Kind::PermissionDenied | Kind::ReadOnlyFilesystem => Category::Permission,
        Kind::IsADirectory
        | Kind::NotADirectory
        | Kind::InvalidFilename
        | Kind::FileTooLarge
        | Kind::DirectoryNotEmpty
        | Kind::AlreadyExists
        | Kind::NotSeekable
        | Kind::CrossesDevices
        | Kind::TooManyLinks
        | Kind::ArgumentListTooLong
        | Kind::InvalidInput
        | Kind::InvalidData
        | Kind::UnexpectedEof => Category::Validation,
        Kind::TimedOut
        | Kind::ConnectionReset
        | Kind::ConnectionAborted
        | Kind::NotConnected
        | Kind::BrokenPipe
        | Kind::Interrupted
        | Kind::WouldBlock
        | Kind::ResourceBusy
        | Kind::ExecutableFileBusy
        | Kind::Deadlock
        | Kind::StaleNetworkFileHandle => Category::Transient,
        Kind::StorageFull
        | Kind::QuotaExceeded
        | Kind::ConnectionRefused
        | Kind::HostUnreachable
        | Kind::NetworkUnreachable
        | Kind::NetworkDown
        | Kind::AddrInUse
        | Kind::AddrNotAvailable
        | Kind::Unsupported => Category::Unavailable,
        _ => Category::Internal,
    }
}

/// Bad JSON (syntax, wrong shape, early end) is `validation`; an I/O failure underneath is
/// `internal`.
impl From<serde_json::Error> for ToolError {
    fn from(error: serde_json::Error) -> Self {
        let category = if error.is_io() {
            Category::Internal
        } else {
            Category::Validation
        };
        ToolError::new(category, error.to_string())
    }
}

/// A type-erased error says nothing about its category, so it is `internal`.
impl From<Box<dyn std::error::Error + Send + Sync>> for ToolError {
    fn from(error: Box<dyn std::error::Error + Send + Sync>) -> Self {
        ToolError::internal(error)
    }
}

/// Whether `value` has a container more than `limit` levels below its root; iterative.
fn nests_deeper_than(value: &Value, limit: usize) -> bool {
    let mut stack = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(members) => Box::new(members.values()),
            _ => continue,
        };
        if depth > limit {
            return true;
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

/// A contract value a tool failed to build is the tool's bug, not the caller's: `?` on it
/// yields an `internal` error, masked on the wire and logged in full.
impl Categorize for CoreError {
    fn category(&self) -> Category {
        Category::Internal
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deep_data_is_cut_so_the_error_serializes_on_a_small_stack() {
        // Regression test for #12: error data is the tool's, nested however deep.
        let cut = std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut data = Value::from("leaf");
                for _ in 0..2_000 {
                    data = Value::Array(vec![data]);
                }
                let error = ToolError::validation("deep").with_data(data);
                // Serializing and dropping what is kept both stay shallow.
                let json = serde_json::to_string(&error).expect("serializes");
                json.matches('[').count()
            })
            .expect("a thread")
            .join()
            .expect("no stack overflow");
        assert_eq!(cut, crate::bounded::MAX_PAYLOAD_DEPTH + 1);
        let shallow = ToolError::validation("x").with_data(serde_json::json!({"field": [1, [2]]}));
        assert_eq!(
            shallow.data(),
            Some(&serde_json::json!({"field": [1, [2]]}))
        );
    }

    #[test]
    fn io_kinds_map_to_categories() {
        use io::ErrorKind as Kind;
        let cases = [
            (Kind::NotFound, Category::NotFound),
            (Kind::PermissionDenied, Category::Permission),
            (Kind::ReadOnlyFilesystem, Category::Permission),
            (Kind::IsADirectory, Category::Validation),
            (Kind::NotADirectory, Category::Validation),
            (Kind::InvalidFilename, Category::Validation),
            (Kind::FileTooLarge, Category::Validation),
            (Kind::DirectoryNotEmpty, Category::Validation),
            (Kind::AlreadyExists, Category::Validation),
            (Kind::NotSeekable, Category::Validation),
            (Kind::CrossesDevices, Category::Validation),
            (Kind::TooManyLinks, Category::Validation),
            (Kind::ArgumentListTooLong, Category::Validation),
            (Kind::InvalidInput, Category::Validation),
            (Kind::InvalidData, Category::Validation),
            (Kind::UnexpectedEof, Category::Validation),
            (Kind::TimedOut, Category::Transient),
            (Kind::ConnectionReset, Category::Transient),
            (Kind::ConnectionAborted, Category::Transient),
            (Kind::NotConnected, Category::Transient),
            (Kind::BrokenPipe, Category::Transient),
            (Kind::Interrupted, Category::Transient),
            (Kind::WouldBlock, Category::Transient),
            (Kind::ResourceBusy, Category::Transient),
            (Kind::ExecutableFileBusy, Category::Transient),
            (Kind::Deadlock, Category::Transient),
            (Kind::StaleNetworkFileHandle, Category::Transient),
            (Kind::StorageFull, Category::Unavailable),
            (Kind::QuotaExceeded, Category::Unavailable),
            (Kind::ConnectionRefused, Category::Unavailable),
            (Kind::HostUnreachable, Category::Unavailable),
            (Kind::NetworkUnreachable, Category::Unavailable),
            (Kind::NetworkDown, Category::Unavailable),
            (Kind::AddrInUse, Category::Unavailable),
            (Kind::AddrNotAvailable, Category::Unavailable),
            (Kind::Unsupported, Category::Unavailable),
            (Kind::Other, Category::Internal),
            (Kind::OutOfMemory, Category::Internal),
            (Kind::WriteZero, Category::Internal),
        ];
        for (kind, category) in cases {
            let error = ToolError::from(io::Error::new(kind, "boom"));
            assert_eq!(error.category(), category, "{kind:?}");
            assert_eq!(error.retryable(), category.retryable_default(), "{kind:?}");
        }
    }

    #[test]
    fn serde_json_errors_split_by_cause() {
        let syntax = serde_json::from_str::<u32>("{").expect_err("not a number");
        assert_eq!(ToolError::from(syntax).category(), Category::Validation);
        let shape = serde_json::from_str::<u32>("\"seven\"").expect_err("not a number");
        assert_eq!(ToolError::from(shape).category(), Category::Validation);
        let io = serde_json::from_reader::<_, u32>(FailingReader).expect_err("reader fails");
        assert_eq!(ToolError::from(io).category(), Category::Internal);
    }

    struct FailingReader;

    impl io::Read for FailingReader {
        fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
            Err(io::Error::other("disk on fire"))
        }
    }

    #[test]
    fn internal_errors_are_masked_on_the_wire() {
        let mut error = ToolError::internal("password=hunter2");
        let id = RequestId::new();
        error.mask_with(&id);
        let wire = serde_json::to_string(&error).expect("serializes");
        assert!(!wire.contains("hunter2"), "{wire}");
        assert!(wire.contains(id.as_str()), "{wire}");
        assert_eq!(error.detail(), Some("password=hunter2"));
    }

    #[test]
    fn module_disabled_cannot_be_claimed_from_outside() {
        let error = ToolError::new(Category::ModuleDisabled, "pretend");
        assert_eq!(error.category(), Category::Internal);
        assert_eq!(error.message(), INTERNAL_MESSAGE);
    }

    #[test]
    fn retryable_follows_the_category_unless_overridden() {
        assert!(ToolError::transient("slow").retryable());
        assert!(
            !ToolError::transient("slow")
                .with_retryable(false)
                .retryable()
        );
        assert!(!ToolError::validation("bad").retryable());
    }

    #[test]
    fn absent_fields_are_omitted() {
        let wire = serde_json::to_value(ToolError::not_found("no such file")).expect("serializes");
        assert_eq!(
            wire,
            serde_json::json!({"category": "not_found", "message": "no such file", "retryable": false})
        );
    }
}

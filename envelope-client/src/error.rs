//! What can go wrong between a call and its envelope, typed.

use std::time::Duration;

use envelope_core::ToolError;

/// Why a tool's result holds no envelope to read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The result has no `structuredContent`: the server does not speak the envelope (or not
    /// for this tool). `text` is the start of its first text block, if any.
    #[error("the result carries no `structuredContent`: no envelope")]
    NoStructuredContent {
        /// Up to 300 characters of the first text content, to show what came instead.
        text: Option<String>,
    },
    /// The result's `isError` says the opposite of its envelope's `ok`: the server broke the
    /// contract, and which of the two to believe cannot be told.
    #[error("`isError` is {is_error} but the envelope's `ok` is {ok}")]
    IsErrorDisagrees {
        /// The result's `isError` (absent is `false`).
        is_error: bool,
        /// The envelope's `ok`.
        ok: bool,
    },
}

/// Why a structured result does not decode as an envelope: the field at fault, and what is
/// wrong with it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{path}`: {message}")]
pub struct DecodeError {
    /// Where in the envelope the decoding failed, as a path (`data.rows[3].line`,
    /// `completeness`, or `.` for the envelope as a whole: a missing `ok`, say, or `ok: true`
    /// without `data`).
    pub path: String,
    /// What is wrong there.
    pub message: String,
}

impl DecodeError {
    /// The path of the field at fault; `.` for the envelope as a whole.
    pub fn field(&self) -> &str {
        &self.path
    }
}

/// Everything a call through the [`Client`](crate::Client) can fail with, besides the
/// envelope's own `ok: false` (a failed call is a successful read: the envelope is returned and
/// its [`error`](envelope_core::Envelope::error) says what failed).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The server's listing does not name `tool`: nothing was sent.
    #[error("`{tool}` is not among the tools the server lists; nothing was sent")]
    NotListed {
        /// The tool asked for.
        tool: String,
    },
    /// [`Client::call_plain`](crate::Client::call_plain) of a tool whose listed output schema is
    /// an envelope's: [`Client::call`](crate::Client::call) reads it. Nothing was sent.
    #[error(
        "`{tool}` answers envelopes (its output schema is one): call it with `call`; nothing was sent"
    )]
    EnvelopeTool {
        /// The tool asked for.
        tool: String,
    },
    /// The arguments are not a JSON object: nothing was sent.
    #[error("the arguments for `{tool}` are not a JSON object; nothing was sent")]
    ArgumentsNotObject {
        /// The tool asked for.
        tool: String,
    },
    /// A next action's arguments fail its tool's listed input schema: nothing was sent.
    #[error("the arguments of action `{action}` fail `{tool}`'s input schema: {detail}")]
    ActionArguments {
        /// The action's id.
        action: String,
        /// The tool it names.
        tool: String,
        /// The first violation (or why the schema does not compile).
        detail: String,
    },
    /// The envelope offers no next action of this id.
    #[error("the envelope offers no next action `{id}`")]
    NoSuchAction {
        /// The id asked for.
        id: String,
    },
    /// The transport or the server failed the request itself: a JSON-RPC error (an unknown
    /// tool, say), a closed connection, a timeout of the transport.
    #[error("`{tool}`: the request failed: {source}")]
    Service {
        /// The tool called.
        tool: String,
        /// What rmcp reported.
        #[source]
        source: Box<rmcp::ServiceError>,
    },
    /// The result holds no envelope.
    #[error("`{tool}`: {source}")]
    Read {
        /// The tool called.
        tool: String,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// The structured result is not an envelope of the type asked for; the error names the
    /// field.
    #[error("`{tool}` answered something that is not the envelope asked for: {source}")]
    Decode {
        /// The tool called.
        tool: String,
        /// The field at fault and what is wrong with it.
        #[source]
        source: DecodeError,
    },
    /// The server asks to wait longer than the call's deadline leaves: the client stopped at
    /// once rather than sleep past it.
    #[error(
        "`{tool}` asks to retry after {retry_after:?}, past the deadline ({remaining:?} left): \
         not waited for"
    )]
    RetryAfterPastDeadline {
        /// The tool called.
        tool: String,
        /// The wait the error asked for.
        retry_after: Duration,
        /// What was left of the deadline.
        remaining: Duration,
        /// The error that asked.
        last: Box<ToolError>,
    },
    /// The deadline passed, during a call or before the next attempt could be made.
    #[error("`{tool}` did not succeed within the deadline of {deadline:?} ({attempts} attempts)")]
    DeadlineExceeded {
        /// The tool called.
        tool: String,
        /// The policy's deadline.
        deadline: Duration,
        /// The calls made (the last one may have been cut short).
        attempts: u32,
        /// The last error answered, if an attempt answered one.
        last: Option<Box<ToolError>>,
    },
    /// Paging would call a page it has already called: the next-page action repeats an earlier
    /// call, or its continuation was given out before. Following it would loop.
    #[error("`{tool}` offers a next page already called (page {page}): the cursor repeats")]
    CursorRepeated {
        /// The paged tool.
        tool: String,
        /// The page (1-based) whose next-page action repeats.
        page: usize,
    },
    /// A next page's continuation is longer than
    /// [`MAX_CONTINUATION_CHARS`](crate::MAX_CONTINUATION_CHARS): a server whose tokens grow
    /// without bound is refused rather than held. Nothing was sent.
    #[error("`{tool}` offers a continuation of {chars} characters (page {page}): too long to send")]
    ContinuationTooLong {
        /// The paged tool.
        tool: String,
        /// The continuation's length.
        chars: usize,
        /// The page (1-based) it would have fetched.
        page: usize,
    },
    /// A page starts before the end of the rows already returned: the walk went back.
    #[error("`{tool}`: page {page} starts at row {offset}, before the {end} rows already returned")]
    PageWentBack {
        /// The paged tool.
        tool: String,
        /// The page (1-based).
        page: usize,
        /// Its `completeness.offset`.
        offset: usize,
        /// Where the rows before it ended.
        end: usize,
    },
    /// `completeness.total` changed between pages of one paging.
    #[error("`{tool}` changed its total from {first} to {now} on page {page}")]
    TotalChanged {
        /// The paged tool.
        tool: String,
        /// The first page's total.
        first: usize,
        /// This page's.
        now: usize,
        /// The page (1-based).
        page: usize,
    },
    /// A target ref stayed stale after re-resolving it once, or the recovery the envelope
    /// names does not lead to a fresh one.
    #[error("`{tool}`: the target ref is stale ({code}) and {why}")]
    StaleRef {
        /// The reading tool.
        tool: String,
        /// The error code that said so.
        code: String,
        /// What the re-resolving came to.
        why: String,
        /// The last error answered.
        last: Box<ToolError>,
    },
}

impl ClientError {
    /// The typed decode error, if that is what this is: the field at fault is
    /// [`DecodeError::field`].
    pub fn as_decode(&self) -> Option<&DecodeError> {
        match self {
            ClientError::Decode { source, .. } => Some(source),
            _ => None,
        }
    }
}

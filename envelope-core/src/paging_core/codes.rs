//! The error codes of continuations and page sizes, and the [`CONTINUATION_CODES`] table the
//! contract docs are generated from.

/// The id of the next-page action a [`Pager`](crate::paging::Pager) adds: the call that
/// carries the page's continuation, to be made exactly as given.
pub const NEXT_PAGE: &str = "next-page";

/// Code of a token laid out as this server writes them but edited in place (its seal fails), or
/// sealed by a key this server does not (or no longer) accept. Text that is no token as written
/// (quoted, cut short, padded) is `invalid_argument` (see [`INVALID_ARGUMENT`]).
///
/// [`INVALID_ARGUMENT`]: super::INVALID_ARGUMENT
pub const INVALID_CONTINUATION: &str = crate::fields::code::INVALID_CONTINUATION;
/// Code of a genuine token presented with another tool, caller, request or scope.
pub const CONTINUATION_SCOPE_MISMATCH: &str = crate::fields::code::CONTINUATION_SCOPE_MISMATCH;
/// Code of a genuine token whose snapshot has moved or whose expiry has passed.
pub const STALE_CONTINUATION: &str = crate::fields::code::STALE_CONTINUATION;
/// Code of a call that passes a continuation together with a legacy `offset` or `resume_from`.
pub const MIXED_CONTINUATION_FORMS: &str = crate::fields::code::MIXED_CONTINUATION_FORMS;
/// Code of a page size of zero (which would let paging loop forever), or of more than the
/// tool's maximum.
pub const INVALID_LIMIT: &str = crate::fields::code::INVALID_LIMIT;

/// Every paging error code: `(code, when, what the agent does)`. All are `validation` errors,
/// never retryable as they stand. The contract docs are generated from this table.
pub const CONTINUATION_CODES: [(&str, &str, &str); 5] = [
    (
        INVALID_CONTINUATION,
        "The token was edited in place, or sealed by a key this server does not accept.",
        "Do not edit tokens; start again from the first page.",
    ),
    (
        CONTINUATION_SCOPE_MISMATCH,
        "The token belongs to another tool, caller, request or scope.",
        "Repeat the exact original request with only `continuation` set, or start a fresh search.",
    ),
    (
        STALE_CONTINUATION,
        "What is paged changed since the token was minted, or the token expired.",
        "Call the tool again without `continuation`.",
    ),
    (
        MIXED_CONTINUATION_FORMS,
        "A legacy `offset` or `resume_from` was sent together with `continuation`.",
        "Keep only `continuation`.",
    ),
    (
        INVALID_LIMIT,
        "The page size is zero (which would page forever), or more than the tool's maximum.",
        "Send a `limit` from 1 to the maximum the error names, or none for the default.",
    ),
];

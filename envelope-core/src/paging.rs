//! Paging and follow-ups, stateless: sealed continuation tokens, the [`Pager`] that pages a
//! tool with them, and target refs ([`TargetBinding`]) that let a follow-up tool act on one
//! result of a page as it was.
//!
//! A continuation tells a tool where the next page starts. Nothing is cached on the server, and
//! a model copies the token character by character, so it carries only what the server cannot
//! recompute: the position, an expiry, which key sealed it, and HMAC-SHA256 tags under a server
//! key. What the page is bound to — the tool, the caller, the request, the scope, the snapshot
//! of the data — is recomputed from the call that sends the token back, and the tags say
//! whether it matches. A token therefore survives a restart and opens on any replica that holds
//! the key, and an agent can neither forge nor edit one.
//!
//! Invariant: nothing here panics on any input, and a rejection names only its code, never the
//! check that failed. The only I/O is the operating system's random source.
//!
//! There is no server-side handle registry: an in-memory table of result handles held per
//! process would not survive a restart or reach another replica behind a load balancer. A
//! target ref carries what it points at, sealed, so any replica holding the key resolves it.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::canonical::canonical_json;
use crate::tool_error::ToolError;

mod keys;
mod pager;
mod seal;
mod target;

pub use keys::{ContinuationKey, KeyError, KeyRing};
use seal::{Reader, decode_canonical, unix_seconds};

pub use pager::{NEXT_PAGE, PageCount, PagedArgs, Pager, Paging, Resume, Snapshot};
pub use target::{
    CONFLICTING_TARGET_INPUT, INVALID_TARGET_REF, MAX_TARGET_BYTES, MAX_TARGET_REF_CHARS,
    MAX_TARGETS_PER_REF, OpenedTarget, STALE_TARGET_SNAPSHOT, TARGET_CODES, TARGET_NOT_FOUND,
    TARGET_REF_LAYOUT, TARGET_REF_MIN_CHARS, TARGET_SCOPE_MISMATCH, TargetBinding,
    conflicting_target_input, target_not_found,
};

/// Code of a token that is malformed, of the wrong length, not canonical base64, tampered with,
/// or sealed by a key this server does not (or no longer) accept.
pub const INVALID_CONTINUATION: &str = "INVALID_CONTINUATION";
/// Code of a genuine token presented with another tool, caller, request or scope.
pub const CONTINUATION_SCOPE_MISMATCH: &str = "CONTINUATION_SCOPE_MISMATCH";
/// Code of a genuine token whose snapshot has moved or whose expiry has passed.
pub const STALE_CONTINUATION: &str = "STALE_CONTINUATION";
/// Code of a call that passes a continuation together with a legacy `offset` or `resume_from`.
pub const MIXED_CONTINUATION_FORMS: &str = "MIXED_CONTINUATION_FORMS";
/// Code of a page size of zero (which would let paging loop forever), or of more than the
/// tool's maximum.
pub const INVALID_LIMIT: &str = "INVALID_LIMIT";

/// Every paging error code: `(code, when, what the agent does)`. All are `validation` errors,
/// never retryable as they stand. The contract docs are generated from this table.
pub const CONTINUATION_CODES: [(&str, &str, &str); 5] = [
    (
        INVALID_CONTINUATION,
        "The token is malformed, tampered with, or sealed by a key this server does not accept.",
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

/// How long a token stays valid unless [`Continuations::with_ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);
/// Longer texts are refused before any decoding is attempted.
pub const MAX_TOKEN_CHARS: usize = 64;
/// A token's length in characters of base64url without padding, for a position below 128
/// (one varint byte); each further varint byte adds one or two characters.
pub const TOKEN_CHARS: usize = (MIN_TOKEN_BYTES * 4).div_ceil(3);
/// The longest token, for a position near `u64::MAX`.
pub const MAX_TOKEN_LEN: usize = (MAX_TOKEN_BYTES * 4).div_ceil(3);
/// The layout of a continuation, field by field: `(bytes, field)`. The contract docs are
/// generated from this table.
pub const TOKEN_LAYOUT: [(&str, &str); 6] = [
    (
        "1",
        "format version (2) in the high four bits, the low four bits of the sealing key's id in the low four",
    ),
    (
        "1–10",
        "position: rows already returned, an unsigned LEB128 varint",
    ),
    ("4", "expiry: Unix seconds, big-endian"),
    (
        "4",
        "binding tag: HMAC-SHA256 of the bytes before it with the tool, the caller, the request and the scope",
    ),
    (
        "4",
        "snapshot tag: HMAC-SHA256 of the same with the snapshot of what is paged",
    ),
    ("4", "seal: HMAC-SHA256 of every byte before it"),
];

/// The argument that carries the token, unless [`Binding::with_continuation_field`] renames it.
pub const DEFAULT_CONTINUATION_FIELD: &str = "continuation";
/// The argument that carries the page size, unless [`Binding::with_limit_field`] renames it.
pub const DEFAULT_LIMIT_FIELD: &str = "limit";
/// Legacy start positions: never part of the request digest, and refused next to a token.
const LEGACY_START_FIELDS: [&str; 2] = ["offset", "resume_from"];

// Token layout, in bytes (see `TOKEN_LAYOUT`): lead ‖ position ‖ expiry ‖ binding tag ‖
// snapshot tag ‖ seal. Only the position and expiry travel, in the clear and authenticated;
// the binding is recomputed from the call. The seal says the token is this server's and
// unedited (else `INVALID_CONTINUATION`); then the binding tag tells another call's token
// (`CONTINUATION_SCOPE_MISMATCH`) from a moved snapshot (`STALE_CONTINUATION`). Presenting a
// genuine token under another tool, caller, request or scope passes only if both 32-bit tags
// match by chance (2^-64); under a moved snapshot alone, if the snapshot tag does (2^-32).
const VERSION: u8 = 2;
const TAG_LEN: usize = 4;
const MIN_TOKEN_BYTES: usize = 1 + 1 + 4 + 3 * TAG_LEN;
const MAX_TOKEN_BYTES: usize = 1 + 10 + 4 + 3 * TAG_LEN;
// Room for the longest text that passes the cap, so decoding never fails for lack of space.
const DECODE_BUFFER: usize = MAX_TOKEN_CHARS / 4 * 3 + 3;
// The labels of the three tags, so no tag of one kind ever stands in for another.
const BIND_LABEL: &str = "envelope/continuation/v2/bind";
const SNAPSHOT_LABEL: &str = "envelope/continuation/v2/snapshot";
const SEAL_LABEL: &str = "envelope/continuation/v2/seal";

/// What a continuation is bound to: presenting a token under any other binding fails.
///
/// The request is bound as the canonical JSON (keys sorted) of the call's arguments
/// with the continuation field, the page-size field and the legacy `offset`/`resume_from`
/// removed from the top level. A changed page size is therefore honoured (AIP-158), while any
/// other changed argument is a [`CONTINUATION_SCOPE_MISMATCH`].
///
/// ```
/// use envelope_core::paging::Binding;
/// use serde_json::json;
///
/// let args = json!({"query": "needle", "limit": 50, "continuation": "…"});
/// let binding = Binding::new("search_text", "session-1", &args)
///     .with_scope("src/")
///     .with_snapshot("rev-41");
/// # let _ = binding;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    tool: &'a str,
    session: &'a str,
    request: &'a Value,
    scope: &'a str,
    snapshot: &'a str,
    continuation_field: &'a str,
    limit_field: &'a str,
}

impl<'a> Binding<'a> {
    /// A binding to a tool, a caller (who may continue the page: a principal, a digest of
    /// credentials, or empty for anyone holding the token) and the call's arguments, with an
    /// empty scope and snapshot and the default field names `continuation` and `limit`.
    pub fn new(tool: &'a str, session: &'a str, request: &'a Value) -> Self {
        Binding {
            tool,
            session,
            request,
            scope: "",
            snapshot: "",
            continuation_field: DEFAULT_CONTINUATION_FIELD,
            limit_field: DEFAULT_LIMIT_FIELD,
        }
    }

    /// What the request reaches, such as a search root and its filters.
    #[must_use]
    pub fn with_scope(mut self, scope: &'a str) -> Self {
        self.scope = scope;
        self
    }

    /// A revision or digest of the data paged; when it moves, tokens become stale.
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: &'a str) -> Self {
        self.snapshot = snapshot;
        self
    }

    /// The name of the argument that carries the token, when it is not `continuation`.
    #[must_use]
    pub fn with_continuation_field(mut self, name: &'a str) -> Self {
        self.continuation_field = name;
        self
    }

    /// The name of the argument that carries the page size, when it is not `limit`.
    #[must_use]
    pub fn with_limit_field(mut self, name: &'a str) -> Self {
        self.limit_field = name;
        self
    }

    /// The binding and snapshot tags of a token whose leading bytes are `head`, under `key`.
    fn tags(&self, key: &ContinuationKey, head: &[u8]) -> ([u8; TAG_LEN], [u8; TAG_LEN]) {
        let request = self.canonical_request();
        let (bound, snapshot) = self.tag_inputs(head, &request);
        (
            key.tag(BIND_LABEL, &bound),
            key.tag(SNAPSHOT_LABEL, &snapshot),
        )
    }

    /// Whether a token's binding and snapshot tags are this binding's, each compared in
    /// constant time, so that timing never tells how much of a tag was right.
    fn check_tags(&self, key: &ContinuationKey, head: &[u8], tags: &[u8]) -> (bool, bool) {
        let request = self.canonical_request();
        let (bound, snapshot) = self.tag_inputs(head, &request);
        let (bound_tag, snapshot_tag) = tags.split_at(TAG_LEN.min(tags.len()));
        (
            key.verify(BIND_LABEL, &bound, bound_tag),
            key.verify(SNAPSHOT_LABEL, &snapshot, snapshot_tag),
        )
    }

    /// What the two tags are computed over: the token's leading bytes and the binding, and
    /// for the snapshot tag the snapshot too.
    fn tag_inputs<'b>(
        &'b self,
        head: &'b [u8],
        request: &'b str,
    ) -> ([&'b [u8]; 5], [&'b [u8]; 6]) {
        let bound = [
            head,
            self.tool.as_bytes(),
            self.session.as_bytes(),
            request.as_bytes(),
            self.scope.as_bytes(),
        ];
        let [a, b, c, d, e] = bound;
        (bound, [a, b, c, d, e, self.snapshot.as_bytes()])
    }

    /// The request as it is digested: without the fields that may change between pages.
    fn canonical_request(&self) -> String {
        let Value::Object(map) = self.request else {
            return canonical_json(self.request);
        };
        let mut map = map.clone();
        map.remove(self.continuation_field);
        map.remove(self.limit_field);
        for field in LEGACY_START_FIELDS {
            map.remove(field);
        }
        canonical_json(&Value::Object(map))
    }
}

/// Why a token was refused. Only the code reaches the agent; the reason is for tests and the
/// server log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Reject {
    TooLong,
    Encoding,
    Length,
    Version,
    UnknownKey,
    Tampered,
    Scope,
    SnapshotMoved,
    Expired,
}

impl Reject {
    fn as_str(self) -> &'static str {
        match self {
            Reject::TooLong => "too_long",
            Reject::Encoding => "encoding",
            Reject::Length => "length",
            Reject::Version => "version",
            Reject::UnknownKey => "unknown_key",
            Reject::Tampered => "tampered",
            Reject::Scope => "scope",
            Reject::SnapshotMoved => "snapshot_moved",
            Reject::Expired => "expired",
        }
    }

    /// The agent-facing error: one fixed message per code, whatever the reason behind it.
    fn into_error(self, binding: &Binding<'_>) -> ToolError {
        let field = binding.continuation_field;
        match self {
            Reject::TooLong
            | Reject::Encoding
            | Reject::Length
            | Reject::Version
            | Reject::UnknownKey
            | Reject::Tampered => {
                ToolError::validation(format!("`{field}` is not a valid continuation token"))
                    .with_code(INVALID_CONTINUATION)
                    .with_hint(format!(
                        "pass `{field}` back exactly as it was received, or call again without \
                         `{field}` to start from the first page"
                    ))
            }
            Reject::Scope => ToolError::validation(format!(
                "`{field}` belongs to another call (tool, caller, arguments or scope)"
            ))
            .with_code(CONTINUATION_SCOPE_MISMATCH)
            .with_hint(format!(
                "repeat the call that returned this token with only `{field}` (and optionally \
                 `{limit}`) changed, or call again without `{field}`",
                limit = binding.limit_field
            )),
            Reject::SnapshotMoved | Reject::Expired => ToolError::validation(format!(
                "`{field}` has expired or the data it pages has changed"
            ))
            .with_code(STALE_CONTINUATION)
            .with_hint(format!(
                "call again without `{field}` to restart from the first page"
            )),
        }
    }
}

type ClockFn = dyn Fn() -> SystemTime + Send + Sync;

/// Seals and opens continuation tokens: a [`KeyRing`], a time to live and a clock.
///
/// Wire format: base64url without padding of 18 to 27 bytes ([`TOKEN_CHARS`] = 24 characters
/// for a position below 128), field by field in [`TOKEN_LAYOUT`]: the version and the sealing
/// key's id nibble, the position (rows already returned), the expiry, and three 32-bit
/// HMAC-SHA256 tags. Nothing of what the token is bound to travels in it: the tool, caller,
/// request, scope and snapshot are recomputed from the call that sends it back, and the tags
/// say whether they are the ones it was sealed for. The position is visible (it is the count of
/// rows the agent already has) but cannot be edited.
///
/// Checks, in order: at most [`MAX_TOKEN_CHARS`] characters, canonical base64url, length,
/// version, a key the id nibble names (current, or retired and within its grace window) whose
/// seal matches — any failure is [`INVALID_CONTINUATION`]; then the binding tag (tool, caller,
/// request and scope) — [`CONTINUATION_SCOPE_MISMATCH`]; then the snapshot tag and the expiry
/// — [`STALE_CONTINUATION`].
///
/// ```
/// use envelope_core::paging::{Binding, ContinuationKey, Continuations, PageArgs};
/// use serde_json::json;
///
/// let continuations = Continuations::new(ContinuationKey::new(1, [7; 32]));
/// let rows: Vec<u32> = (0..25).collect();
///
/// // First call: no token, 10 rows per page.
/// let args = json!({"query": "x", "limit": 10});
/// let binding = Binding::new("list", "session-1", &args).with_snapshot("rev-1");
/// let page = continuations.page(&binding, PageArgs::new(50).with_limit(Some(10)))?;
/// let sent = &rows[page.range(rows.len())];
/// let token = continuations.next(&binding, page.start, sent.len(), rows.len())?;
/// let token = token.expect("15 rows remain");
///
/// // Second call: the agent passes the token back, and may change the page size.
/// let args = json!({"query": "x", "limit": 20, "continuation": token});
/// let binding = Binding::new("list", "session-1", &args).with_snapshot("rev-1");
/// let page = continuations.page(
///     &binding,
///     PageArgs::new(50).with_limit(Some(20)).with_continuation(args["continuation"].as_str()),
/// )?;
/// assert_eq!(page.range(rows.len()), 10..25);
/// assert_eq!(continuations.next(&binding, page.start, 15, rows.len())?, None);
/// # Ok::<(), envelope_core::ToolError>(())
/// ```
#[derive(Clone)]
pub struct Continuations {
    keys: KeyRing,
    ttl: Duration,
    clock: Arc<ClockFn>,
}

impl fmt::Debug for Continuations {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Continuations")
            .field("keys", &self.keys)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

impl Continuations {
    /// Tokens sealed with `keys`, valid for [`DEFAULT_TTL`], timed by the system clock.
    pub fn new(keys: impl Into<KeyRing>) -> Self {
        Continuations {
            keys: keys.into(),
            ttl: DEFAULT_TTL,
            clock: Arc::new(SystemTime::now),
        }
    }

    /// How long a token stays valid after it is sealed (whole seconds count).
    #[must_use]
    pub fn with_ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Replaces the system clock, so tests can move time.
    #[must_use]
    pub fn with_clock(mut self, clock: impl Fn() -> SystemTime + Send + Sync + 'static) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// The keys that seal and open tokens.
    pub fn key_ring(&self) -> &KeyRing {
        &self.keys
    }

    /// Makes `new_key` the sealing key; the old one keeps opening tokens for `grace` from now.
    pub fn rotate(&mut self, new_key: ContinuationKey, grace: Duration) -> Result<(), KeyError> {
        let now = (self.clock)();
        self.keys.rotate(new_key, now, grace)
    }

    /// The token that resumes paging at `position` (rows already returned) under `binding`.
    ///
    /// Never fails: the result type is kept so that a future format needing randomness can
    /// report it.
    pub fn seal(&self, binding: &Binding<'_>, position: u64) -> Result<String, ToolError> {
        let key = self.keys.current();
        let mut bytes = Vec::with_capacity(MAX_TOKEN_BYTES);
        bytes.push(seal::lead_byte(VERSION, key.nibble()));
        seal::push_varint(&mut bytes, position);
        bytes.extend_from_slice(&seal::expiry((self.clock)(), self.ttl).to_be_bytes());
        let (bound, snapshot) = binding.tags(key, &bytes);
        bytes.extend_from_slice(&bound);
        bytes.extend_from_slice(&snapshot);
        let sealed: [u8; TAG_LEN] = key.tag(SEAL_LABEL, &[&bytes]);
        bytes.extend_from_slice(&sealed);
        Ok(seal::encode(&bytes))
    }

    /// The position a token resumes at, after checking it against `binding` and the clock.
    pub fn open(&self, token: &str, binding: &Binding<'_>) -> Result<u64, ToolError> {
        self.open_checked(token, binding).map_err(|reject| {
            tracing::debug!(reason = reject.as_str(), "continuation refused");
            reject.into_error(binding)
        })
    }

    fn open_checked(&self, token: &str, binding: &Binding<'_>) -> Result<u64, Reject> {
        let now = (self.clock)();
        if token.len() > MAX_TOKEN_CHARS {
            return Err(Reject::TooLong);
        }
        let mut buffer = [0u8; DECODE_BUFFER];
        let written = decode_canonical(token, &mut buffer).ok_or(Reject::Encoding)?;
        let bytes = buffer.get(..written).ok_or(Reject::Encoding)?;
        if !(MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES).contains(&bytes.len()) {
            return Err(Reject::Length);
        }
        let (signed, sealed) = bytes.split_at(bytes.len() - TAG_LEN);
        let (head, tags) = signed.split_at(signed.len() - 2 * TAG_LEN);
        let (version, nibble) = seal::split_lead(head[0]);
        if version != VERSION {
            return Err(Reject::Version);
        }
        let mut candidates = self.keys.opening_keys(nibble, now).peekable();
        if candidates.peek().is_none() {
            return Err(Reject::UnknownKey);
        }
        let key = candidates
            .find(|key| key.verify(SEAL_LABEL, &[signed], sealed))
            .ok_or(Reject::Tampered)?;
        let mut reader = Reader(&head[1..]);
        let position = reader.varint().ok_or(Reject::Length)?;
        let expires_at = u32::from_be_bytes(reader.take().ok_or(Reject::Length)?);
        if !reader.rest().is_empty() {
            return Err(Reject::Length);
        }
        let (bound, snapshot) = binding.check_tags(key, head, tags);
        if !bound {
            return Err(Reject::Scope);
        }
        if !snapshot {
            return Err(Reject::SnapshotMoved);
        }
        if unix_seconds(now) >= u64::from(expires_at) {
            return Err(Reject::Expired);
        }
        Ok(position)
    }

    /// Where this call's page starts and how many rows it may hold.
    ///
    /// Refuses a page size of zero ([`INVALID_LIMIT`]) and more than one way of saying where
    /// to start ([`MIXED_CONTINUATION_FORMS`]) before looking at the token. A legacy `offset`
    /// or `resume_from` alone is accepted as the start.
    pub fn page(&self, binding: &Binding<'_>, args: PageArgs<'_>) -> Result<Page, ToolError> {
        let size = args.limit.unwrap_or(args.default_limit);
        if size == 0 {
            let limit = binding.limit_field;
            return Err(
                ToolError::validation(format!("`{limit}` must be at least 1"))
                    .with_code(INVALID_LIMIT)
                    .with_hint(format!("omit `{limit}` to get the default page size")),
            );
        }
        let forms = [
            args.continuation.is_some(),
            args.offset.is_some(),
            args.resume_from.is_some(),
        ];
        if forms.into_iter().filter(|given| *given).count() > 1 {
            return Err(mixed_forms(binding));
        }
        let start = match (args.continuation, args.offset.or(args.resume_from)) {
            (Some(token), _) => {
                let position = self.open(token, binding)?;
                // A position this server sealed always fits; anything else is not ours.
                usize::try_from(position).map_err(|_| Reject::Length.into_error(binding))?
            }
            (None, Some(offset)) => offset,
            (None, None) => 0,
        };
        Ok(Page { start, size })
    }

    /// The token for the page after one that started at `start` and sent `returned` of
    /// `total` rows, or `None` when nothing remains.
    ///
    /// Also `None` when `returned` is zero: a token pointing where this page started would let
    /// paging loop.
    pub fn next(
        &self,
        binding: &Binding<'_>,
        start: usize,
        returned: usize,
        total: usize,
    ) -> Result<Option<String>, ToolError> {
        let position = start.saturating_add(returned);
        if returned == 0 || position >= total {
            return Ok(None);
        }
        let position = u64::try_from(position).map_err(ToolError::internal)?;
        self.seal(binding, position).map(Some)
    }
}

fn mixed_forms(binding: &Binding<'_>) -> ToolError {
    let field = binding.continuation_field;
    ToolError::validation(format!(
        "`{field}` cannot be combined with `offset` or `resume_from`, nor those two with each other"
    ))
    .with_code(MIXED_CONTINUATION_FORMS)
    .with_hint(format!(
        "pass only `{field}` to continue paging, or only `offset` to start elsewhere"
    ))
}

/// How a call says where its page starts and how large it is, as the tool read its arguments.
///
/// ```
/// use envelope_core::paging::PageArgs;
///
/// // Default page size 50; the agent asked for 20 and passed no token.
/// let args = PageArgs::new(50).with_limit(Some(20)).with_continuation(None);
/// # let _ = args;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PageArgs<'a> {
    default_limit: usize,
    limit: Option<usize>,
    continuation: Option<&'a str>,
    offset: Option<usize>,
    resume_from: Option<usize>,
}

impl<'a> PageArgs<'a> {
    /// No token, no offset, and `default_limit` rows per page unless the call sets a limit.
    pub fn new(default_limit: usize) -> Self {
        PageArgs {
            default_limit,
            limit: None,
            continuation: None,
            offset: None,
            resume_from: None,
        }
    }

    /// The page size the call asked for; `Some(0)` is refused.
    #[must_use]
    pub fn with_limit(mut self, limit: Option<usize>) -> Self {
        self.limit = limit;
        self
    }

    /// The continuation token the call passed.
    #[must_use]
    pub fn with_continuation(mut self, token: Option<&'a str>) -> Self {
        self.continuation = token;
        self
    }

    /// A legacy `offset` the call passed.
    #[must_use]
    pub fn with_offset(mut self, offset: Option<usize>) -> Self {
        self.offset = offset;
        self
    }

    /// A legacy `resume_from` the call passed.
    #[must_use]
    pub fn with_resume_from(mut self, resume_from: Option<usize>) -> Self {
        self.resume_from = resume_from;
        self
    }
}

/// One page of a collection: the rows `start..start + size`, as far as they exist.
///
/// Invariant: `size` is at least 1, so paging always advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows already returned by earlier pages.
    pub start: usize,
    /// The most rows this page may hold.
    pub size: usize,
}

impl Page {
    /// The indices of this page's rows in a collection of `total` rows; empty past the end.
    ///
    /// ```
    /// use envelope_core::paging::Page;
    ///
    /// assert_eq!(Page { start: 20, size: 10 }.range(25), 20..25);
    /// assert_eq!(Page { start: 30, size: 10 }.range(25), 25..25);
    /// ```
    pub fn range(&self, total: usize) -> Range<usize> {
        let start = self.start.min(total);
        start..self.start.saturating_add(self.size).min(total)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::UNIX_EPOCH;

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    fn key(id: u32) -> ContinuationKey {
        ContinuationKey::new(id, [id as u8; 32])
    }

    fn args() -> Value {
        json!({"query": "needle", "path": "src", "limit": 10})
    }

    fn binding(request: &Value) -> Binding<'_> {
        Binding::new("search_text", "session-1", request)
            .with_scope("root=/repo")
            .with_snapshot("rev-1")
    }

    /// A clock the test moves by hand.
    fn manual_clock(start: SystemTime) -> (Arc<Mutex<SystemTime>>, impl Fn() -> SystemTime) {
        let time = Arc::new(Mutex::new(start));
        let read = Arc::clone(&time);
        (time, move || *read.lock().expect("clock lock"))
    }

    fn advance(clock: &Mutex<SystemTime>, by: Duration) {
        let mut now = clock.lock().expect("clock lock");
        *now += by;
    }

    fn code(result: Result<u64, ToolError>) -> Option<String> {
        result.err().and_then(|e| e.code().map(str::to_owned))
    }

    #[test]
    fn round_trip_returns_the_position() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 40).expect("seal");
        assert_eq!(token.len(), TOKEN_CHARS);
        assert_eq!(TOKEN_CHARS, 24);
        assert!(token.bytes().all(|b| ALPHABET.contains(&b)));
        assert_eq!(c.open(&token, &binding(&request)).expect("open"), 40);
    }

    #[test]
    fn a_token_carries_nothing_of_its_binding() {
        // Tokens are deterministic: what they are bound to never travels, only tags of it, so
        // two calls sealing one position in one second get one text, and another request's
        // token of that position differs only in its tags.
        let c = Continuations::new(key(1))
            .with_clock(|| UNIX_EPOCH + Duration::from_secs(1_700_000_000));
        let request = args();
        let other = json!({"query": "other", "path": "src", "limit": 10});
        let a = c.seal(&binding(&request), 1).expect("seal");
        assert_eq!(a, c.seal(&binding(&request), 1).expect("seal"));
        let b = URL_SAFE_NO_PAD
            .decode(c.seal(&binding(&other), 1).expect("seal"))
            .expect("decodes");
        let a = URL_SAFE_NO_PAD.decode(a).expect("decodes");
        assert_eq!(a[..6], b[..6], "the lead byte, position and expiry");
        assert_ne!(a[6..], b[6..], "the tags");
    }

    #[test]
    fn tokens_grow_with_the_position_only() {
        let c = Continuations::new(key(1));
        let request = args();
        for (position, chars) in [
            (0, 24),
            (127, 24),
            (128, 26),
            (16_383, 26),
            (16_384, 27),
            (u64::MAX, MAX_TOKEN_LEN),
        ] {
            let token = c.seal(&binding(&request), position).expect("seal");
            assert_eq!(token.len(), chars, "{position}");
            assert_eq!(c.open(&token, &binding(&request)).expect("open"), position);
        }
        const { assert!(MAX_TOKEN_LEN <= MAX_TOKEN_CHARS) };
    }

    #[test]
    fn every_single_bit_flip_is_invalid() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 7).expect("seal");
        let bytes = URL_SAFE_NO_PAD.decode(&token).expect("own token decodes");
        assert_eq!(bytes.len(), MIN_TOKEN_BYTES);
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[index] ^= 1 << bit;
                let text = URL_SAFE_NO_PAD.encode(&flipped);
                let result = c.open(&text, &binding(&request));
                assert_eq!(
                    code(result).as_deref(),
                    Some(INVALID_CONTINUATION),
                    "byte {index} bit {bit}"
                );
            }
        }
    }

    #[test]
    fn every_single_character_substitution_is_refused() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 7).expect("seal");
        let original = token.as_bytes();
        for index in 0..original.len() {
            for &replacement in ALPHABET {
                if replacement == original[index] {
                    continue;
                }
                let mut changed = original.to_vec();
                changed[index] = replacement;
                let text = String::from_utf8(changed).expect("ascii");
                let result = c.open(&text, &binding(&request));
                assert_eq!(
                    code(result).as_deref(),
                    Some(INVALID_CONTINUATION),
                    "char {index} -> {}",
                    replacement as char
                );
            }
        }
    }

    #[test]
    fn trailing_bits_are_not_canonical() {
        let mut out = [0u8; 4];
        // "QQ" is the one canonical text of the byte 0x41; "QR".."QZ" differ only in trailing bits.
        assert_eq!(decode_canonical("QQ", &mut out), Some(1));
        for text in ["QR", "QS", "QZ", "Qf"] {
            assert_eq!(decode_canonical(text, &mut out), None, "{text}");
        }
        assert_eq!(decode_canonical("QQ==", &mut out), None, "padding");
        assert_eq!(decode_canonical("+/8", &mut out), None, "standard alphabet");
    }

    #[test]
    fn malformed_texts_are_invalid() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 3).expect("seal");
        let cases = [
            String::new(),
            "x".repeat(MAX_TOKEN_CHARS + 1),
            "A".repeat(100_000),
            format!("{token}A"),
            token[..TOKEN_CHARS - 1].to_owned(),
            token[..TOKEN_CHARS - 4].to_owned(),
            format!("{token}=="),
            format!("{}=", &token[..TOKEN_CHARS - 1]),
            token.replacen(|ch: char| ch.is_ascii_alphanumeric(), "+", 1),
            token.replacen(|ch: char| ch.is_ascii_alphanumeric(), "/", 1),
            token.replacen(|ch: char| ch.is_ascii_alphanumeric(), "é", 1),
            format!(" {token}"),
            "🦀".repeat(47),
            "\0".repeat(TOKEN_CHARS),
        ];
        for case in cases {
            let error = c.open(&case, &binding(&request)).expect_err("refused");
            assert_eq!(error.code(), Some(INVALID_CONTINUATION), "{case:?}");
            assert_eq!(error.category(), crate::Category::Validation);
            assert!(!error.retryable());
        }
    }

    #[test]
    fn length_is_capped_before_decoding() {
        let c = Continuations::new(key(1));
        let request = args();
        let long = "A".repeat(MAX_TOKEN_CHARS + 4);
        assert_eq!(
            c.open_checked(&long, &binding(&request)),
            Err(Reject::TooLong)
        );
        assert_eq!(
            c.open_checked("AAAA", &binding(&request)),
            Err(Reject::Length)
        );
    }

    #[test]
    fn one_message_per_code() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 3).expect("seal");
        let mut tampered = URL_SAFE_NO_PAD.decode(&token).expect("decodes");
        tampered[MIN_TOKEN_BYTES - 1] ^= 1;
        let texts = [
            "!!".to_owned(),
            "AAAA".to_owned(),
            URL_SAFE_NO_PAD.encode(tampered),
        ];
        let messages: Vec<_> = texts
            .iter()
            .map(|t| {
                let e = c.open(t, &binding(&request)).expect_err("refused");
                (e.message().to_owned(), e.hint().map(str::to_owned))
            })
            .collect();
        assert!(messages.windows(2).all(|w| w[0] == w[1]), "{messages:?}");
    }

    #[test]
    fn other_tool_session_request_or_scope_is_a_scope_mismatch() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 5).expect("seal");
        let other_request = json!({"query": "other", "path": "src", "limit": 10});
        let cases = [
            Binding::new("list_files", "session-1", &request)
                .with_scope("root=/repo")
                .with_snapshot("rev-1"),
            Binding::new("search_text", "session-2", &request)
                .with_scope("root=/repo")
                .with_snapshot("rev-1"),
            binding(&other_request),
            binding(&request).with_scope("root=/elsewhere"),
            // Scope mismatch wins over a moved snapshot: the token is not this call's at all.
            binding(&other_request).with_snapshot("rev-2"),
        ];
        for case in cases {
            let error = c.open(&token, &case).expect_err("refused");
            assert_eq!(error.code(), Some(CONTINUATION_SCOPE_MISMATCH), "{case:?}");
            assert_eq!(error.category(), crate::Category::Validation);
        }
    }

    #[test]
    fn changed_limit_and_reordered_keys_are_accepted() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 5).expect("seal");
        let reordered: Value =
            serde_json::from_str(r#"{"limit": 99, "path": "src", "query": "needle"}"#)
                .expect("json");
        assert_eq!(c.open(&token, &binding(&reordered)).expect("open"), 5);
        let with_token = json!({"query": "needle", "path": "src", "continuation": token});
        assert_eq!(c.open(&token, &binding(&with_token)).expect("open"), 5);
    }

    #[test]
    fn renamed_page_fields_leave_the_digest() {
        let c = Continuations::new(key(1));
        let first = json!({"q": "x", "max_results": 5});
        let later = json!({"q": "x", "max_results": 50, "cursor": "t"});
        let bind = |request| {
            Binding::new("t", "s", request)
                .with_limit_field("max_results")
                .with_continuation_field("cursor")
        };
        let token = c.seal(&bind(&first), 5).expect("seal");
        assert_eq!(c.open(&token, &bind(&later)).expect("open"), 5);
        // Under the default names `max_results` is an ordinary argument.
        let token = c.seal(&Binding::new("t", "s", &first), 5).expect("seal");
        assert_eq!(
            code(c.open(&token, &Binding::new("t", "s", &later))).as_deref(),
            Some(CONTINUATION_SCOPE_MISMATCH)
        );
    }

    #[test]
    fn moved_snapshot_is_stale() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 5).expect("seal");
        let error = c
            .open(&token, &binding(&request).with_snapshot("rev-2"))
            .expect_err("stale");
        assert_eq!(error.code(), Some(STALE_CONTINUATION));
        assert!(
            error
                .hint()
                .is_some_and(|h| h.contains("without `continuation`"))
        );
        assert!(!error.retryable());
    }

    #[test]
    fn expired_token_is_stale() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let (clock, now) = manual_clock(start);
        let c = Continuations::new(key(1))
            .with_ttl(Duration::from_secs(60))
            .with_clock(now);
        let request = args();
        let token = c.seal(&binding(&request), 5).expect("seal");
        advance(&clock, Duration::from_secs(59));
        assert_eq!(c.open(&token, &binding(&request)).expect("open"), 5);
        advance(&clock, Duration::from_secs(1));
        assert_eq!(
            code(c.open(&token, &binding(&request))).as_deref(),
            Some(STALE_CONTINUATION)
        );
    }

    #[test]
    fn old_key_opens_within_grace_only() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let (clock, now) = manual_clock(start);
        let mut c = Continuations::new(key(1))
            .with_ttl(Duration::from_secs(10_000))
            .with_clock(now);
        let request = args();
        let old = c.seal(&binding(&request), 5).expect("seal");
        c.rotate(key(2), Duration::from_secs(600)).expect("rotate");
        assert_eq!(c.key_ring().current_id(), 2);
        let new = c.seal(&binding(&request), 6).expect("seal");
        assert_eq!(
            URL_SAFE_NO_PAD.decode(&new).expect("decodes")[0],
            seal::lead_byte(VERSION, 2)
        );

        advance(&clock, Duration::from_secs(599));
        assert_eq!(c.open(&old, &binding(&request)).expect("in grace"), 5);
        advance(&clock, Duration::from_secs(1));
        assert_eq!(
            code(c.open(&old, &binding(&request))).as_deref(),
            Some(INVALID_CONTINUATION)
        );
        assert_eq!(c.open(&new, &binding(&request)).expect("current"), 6);
    }

    #[test]
    fn unknown_key_id_is_invalid() {
        let request = args();
        let sealer = Continuations::new(key(9));
        let token = sealer.seal(&binding(&request), 5).expect("seal");
        let opener = Continuations::new(key(1));
        assert_eq!(
            code(opener.open(&token, &binding(&request))).as_deref(),
            Some(INVALID_CONTINUATION)
        );
        assert_eq!(
            opener.open_checked(&token, &binding(&request)),
            Err(Reject::UnknownKey)
        );
    }

    #[test]
    fn same_key_id_with_other_bytes_is_invalid() {
        let request = args();
        let token = Continuations::new(ContinuationKey::new(1, [1; 32]))
            .seal(&binding(&request), 5)
            .expect("seal");
        let other = Continuations::new(ContinuationKey::new(1, [2; 32]));
        assert_eq!(
            code(other.open(&token, &binding(&request))).as_deref(),
            Some(INVALID_CONTINUATION)
        );
    }

    #[test]
    fn a_second_process_with_the_same_key_opens_the_token() {
        let hex = "00112233445566778899aabbccddeeff00112233445566778899AABBCCDDEEFF";
        let first = Continuations::new(ContinuationKey::from_hex(3, hex).expect("key"));
        let request = args();
        let token = first.seal(&binding(&request), 12).expect("seal");
        drop(first);
        let second =
            Continuations::new(ContinuationKey::from_hex(3, &format!("  {hex}\n")).expect("key"));
        // The second process parsed its own copy of the arguments.
        let request_again: Value = serde_json::from_str(&request.to_string()).expect("json");
        assert_eq!(
            second.open(&token, &binding(&request_again)).expect("open"),
            12
        );
    }

    #[test]
    fn key_text_errors_are_typed_and_never_echo_the_key() {
        let short = "abcd";
        let error = ContinuationKey::from_hex(1, short).expect_err("short");
        assert!(matches!(error, KeyError::Length { found: 4 }));
        let not_hex = "zz".repeat(32);
        let error = ContinuationKey::from_hex(1, &not_hex).expect_err("not hex");
        assert!(matches!(error, KeyError::NotHex));
        assert!(!error.to_string().contains("zz"));
        let multibyte = "é".repeat(64);
        assert!(matches!(
            ContinuationKey::from_hex(1, &multibyte),
            Err(KeyError::NotHex)
        ));
        assert!(matches!(
            ContinuationKey::from_hex(1, &"0".repeat(66)),
            Err(KeyError::Length { found: 66 })
        ));
    }

    #[test]
    fn debug_never_prints_key_bytes() {
        let key = ContinuationKey::new(4, [0xAB; 32]);
        let deadline = UNIX_EPOCH + Duration::from_secs(1_000);
        let ring = KeyRing::new(key.clone())
            .with_retired(ContinuationKey::new(5, [0xCD; 32]), deadline)
            .expect("distinct ids");
        let text = format!("{key:?} {ring:?} {:?}", Continuations::new(ring.clone()));
        for needle in ["171, 171", "205, 205", "abab", "ABAB", "cdcd", "CDCD"] {
            assert!(!text.contains(needle), "{needle} in {text}");
        }
        assert!(text.contains("ContinuationKey { id: 5, .. }"), "{text}");
    }

    #[test]
    fn generated_keys_are_distinct_and_work() {
        let a = ContinuationKey::generate(1).expect("random");
        let b = ContinuationKey::generate(1).expect("random");
        let request = args();
        let token = Continuations::new(a.clone())
            .seal(&binding(&request), 1)
            .expect("seal");
        assert_eq!(
            Continuations::new(a)
                .open(&token, &binding(&request))
                .expect("open"),
            1
        );
        assert!(
            Continuations::new(b)
                .open(&token, &binding(&request))
                .is_err()
        );
    }

    #[test]
    fn key_ids_are_unique_in_a_ring() {
        let ring = KeyRing::new(key(1));
        assert!(matches!(
            ring.clone().with_retired(key(1), SystemTime::now()),
            Err(KeyError::DuplicateId(1))
        ));
        let mut ring = ring
            .with_retired(key(2), SystemTime::now() + Duration::from_secs(60))
            .expect("distinct");
        assert!(matches!(
            ring.rotate(key(2), SystemTime::now(), Duration::ZERO),
            Err(KeyError::DuplicateId(2))
        ));
        assert!(matches!(
            ring.rotate(key(3), SystemTime::now(), Duration::MAX),
            Err(KeyError::GraceTooLong)
        ));
        assert_eq!(ring.current_id(), 1, "a failed rotation changes nothing");
    }

    #[test]
    fn retired_key_from_configuration_opens_until_its_deadline() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let request = args();
        let token = Continuations::new(key(1))
            .with_clock(move || start)
            .seal(&binding(&request), 2)
            .expect("seal");
        // A restarted server reads the new key and the previous one with its deadline.
        let (clock, now) = manual_clock(start);
        let ring = KeyRing::new(key(2))
            .with_retired(key(1), start + Duration::from_secs(30))
            .expect("distinct");
        let c = Continuations::new(ring).with_clock(now);
        assert_eq!(c.open(&token, &binding(&request)).expect("open"), 2);
        advance(&clock, Duration::from_secs(30));
        assert_eq!(
            code(c.open(&token, &binding(&request))).as_deref(),
            Some(INVALID_CONTINUATION)
        );
    }

    #[test]
    fn page_starts_at_zero_with_the_default_size() {
        let c = Continuations::new(key(1));
        let request = args();
        let page = c.page(&binding(&request), PageArgs::new(25)).expect("page");
        assert_eq!(page, Page { start: 0, size: 25 });
    }

    #[test]
    fn page_resumes_from_a_token_with_a_new_size() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c
            .next(&binding(&request), 0, 10, 35)
            .expect("seal")
            .expect("more rows");
        let page = c
            .page(
                &binding(&request),
                PageArgs::new(25)
                    .with_limit(Some(40))
                    .with_continuation(Some(&token)),
            )
            .expect("page");
        assert_eq!(
            page,
            Page {
                start: 10,
                size: 40
            }
        );
        assert_eq!(page.range(35), 10..35);
    }

    #[test]
    fn zero_limit_is_refused() {
        let c = Continuations::new(key(1));
        let request = args();
        let error = c
            .page(&binding(&request), PageArgs::new(25).with_limit(Some(0)))
            .expect_err("zero");
        assert_eq!(error.code(), Some(INVALID_LIMIT));
        assert_eq!(error.category(), crate::Category::Validation);
        let error = c
            .page(&binding(&request), PageArgs::new(0))
            .expect_err("zero default");
        assert_eq!(error.code(), Some(INVALID_LIMIT));
    }

    #[test]
    fn legacy_offset_alone_is_the_start() {
        let c = Continuations::new(key(1));
        let request = args();
        for args in [
            PageArgs::new(25).with_offset(Some(30)),
            PageArgs::new(25).with_resume_from(Some(30)),
        ] {
            let page = c.page(&binding(&request), args).expect("page");
            assert_eq!(
                page,
                Page {
                    start: 30,
                    size: 25
                }
            );
        }
    }

    #[test]
    fn offset_with_a_token_is_mixed() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 10).expect("seal");
        for args in [
            PageArgs::new(25)
                .with_continuation(Some(&token))
                .with_offset(Some(0)),
            PageArgs::new(25)
                .with_continuation(Some("garbage"))
                .with_resume_from(Some(3)),
            PageArgs::new(25)
                .with_offset(Some(1))
                .with_resume_from(Some(3)),
        ] {
            let error = c.page(&binding(&request), args).expect_err("mixed");
            assert_eq!(error.code(), Some(MIXED_CONTINUATION_FORMS), "{args:?}");
            assert!(!error.retryable());
        }
    }

    #[test]
    fn page_passes_token_errors_through() {
        let c = Continuations::new(key(1));
        let request = args();
        let error = c
            .page(
                &binding(&request),
                PageArgs::new(25).with_continuation(Some("nope")),
            )
            .expect_err("invalid");
        assert_eq!(error.code(), Some(INVALID_CONTINUATION));
    }

    #[test]
    fn next_only_when_rows_remain_and_paging_advances() {
        let c = Continuations::new(key(1));
        let request = args();
        let b = binding(&request);
        assert!(c.next(&b, 0, 10, 11).expect("seal").is_some());
        assert_eq!(c.next(&b, 0, 10, 10).expect("seal"), None);
        assert_eq!(c.next(&b, 5, 10, 12).expect("seal"), None);
        assert_eq!(c.next(&b, 3, 0, 12).expect("seal"), None, "no progress");
        assert_eq!(c.next(&b, usize::MAX, 1, usize::MAX).expect("seal"), None);
    }

    #[test]
    fn paging_through_yields_every_row_once() {
        let c = Continuations::new(key(1));
        let rows: Vec<usize> = (0..103).collect();
        let mut seen = Vec::new();
        let mut token: Option<String> = None;
        let mut calls = 0;
        loop {
            calls += 1;
            assert!(calls < 100, "paging must terminate");
            let limit = 7 + calls % 5; // The agent changes the page size as it goes.
            let request = json!({"query": "needle", "path": "src", "limit": limit});
            let b = binding(&request);
            let page = c
                .page(
                    &b,
                    PageArgs::new(10)
                        .with_limit(Some(limit))
                        .with_continuation(token.as_deref()),
                )
                .expect("page");
            let sent = &rows[page.range(rows.len())];
            seen.extend_from_slice(sent);
            token = c
                .next(&b, page.start, sent.len(), rows.len())
                .expect("seal");
            if token.is_none() {
                break;
            }
        }
        assert_eq!(seen, rows);
    }

    #[test]
    fn page_range_never_panics() {
        assert_eq!(
            Page {
                start: usize::MAX,
                size: usize::MAX
            }
            .range(3),
            3..3
        );
        assert_eq!(
            Page {
                start: 0,
                size: usize::MAX
            }
            .range(3),
            0..3
        );
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_opens(text in ".{0,300}") {
            let c = Continuations::new(key(1));
            let request = args();
            prop_assert!(c.open(&text, &binding(&request)).is_err());
        }

        #[test]
        fn arbitrary_base64url_never_opens(text in "[A-Za-z0-9_-]{24,40}") {
            let c = Continuations::new(key(1));
            let request = args();
            let error = c.open(&text, &binding(&request)).expect_err("refused");
            prop_assert_eq!(error.code(), Some(INVALID_CONTINUATION));
        }

        #[test]
        fn arbitrary_token_bytes_never_open(bytes in proptest::collection::vec(any::<u8>(), MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES)) {
            let c = Continuations::new(key(1));
            let request = args();
            let mut bytes = bytes;
            // Give the fuzzer a fair chance to reach the seal: a valid lead byte.
            bytes[0] = seal::lead_byte(VERSION, 1);
            let text = URL_SAFE_NO_PAD.encode(&bytes);
            let error = c.open(&text, &binding(&request)).expect_err("refused");
            prop_assert_eq!(error.code(), Some(INVALID_CONTINUATION));
        }
    }
}

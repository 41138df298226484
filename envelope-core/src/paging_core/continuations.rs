//! [`Continuations`]: a position sealed into a token and opened again, the order of the checks
//! a returned token passes, and the one error per code that a refused token gets.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use super::binding::Binding;
use super::codes::{CONTINUATION_SCOPE_MISMATCH, INVALID_CONTINUATION, STALE_CONTINUATION};
use super::keys::{ContinuationKey, KeyError, KeyRing};
use super::pasted::{Sealed, mispasted};
use super::seal::{self, Reader, decode_canonical, unix_seconds};
use super::token::{
    DECODE_BUFFER, MAX_TOKEN_BYTES, MAX_TOKEN_CHARS, MIN_TOKEN_BYTES, SEAL_LABEL, TAG_LEN, VERSION,
};
use crate::tool_error::ToolError;

/// How long a token stays valid unless [`Continuations::with_ttl`] says otherwise.
pub const DEFAULT_TTL: Duration = Duration::from_secs(60 * 60);

/// Why a token was refused. Only the code reaches the agent; the reason is for tests and the
/// server log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Reject {
    TooLong,
    Encoding,
    Length,
    Version,
    UnknownKey,
    Tampered,
    Scope,
    /// The token is this call's but for the dialect: it was issued in this one.
    Dialect(crate::dialect::Dialect),
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
            Reject::Dialect(_) => "dialect",
            Reject::SnapshotMoved => "snapshot_moved",
            Reject::Expired => "expired",
        }
    }

    /// The agent-facing error: one fixed message per code, whatever the reason behind it.
    pub(super) fn into_error(self, binding: &Binding<'_>) -> ToolError {
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
            Reject::Dialect(issued) => binding.dialect.continuation_from(issued, field),
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
/// [`TOKEN_CHARS`]: super::TOKEN_CHARS
/// [`TOKEN_LAYOUT`]: super::TOKEN_LAYOUT
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
    pub(super) keys: KeyRing,
    pub(super) ttl: Duration,
    pub(super) clock: Arc<ClockFn>,
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
            let field = binding.continuation_field;
            match (reject, self.recognize(token)) {
                // A target ref under `continuation`: the copy went to the wrong argument.
                (_, Some(found @ Sealed::TargetRef)) => {
                    mispasted(field, Sealed::Continuation, Some(found))
                }
                // No token as written (quoted, cut short, padded): the copy went wrong.
                (Reject::TooLong | Reject::Encoding | Reject::Length, _) => {
                    mispasted(field, Sealed::Continuation, None)
                }
                (reject, _) => reject.into_error(binding),
            }
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
        // The layout is read before the seal is checked, so that a long token cut short (its
        // position's length no longer adds up) is told from one edited in place.
        let mut reader = Reader(&head[1..]);
        let position = reader.varint().ok_or(Reject::Length)?;
        let expires_at = u32::from_be_bytes(reader.take().ok_or(Reject::Length)?);
        if !reader.rest().is_empty() {
            return Err(Reject::Length);
        }
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
        let (bound, snapshot) = binding.check_tags(key, head, tags);
        if !bound {
            return Err(match binding.issued_in(key, head, tags) {
                Some(issued) => Reject::Dialect(issued),
                None => Reject::Scope,
            });
        }
        if !snapshot {
            return Err(Reject::SnapshotMoved);
        }
        if unix_seconds(now) >= u64::from(expires_at) {
            return Err(Reject::Expired);
        }
        Ok(position)
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

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::UNIX_EPOCH;

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;
    use serde_json::{Value, json};

    use super::*;
    use crate::paging_core::fixtures::{args, binding, key};
    use crate::paging_core::token::{MAX_TOKEN_LEN, TOKEN_CHARS};
    use crate::paging_core::{INVALID_ARGUMENT, NEXT_PAGE};

    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

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

    /// The code a changed token of `bytes` gets: laid out as a token (the position's length
    /// adds up), it fails the seal; else it is no token as written, a copy gone wrong.
    fn expected_code(bytes: &[u8]) -> &'static str {
        let Some(head) = bytes.get(1..bytes.len().saturating_sub(3 * TAG_LEN)) else {
            return INVALID_ARGUMENT;
        };
        let mut layout = Reader(head);
        let laid_out = (MIN_TOKEN_BYTES..=MAX_TOKEN_BYTES).contains(&bytes.len())
            && layout.varint().is_some()
            && layout.take::<4>().is_some()
            && layout.rest().is_empty();
        if laid_out {
            INVALID_CONTINUATION
        } else {
            INVALID_ARGUMENT
        }
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
    fn every_single_bit_flip_is_refused() {
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
                    Some(expected_code(&flipped)),
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
                let expected = URL_SAFE_NO_PAD
                    .decode(&text)
                    .map_or(INVALID_ARGUMENT, |bytes| expected_code(&bytes));
                assert_eq!(
                    code(result).as_deref(),
                    Some(expected),
                    "char {index} -> {}",
                    replacement as char
                );
            }
        }
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
        // Each is no token as this server writes them: a copy gone wrong, named as such, with
        // the argument and the action to copy instead.
        for case in cases {
            let error = c.open(&case, &binding(&request)).expect_err("refused");
            assert_eq!(error.code(), Some(INVALID_ARGUMENT), "{case:?}");
            assert_eq!(error.category(), crate::Category::Validation);
            assert!(!error.retryable());
            let data = error.data().expect("data");
            assert_eq!(data["field"], "continuation");
            assert_eq!(data["action"], NEXT_PAGE);
        }
    }

    #[test]
    fn a_long_token_cut_short_is_a_copy_gone_wrong() {
        // Past position 127 the position takes two bytes: a token cut by a few characters can
        // still decode to a token's length, but its layout no longer adds up.
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 50_000).expect("seal");
        assert!(token.len() > TOKEN_CHARS, "{token}");
        for cut in 1..=token.len() - 8 {
            let error = c
                .open(&token[..token.len() - cut], &binding(&request))
                .expect_err("refused");
            assert_eq!(error.code(), Some(INVALID_ARGUMENT), "cut {cut}");
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
                (
                    e.code().map(str::to_owned),
                    e.message().to_owned(),
                    e.hint().map(str::to_owned),
                )
            })
            .collect();
        // Two texts that are no token share one answer; the tampered token has its code's.
        assert_eq!(messages[0], messages[1]);
        assert_eq!(messages[0].0.as_deref(), Some(INVALID_ARGUMENT));
        assert_eq!(messages[2].0.as_deref(), Some(INVALID_CONTINUATION));
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
            // A length no token has is a copy gone wrong; the others fail the seal.
            prop_assert!(
                matches!(error.code(), Some(INVALID_CONTINUATION | INVALID_ARGUMENT)),
                "{:?}", error.code()
            );
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
            prop_assert_eq!(error.code(), Some(expected_code(&bytes)));
        }
    }
}

//! Stateless target refs: one short, sealed ref for every result of a page (the hits of a
//! search), which a follow-up tool accepts, with the result's own location, to act on one of
//! them as it was.
//!
//! A ref is sealed with the same [`KeyRing`](super::KeyRing) as continuations. It rides once on
//! a page, not on every row, so it carries as little as it can: for each target (a file a hit
//! is in) a 16-bit tag of the target's name and a 24-bit tag of its name and a snapshot of its
//! data (the first tells a target the ref never covered from one that changed), an expiry, an optional
//! payload of bytes in the clear (say, the search to offer again), and HMAC-SHA256 tags binding it to
//! the tool family that may open it, the caller and the scope. The follow-up names the target
//! (the row has its location), so nothing else needs to travel; nothing is stored on the
//! server, and any replica holding the key opens it.
//!
//! Opening is two steps, because the snapshot to compare depends on the target: the ref is
//! checked ([`Continuations::open_target`]: seal, then family, caller and scope), then the tool
//! digests the target's data as it is now and [`OpenedTarget::check_snapshot`] refuses a
//! target whose data moved (`STALE_TARGET_SNAPSHOT`), or which the ref does not cover
//! (`TARGET_NOT_IN_REF`).
//!
//! Refs join: the refs of consecutive pages of one walk, written one after another with a `.`
//! between them (a character no ref holds), are one ref to every target of those pages. A
//! client that merges pages into one gives the merged page that one ref, so each of its rows
//! is reached by a ref the model copies as given. Each part keeps its own seal and binding, so
//! a joined ref reaches nothing its parts did not.
//!
//! Invariant: nothing here panics on any input; each refusal has one fixed message per code.

use std::time::SystemTime;

use super::pasted::{Sealed, mispasted};
use super::seal::{self, Reader, decode_canonical, unix_seconds};
use super::token::{MAX_TOKEN_CHARS, SEAL_LABEL, TAG_LEN, VERSION};
use super::{ContinuationKey, Continuations, Snapshot};
use crate::tool_error::{Category, ToolError};

/// Code of a ref laid out as this server writes them but edited in place (its seal fails), or
/// sealed by a key this server does not accept. Text that is no ref as written (quoted, cut
/// short, padded, a count that no longer adds up) is `invalid_argument`.
pub const INVALID_TARGET_REF: &str = crate::fields::code::INVALID_TARGET_REF;
/// Code of a genuine ref presented to another tool family, by another caller or in another
/// scope.
pub const TARGET_SCOPE_MISMATCH: &str = crate::fields::code::TARGET_SCOPE_MISMATCH;
/// Code of a genuine ref whose target's data changed since it was issued, or which expired.
pub const STALE_TARGET_SNAPSHOT: &str = crate::fields::code::STALE_TARGET_SNAPSHOT;
/// Code of a genuine, fresh ref whose target no longer exists.
pub const TARGET_NOT_FOUND: &str = crate::fields::code::TARGET_NOT_FOUND;
/// Code of a call that passes a ref together with plain location arguments.
pub const CONFLICTING_TARGET_INPUT: &str = crate::fields::code::CONFLICTING_TARGET_INPUT;
/// Code of a genuine ref asked for a target it does not hold (a row of another page, or a
/// location the search never returned): nothing changed, the ref is simply not that row's.
pub const TARGET_NOT_IN_REF: &str = crate::fields::code::TARGET_NOT_IN_REF;

/// Every target-ref error code: `(code, category, when, what the agent does)`. Each code has
/// one fixed message; none is retryable as it stands. The contract docs are generated from
/// this table.
pub const TARGET_CODES: [(&str, Category, &str, &str); 6] = [
    (
        INVALID_TARGET_REF,
        Category::Validation,
        "The ref was edited in place, or sealed by a key this server does not accept.",
        "Pass refs back exactly as received; run the search again for fresh ones.",
    ),
    (
        TARGET_SCOPE_MISMATCH,
        Category::Validation,
        "The ref was issued for another tool family, caller or scope.",
        "Use the ref with the tools the issuing result names, or run the search again here.",
    ),
    (
        STALE_TARGET_SNAPSHOT,
        Category::Validation,
        "What the ref points into changed since it was issued, or the ref expired.",
        "Follow the recovery action: it runs the search again for a fresh ref.",
    ),
    (
        TARGET_NOT_IN_REF,
        Category::Validation,
        "The ref is genuine and fresh but holds no target at the location named: the row came from another page, or the search never returned it. Nothing changed.",
        "Pass the ref of the page the row came from (a merged page's one ref covers all its rows); do not search again.",
    ),
    (
        TARGET_NOT_FOUND,
        Category::NotFound,
        "The ref is genuine and fresh, but its target no longer exists.",
        "Run the search again; the target is gone.",
    ),
    (
        CONFLICTING_TARGET_INPUT,
        Category::Validation,
        "A ref was sent together with location arguments it does not take (a range).",
        "Send the ref with its target's own location only, or the plain location without it.",
    ),
];

/// The most targets one ref covers (a page's distinct files).
pub const MAX_TARGETS_PER_REF: usize = 1_024;
/// The most payload a ref may carry, in bytes. Every byte costs the agent about a token on
/// every page, so a tool keeps it short.
pub const MAX_TARGET_BYTES: usize = 128;
/// The longest ref a server seals, in characters.
pub const MAX_TARGET_REF_CHARS: usize = (MAX_REF_BYTES * 4).div_ceil(3);
/// What joins the refs of consecutive pages into one: no ref holds it.
pub const TARGET_REF_JOIN: char = '.';
/// The most refs one joined ref holds (the pages one merged page was made of).
pub const MAX_JOINED_REFS: usize = 64;
/// Texts longer than this are refused before any decoding: the longest joined ref.
pub const MAX_JOINED_REF_CHARS: usize = MAX_JOINED_REFS * (MAX_TARGET_REF_CHARS + 1) - 1;
/// A ref's length in characters for one target and no payload; each further target adds
/// [`TARGET_REF_CHARS_PER_TARGET`] (about), each payload byte about one and a third.
pub const TARGET_REF_MIN_CHARS: usize = ((FIXED_LEN + 1 + ENTRY_LEN + 1) * 4).div_ceil(3);
/// About how many characters each target after the first adds to a ref.
pub const TARGET_REF_CHARS_PER_TARGET: usize = (ENTRY_LEN * 4).div_ceil(3);
/// The layout of a target ref, field by field: `(bytes, field)`. The contract docs are
/// generated from this table.
pub const TARGET_REF_LAYOUT: [(&str, &str); 7] = [
    (
        "1",
        "format version (4) in the high four bits, the low four bits of the sealing key's id in the low four",
    ),
    ("4", "expiry: Unix seconds, big-endian"),
    ("1–2", "how many targets, an unsigned LEB128 varint"),
    (
        "5 each",
        "per target: 2 bytes of HMAC-SHA256 of its name (a path), then 3 of HMAC-SHA256 of its name and the snapshot of its data (size and modification time)",
    ),
    (
        "1–2 + n",
        "the payload's length, a varint, then the payload: bytes in the clear, such as the search to offer again",
    ),
    (
        "6",
        "binding tag: HMAC-SHA256 of the bytes before it with the tool family, the caller and the scope",
    ),
    ("4", "seal: HMAC-SHA256 of every byte before it"),
];

// Layout: lead ‖ expiry ‖ count ‖ entries ‖ payload length ‖ payload ‖ binding tag ‖ seal.
// Version 3 held only the second tag of an entry, so it could not tell a target it never
// covered from one that changed.
const TARGET_VERSION: u8 = 4;
// An entry: the name's tag, then the name-and-snapshot tag.
const NAME_LEN: usize = 2;
const STATE_LEN: usize = 3;
const ENTRY_LEN: usize = NAME_LEN + STATE_LEN;
// 48 bits: a ref is never authorization, and each guess at another binding's tag is a call.
const BIND_LEN: usize = 6;
const SEAL_LEN: usize = 4;
const FIXED_LEN: usize = 1 + 4 + BIND_LEN + SEAL_LEN;
const MAX_REF_BYTES: usize = FIXED_LEN + 2 + ENTRY_LEN * MAX_TARGETS_PER_REF + 2 + MAX_TARGET_BYTES;
const NAME_LABEL: &str = "envelope/target/v4/name";
const ENTRY_LABEL: &str = "envelope/target/v4/entry";
const BIND_LABEL: &str = "envelope/target/v4/bind";
const TARGET_SEAL_LABEL: &str = "envelope/target/v4/seal";

/// What a target ref is bound to, besides the snapshots of its targets' data.
///
/// ```
/// use envelope_core::paging::{ContinuationKey, Continuations, TargetBinding};
///
/// let refs = Continuations::new(ContinuationKey::new(1, [7; 32]));
/// let binding = TargetBinding::new("workspace.file", "").with_scope("/srv/repo");
/// // One ref for a page's hits in two files, with the search to offer again.
/// let sealed = refs.seal_target(
///     &binding,
///     &[("src/lib.rs", &"size=120;mtime=7"), ("src/a.rs", &"size=9;mtime=3")],
///     Some(b"needle"),
/// )?;
///
/// let opened = refs.open_target(&sealed, &binding, "target_ref")?;
/// assert_eq!(opened.payload(), Some(&b"needle"[..]));
/// // The tool digests the file the follow-up names, as it is now.
/// opened.check_snapshot("src/lib.rs", "size=120;mtime=7")?;
/// let changed = opened.check_snapshot("src/lib.rs", "size=121;mtime=9").unwrap_err();
/// assert_eq!(changed.code(), Some("STALE_TARGET_SNAPSHOT"));
/// let elsewhere = opened.check_snapshot("src/other.rs", "size=120;mtime=7").unwrap_err();
/// assert_eq!(elsewhere.code(), Some("TARGET_NOT_IN_REF"));
///
/// // The refs of two pages, joined, reach the targets of both.
/// let next = refs.seal_target(&binding, &[("src/b.rs", &"size=4;mtime=2")], Some(b"needle"))?;
/// let joined = format!("{sealed}.{next}");
/// let opened = refs.open_target(&joined, &binding, "target_ref")?;
/// opened.check_snapshot("src/lib.rs", "size=120;mtime=7")?;
/// opened.check_snapshot("src/b.rs", "size=4;mtime=2")?;
/// # Ok::<(), envelope_core::ToolError>(())
/// ```
#[derive(Debug, Clone, Copy)]
pub struct TargetBinding<'a> {
    family: &'a str,
    session: &'a str,
    scope: &'a str,
}

impl<'a> TargetBinding<'a> {
    /// A binding to the tool family that may open the ref (the issuing tool and its
    /// follow-ups agree on the name) and the caller (a principal; empty for anyone holding the
    /// ref), with an empty scope.
    pub fn new(family: &'a str, session: &'a str) -> Self {
        TargetBinding {
            family,
            session,
            scope: "",
        }
    }

    /// What the ref reaches, such as the workspace root.
    #[must_use]
    pub fn with_scope(mut self, scope: &'a str) -> Self {
        self.scope = scope;
        self
    }

    fn parts<'b>(&'b self, head: &'b [u8]) -> [&'b [u8]; 4] {
        [
            head,
            self.family.as_bytes(),
            self.session.as_bytes(),
            self.scope.as_bytes(),
        ]
    }
}

/// A ref whose seal, family, caller and scope were checked (each part's, for a joined ref):
/// the targets it covers, still to compare with their data's own snapshots, and its payload.
#[derive(Debug, Clone)]
pub struct OpenedTarget {
    parts: Vec<OpenedPart>,
    payload: Option<Vec<u8>>,
    expired: bool,
    field: String,
}

/// One sealed ref of a (possibly joined) ref: the key that sealed it and its entries.
#[derive(Debug, Clone)]
struct OpenedPart {
    key: ContinuationKey,
    entries: Vec<[u8; ENTRY_LEN]>,
}

impl OpenedPart {
    fn covers(&self, target: &str) -> bool {
        let name = name_tag(&self.key, target);
        self.entries.iter().any(|entry| entry[..NAME_LEN] == name)
    }

    fn holds(&self, target: &str, current: &(impl Snapshot + ?Sized)) -> bool {
        self.entries.contains(&entry(&self.key, target, current))
    }
}

impl OpenedTarget {
    /// `STALE_TARGET_SNAPSHOT` when the ref has expired: checked before anything else is
    /// looked at (a target that no longer exists, say), since nothing of an expired ref holds.
    pub fn check_fresh(&self) -> Result<(), ToolError> {
        if self.expired {
            return Err(stale_target(&self.field));
        }
        Ok(())
    }

    /// What the issuer put in the ref besides its targets (say, the search to offer again),
    /// authenticated; `None` when it carries none.
    pub fn payload(&self) -> Option<&[u8]> {
        self.payload.as_deref()
    }

    /// `TARGET_NOT_IN_REF` when the ref holds no target named `target` (a row of another
    /// page, or a location its search never returned). A target it never covered passes with
    /// a chance of 2^-16 for each target it does cover; [`check_snapshot`](Self::check_snapshot)
    /// then refuses it as stale.
    pub fn check_covers(&self, target: &str) -> Result<(), ToolError> {
        if self.parts.iter().any(|part| part.covers(target)) {
            return Ok(());
        }
        Err(not_in_ref(&self.field))
    }

    /// `Ok` when `target` is one the ref covers and `current` (the digest of its data, as it
    /// is now) is the snapshot the ref was issued against, and the ref has not expired. An
    /// expired ref, or a covered target whose data moved, is `STALE_TARGET_SNAPSHOT`; a
    /// target the ref never covered is `TARGET_NOT_IN_REF`. Each check has a 2^-24 chance to
    /// pass a changed target for each target the ref covers.
    pub fn check_snapshot(
        &self,
        target: &str,
        current: &(impl Snapshot + ?Sized),
    ) -> Result<(), ToolError> {
        self.check_fresh()?;
        self.check_covers(target)?;
        if self.parts.iter().any(|part| part.holds(target, current)) {
            return Ok(());
        }
        Err(stale_target(&self.field))
    }
}

/// A target's name, tagged under `key`: what tells a target the ref covers.
fn name_tag(key: &ContinuationKey, target: &str) -> [u8; NAME_LEN] {
    key.tag(NAME_LABEL, &[target.as_bytes()])
}

/// A target's entry in a ref: its name's tag, then its name and its data's snapshot, tagged
/// under `key`.
fn entry(
    key: &ContinuationKey,
    target: &str,
    snapshot: &(impl Snapshot + ?Sized),
) -> [u8; ENTRY_LEN] {
    let state: [u8; STATE_LEN] = key.tag(
        ENTRY_LABEL,
        &[target.as_bytes(), snapshot.digest().as_bytes()],
    );
    let mut entry = [0; ENTRY_LEN];
    entry[..NAME_LEN].copy_from_slice(&name_tag(key, target));
    entry[NAME_LEN..].copy_from_slice(&state);
    entry
}

impl Continuations {
    /// One ref to every `(target, snapshot)` of `targets` (at most [`MAX_TARGETS_PER_REF`];
    /// repeated entries are kept once), under `binding`, carrying `payload` (at most
    /// [`MAX_TARGET_BYTES`], in the clear) when given.
    ///
    /// Fails (as an `internal` error) when there are too many targets or the payload is too
    /// large: the issuing tool's mistake, never the caller's.
    pub fn seal_target(
        &self,
        binding: &TargetBinding<'_>,
        targets: &[(&str, &dyn Snapshot)],
        payload: Option<&[u8]>,
    ) -> Result<String, ToolError> {
        let payload = payload.unwrap_or_default();
        if payload.len() > MAX_TARGET_BYTES {
            return Err(ToolError::internal(format!(
                "a target ref carries at most {MAX_TARGET_BYTES} bytes of payload, not {}",
                payload.len()
            )));
        }
        let key = self.keys.current();
        let mut entries: Vec<[u8; ENTRY_LEN]> = Vec::with_capacity(targets.len());
        for (target, snapshot) in targets {
            let tagged = entry(key, target, *snapshot);
            if !entries.contains(&tagged) {
                entries.push(tagged);
            }
        }
        if entries.len() > MAX_TARGETS_PER_REF {
            return Err(ToolError::internal(format!(
                "a target ref covers at most {MAX_TARGETS_PER_REF} targets, not {}",
                entries.len()
            )));
        }
        let mut bytes =
            Vec::with_capacity(FIXED_LEN + 4 + ENTRY_LEN * entries.len() + payload.len());
        bytes.push(seal::lead_byte(TARGET_VERSION, key.nibble()));
        bytes.extend_from_slice(&seal::expiry((self.clock)(), self.ttl).to_be_bytes());
        seal::push_varint(&mut bytes, entries.len() as u64);
        bytes.extend(entries.iter().flatten());
        seal::push_varint(&mut bytes, payload.len() as u64);
        bytes.extend_from_slice(payload);
        let bound: [u8; BIND_LEN] = key.tag(BIND_LABEL, &binding.parts(&bytes));
        bytes.extend_from_slice(&bound);
        let sealed: [u8; SEAL_LEN] = key.tag(TARGET_SEAL_LABEL, &[&bytes]);
        bytes.extend_from_slice(&sealed);
        Ok(seal::encode(&bytes))
    }

    /// Opens a ref passed as the argument `field`, or refs joined by [`TARGET_REF_JOIN`] (at
    /// most [`MAX_JOINED_REFS`]): checks each one's length, encoding, version, key and seal
    /// (`INVALID_TARGET_REF`), then its family, caller and scope (`TARGET_SCOPE_MISMATCH`).
    /// Each target's snapshot, and the expiry (a joined ref's is its earliest part's), are
    /// checked by [`OpenedTarget::check_snapshot`]; the payload is the first part's.
    pub fn open_target(
        &self,
        token: &str,
        binding: &TargetBinding<'_>,
        field: &str,
    ) -> Result<OpenedTarget, ToolError> {
        let mut parts =
            joined_parts(token).ok_or_else(|| mispasted(field, Sealed::TargetRef, None))?;
        let mut joined = self.open_one_target(parts.next().unwrap_or_default(), binding, field)?;
        for part in parts {
            let opened = self.open_one_target(part, binding, field)?;
            joined.expired |= opened.expired;
            joined.parts.extend(opened.parts);
        }
        Ok(joined)
    }

    fn open_one_target(
        &self,
        token: &str,
        binding: &TargetBinding<'_>,
        field: &str,
    ) -> Result<OpenedTarget, ToolError> {
        let now = (self.clock)();
        let opened = self
            .open_target_bytes(token, binding, now)
            .map_err(|reject| match (reject, self.recognize(token)) {
                // A continuation under `target_ref`: the copy went to the wrong argument.
                (_, Some(found @ Sealed::Continuation)) => {
                    mispasted(field, Sealed::TargetRef, Some(found))
                }
                // No ref as written (quoted, cut short, padded): the copy went wrong.
                (TargetReject::Malformed, _) => mispasted(field, Sealed::TargetRef, None),
                (TargetReject::Invalid, _) => invalid_target(field),
                (TargetReject::Scope, _) => ToolError::validation(format!(
                    "`{field}` was issued for another tool family, caller or scope"
                ))
                .with_code(TARGET_SCOPE_MISMATCH)
                .with_hint("use the ref with the tools its result names, or search again here"),
            })?;
        Ok(OpenedTarget {
            field: field.to_owned(),
            ..opened
        })
    }

    fn open_target_bytes(
        &self,
        token: &str,
        binding: &TargetBinding<'_>,
        now: SystemTime,
    ) -> Result<OpenedTarget, TargetReject> {
        use TargetReject::{Invalid, Malformed};
        if token.len() > MAX_TARGET_REF_CHARS {
            return Err(Malformed);
        }
        let mut buffer = vec![0u8; token.len() / 4 * 3 + 3];
        let written = decode_canonical(token, &mut buffer).ok_or(Malformed)?;
        let bytes = buffer.get(..written).ok_or(Malformed)?;
        let signed_len = bytes.len().checked_sub(SEAL_LEN).ok_or(Malformed)?;
        let (signed, sealed) = bytes.split_at(signed_len);
        let head_len = signed.len().checked_sub(BIND_LEN).ok_or(Malformed)?;
        let (head, bound) = signed.split_at(head_len);
        let [lead, ..] = head else {
            return Err(Malformed);
        };
        // The layout is read before the seal is checked, so that a ref cut short (its counts
        // no longer add up) is told from one edited in place.
        let mut reader = Reader(&head[1..]);
        let expires_at = u32::from_be_bytes(reader.take().ok_or(Malformed)?);
        let count = usize::try_from(reader.varint().ok_or(Malformed)?).map_err(|_| Malformed)?;
        let listed = reader
            .take_slice(count.checked_mul(ENTRY_LEN).ok_or(Malformed)?)
            .ok_or(Malformed)?;
        let payload_len =
            usize::try_from(reader.varint().ok_or(Malformed)?).map_err(|_| Malformed)?;
        let payload = reader.take_slice(payload_len).ok_or(Malformed)?;
        if !reader.rest().is_empty() {
            return Err(Malformed);
        }
        let (version, nibble) = seal::split_lead(*lead);
        if version != TARGET_VERSION {
            return Err(Invalid);
        }
        let key = self
            .keys
            .opening_keys(nibble, now)
            .find(|key| key.verify(TARGET_SEAL_LABEL, &[signed], sealed))
            .ok_or(Invalid)?;
        if !key.verify(BIND_LABEL, &binding.parts(head), bound) {
            return Err(TargetReject::Scope);
        }
        let payload = (!payload.is_empty()).then(|| payload.to_vec());
        let entries = listed
            .chunks_exact(ENTRY_LEN)
            .filter_map(|chunk| <[u8; ENTRY_LEN]>::try_from(chunk).ok())
            .collect();
        Ok(OpenedTarget {
            parts: vec![OpenedPart {
                key: key.clone(),
                entries,
            }],
            payload,
            expired: unix_seconds(now) >= u64::from(expires_at),
            field: String::new(),
        })
    }
}

impl Continuations {
    /// What `text` is when this server's keys sealed it (a current key, or a retired one within
    /// its grace window): a continuation token or a target ref (joined refs too, when every
    /// part is one). `None` for any other text. Only the seal is checked, not what the token
    /// is bound to.
    pub fn recognize(&self, text: &str) -> Option<Sealed> {
        if text.contains(TARGET_REF_JOIN) {
            return joined_parts(text)?
                .all(|part| self.recognize(part) == Some(Sealed::TargetRef))
                .then_some(Sealed::TargetRef);
        }
        if text.len() > MAX_TOKEN_CHARS.max(MAX_TARGET_REF_CHARS) {
            return None;
        }
        let mut buffer = vec![0u8; text.len() / 4 * 3 + 3];
        let written = decode_canonical(text, &mut buffer)?;
        let bytes = buffer.get(..written)?;
        let (version, nibble) = seal::split_lead(*bytes.first()?);
        let (kind, seal_len, label) = match version {
            VERSION => (Sealed::Continuation, TAG_LEN, SEAL_LABEL),
            TARGET_VERSION => (Sealed::TargetRef, SEAL_LEN, TARGET_SEAL_LABEL),
            _ => return None,
        };
        let (signed, sealed) = bytes.split_at(bytes.len().checked_sub(seal_len)?);
        let now = (self.clock)();
        self.keys
            .opening_keys(nibble, now)
            .any(|key| key.verify(label, &[signed], sealed))
            .then_some(kind)
    }
}

/// Why a ref was refused before its targets were looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TargetReject {
    /// No ref as this server writes them: changed on the way back, or never one.
    Malformed,
    /// Laid out as a ref, but not sealed by a key this server accepts.
    Invalid,
    Scope,
}

fn invalid_target(field: &str) -> ToolError {
    ToolError::validation(format!("`{field}` is not a valid target ref"))
        .with_code(INVALID_TARGET_REF)
        .with_hint(format!(
            "pass `{field}` back exactly as it was received, or search again for a fresh one"
        ))
}

fn stale_target(field: &str) -> ToolError {
    ToolError::validation(format!(
        "`{field}` points into data that changed since it was issued, or it expired"
    ))
    .with_code(STALE_TARGET_SNAPSHOT)
    .with_hint("run the search again for a fresh ref")
}

/// The refs `text` joins (one for a ref that joins none), or `None` when it is longer, or
/// joins more, than a joined ref may.
fn joined_parts(text: &str) -> Option<std::str::Split<'_, char>> {
    (text.len() <= MAX_JOINED_REF_CHARS && text.split(TARGET_REF_JOIN).count() <= MAX_JOINED_REFS)
        .then(|| text.split(TARGET_REF_JOIN))
}

fn not_in_ref(field: &str) -> ToolError {
    ToolError::validation(format!(
        "`{field}` holds no target at the location named; nothing changed"
    ))
    .with_code(TARGET_NOT_IN_REF)
    .with_hint(format!(
        "pass the `{field}` of the page the row came from, with the row's own location"
    ))
}

/// The error of a genuine, fresh ref passed as `field` whose target no longer exists.
pub fn target_not_found(field: &str) -> ToolError {
    ToolError::not_found(format!("the target of `{field}` no longer exists"))
        .with_code(TARGET_NOT_FOUND)
        .with_hint("run the search again")
}

/// The error of a call that passes the ref `field` together with the plain location
/// arguments `given`.
pub fn conflicting_target_input(field: &str, given: &[&str]) -> ToolError {
    let given: Vec<String> = given.iter().map(|name| format!("`{name}`")).collect();
    ToolError::validation(format!(
        "`{field}` cannot be combined with {}",
        given.join(", ")
    ))
    .with_code(CONFLICTING_TARGET_INPUT)
    .with_hint(format!("send either `{field}` or the location, not both"))
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, UNIX_EPOCH};

    use base64::Engine as _;
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use proptest::prelude::*;

    use super::*;
    use crate::paging_core::INVALID_ARGUMENT;
    use crate::paging_core::KeyRing;

    fn refs() -> Continuations {
        Continuations::new(ContinuationKey::new(1, [1; 32]))
    }

    fn binding() -> TargetBinding<'static> {
        TargetBinding::new("workspace.file", "caller-1").with_scope("/repo")
    }

    fn sealed(refs: &Continuations) -> String {
        refs.seal_target(
            &binding(),
            &[
                ("src/a.rs", &"len=10;t=1"),
                ("src/b.rs", &"len=20;t=2"),
                ("src/a.rs", &"len=10;t=1"),
            ],
            Some(br#"{"query":"needle"}"#),
        )
        .expect("seal")
    }

    fn code(result: Result<OpenedTarget, ToolError>) -> Option<String> {
        result.err().and_then(|e| e.code().map(str::to_owned))
    }

    #[test]
    fn a_ref_covers_each_target_once_and_carries_its_payload() {
        let refs = refs();
        let token = sealed(&refs);
        // Two distinct targets and an 18-byte payload.
        assert_eq!(
            token.len(),
            ((FIXED_LEN + 1 + 2 * ENTRY_LEN + 1 + 18) * 4).div_ceil(3)
        );
        let opened = refs
            .open_target(&token, &binding(), "target_ref")
            .expect("open");
        assert_eq!(opened.payload(), Some(&br#"{"query":"needle"}"#[..]));
        opened
            .check_snapshot("src/a.rs", "len=10;t=1")
            .expect("fresh");
        opened
            .check_snapshot("src/b.rs", "len=20;t=2")
            .expect("fresh");
    }

    #[test]
    fn a_changed_target_is_stale_and_an_uncovered_one_is_not_in_the_ref() {
        let refs = refs();
        let opened = refs
            .open_target(&sealed(&refs), &binding(), "target_ref")
            .expect("open");
        for (target, snapshot, expected) in [
            ("src/a.rs", "len=11;t=3", STALE_TARGET_SNAPSHOT),
            ("src/b.rs", "len=10;t=1", STALE_TARGET_SNAPSHOT),
            ("src/c.rs", "len=10;t=1", TARGET_NOT_IN_REF),
            ("src/c.rs", "len=20;t=2", TARGET_NOT_IN_REF),
        ] {
            let error = opened
                .check_snapshot(target, snapshot)
                .expect_err("refused");
            assert_eq!(error.code(), Some(expected), "{target}");
            assert_eq!(error.category(), Category::Validation);
        }
        opened.check_covers("src/b.rs").expect("covered");
        let error = opened.check_covers("src/c.rs").expect_err("not covered");
        assert_eq!(error.code(), Some(TARGET_NOT_IN_REF));
    }

    #[test]
    fn joined_refs_reach_every_part_and_nothing_else() {
        let refs = refs();
        let first = sealed(&refs);
        let second = refs
            .seal_target(&binding(), &[("src/c.rs", &"len=30;t=3")], None)
            .expect("seal");
        let joined = format!("{first}{TARGET_REF_JOIN}{second}");
        assert_eq!(refs.recognize(&joined), Some(Sealed::TargetRef));
        let opened = refs
            .open_target(&joined, &binding(), "target_ref")
            .expect("open");
        // The first part's payload: the search every page of one walk carries.
        assert_eq!(opened.payload(), Some(&br#"{"query":"needle"}"#[..]));
        for (target, snapshot) in [
            ("src/a.rs", "len=10;t=1"),
            ("src/b.rs", "len=20;t=2"),
            ("src/c.rs", "len=30;t=3"),
        ] {
            opened.check_snapshot(target, snapshot).expect(target);
        }
        assert_eq!(
            opened
                .check_snapshot("src/d.rs", "len=30;t=3")
                .expect_err("not covered")
                .code(),
            Some(TARGET_NOT_IN_REF)
        );
        // A part sealed elsewhere, bound elsewhere, or edited spoils the whole ref.
        let other = Continuations::new(ContinuationKey::new(1, [2; 32]))
            .seal_target(&binding(), &[("src/d.rs", &"s")], None)
            .expect("seal");
        assert_eq!(
            code(refs.open_target(&format!("{first}.{other}"), &binding(), "target_ref"))
                .as_deref(),
            Some(INVALID_TARGET_REF)
        );
        let elsewhere = refs
            .seal_target(
                &TargetBinding::new("workspace.file", "caller-2").with_scope("/repo"),
                &[("src/d.rs", &"s")],
                None,
            )
            .expect("seal");
        assert_eq!(
            code(refs.open_target(&format!("{first}.{elsewhere}"), &binding(), "target_ref"))
                .as_deref(),
            Some(TARGET_SCOPE_MISMATCH)
        );
        for mangled in [
            format!("{first}."),
            format!(".{first}"),
            format!("{first}..{second}"),
        ] {
            assert_eq!(
                code(refs.open_target(&mangled, &binding(), "target_ref")).as_deref(),
                Some(INVALID_ARGUMENT),
                "{mangled}"
            );
            assert_eq!(refs.recognize(&mangled), None);
        }
    }

    #[test]
    fn a_joined_ref_is_bounded_and_expires_with_its_earliest_part() {
        let refs = refs();
        let one = sealed(&refs);
        let most = vec![one.as_str(); MAX_JOINED_REFS].join(".");
        refs.open_target(&most, &binding(), "target_ref")
            .expect("the most parts");
        let over = vec![one.as_str(); MAX_JOINED_REFS + 1].join(".");
        assert_eq!(
            code(refs.open_target(&over, &binding(), "target_ref")).as_deref(),
            Some(INVALID_ARGUMENT)
        );
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let now = Arc::new(Mutex::new(start));
        let clock = Arc::clone(&now);
        let refs = refs
            .with_ttl(Duration::from_secs(60))
            .with_clock(move || *clock.lock().expect("clock"));
        let early = sealed(&refs);
        *now.lock().expect("clock") += Duration::from_secs(30);
        let late = refs
            .seal_target(&binding(), &[("src/c.rs", &"len=30;t=3")], None)
            .expect("seal");
        *now.lock().expect("clock") += Duration::from_secs(30);
        let opened = refs
            .open_target(&format!("{early}.{late}"), &binding(), "target_ref")
            .expect("open");
        let error = opened
            .check_snapshot("src/c.rs", "len=30;t=3")
            .expect_err("the earliest part expired");
        assert_eq!(error.code(), Some(STALE_TARGET_SNAPSHOT));
    }

    #[test]
    fn an_expired_ref_is_stale() {
        let start = UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let now = Arc::new(Mutex::new(start));
        let clock = Arc::clone(&now);
        let refs = refs()
            .with_ttl(Duration::from_secs(60))
            .with_clock(move || *clock.lock().expect("clock"));
        let token = sealed(&refs);
        *now.lock().expect("clock") += Duration::from_secs(59);
        let opened = refs
            .open_target(&token, &binding(), "target_ref")
            .expect("open");
        opened
            .check_snapshot("src/a.rs", "len=10;t=1")
            .expect("fresh");
        *now.lock().expect("clock") += Duration::from_secs(1);
        let opened = refs
            .open_target(&token, &binding(), "target_ref")
            .expect("open");
        let error = opened
            .check_snapshot("src/a.rs", "len=10;t=1")
            .expect_err("expired");
        assert_eq!(error.code(), Some(STALE_TARGET_SNAPSHOT));
        // Whatever became of the target: nothing of an expired ref holds.
        let error = opened.check_fresh().expect_err("expired");
        assert_eq!(error.code(), Some(STALE_TARGET_SNAPSHOT));
    }

    #[test]
    fn another_family_caller_or_scope_is_a_scope_mismatch() {
        let refs = refs();
        let token = sealed(&refs);
        for other in [
            TargetBinding::new("other.family", "caller-1").with_scope("/repo"),
            TargetBinding::new("workspace.file", "caller-2").with_scope("/repo"),
            TargetBinding::new("workspace.file", "caller-1").with_scope("/elsewhere"),
        ] {
            assert_eq!(
                code(refs.open_target(&token, &other, "target_ref")).as_deref(),
                Some(TARGET_SCOPE_MISMATCH),
                "{other:?}"
            );
        }
    }

    #[test]
    fn every_single_bit_flip_is_refused() {
        let refs = refs();
        let bytes = URL_SAFE_NO_PAD.decode(sealed(&refs)).expect("decodes");
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut flipped = bytes.clone();
                flipped[index] ^= 1 << bit;
                let text = URL_SAFE_NO_PAD.encode(&flipped);
                // A flip in a count makes the layout no ref's (changed on the way back); any
                // other fails the seal.
                let code = code(refs.open_target(&text, &binding(), "target_ref"));
                assert!(
                    matches!(code.as_deref(), Some(INVALID_TARGET_REF | INVALID_ARGUMENT)),
                    "byte {index} bit {bit}: {code:?}"
                );
            }
        }
    }

    #[test]
    fn another_key_is_invalid_and_a_retired_key_opens_within_its_grace() {
        let token = sealed(&refs());
        let other = Continuations::new(ContinuationKey::new(1, [2; 32]));
        assert_eq!(
            code(other.open_target(&token, &binding(), "target_ref")).as_deref(),
            Some(INVALID_TARGET_REF)
        );
        let now = std::time::SystemTime::now();
        let ring = KeyRing::new(ContinuationKey::new(2, [2; 32]))
            .with_retired(
                ContinuationKey::new(1, [1; 32]),
                now + Duration::from_secs(60),
            )
            .expect("distinct ids");
        let rotated = Continuations::new(ring.clone());
        rotated
            .open_target(&token, &binding(), "target_ref")
            .expect("in grace");
        let after = Continuations::new(ring).with_clock(move || now + Duration::from_secs(61));
        assert_eq!(
            code(after.open_target(&token, &binding(), "target_ref")).as_deref(),
            Some(INVALID_TARGET_REF)
        );
    }

    #[test]
    fn too_many_targets_or_too_much_payload_is_the_issuers_error() {
        let refs = refs();
        let names: Vec<String> = (0..=MAX_TARGETS_PER_REF).map(|n| n.to_string()).collect();
        let targets: Vec<(&str, &dyn Snapshot)> = names
            .iter()
            .map(|n| (n.as_str(), &"s" as &dyn Snapshot))
            .collect();
        let error = refs
            .seal_target(&binding(), &targets, None)
            .expect_err("too many");
        assert_eq!(error.category(), Category::Internal);
        let most = refs
            .seal_target(&binding(), &targets[1..], None)
            .expect("the most");
        assert!(most.len() <= MAX_TARGET_REF_CHARS);
        let payload = vec![b'x'; MAX_TARGET_BYTES + 1];
        let error = refs
            .seal_target(&binding(), &targets[..1], Some(&payload))
            .expect_err("too much");
        assert_eq!(error.category(), Category::Internal);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_opens(text in ".{0,120}") {
            let refs = refs();
            prop_assert!(refs.open_target(&text, &binding(), "target_ref").is_err());
        }

        #[test]
        fn arbitrary_bytes_never_open(bytes in proptest::collection::vec(any::<u8>(), 17..80)) {
            let refs = refs();
            let mut bytes = bytes;
            bytes[0] = seal::lead_byte(TARGET_VERSION, 1);
            let text = URL_SAFE_NO_PAD.encode(&bytes);
            let error = refs.open_target(&text, &binding(), "target_ref").expect_err("refused");
            // Bytes whose counts do not add up are no ref as written; the others fail the seal.
            prop_assert!(
                matches!(error.code(), Some(INVALID_TARGET_REF | INVALID_ARGUMENT)),
                "{:?}", error.code()
            );
        }
    }
}

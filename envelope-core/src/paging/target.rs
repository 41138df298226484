//! Stateless target refs: an opaque, sealed hold on one result (a search hit) that a follow-up
//! tool accepts to act on exactly that result.
//!
//! A ref is sealed like a continuation, with the same [`KeyRing`](super::KeyRing): what it
//! points at (the target, as JSON) travels encrypted and authenticated inside it, bound to the
//! tool family that may open it, the caller, the scope and a snapshot of the target's data.
//! Nothing is stored on the server: any replica holding the key opens it.
//!
//! Opening is two steps, because the snapshot to compare depends on the target (the file a
//! hit is in): [`Continuations::open_target`] checks the seal, the family, the caller and the
//! scope and hands back an [`OpenedTarget`]; the tool reads the target, digests the data it
//! points into now, and [`OpenedTarget::check_snapshot`] refuses a ref whose data moved.
//!
//! Invariant: nothing here panics on any input; each refusal has one fixed message per code.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::AeadInOut;
use chacha20poly1305::{Tag, XNonce};
use serde_json::Value;

use super::{
    Continuations, DIGEST_LEN, HEADER_LEN, NONCE_LEN, Reader, Snapshot, TAG_LEN, decode_canonical,
    digest, unix_seconds,
};
use crate::tool_error::{Category, ToolError};

/// Code of a ref that is malformed, too long, tampered with, or sealed by a key this server
/// does not accept.
pub const INVALID_TARGET_REF: &str = "INVALID_TARGET_REF";
/// Code of a genuine ref presented to another tool family, by another caller or in another
/// scope.
pub const TARGET_SCOPE_MISMATCH: &str = "TARGET_SCOPE_MISMATCH";
/// Code of a genuine ref whose target's data changed since it was issued, or which expired.
pub const STALE_TARGET_SNAPSHOT: &str = "STALE_TARGET_SNAPSHOT";
/// Code of a genuine, fresh ref whose target no longer exists.
pub const TARGET_NOT_FOUND: &str = "TARGET_NOT_FOUND";
/// Code of a call that passes a ref together with plain location arguments.
pub const CONFLICTING_TARGET_INPUT: &str = "CONFLICTING_TARGET_INPUT";

/// Every target-ref error code: `(code, category, when, what the agent does)`. Each code has
/// one fixed message; none is retryable as it stands. The contract docs are generated from
/// this table.
pub const TARGET_CODES: [(&str, Category, &str, &str); 5] = [
    (
        INVALID_TARGET_REF,
        Category::Validation,
        "The ref is malformed, tampered with, or sealed by a key this server does not accept.",
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
        TARGET_NOT_FOUND,
        Category::NotFound,
        "The ref is genuine and fresh, but its target no longer exists.",
        "Run the search again; the target is gone.",
    ),
    (
        CONFLICTING_TARGET_INPUT,
        Category::Validation,
        "A ref was sent together with plain location arguments.",
        "Send either the ref or the location, not both.",
    ),
];

/// Texts longer than this are refused before any decoding.
pub const MAX_TARGET_REF_CHARS: usize = 1_024;
/// The most target JSON a ref may carry, in bytes.
pub const MAX_TARGET_BYTES: usize = 600;

// Ref layout: version ‖ key id ‖ nonce ‖ sealed body ‖ tag, the header authenticated as
// associated data. Body: one digest of family, caller and scope; the snapshot's digest;
// expiry; target JSON. Refs ride on every hit of a search, so every byte counts.
const TARGET_VERSION: u8 = 2;
const FIXED_BODY_LEN: usize = 2 * DIGEST_LEN + 8;
const DECODE_BUFFER: usize = MAX_TARGET_REF_CHARS / 4 * 3 + 3;

/// What a target ref is bound to, besides the snapshot of its target's data.
///
/// ```
/// use envelope_core::paging::{ContinuationKey, Continuations, TargetBinding};
/// use serde_json::json;
///
/// let refs = Continuations::new(ContinuationKey::new(1, [7; 32]));
/// let binding = TargetBinding::new("workspace.file", "").with_scope("/srv/repo");
/// let target = json!({"path": "src/lib.rs", "line": 12});
/// let sealed = refs.seal_target(&binding, "size=120;mtime=7", &target)?;
///
/// let opened = refs.open_target(&sealed, &binding, "target_ref")?;
/// assert_eq!(opened.target(), &target);
/// // The tool digests the file the ref points into, as it is now.
/// assert_eq!(opened.check_snapshot("size=120;mtime=7")?, &target);
/// assert!(opened.check_snapshot("size=121;mtime=9").is_err());
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

    /// One digest of the three: each part length-prefixed, so no two bindings share it.
    fn digest(&self) -> [u8; DIGEST_LEN] {
        let mut parts = Vec::new();
        for part in [self.family, self.session, self.scope] {
            parts.extend_from_slice(&(part.len() as u64).to_be_bytes());
            parts.extend_from_slice(part.as_bytes());
        }
        digest(b"target", &parts)
    }
}

/// A ref whose seal, family, caller and scope were checked: its target, and the snapshot it
/// was issued against, still to compare with the data's own.
#[derive(Debug, Clone)]
pub struct OpenedTarget {
    target: Value,
    snapshot: [u8; DIGEST_LEN],
    expired: bool,
    field: String,
}

impl OpenedTarget {
    /// What the ref points at, as its issuer sealed it. Not yet checked against the data.
    pub fn target(&self) -> &Value {
        &self.target
    }

    /// The target, when `current` (the digest of the data it points into, as it is now) is the
    /// one it was issued against and the ref has not expired; `STALE_TARGET_SNAPSHOT`
    /// otherwise.
    pub fn check_snapshot(&self, current: &(impl Snapshot + ?Sized)) -> Result<&Value, ToolError> {
        let now = digest(b"snapshot", current.digest().as_bytes());
        if self.expired || now != self.snapshot {
            return Err(stale_target(&self.field));
        }
        Ok(&self.target)
    }
}

impl Continuations {
    /// A ref to `target` (at most [`MAX_TARGET_BYTES`] of JSON) under `binding`, issued
    /// against `snapshot`, the digest of the data the target points into.
    ///
    /// Fails (as an `internal` error) when the target is too large, or when the operating
    /// system's random source does.
    pub fn seal_target(
        &self,
        binding: &TargetBinding<'_>,
        snapshot: &(impl Snapshot + ?Sized),
        target: &Value,
    ) -> Result<String, ToolError> {
        let json = serde_json::to_vec(target).map_err(ToolError::internal)?;
        if json.len() > MAX_TARGET_BYTES {
            return Err(ToolError::internal(format!(
                "a target ref carries at most {MAX_TARGET_BYTES} bytes of target, not {}",
                json.len()
            )));
        }
        let expires_at = unix_seconds((self.clock)()).saturating_add(self.ttl.as_secs());
        let mut body = Vec::with_capacity(FIXED_BODY_LEN + json.len());
        body.extend_from_slice(&binding.digest());
        body.extend_from_slice(&digest(b"snapshot", snapshot.digest().as_bytes()));
        body.extend_from_slice(&expires_at.to_be_bytes());
        body.extend_from_slice(&json);

        let key = &self.keys.current;
        let [a, b, c, d] = key.id.to_be_bytes();
        let header = [TARGET_VERSION, a, b, c, d];
        let mut nonce = [0u8; NONCE_LEN];
        getrandom::fill(&mut nonce).map_err(ToolError::internal)?;
        let tag = key
            .cipher
            .encrypt_inout_detached(&XNonce::from(nonce), &header, body.as_mut_slice().into())
            .map_err(ToolError::internal)?;
        let mut out = Vec::with_capacity(HEADER_LEN + NONCE_LEN + body.len() + TAG_LEN);
        out.extend_from_slice(&header);
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&body);
        out.extend_from_slice(tag.as_slice());
        Ok(URL_SAFE_NO_PAD.encode(out))
    }

    /// Opens a ref passed as the argument `field`: checks its length, encoding, version, key
    /// and seal (`INVALID_TARGET_REF`), then its family, caller and scope
    /// (`TARGET_SCOPE_MISMATCH`). The snapshot and the expiry are checked by
    /// [`OpenedTarget::check_snapshot`].
    pub fn open_target(
        &self,
        token: &str,
        binding: &TargetBinding<'_>,
        field: &str,
    ) -> Result<OpenedTarget, ToolError> {
        let now = (self.clock)();
        let invalid = || invalid_target(field);
        if token.len() > MAX_TARGET_REF_CHARS {
            return Err(invalid());
        }
        let mut buffer = [0u8; DECODE_BUFFER];
        let written = decode_canonical(token, &mut buffer).ok_or_else(invalid)?;
        let bytes = buffer.get(..written).ok_or_else(invalid)?;
        let mut reader = Reader(bytes);
        let header: [u8; HEADER_LEN] = reader.take().ok_or_else(invalid)?;
        let [version, id @ ..] = header;
        if version != TARGET_VERSION {
            return Err(invalid());
        }
        let key = self
            .keys
            .opening_key(u32::from_be_bytes(id), now)
            .ok_or_else(invalid)?;
        let nonce: [u8; NONCE_LEN] = reader.take().ok_or_else(invalid)?;
        let rest = reader.rest();
        let Some(body_len) = rest
            .len()
            .checked_sub(TAG_LEN)
            .filter(|len| *len >= FIXED_BODY_LEN)
        else {
            return Err(invalid());
        };
        let (sealed, tag) = rest.split_at(body_len);
        let tag: [u8; TAG_LEN] = tag.try_into().map_err(|_| invalid())?;
        let mut body = sealed.to_vec();
        key.cipher
            .decrypt_inout_detached(
                &XNonce::from(nonce),
                &header,
                body.as_mut_slice().into(),
                &Tag::from(tag),
            )
            .map_err(|_| invalid())?;
        let mut reader = Reader(&body);
        let bound: [u8; DIGEST_LEN] = reader.take().ok_or_else(invalid)?;
        let snapshot: [u8; DIGEST_LEN] = reader.take().ok_or_else(invalid)?;
        let expires_at = u64::from_be_bytes(reader.take().ok_or_else(invalid)?);
        let target: Value = serde_json::from_slice(reader.rest()).map_err(|_| invalid())?;
        if bound != binding.digest() {
            return Err(ToolError::validation(format!(
                "`{field}` was issued for another tool family, caller or scope"
            ))
            .with_code(TARGET_SCOPE_MISMATCH)
            .with_hint("use the ref with the tools its result names, or search again here"));
        }
        Ok(OpenedTarget {
            target,
            snapshot,
            expired: unix_seconds(now) >= expires_at,
            field: field.to_owned(),
        })
    }
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

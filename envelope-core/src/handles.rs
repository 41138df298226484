//! Result handles: short random names for results a tool keeps for a while, so an
//! agent can refer back to them instead of sending them again.
//!
//! A handle is scoped to the session it was issued to and bound to the snapshot of the data it
//! was computed from. It is never authorization: resolving a handle checks only that it exists,
//! belongs to the caller's session and is not stale. Whatever rights the value needs, the tool
//! must check again on every call, exactly as if the agent had sent the value itself.
//!
//! Invariant: nothing here panics on any input, and a handle of another session is reported
//! exactly like one that never existed.

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::sync::{Mutex, PoisonError};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde::{Serialize, Serializer};

use crate::paging::decode_canonical;
use crate::tool_error::{Category, ToolError};

/// Code of a handle whose snapshot has moved since it was issued.
pub const STALE_HANDLE: &str = "STALE_HANDLE";
/// Code of a text that is not a handle of the kind expected: malformed, or of another kind
/// (a match id where a result handle belongs).
pub const MIXED_HANDLE: &str = "MIXED_HANDLE";
/// Code of a handle that does not exist in the caller's session, whether or not it exists in
/// another one.
pub const HANDLE_NOT_FOUND: &str = "HANDLE_NOT_FOUND";

/// Every handle error code: `(code, category, when, what the agent does)`. The contract docs
/// are generated from this table.
pub const HANDLE_CODES: [(&str, Category, &str, &str); 3] = [
    (
        STALE_HANDLE,
        Category::Validation,
        "The data the handle points into changed since it was issued.",
        "Run the call that issued the handle again for a fresh one.",
    ),
    (
        MIXED_HANDLE,
        Category::Validation,
        "The text is not a handle of the kind this argument takes.",
        "Pass the handle from the field that names this kind.",
    ),
    (
        HANDLE_NOT_FOUND,
        Category::NotFound,
        "No such handle in this session (it may have expired, or belong to another session).",
        "Run the call that issued the handle again.",
    ),
];

const ID_BYTES: usize = 16;
// A two-character kind prefix plus 22 characters of base64url for 16 bytes.
const PREFIX_CHARS: usize = 2;
const HANDLE_CHARS: usize = PREFIX_CHARS + (ID_BYTES * 4).div_ceil(3);

/// What a handle names; each kind has its own prefix, so kinds cannot be mistaken for each other.
///
/// Wire prefixes: `h_` for results, `m_` for matches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum HandleKind {
    /// A stored result, such as a full listing the agent saw only a page of (`h_…`).
    Result,
    /// One match within a result, such as a search hit (`m_…`).
    Match,
}

impl HandleKind {
    /// Every kind.
    pub const ALL: [HandleKind; 2] = [HandleKind::Result, HandleKind::Match];

    /// The prefix every handle of this kind starts with.
    pub const fn prefix(self) -> &'static str {
        match self {
            HandleKind::Result => "h_",
            HandleKind::Match => "m_",
        }
    }

    /// How messages name this kind.
    pub const fn noun(self) -> &'static str {
        match self {
            HandleKind::Result => "result handle",
            HandleKind::Match => "match id",
        }
    }

    fn from_prefix(prefix: &str) -> Option<Self> {
        HandleKind::ALL
            .into_iter()
            .find(|kind| kind.prefix() == prefix)
    }
}

/// A random, unguessable name: a kind prefix and 128 random bits.
///
/// Wire format: the prefix ([`HandleKind::prefix`]) followed by 22 characters of canonical
/// base64url without padding of 16 random bytes, 24 characters in all. Serializes as that
/// string.
///
/// ```
/// use envelope_core::handles::{Handle, HandleKind};
///
/// let id = Handle::mint(HandleKind::Match)?;
/// assert!(id.as_str().starts_with("m_"));
/// assert_eq!(id.as_str().len(), 24);
/// # Ok::<(), envelope_core::ToolError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Handle {
    kind: HandleKind,
    id: [u8; ID_BYTES],
    text: String,
}

impl Handle {
    /// A fresh random handle of `kind`, registered nowhere: for match ids and the like that
    /// only need to be unique. Fails (as `internal`) only when the random source does.
    pub fn mint(kind: HandleKind) -> Result<Handle, ToolError> {
        let mut id = [0u8; ID_BYTES];
        getrandom::fill(&mut id).map_err(ToolError::internal)?;
        Ok(Handle::from_parts(kind, id))
    }

    /// Reads a handle's text; `None` unless it is exactly a well-formed handle of some kind.
    pub fn parse(text: &str) -> Option<Handle> {
        if text.len() != HANDLE_CHARS {
            return None;
        }
        let (prefix, encoded) = text.split_at_checked(PREFIX_CHARS)?;
        let kind = HandleKind::from_prefix(prefix)?;
        let mut buffer = [0u8; ID_BYTES + 2];
        let written = decode_canonical(encoded, &mut buffer)?;
        let id = buffer.get(..written)?.try_into().ok()?;
        Some(Handle::from_parts(kind, id))
    }

    fn from_parts(kind: HandleKind, id: [u8; ID_BYTES]) -> Handle {
        let text = format!("{}{}", kind.prefix(), URL_SAFE_NO_PAD.encode(id));
        Handle { kind, id, text }
    }

    /// What this handle names.
    pub fn kind(&self) -> HandleKind {
        self.kind
    }

    /// The wire text.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// The wire text, owned.
    pub fn into_string(self) -> String {
        self.text
    }
}

impl fmt::Display for Handle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

impl AsRef<str> for Handle {
    fn as_ref(&self) -> &str {
        &self.text
    }
}

impl Serialize for Handle {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.text)
    }
}

/// Values stored under handles of one kind, per session and snapshot, at most `capacity` of
/// them; issuing beyond that forgets the oldest. Safe to share between threads.
///
/// Resolving checks, in order: the text is a well-formed handle of this registry's kind
/// ([`MIXED_HANDLE`] otherwise), it exists in the caller's session (`not_found` with
/// [`HANDLE_NOT_FOUND`] otherwise — the same error whether it never existed, was evicted, or
/// belongs to another session), and its snapshot is the current one ([`STALE_HANDLE`]
/// otherwise). Handles are never authorization: the tool re-checks rights on every use.
///
/// ```
/// use envelope_core::handles::{HandleKind, HandleRegistry};
///
/// let results = HandleRegistry::new(HandleKind::Result, 1024);
/// let handle = results.issue("session-1", "rev-7", vec!["a.rs", "b.rs"])?;
/// assert_eq!(results.resolve("session-1", handle.as_str(), "rev-7")?, vec!["a.rs", "b.rs"]);
/// assert!(results.resolve("session-2", handle.as_str(), "rev-7").is_err());
/// # Ok::<(), envelope_core::ToolError>(())
/// ```
pub struct HandleRegistry<V> {
    kind: HandleKind,
    capacity: usize,
    entries: Mutex<Entries<V>>,
}

struct Entries<V> {
    by_id: HashMap<[u8; ID_BYTES], Entry<V>>,
    // Issue order, oldest first, for eviction.
    order: VecDeque<[u8; ID_BYTES]>,
}

struct Entry<V> {
    session: String,
    snapshot: String,
    value: V,
}

impl<V> fmt::Debug for HandleRegistry<V> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandleRegistry")
            .field("kind", &self.kind)
            .field("capacity", &self.capacity)
            .field("len", &self.len())
            .finish()
    }
}

impl<V> HandleRegistry<V> {
    /// An empty registry for handles of `kind`, holding at most `capacity` values (at least 1).
    ///
    /// The capacity is shared by every session: the oldest handle goes first, whichever session
    /// holds it. A server with many busy sessions sizes it for all of them, or keeps a registry
    /// per session.
    pub fn new(kind: HandleKind, capacity: usize) -> Self {
        HandleRegistry {
            kind,
            capacity: capacity.max(1),
            entries: Mutex::new(Entries {
                by_id: HashMap::new(),
                order: VecDeque::new(),
            }),
        }
    }

    /// The kind of handle this registry issues and accepts.
    pub fn kind(&self) -> HandleKind {
        self.kind
    }

    /// The most values held at once.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many values are held now.
    pub fn len(&self) -> usize {
        self.lock().by_id.len()
    }

    /// Whether no value is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stores `value` for `session` at `snapshot` and returns its new handle, forgetting the
    /// oldest value when the registry is full. Fails (as `internal`) only when the random
    /// source does.
    pub fn issue(&self, session: &str, snapshot: &str, value: V) -> Result<Handle, ToolError> {
        let mut entries = self.lock();
        // 128 random bits do not collide in practice; the loop only makes that certain.
        let handle = loop {
            let handle = Handle::mint(self.kind)?;
            if !entries.by_id.contains_key(&handle.id) {
                break handle;
            }
        };
        while entries.by_id.len() >= self.capacity {
            let Some(oldest) = entries.order.pop_front() else {
                break;
            };
            entries.by_id.remove(&oldest);
        }
        entries.order.push_back(handle.id);
        entries.by_id.insert(
            handle.id,
            Entry {
                session: session.to_owned(),
                snapshot: snapshot.to_owned(),
                value,
            },
        );
        Ok(handle)
    }

    /// Runs `read` on the value behind `handle` after the checks described on the type.
    ///
    /// `read` runs while the registry is locked: keep it short, and do not call this registry
    /// from inside it (that would wait forever). Clone out with [`HandleRegistry::resolve`]
    /// when the work is long.
    pub fn resolve_with<R>(
        &self,
        session: &str,
        handle: &str,
        current_snapshot: &str,
        read: impl FnOnce(&V) -> R,
    ) -> Result<R, ToolError> {
        let id = match Handle::parse(handle) {
            Some(parsed) if parsed.kind == self.kind => parsed.id,
            _ => return Err(self.mixed()),
        };
        let entries = self.lock();
        let entry = entries
            .by_id
            .get(&id)
            .filter(|entry| entry.session == session)
            .ok_or_else(|| self.not_found())?;
        if entry.snapshot != current_snapshot {
            return Err(self.stale());
        }
        Ok(read(&entry.value))
    }

    /// A copy of the value behind `handle` after the checks described on the type.
    pub fn resolve(
        &self,
        session: &str,
        handle: &str,
        current_snapshot: &str,
    ) -> Result<V, ToolError>
    where
        V: Clone,
    {
        self.resolve_with(session, handle, current_snapshot, V::clone)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Entries<V>> {
        // Every update leaves the maps consistent before it can panic, so a poisoned lock still
        // guards valid data.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn mixed(&self) -> ToolError {
        let kind = self.kind;
        ToolError::validation(format!(
            "expected a {} (`{}…`); this is not one",
            kind.noun(),
            kind.prefix()
        ))
        .with_code(MIXED_HANDLE)
        .with_hint(format!(
            "pass a {} exactly as a tool returned it",
            kind.noun()
        ))
    }

    fn not_found(&self) -> ToolError {
        // One fixed text for "never existed", "evicted" and "another session's": anything
        // more would tell a caller which handles exist.
        ToolError::not_found(format!("no such {} in this session", self.kind.noun()))
            .with_code(HANDLE_NOT_FOUND)
            .with_hint("call the tool that issued it again to get a new one")
    }

    fn stale(&self) -> ToolError {
        ToolError::validation(format!(
            "the {} refers to data that has changed since it was issued",
            self.kind.noun()
        ))
        .with_code(STALE_HANDLE)
        .with_hint("call the tool that issued it again to get a fresh one")
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use proptest::prelude::*;

    use super::*;
    use crate::Category;

    fn registry() -> HandleRegistry<String> {
        HandleRegistry::new(HandleKind::Result, 8)
    }

    #[test]
    fn issued_handle_resolves_in_its_session() {
        let results = registry();
        let handle = results
            .issue("s1", "rev-1", "value".to_owned())
            .expect("issue");
        assert_eq!(handle.kind(), HandleKind::Result);
        assert!(handle.as_str().starts_with("h_"));
        assert_eq!(handle.as_str().len(), HANDLE_CHARS);
        assert_eq!(
            results
                .resolve("s1", handle.as_str(), "rev-1")
                .expect("resolve"),
            "value"
        );
        assert_eq!(
            results
                .resolve_with("s1", handle.as_str(), "rev-1", String::len)
                .expect("resolve"),
            5
        );
    }

    #[test]
    fn other_session_looks_exactly_like_never_issued() {
        let results = registry();
        let handle = results
            .issue("s1", "rev-1", "secret".to_owned())
            .expect("issue");
        let never = Handle::mint(HandleKind::Result).expect("mint");
        let foreign = results
            .resolve("s2", handle.as_str(), "rev-1")
            .expect_err("other session");
        let missing = results
            .resolve("s2", never.as_str(), "rev-1")
            .expect_err("never issued");
        assert_eq!(foreign, missing);
        assert_eq!(foreign.category(), Category::NotFound);
        assert_eq!(foreign.code(), Some(HANDLE_NOT_FOUND));
        // The other session's stale snapshot must not leak existence either.
        let foreign_stale = results
            .resolve("s2", handle.as_str(), "rev-2")
            .expect_err("other session");
        assert_eq!(foreign_stale, missing);
    }

    #[test]
    fn moved_snapshot_is_stale() {
        let results = registry();
        let handle = results.issue("s1", "rev-1", "v".to_owned()).expect("issue");
        let error = results
            .resolve("s1", handle.as_str(), "rev-2")
            .expect_err("stale");
        assert_eq!(error.category(), Category::Validation);
        assert_eq!(error.code(), Some(STALE_HANDLE));
        assert!(!error.retryable());
    }

    #[test]
    fn other_kind_or_malformed_text_is_mixed() {
        let results = registry();
        let handle = results.issue("s1", "rev-1", "v".to_owned()).expect("issue");
        let match_id = Handle::mint(HandleKind::Match).expect("mint");
        let last_changed = {
            // The last character of 16 bytes carries 2 trailing bits; setting them is not canonical.
            let mut text = handle.as_str().to_owned();
            let last = text.pop().expect("non-empty");
            let index = ALPHABET.find(last).expect("base64url") ^ 1;
            text.push(char::from(ALPHABET.as_bytes()[index]));
            text
        };
        let cases = [
            match_id.into_string(),
            String::new(),
            "h_".to_owned(),
            format!("{handle}A"),
            handle.as_str()[..HANDLE_CHARS - 1].to_owned(),
            handle.as_str().replacen("h_", "x_", 1),
            handle.as_str().replacen("h_", "H_", 1),
            format!("{}==", &handle.as_str()[..HANDLE_CHARS - 2]),
            last_changed,
            "h_".to_owned() + &"+".repeat(22),
            "h_".to_owned() + &"é".repeat(11),
            "x".repeat(10_000),
        ];
        for case in cases {
            let error = results.resolve("s1", &case, "rev-1").expect_err("mixed");
            assert_eq!(error.category(), Category::Validation, "{case:?}");
            assert_eq!(error.code(), Some(MIXED_HANDLE), "{case:?}");
        }
    }

    const ALPHABET: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

    #[test]
    fn match_registry_refuses_result_handles() {
        let matches: HandleRegistry<u32> = HandleRegistry::new(HandleKind::Match, 8);
        let id = matches.issue("s1", "rev-1", 42).expect("issue");
        assert!(id.as_str().starts_with("m_"));
        assert_eq!(
            matches
                .resolve("s1", id.as_str(), "rev-1")
                .expect("resolve"),
            42
        );
        let result_handle = Handle::mint(HandleKind::Result).expect("mint");
        let error = matches
            .resolve("s1", result_handle.as_str(), "rev-1")
            .expect_err("mixed");
        assert_eq!(error.code(), Some(MIXED_HANDLE));
    }

    #[test]
    fn oldest_is_evicted_beyond_capacity() {
        let results: HandleRegistry<usize> = HandleRegistry::new(HandleKind::Result, 3);
        let handles: Vec<_> = (0..5)
            .map(|i| results.issue("s1", "rev-1", i).expect("issue"))
            .collect();
        assert_eq!(results.len(), 3);
        for (i, handle) in handles.iter().enumerate() {
            let resolved = results.resolve("s1", handle.as_str(), "rev-1");
            if i < 2 {
                let error = resolved.expect_err("evicted");
                assert_eq!(error.code(), Some(HANDLE_NOT_FOUND));
            } else {
                assert_eq!(resolved.expect("kept"), i);
            }
        }
        assert_eq!(
            HandleRegistry::<()>::new(HandleKind::Result, 0).capacity(),
            1
        );
    }

    #[test]
    fn handles_are_distinct_and_parse_back() {
        let a = Handle::mint(HandleKind::Result).expect("mint");
        let b = Handle::mint(HandleKind::Result).expect("mint");
        assert_ne!(a, b);
        assert_eq!(Handle::parse(a.as_str()), Some(a.clone()));
        assert_eq!(
            serde_json::to_value(&a).expect("serialize"),
            serde_json::Value::String(a.to_string())
        );
    }

    #[test]
    fn registry_is_shared_across_threads() {
        let results = Arc::new(HandleRegistry::new(HandleKind::Result, 1000));
        let workers: Vec<_> = (0..4)
            .map(|worker| {
                let results = Arc::clone(&results);
                std::thread::spawn(move || {
                    (0..50)
                        .map(|i| {
                            let handle = results
                                .issue("s1", "rev-1", worker * 100 + i)
                                .expect("issue");
                            (handle, worker * 100 + i)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        for worker in workers {
            for (handle, value) in worker.join().expect("worker") {
                assert_eq!(
                    results
                        .resolve("s1", handle.as_str(), "rev-1")
                        .expect("resolve"),
                    value
                );
            }
        }
        assert_eq!(results.len(), 200);
    }

    proptest! {
        #[test]
        fn arbitrary_text_never_resolves(text in ".{0,64}") {
            let results = registry();
            let _ = results.issue("s1", "rev-1", "v".to_owned()).expect("issue");
            prop_assert!(results.resolve("s1", &text, "rev-1").is_err());
        }
    }
}

//! Server keys: a [`ContinuationKey`] (an HMAC-SHA256 key and its id) and the [`KeyRing`] of
//! the key that seals and the retired keys that still open for a grace window.
//!
//! Invariant: key bytes are never printed, echoed or kept outside the keyed MAC state, which is
//! wiped on drop.

use std::fmt;
use std::time::{Duration, SystemTime};

use hmac::digest::Key;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;
use zeroize::Zeroizing;

type KeyedMac = Hmac<Sha256>;

/// Why a key could not be read or added to a [`KeyRing`].
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum KeyError {
    /// The key text is not 64 characters long. The text itself is never echoed: it is a secret.
    #[error("a continuation key is 64 hex characters, found {found}")]
    Length {
        /// How many characters the trimmed text had.
        found: usize,
    },
    /// The key text holds something other than hex digits.
    #[error("a continuation key holds only hex digits (0-9, a-f)")]
    NotHex,
    /// Two keys of one ring share an id, so a token could not say which key sealed it.
    #[error("key id {0} is already in the key ring")]
    DuplicateId(u32),
    /// A grace window that reaches past what the system clock can represent.
    #[error("the grace window is too long")]
    GraceTooLong,
    /// The operating system's random source failed.
    #[error("the operating system's random source failed")]
    Random(#[source] getrandom::Error),
}

/// A 32-byte HMAC-SHA256 key and the id that tokens sealed with it carry (a token carries the
/// id's low four bits; a ring tries each key they could name).
///
/// Invariants: the key bytes are wiped from memory when the key is dropped, and neither `Debug`
/// nor any accessor reveals them. A key file holds the key as 64 hex characters; surrounding
/// whitespace is ignored.
///
/// ```
/// use envelope_core::paging::ContinuationKey;
///
/// let key = ContinuationKey::from_hex(7, &"ab".repeat(32))?;
/// assert_eq!(key.id(), 7);
/// assert_eq!(format!("{key:?}"), "ContinuationKey { id: 7, .. }");
/// # Ok::<(), envelope_core::paging::KeyError>(())
/// ```
#[derive(Clone)]
pub struct ContinuationKey {
    id: u32,
    // The keyed MAC state holds the only copy of what the key bytes give, and wipes it on drop.
    mac: KeyedMac,
}

impl ContinuationKey {
    /// A key from its raw bytes.
    pub fn new(id: u32, bytes: [u8; 32]) -> Self {
        // The caller's copy is theirs to wipe; ours is wiped when `block` drops. HMAC pads a
        // key shorter than its block with zeros, so the padded block is the same key, and
        // keying from a whole block cannot fail.
        let bytes = Zeroizing::new(bytes);
        let mut block = Zeroizing::new([0u8; 64]);
        block[..32].copy_from_slice(bytes.as_slice());
        let mac = KeyedMac::new(&Key::<KeyedMac>::from(*block));
        ContinuationKey { id, mac }
    }

    /// A fresh random key from the operating system's random source.
    pub fn generate(id: u32) -> Result<Self, KeyError> {
        let mut bytes = Zeroizing::new([0u8; 32]);
        getrandom::fill(bytes.as_mut_slice()).map_err(KeyError::Random)?;
        Ok(Self::new(id, *bytes))
    }

    /// A key from 64 hex characters, such as a key file's contents; whitespace around them is
    /// ignored and either letter case is accepted.
    pub fn from_hex(id: u32, text: &str) -> Result<Self, KeyError> {
        let text = text.trim();
        let found = text.chars().count();
        if found != 64 {
            return Err(KeyError::Length { found });
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        for (byte, pair) in bytes.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let [high, low] = pair else {
                return Err(KeyError::NotHex);
            };
            *byte = (hex_digit(*high)? << 4) | hex_digit(*low)?;
        }
        Ok(Self::new(id, *bytes))
    }

    /// The id every token sealed with this key carries.
    pub fn id(&self) -> u32 {
        self.id
    }

    /// The low four bits of the id: what a token carries to say which key sealed it.
    pub(super) fn nibble(&self) -> u8 {
        (self.id & 0x0F) as u8
    }

    /// HMAC-SHA256 under this key of `label` and each of `parts`, every one length-prefixed
    /// so that no two different lists of parts give the same input.
    pub(super) fn mac(&self, label: &str, parts: &[&[u8]]) -> KeyedMac {
        let mut mac = self.mac.clone();
        for part in std::iter::once(label.as_bytes()).chain(parts.iter().copied()) {
            mac.update(&(part.len() as u64).to_be_bytes());
            mac.update(part);
        }
        mac
    }

    /// The first `N` bytes of [`mac`](Self::mac): a tag a token carries.
    pub(super) fn tag<const N: usize>(&self, label: &str, parts: &[&[u8]]) -> [u8; N] {
        let full = self.mac(label, parts).finalize().into_bytes();
        let mut tag = [0u8; N];
        tag.copy_from_slice(&full[..N]);
        tag
    }

    /// Whether `tag` is the first bytes of [`mac`](Self::mac), compared in constant time.
    pub(super) fn verify(&self, label: &str, parts: &[&[u8]], tag: &[u8]) -> bool {
        self.mac(label, parts).verify_truncated_left(tag).is_ok()
    }
}

fn hex_digit(c: u8) -> Result<u8, KeyError> {
    match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        _ => Err(KeyError::NotHex),
    }
}

impl fmt::Debug for ContinuationKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ContinuationKey")
            .field("id", &self.id)
            .finish_non_exhaustive()
    }
}

/// The key that seals new tokens, plus retired keys that still open old ones for a while.
///
/// Invariants: key ids are unique within a ring; sealing always uses the current key; a retired
/// key opens tokens only while `now < usable_until`, so a rotation never cuts off an agent in
/// the middle of paging if the grace window is at least the token TTL.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use envelope_core::paging::{ContinuationKey, KeyRing};
///
/// let mut ring = KeyRing::new(ContinuationKey::new(1, [1; 32]));
/// ring.rotate(ContinuationKey::new(2, [2; 32]), SystemTime::now(), Duration::from_secs(3600))?;
/// assert_eq!(ring.current_id(), 2);
/// # Ok::<(), envelope_core::paging::KeyError>(())
/// ```
#[derive(Debug, Clone)]
pub struct KeyRing {
    current: ContinuationKey,
    retired: Vec<RetiredKey>,
}

#[derive(Debug, Clone)]
struct RetiredKey {
    key: ContinuationKey,
    usable_until: SystemTime,
}

impl KeyRing {
    /// A ring holding one key, which seals and opens.
    pub fn new(current: ContinuationKey) -> Self {
        KeyRing {
            current,
            retired: Vec::new(),
        }
    }

    /// Adds a retired key that opens (never seals) tokens while `now < usable_until`, such as
    /// the previous key read from configuration after a restart.
    pub fn with_retired(
        mut self,
        key: ContinuationKey,
        usable_until: SystemTime,
    ) -> Result<Self, KeyError> {
        self.check_new_id(key.id)?;
        self.retired.push(RetiredKey { key, usable_until });
        Ok(self)
    }

    /// Makes `new_key` the current key. The old current key keeps opening tokens until
    /// `now + grace`; retired keys whose window has closed at `now` are dropped.
    pub fn rotate(
        &mut self,
        new_key: ContinuationKey,
        now: SystemTime,
        grace: Duration,
    ) -> Result<(), KeyError> {
        let usable_until = now.checked_add(grace).ok_or(KeyError::GraceTooLong)?;
        self.retired.retain(|retired| now < retired.usable_until);
        self.check_new_id(new_key.id)?;
        let old = std::mem::replace(&mut self.current, new_key);
        self.retired.push(RetiredKey {
            key: old,
            usable_until,
        });
        Ok(())
    }

    /// The id of the key that seals new tokens.
    pub fn current_id(&self) -> u32 {
        self.current.id
    }

    fn check_new_id(&self, id: u32) -> Result<(), KeyError> {
        let taken = self.current.id == id || self.retired.iter().any(|r| r.key.id == id);
        if taken {
            return Err(KeyError::DuplicateId(id));
        }
        Ok(())
    }

    /// The keys that may open a token naming `nibble` (the low four bits of a key id) at
    /// `now`: the current key first, then retired keys still within their grace window.
    pub(super) fn opening_keys(
        &self,
        nibble: u8,
        now: SystemTime,
    ) -> impl Iterator<Item = &ContinuationKey> {
        let retired = self
            .retired
            .iter()
            .filter(move |retired| now < retired.usable_until)
            .map(|retired| &retired.key);
        std::iter::once(&self.current)
            .chain(retired)
            .filter(move |key| key.nibble() == nibble)
    }

    /// The key that seals new tokens.
    pub(super) fn current(&self) -> &ContinuationKey {
        &self.current
    }
}

impl From<ContinuationKey> for KeyRing {
    fn from(key: ContinuationKey) -> Self {
        KeyRing::new(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(id: u32) -> ContinuationKey {
        ContinuationKey::new(id, [id as u8; 32])
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
}

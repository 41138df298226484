//! The byte form continuations and target refs share: a one-byte version and key nibble, a
//! LEB128 varint, a 32-bit expiry, canonical base64url, and a reader that never indexes past
//! the end of what it reads.
//!
//! Invariant: nothing here panics on any input; every decoder refuses all but one encoding of
//! each value, so a token has exactly one accepted text.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;

/// The first byte of a token: its format version in the high four bits, the low four bits of
/// the sealing key's id in the low four.
pub(super) fn lead_byte(version: u8, key_nibble: u8) -> u8 {
    (version << 4) | (key_nibble & 0x0F)
}

/// The version and key nibble of a token's first byte.
pub(super) fn split_lead(byte: u8) -> (u8, u8) {
    (byte >> 4, byte & 0x0F)
}

/// Appends `value` as an unsigned LEB128 varint: seven bits a byte, low bits first.
pub(super) fn push_varint(out: &mut Vec<u8>, mut value: u64) {
    loop {
        let low = (value & 0x7F) as u8;
        value >>= 7;
        if value == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// The expiry a token sealed at `now` carries: Unix seconds, saturating at the 32-bit limit
/// (the year 2106).
pub(super) fn expiry(now: SystemTime, ttl: Duration) -> u32 {
    let at = unix_seconds(now).saturating_add(ttl.as_secs());
    u32::try_from(at).unwrap_or(u32::MAX)
}

/// Seconds since the Unix epoch; 0 for a clock set before it.
pub(super) fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map(|since| since.as_secs())
        .unwrap_or(0)
}

/// Reads fields off the front of a byte string without ever indexing past its end.
pub(super) struct Reader<'a>(pub(super) &'a [u8]);

impl<'a> Reader<'a> {
    /// The next `N` bytes.
    pub(super) fn take<const N: usize>(&mut self) -> Option<[u8; N]> {
        let (head, rest) = self.0.split_first_chunk::<N>()?;
        self.0 = rest;
        Some(*head)
    }

    /// The next `len` bytes.
    pub(super) fn take_slice(&mut self, len: usize) -> Option<&'a [u8]> {
        let (head, rest) = self.0.split_at_checked(len)?;
        self.0 = rest;
        Some(head)
    }

    /// A varint [`push_varint`] wrote: refuses one longer than ten bytes, one that overflows
    /// 64 bits, and one with a redundant final zero byte (so each value has one encoding).
    pub(super) fn varint(&mut self) -> Option<u64> {
        let mut value: u64 = 0;
        for index in 0..10 {
            let [byte] = self.take::<1>()?;
            let bits = u64::from(byte & 0x7F);
            let shift = 7 * index;
            // The tenth byte holds the last bit of 64.
            if index == 9 && bits > 1 {
                return None;
            }
            value |= bits << shift;
            if byte & 0x80 == 0 {
                // A last byte of zero after others adds nothing: not the one encoding.
                return (index == 0 || bits != 0).then_some(value);
            }
        }
        None
    }

    /// What is left.
    pub(super) fn rest(&self) -> &'a [u8] {
        self.0
    }
}

/// Decodes base64url without padding, refusing padding, other alphabets and set trailing bits,
/// so each byte string has exactly one accepted text. Returns how many bytes were written.
pub(crate) fn decode_canonical(text: &str, out: &mut [u8]) -> Option<usize> {
    // The engine already refuses padding (`RequireNone`) and trailing bits; this re-encoding
    // check keeps that guarantee even if a later engine version were more lenient.
    let written = URL_SAFE_NO_PAD.decode_slice(text, out).ok()?;
    let decoded = out.get(..written)?;
    (URL_SAFE_NO_PAD.encode(decoded) == text).then_some(written)
}

/// The text of a token's bytes: base64url without padding.
pub(super) fn encode(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn varints_round_trip_at_their_edges() {
        for value in [
            0,
            1,
            127,
            128,
            16_383,
            16_384,
            u64::from(u32::MAX),
            u64::MAX,
        ] {
            let mut out = Vec::new();
            push_varint(&mut out, value);
            let mut reader = Reader(&out);
            assert_eq!(reader.varint(), Some(value), "{value}");
            assert!(reader.rest().is_empty());
        }
    }

    #[test]
    fn a_varint_has_one_encoding() {
        // 1 written with a redundant continuation byte, and a value past 64 bits.
        assert_eq!(Reader(&[0x81, 0x00]).varint(), None);
        assert_eq!(
            Reader(&[0xFF; 9].iter().chain(&[0x02]).copied().collect::<Vec<_>>()).varint(),
            None
        );
        assert_eq!(Reader(&[0x80; 11]).varint(), None);
        assert_eq!(Reader(&[0x80]).varint(), None, "cut short");
    }

    #[test]
    fn the_lead_byte_splits_back() {
        assert_eq!(split_lead(lead_byte(2, 0x1F)), (2, 0x0F));
    }

    #[test]
    fn expiry_saturates_at_32_bits() {
        assert_eq!(expiry(UNIX_EPOCH, Duration::MAX), u32::MAX);
        assert_eq!(expiry(UNIX_EPOCH, Duration::from_secs(61)), 61);
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

    proptest! {
        #[test]
        fn any_varint_round_trips(value in any::<u64>()) {
            let mut out = Vec::new();
            push_varint(&mut out, value);
            prop_assert_eq!(Reader(&out).varint(), Some(value));
        }
    }
}

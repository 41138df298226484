//! The continuation token's wire format, version 2: its layout field by field
//! ([`TOKEN_LAYOUT`]), its lengths, and the labels that keep its three tags apart.

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

// Token layout, in bytes (see `TOKEN_LAYOUT`): lead ‖ position ‖ expiry ‖ binding tag ‖
// snapshot tag ‖ seal. Only the position and expiry travel, in the clear and authenticated;
// the binding is recomputed from the call. The seal says the token is this server's and
// unedited (else `INVALID_CONTINUATION`); then the binding tag tells another call's token
// (`CONTINUATION_SCOPE_MISMATCH`) from a moved snapshot (`STALE_CONTINUATION`). Presenting a
// genuine token under another tool, caller, request or scope passes only if both 32-bit tags
// match by chance (2^-64); under a moved snapshot alone, if the snapshot tag does (2^-32).
pub(super) const VERSION: u8 = 2;
pub(super) const TAG_LEN: usize = 4;
pub(super) const MIN_TOKEN_BYTES: usize = 1 + 1 + 4 + 3 * TAG_LEN;
pub(super) const MAX_TOKEN_BYTES: usize = 1 + 10 + 4 + 3 * TAG_LEN;
// Room for the longest text that passes the cap, so decoding never fails for lack of space.
pub(super) const DECODE_BUFFER: usize = MAX_TOKEN_CHARS / 4 * 3 + 3;
// The labels of the three tags, so no tag of one kind ever stands in for another.
pub(super) const BIND_LABEL: &str = "envelope/continuation/v2/bind";
pub(super) const SNAPSHOT_LABEL: &str = "envelope/continuation/v2/snapshot";
pub(super) const SEAL_LABEL: &str = "envelope/continuation/v2/seal";

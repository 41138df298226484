//! Request ids: a ULID on every response, the join key between the agent's logs and
//! the server's.

use std::fmt;
use std::str::FromStr;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::CoreError;

/// Crockford's base-32 alphabet, the one ULIDs are written in.
const CROCKFORD: &[u8; 32] = b"0123456789ABCDEFGHJKMNPQRSTVWXYZ";

/// The longest client correlation id kept: longer ones are replaced.
pub const MAX_CLIENT_ID_CHARS: usize = 128;

/// A ULID naming one call.
///
/// Wire form: 26 upper-case Crockford base-32 characters, the first one `0`–`7` (so the value
/// fits 128 bits). Invariant: the held bytes are always such a canonical ULID, hence ASCII.
/// Held inline and `Copy`, since every call stamps it more than once.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RequestId([u8; 26]);

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("RequestId").field(&self.as_str()).finish()
    }
}

impl RequestId {
    /// A fresh id for the current instant.
    pub fn new() -> Self {
        let mut buffer = [0; 26];
        ulid::Ulid::generate().array_to_str(&mut buffer);
        RequestId(buffer)
    }

    /// Parses a ULID strictly: 26 Crockford characters, either case, the first one `0`–`7`.
    pub fn parse(raw: &str) -> Result<Self, CoreError> {
        let invalid = || CoreError::InvalidRequestId {
            raw: raw.chars().take(64).collect(),
        };
        if raw.len() != 26 {
            return Err(invalid());
        }
        let mut canonical = [0; 26];
        canonical.copy_from_slice(raw.as_bytes());
        canonical.make_ascii_uppercase();
        if !(b'0'..=b'7').contains(&canonical[0])
            || !canonical.iter().all(|b| CROCKFORD.contains(b))
        {
            return Err(invalid());
        }
        Ok(RequestId(canonical))
    }

    /// The id to stamp on a call a client named: the client's own id when it is a valid ULID
    /// (echoed, upper-cased), a fresh one otherwise.
    pub fn from_client(raw: Option<&str>) -> Self {
        raw.and_then(|raw| Self::parse(raw).ok())
            .unwrap_or_default()
    }

    /// A client's own correlation id (an `X-Request-ID` that is not a ULID, such as a
    /// gateway's UUID) when it is safe to log and echo: 1 to [`MAX_CLIENT_ID_CHARS`] printable
    /// ASCII characters (spaces allowed inside, none at either end), so no CR/LF, no control
    /// characters and nothing that could forge a log line or a header. A ULID is not a
    /// correlation id: it becomes the request id itself. `None` for anything else, which is then
    /// replaced rather than kept.
    ///
    /// ```
    /// use envelope_core::RequestId;
    ///
    /// let uuid = "6f1c2a8e-3b7d-4c55-9e0a-1d2f3a4b5c6d";
    /// assert_eq!(RequestId::client_correlation(Some(uuid)), Some(uuid));
    /// assert_eq!(RequestId::client_correlation(Some("evil\r\nSet-Cookie: x")), None);
    /// assert_eq!(RequestId::client_correlation(Some("01HM3K2X9V7QY8R4PNZTH5W6BC")), None);
    /// ```
    pub fn client_correlation(raw: Option<&str>) -> Option<&str> {
        let raw = raw?;
        let printable = raw.bytes().all(|b| b.is_ascii_graphic() || b == b' ');
        let trimmed = raw.trim() == raw;
        (printable
            && trimmed
            && (1..=MAX_CLIENT_ID_CHARS).contains(&raw.len())
            && Self::parse(raw).is_err())
        .then_some(raw)
    }

    /// The canonical string.
    pub fn as_str(&self) -> &str {
        // Every constructor checked the bytes are Crockford characters, so this never fails.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl Default for RequestId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for RequestId {
    type Err = CoreError;

    fn from_str(raw: &str) -> Result<Self, Self::Err> {
        Self::parse(raw)
    }
}

impl Serialize for RequestId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for RequestId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(deserializer)?;
        RequestId::parse(&raw).map_err(serde::de::Error::custom)
    }
}

impl JsonSchema for RequestId {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "RequestId".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "A ULID: 26 Crockford base-32 characters, the first one 0-7.",
            "type": "string",
            "pattern": "^[0-7][0-9A-HJKMNP-TV-Z]{25}$",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fresh_ids_are_valid_and_distinct() {
        let a = RequestId::new();
        let b = RequestId::new();
        assert_ne!(a, b);
        assert_eq!(RequestId::parse(a.as_str()).expect("fresh ids parse"), a);
    }

    #[test]
    fn valid_client_ids_are_echoed() {
        let id = "01HM3K2X9V7QY8R4PNZTH5W6BC";
        assert_eq!(RequestId::from_client(Some(id)).as_str(), id);
        assert_eq!(
            RequestId::from_client(Some(&id.to_ascii_lowercase())).as_str(),
            id
        );
    }

    #[test]
    fn invalid_client_ids_are_replaced() {
        for bad in [
            "",
            "not-a-ulid",
            "81HM3K2X9V7QY8R4PNZTH5W6BC", // first character over 7: overflows 128 bits
            "01HM3K2X9V7QY8R4PNZTH5W6B",  // 25 characters
            "01HM3K2X9V7QY8R4PNZTH5W6BCD",
            "01HM3K2X9V7QY8R4PNZTH5W6BI", // I is not Crockford
            "01HM3K2X9V7QY8R4PNZTH5W6BU",
            "01HM3K2X9V7QY8R4PNZTH5W6Bé",
        ] {
            let id = RequestId::from_client(Some(bad));
            assert_ne!(id.as_str(), bad);
            assert!(RequestId::parse(id.as_str()).is_ok());
            assert!(RequestId::parse(bad).is_err(), "{bad}");
        }
    }
}

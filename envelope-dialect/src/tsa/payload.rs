//! Where the payload goes. The contract puts a tool's answer at the top level, beside its own
//! fields (`callers`, `risk_level`, `file_path`…), so an object payload is flattened there;
//! what cannot be flattened without losing or disguising a member stays whole under `data`.

use std::collections::BTreeSet;

use serde_json::{Map, Value};

use super::keys;

/// The payload's top-level members, and which keys among them are the payload's.
#[derive(Debug, Default)]
pub(super) struct Placed {
    /// The members to write at the top level.
    pub(super) members: Map<String, Value>,
    /// The keys that hold payload (not dialect metadata): what a TOON response may leave to
    /// `toon_content`.
    pub(super) keys: BTreeSet<String>,
}

/// Places `payload` beside `written`, the dialect's fields of this response.
///
/// - absent or `null`: nothing (a field with nothing behind it is absent);
/// - an object whose every member [`fits`]: its members, flattened;
/// - anything else (a list, a scalar, or an object with a member that does not fit): the
///   payload whole under `data`, which is one of the dialect's own keys, so a top-level `data`
///   is always the whole payload and never one of its members.
pub(super) fn place(payload: Option<&Value>, written: &Map<String, Value>) -> Placed {
    match payload {
        None | Some(Value::Null) => Placed::default(),
        Some(Value::Object(members))
            if members
                .iter()
                .all(|(name, value)| fits(name, value, written)) =>
        {
            Placed {
                // A member equal to a dialect field is that field: it is not payload of its
                // own, so it is not left to `toon_content` either.
                keys: members
                    .keys()
                    .filter(|name| !written.contains_key(*name))
                    .cloned()
                    .collect(),
                members: members.clone(),
            }
        }
        Some(whole) => Placed {
            members: Map::from_iter([(keys::DATA.to_owned(), whole.clone())]),
            keys: BTreeSet::from([keys::DATA.to_owned()]),
        },
    }
}

/// Whether a payload member named `name` can sit at the top level: only when the response
/// writes that key with the same value anyway (nothing is overwritten), or when it is neither
/// written nor one of the keys the dialect owns (nothing is disguised as a contract field).
fn fits(name: &str, value: &Value, written: &Map<String, Value>) -> bool {
    match written.get(name) {
        Some(field) => field == value,
        None => !keys::OWNED.contains(&name),
    }
}

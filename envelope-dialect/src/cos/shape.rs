//! [`Shape`]: how a payload sits in `data`, which the block and the placement both follow.

use serde_json::Value;

use super::key;

/// How a payload sits in `data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Shape {
    /// An object: `meta` becomes one of its members.
    Object,
    /// Anything else: wrapped under this key, beside `meta`.
    Wrapped(&'static str),
}

impl Shape {
    /// The shape `data` is sent in (an absent payload reads as null).
    pub(super) fn of(data: Option<&Value>) -> Shape {
        match data {
            Some(Value::Object(_)) => Shape::Object,
            Some(Value::Array(_)) => Shape::Wrapped(key::RESULTS),
            _ => Shape::Wrapped(key::VALUE),
        }
    }
}

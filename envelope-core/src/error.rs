//! The crate's own error: what a constructor in `envelope-core` refuses, and why.

use crate::completeness::Violation;

/// A contract value that could not be built because the input contradicts the contract.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CoreError {
    /// A completeness that would say contradictory things about a collection.
    #[error("contradictory completeness ({0}): {meaning}", meaning = .0.meaning())]
    Completeness(Violation),
    /// A string that is not a ULID.
    #[error("`{raw}` is not a ULID (26 Crockford base-32 characters, the first one 0-7)")]
    InvalidRequestId {
        /// The offending input, cut to 64 characters.
        raw: String,
    },
    /// A next action whose arguments are not a JSON object.
    #[error("next action `{id}` has arguments that are not a JSON object")]
    ActionArgumentsNotObject {
        /// The action's id.
        id: String,
    },
    /// An envelope whose `ok` disagrees with the presence of `data` or `error`.
    #[error("{0}")]
    EnvelopeShape(&'static str),
    /// A unit name that is not snake case.
    #[error("`{0}` is not a unit name; expected snake case such as `file` or `incoming_call`")]
    InvalidUnit(String),
    /// Two tools with one name in a toolset.
    #[error("two tools are named `{0}`; tool names must be unique in a toolset")]
    DuplicateTool(String),
    /// A tier name outside `lite`, `standard`, `heavy`.
    #[error("unknown tier `{0}`; expected `lite`, `standard` or `heavy`")]
    UnknownTier(String),
}

/// A contract value a tool failed to build is the tool's bug, not the caller's: `?` on it
/// yields an `internal` error, masked on the wire and logged in full.
impl crate::tool_error::Categorize for CoreError {
    fn category(&self) -> crate::tool_error::Category {
        crate::tool_error::Category::Internal
    }
}

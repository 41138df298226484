//! The crate's own error: what a constructor in `envelope-core` refuses, and why.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

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
    /// A tool spec made at run time breaks an invariant `#[tool]` proves at compile time.
    #[error("tool `{tool}` is declared wrong: {reason}")]
    InvalidToolSpec {
        /// The tool's name, cut to 128 characters.
        tool: String,
        /// Which invariant it breaks.
        reason: String,
    },
    /// Two tools with one name in a toolset.
    #[error("two tools are named `{0}`; tool names must be unique in a toolset")]
    DuplicateTool(String),
    /// A tier name outside `lite`, `standard`, `heavy`.
    #[error("unknown tier `{0}`; expected `lite`, `standard` or `heavy`")]
    UnknownTier(String),
}

crate::wire::vocabulary! {
    /// What the reason means, in one line.
    fn meaning;
    /// A contradictory completeness state, as
    /// [`Completeness::try_from_parts`](crate::Completeness::try_from_parts) rejects it.
    #[derive(PartialOrd, Ord, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "snake_case")]
    pub enum Violation {
        /// `returned_exceeds_total`
        ReturnedExceedsTotal = "returned_exceeds_total": "`offset + returned` cannot exceed an exact `total`.",
        /// `complete_without_total`
        CompleteWithoutTotal = "complete_without_total": "`complete` requires an exact `total`.",
        /// `complete_count_mismatch`
        CompleteCountMismatch = "complete_count_mismatch": "`complete` requires `offset + returned` to equal `total`: the page reaches the end.",
        /// `complete_but_truncated`
        CompleteButTruncated = "complete_but_truncated": "`complete` cannot be `truncated` or carry truncation reasons.",
        /// `complete_with_incomplete_reasons`
        CompleteWithIncompleteReasons = "complete_with_incomplete_reasons": "`complete` cannot carry incomplete reasons.",
        /// `continuation_on_complete`
        ContinuationOnComplete = "continuation_on_complete": "`complete` cannot carry a `continuation`.",
        /// `truncated_without_reason`
        TruncatedWithoutReason = "truncated_without_reason": "`truncated` requires at least one truncation reason.",
        /// `reason_without_truncation`
        ReasonWithoutTruncation = "reason_without_truncation": "Truncation reasons require `truncated: true`.",
        /// `incomplete_without_reason`
        IncompleteWithoutReason = "incomplete_without_reason": "A result that is neither complete nor truncated needs an incomplete reason.",
        /// `continuation_without_truncation`
        ContinuationWithoutTruncation = "continuation_without_truncation": "A `continuation` is only for a deliberately truncated page.",
        /// `empty_continuation`
        EmptyContinuation = "empty_continuation": "A `continuation` cannot be an empty string.",
    }
}

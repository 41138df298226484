//! The contract's failure as types: `{"ok": false, "error": {category, retryable, message}}`,
//! written ([`failure`](super::failure)), read back ([`view`](super::view)) and described
//! ([`schema`](super::schema)) from this one definition.

use envelope_core::Category;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::typed::Flag;

/// A failed call, exactly: `ok: false` and the error, nothing else.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct Failure {
    /// `false`: the call failed.
    pub(super) ok: Flag<false>,
    /// What failed, for the agent to pick retry, escalate or surface.
    pub(super) error: FailureError,
}

/// `error`: exactly the category, whether a retry can help, and the message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub(super) struct FailureError {
    /// What kind of failure: the recovery an agent picks.
    pub(super) category: Category,
    /// Whether a retry can help: the category's default unless the tool said otherwise.
    pub(super) retryable: bool,
    /// What went wrong, in operator English.
    pub(super) message: String,
}

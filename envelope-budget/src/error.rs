//! The crate's error.

/// What the budget crate refuses, and why.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BudgetError {
    /// The payload could not be serialized.
    #[error("cannot serialize payload")]
    Serialize(#[source] serde_json::Error),
}

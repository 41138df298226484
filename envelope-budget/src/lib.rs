//! Token accounting and trimming of envelope responses to a budget.
//!
//! Invariant: a response this crate finishes fits its budget or says `envelope_unshrinkable`,
//! and every cut it makes is named by a marker; trimming it again changes nothing.

mod error;
pub mod tokens;

pub use error::BudgetError;
pub use tokens::{Counts, Estimator};

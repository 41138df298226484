//! Token accounting and trimming of envelope responses to a budget.
//!
//! Invariant: a response this crate finishes fits its budget or says `envelope_unshrinkable`,
//! and every cut it makes is named by a marker; trimming it again changes nothing.

pub mod deep;
mod error;
mod respond;
mod size;
mod subgraph;
pub mod tokens;
pub mod toon;
mod trim;

pub use deep::drop_deep;
pub use error::BudgetError;
pub use respond::{
    BudgetPolicy, COMPACT_DROPPED_META, CONTROL_SURFACE, CONTROL_SURFACE_META, Prepared, prepare,
};
pub use subgraph::is_graph;
pub use tokens::{Counts, Estimator};
pub use toon::{ToonError, encode as encode_toon};
pub use trim::{
    AGENT_BUDGET_CHARS, GRAPH_SUBGRAPH_BUDGET_CHARS, LONG_STRING_CHARS, Leftovers, ListCut,
    MAX_DEPTH, NESTED_FLOOR, ROOT_LIST_KEY, TRIMMABLE_LIST_KEYS, TRUNCATION_SUFFIX, Trimmed,
    cut_depth, trim,
};

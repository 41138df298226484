//! Token accounting and trimming of envelope responses to a budget.
//!
//! [`prepare`] is the boundary between a tool's output (its [`envelope_core::Envelope`] around
//! its typed payload) and the bytes an agent receives. A server asks once per call for the
//! call's budget ([`BudgetPolicy::for_call`]), installs its [`sizer`](CallBudget::sizer) on the
//! tool's context, and prepares the tool's output with it: [`prepare`] encodes the payload
//! (rows that could never be sent are not converted), shapes the response to the per-call
//! controls, trims it to its budget
//! down the trimming ladder (every cut named by a `truncated_*` marker), keeps
//! `completeness` and `next_step` true to the rows actually sent, and counts the tokens of
//! those bytes (stamped as `meta.tokens_estimated`, itself included, under
//! `response_mode: full`).
//!
//! Invariant: a response this crate finishes fits its budget or says `envelope_unshrinkable`,
//! and every cut it makes is named by a marker; trimming it again changes nothing.
//!
//! ```
//! use envelope_budget::{BudgetPolicy, prepare};
//! use envelope_core::{Completeness, Envelope, TruncationReason, Unit};
//! use serde_json::json;
//!
//! let rows: Vec<_> = (0..5_000).map(|i| json!({ "path": format!("src/f{i}.rs"), "line": i })).collect();
//! let page = Completeness::truncated_page(Unit::FILE, 5_000, Some(80_000), TruncationReason::PageLimit, None)?;
//! let envelope = Envelope::ok(json!({ "results": rows })).with_completeness(page);
//!
//! let sent = prepare(envelope, &BudgetPolicy::default().for_call(None));
//! let kept = sent.structured["data"]["results"].as_array().map_or(0, Vec::len);
//! assert!(sent.json.len() <= 32_000);
//! assert_eq!(sent.structured["meta"]["truncated_results_from"], 5_000);
//! assert_eq!(sent.structured["completeness"]["returned"], kept);
//! assert!(sent.structured["next_step"].as_str().unwrap_or("").starts_with(&format!("showing {kept} of 80000 files")));
//! # Ok::<(), envelope_core::CoreError>(())
//! ```

mod again;
mod call;
mod cut;
mod encode;
#[cfg(feature = "exact")]
pub mod exactly;
mod media;
mod nesting;
mod own_fields;
mod pass;
mod policy;
mod prepare;
mod prepared;
mod prose;
mod reconcile;
mod shape;
mod size;
mod splice;
mod stamps;
mod subgraph;
mod tokens;
mod toon;
mod trim;
mod write;

pub use again::MAX_RETRIES;
pub use call::CallBudget;
pub use cut::{Leftovers, ROOT_LIST_KEY, TRUNCATION_SUFFIX};
pub use media::MEDIA_SHARE_PERCENT;
pub use policy::BudgetPolicy;
pub use prepare::{prepare, prepare_as};
pub use prepared::Prepared;
pub use prose::states_number;
pub use shape::{COMPACT_DROPPED_META, CONTROL_SURFACE, CONTROL_SURFACE_META};
#[cfg(feature = "exact")]
pub use tokens::ExactCounter;
pub use tokens::{COUNT_FIELDS, Counts, Estimator};
pub use toon::{
    MAX_DEPTH as TOON_MAX_DEPTH, SPEC_VERSION as TOON_SPEC_VERSION, ToonError,
    encode as encode_toon,
};
pub use trim::{
    AGENT_BUDGET_CHARS, GRAPH_SUBGRAPH_BUDGET_CHARS, LONG_STRING_CHARS, MAX_DEPTH, NESTED_FLOOR,
    TRIMMABLE_LIST_KEYS,
};

// The trimmer's ladder on its own, for the benches that measure it: not API, and not
// documented; a server reaches it through `prepare`.
#[doc(hidden)]
pub use cut::ListCut;
#[doc(hidden)]
pub use trim::{Trimmed, cut_depth, trim};

//! The typed contract of agent-grade tool responses.
//!
//! Every response is an [`Envelope`]: it says whether the call worked (`ok`), what the agent
//! should make of it ([`Verdict`]), how complete it is ([`Completeness`]), why it is empty
//! ([`EmptyReason`]), what to call next ([`NextAction`]), and, on failure, whether a retry can
//! help ([`ToolError`], [`Category`]). `meta` is stamped by the library, never by tool code.
//!
//! Invariant: no I/O here. This crate knows nothing of budgets or transports.
//!
//! ```
//! use envelope_core::{Completeness, Envelope, ToolError, TruncationReason, Unit};
//!
//! // A page of 40 files out of 512, cut by the page limit.
//! let page = Completeness::truncated_page(Unit::FILE, 40, Some(512), TruncationReason::PageLimit, None)?;
//! let envelope = Envelope::ok(vec!["src/lib.rs"; 40]).with_completeness(page);
//! assert_eq!(envelope.next_step(), Some("showing 40 of 512 files — raise the limit or narrow the query"));
//!
//! // A failure an agent can branch on without reading prose.
//! let failed: Envelope<()> = Envelope::err(ToolError::transient("backend timed out"));
//! let wire = serde_json::to_value(&failed)?;
//! assert_eq!(wire["ok"], false);
//! assert_eq!(wire["verdict"], "ERROR");
//! assert_eq!(wire["error"]["category"], "transient");
//! assert_eq!(wire["error"]["retryable"], true);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod canonical;
mod capability;
mod completeness;
mod empty_reason;
mod envelope;
mod error;
mod meta;
mod next_action;
mod notice;
mod request_id;
mod schema;
mod tier;
mod tool_error;
mod verdict;

pub use canonical::canonical_json;
pub use capability::Capability;
pub use completeness::{
    Completeness, CompletenessParts, IncompleteReason, TruncationReason, Unit, Violation,
};
pub use empty_reason::{EmptyReason, UnknownEmptyReason};
pub use envelope::{ENVELOPE_FIELDS, Envelope};
pub use error::CoreError;
pub use meta::{BinaryDrift, Meta, SCHEMA_VERSION, TokensMethod};
pub use next_action::{
    Dependency, DependencyMode, MAX_NEXT_ACTIONS, NextAction, Role, normalize_next_actions,
};
pub use notice::{Notice, Severity};
pub use request_id::RequestId;
pub use schema::envelope_schema;
pub use tier::Tier;
pub use tool_error::{Categorize, Category, INTERNAL_MESSAGE, ToolError};
pub use verdict::Verdict;

// Used by code that #[tool] generates and by the sibling envelope crates. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::meta::MetaStamp;

    use crate::envelope::Envelope;
    use crate::request_id::RequestId;
    use crate::tool_error::ToolError;

    /// Write access to an envelope's `meta`.
    pub fn meta_stamp<T>(envelope: &mut Envelope<T>) -> MetaStamp<'_> {
        MetaStamp(envelope.meta_mut())
    }

    /// Stamps the request id and masks an internal error so that it names only that id.
    pub fn stamp_request_id<T>(envelope: &mut Envelope<T>, request_id: RequestId) {
        if let Some(error) = envelope.error_mut() {
            error.mask_with(&request_id);
        }
        MetaStamp(envelope.meta_mut()).request_id(request_id);
    }

    /// The error only the generated module gate emits.
    pub fn module_disabled(module: &str) -> ToolError {
        ToolError::module_disabled(module)
    }
}

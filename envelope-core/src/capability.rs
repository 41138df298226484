//! Capability tags: stable strings a server advertises in `meta.capabilities` so
//! hosts gate on them instead of probing. Every tag a server advertises must have a runtime test
//! proving the feature behind it works.

use std::borrow::Cow;

/// One capability tag. Open set: tags this version does not know read back as they are.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Capability(Cow<'static, str>);

crate::wire::vocabulary! {
    /// What advertising the tag promises; `None` for a tag this version does not know.
    pub fn meaning;
    open Capability {
        /// `standardized_error_envelope`
        STANDARDIZED_ERROR_ENVELOPE = "standardized_error_envelope": "Every failure uses the one typed `error` shape with a category and `retryable`.";
        /// `canonical_verdicts`
        CANONICAL_VERDICTS = "canonical_verdicts": "Every response carries a verdict from the eight-value alphabet.";
        /// `request_ids`
        REQUEST_IDS = "request_ids": "Every response carries a ULID `meta.request_id`; a valid client id is echoed.";
        /// `complexity_tier`
        // wire: a capability tag, named after the field it is about
        COMPLEXITY_TIER = "complexity_tier": "Every response stamps the tool's declared `meta.complexity_tier`.";
        /// `idempotency_declared`
        IDEMPOTENCY_DECLARED = "idempotency_declared": "Every response stamps `meta.idempotent`: true only for a tool declared idempotent (or read-only); tools list `idempotentHint` only where declared.";
        /// `tokens_estimated`
        // wire: a capability tag, named after the field it is about
        TOKENS_ESTIMATED = "tokens_estimated": "`meta.tokens_estimated` counts the bytes actually sent, itself included.";
        /// `budget_trimming`
        BUDGET_TRIMMING = "budget_trimming": "Responses over the budget are trimmed with `truncated_*` markers, never silently.";
        /// `completeness`
        // wire: a capability tag, named after the field it is about
        COMPLETENESS = "completeness": "Bounded collections carry a checked `completeness`.";
        /// `next_actions`
        // wire: a capability tag, named after the field it is about
        NEXT_ACTIONS = "next_actions": "`next_actions` are normalized and name only live tools with schema-valid arguments.";
        /// `continuations`
        CONTINUATIONS = "continuations": "Truncated pages carry sealed, stateless continuation tokens.";
        /// `toon_output`
        TOON_OUTPUT = "toon_output": "`output_format: \"toon\"` renders the text content as TOON.";
        /// `streamable_http`
        STREAMABLE_HTTP = "streamable_http": "The server is reachable over MCP streamable HTTP.";
        /// `progress`
        PROGRESS = "progress": "Long tools report progress notifications.";
    }
}

impl Capability {
    /// A tag of the server's own: snake case, as the known tags are.
    pub fn custom(tag: impl Into<String>) -> Capability {
        Capability(Cow::Owned(tag.into()))
    }

    /// The wire string.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

crate::wire::open_wire_string!(
    Capability,
    from_wire: |tag: String| -> Result<Capability, std::convert::Infallible> {
        Ok(Capability::KNOWN
            .iter()
            .find(|known| known.as_str() == tag)
            .cloned()
            .unwrap_or(Capability(Cow::Owned(tag))))
    },
    known: Capability::KNOWN,
    description: "A capability tag. Open set: read the list and branch; never assume a tag.",
);

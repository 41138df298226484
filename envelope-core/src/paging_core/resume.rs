//! [`Resume`]: how the budget stage re-seals a page's continuation after it cuts the page.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use super::codes::NEXT_PAGE;
use super::{Binding, Continuations};
use crate::next_action::{NextAction, Role};
use crate::tool_error::ToolError;

/// How to re-seal a page's continuation after the budget stage cuts the page's rows: the page's
/// binding and where it started. The [`Pager`](crate::paging::Pager) attaches one to the reply
/// it finishes; when the response budget then cuts the rows `completeness` describes, the
/// budget stage seals a token that resumes right after the last row sent, so no row is
/// stranded and the tool does not run again to mint it.
#[derive(Clone)]
pub struct Resume {
    pub(crate) continuations: Arc<Continuations>,
    pub(crate) tool: String,
    pub(crate) session: String,
    pub(crate) request: Value,
    pub(crate) scope: String,
    pub(crate) snapshot: String,
    pub(crate) dialect: crate::dialect::Dialect,
    // What every action the call suggests carries besides its own arguments (the call's
    // `dialect` control): the budget stage sets it, the next page it mints carries it too.
    pub(crate) carried: serde_json::Map<String, Value>,
    /// The paging argument's name: a typed pager's, or the one the call's tool reads it under.
    pub(crate) continuation_field: std::borrow::Cow<'static, str>,
    pub(crate) limit_field: &'static str,
    pub(crate) start: usize,
    pub(crate) reason: String,
    /// Whether the tool takes a page size (its `limit_field`): what the budget stage's advice
    /// after a cut may suggest lowering.
    pub(crate) page_size: bool,
}

impl Resume {
    /// This resume bound to `scope`, what the request reaches beyond its arguments.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// This resume bound to the data's `snapshot` (a digest): a token it seals is refused as
    /// stale once the data the page was cut from changed.
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: impl Into<String>) -> Self {
        self.snapshot = snapshot.into();
        self
    }

    /// This resume for a tool that takes no page size: after a cut, the budget stage's
    /// `next_step` says to follow `next-page`, and not to lower a page size it does not take.
    #[must_use]
    pub fn without_page_size(mut self) -> Self {
        self.page_size = false;
        self
    }

    /// Whether the tool takes a page size.
    pub fn takes_page_size(&self) -> bool {
        self.page_size
    }

    /// The token that resumes after the first `sent` rows of the page, or `None` when `sent`
    /// is zero: a token to where the page started would let paging loop.
    pub fn after(&self, sent: usize) -> Result<Option<String>, ToolError> {
        if sent == 0 {
            return Ok(None);
        }
        let binding = Binding::new(&self.tool, &self.session, &self.request)
            .with_continuation_field(&self.continuation_field)
            .with_limit_field(self.limit_field)
            .with_scope(&self.scope)
            .with_snapshot(&self.snapshot)
            .with_dialect(self.dialect);
        let position =
            u64::try_from(self.start.saturating_add(sent)).map_err(ToolError::internal)?;
        self.continuations.seal(&binding, position).map(Some)
    }

    /// This resume with `carried` added to the arguments of the next page it mints, as the
    /// budget stage adds it to every action the call suggests
    /// ([`carry_arguments`](crate::stage::carry_arguments)).
    #[must_use]
    pub fn carrying(mut self, carried: &serde_json::Map<String, Value>) -> Self {
        carry(&mut self.carried, carried);
        self
    }

    /// The next-page action resuming at `token`: this page's request with `token` as its
    /// continuation argument, so that calling it exactly as given is the next page. What the
    /// budget stage offers when it cuts the last page, which had no continuation before.
    pub fn next_page(&self, token: &str) -> Result<NextAction, ToolError> {
        let mut arguments = match &self.request {
            Value::Object(arguments) => arguments.clone(),
            _ => serde_json::Map::new(),
        };
        arguments.insert(
            self.continuation_field.to_string(),
            Value::String(token.to_owned()),
        );
        carry(&mut arguments, &self.carried);
        NextAction::new(
            NEXT_PAGE,
            Role::BroadenScope,
            0,
            &self.tool,
            arguments,
            &self.reason,
        )
        .map_err(ToolError::internal)
    }
}

impl fmt::Debug for Resume {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resume")
            .field(crate::fields::next_action::TOOL, &self.tool)
            .field("start", &self.start)
            .finish_non_exhaustive()
    }
}

impl PartialEq for Resume {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.continuations, &other.continuations)
            && (
                &self.tool,
                &self.session,
                &self.request,
                &self.scope,
                &self.snapshot,
                (self.dialect, &self.carried),
                self.start,
            ) == (
                &other.tool,
                &other.session,
                &other.request,
                &other.scope,
                &other.snapshot,
                (other.dialect, &other.carried),
                other.start,
            )
    }
}

/// Adds each of `carried` to `arguments` where it sets no value of its own: how a call's
/// `dialect` control reaches every action it suggests, so that following one answers in the
/// same wire (and a continuation, bound to its dialect, resumes).
pub(crate) fn carry(
    arguments: &mut serde_json::Map<String, Value>,
    carried: &serde_json::Map<String, Value>,
) {
    for (key, value) in carried {
        if !arguments.contains_key(key) {
            arguments.insert(key.clone(), value.clone());
        }
    }
}

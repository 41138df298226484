//! What a paging walk checks as it goes, whoever drives it: a call or a continuation sent
//! twice (a loop), a continuation too long to hold, a page starting before the rows already
//! returned, a total that changes. (Rows adding up past the total need one of these: each page
//! alone is held within it when it is decoded.)

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};

use envelope_core::fields::completeness::CONTINUATION;
use envelope_core::{Completeness, canonical_json};
use serde_json::{Map, Value};

use crate::error::ClientError;

/// The longest continuation a walk sends, in characters: a server whose tokens grow past it
/// (without bound, say) is refused rather than held. An envelope server's tokens are far
/// shorter.
pub const MAX_CONTINUATION_CHARS: usize = 65_536;

/// The checks of one walk ([`Client::pages`](crate::Client::pages) makes them; a loop of
/// one's own can too). It holds a 64-bit digest of each call sent, never the calls, so its
/// memory grows by a few bytes a page whatever the server sends. The kits' shared cases
/// (`clients/cases/walk.json`) hold both kits to it.
///
/// ```
/// use envelope_client::WalkGuard;
/// use serde_json::{Map, Value, json};
///
/// let mut walk = WalkGuard::new("search");
/// let call: Map<String, Value> = json!({"continuation": "p2"}).as_object().cloned().unwrap_or_default();
/// walk.sending("search", &call)?;
/// assert!(walk.sending("search", &call).is_err(), "the same continuation again is a loop");
/// # Ok::<(), envelope_client::ClientError>(())
/// ```
#[derive(Debug, Clone)]
pub struct WalkGuard {
    tool: String,
    calls: HashSet<u64>,
    tokens: HashSet<u64>,
    pages: usize,
    rows: usize,
    total: Option<usize>,
    end: Option<usize>,
}

impl WalkGuard {
    /// A walk of `tool`, before its first call.
    pub fn new(tool: &str) -> Self {
        WalkGuard {
            tool: tool.to_owned(),
            calls: HashSet::new(),
            tokens: HashSet::new(),
            pages: 0,
            rows: 0,
            total: None,
            end: None,
        }
    }

    /// Checks the call of `tool` with `arguments` before it is sent:
    /// [`ClientError::ContinuationTooLong`] for a continuation longer than
    /// [`MAX_CONTINUATION_CHARS`], [`ClientError::CursorRepeated`] for a call, or a
    /// continuation, sent before.
    pub fn sending(
        &mut self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<(), ClientError> {
        let token = arguments.get(CONTINUATION).and_then(Value::as_str);
        if let Some(token) = token
            && token.chars().count() > MAX_CONTINUATION_CHARS
        {
            return Err(ClientError::ContinuationTooLong {
                tool: self.tool.clone(),
                chars: token.chars().count(),
                page: self.pages + 1,
            });
        }
        let call = digest(&canonical_json(&Value::Array(vec![
            Value::from(tool),
            Value::Object(arguments.clone()),
        ])));
        let fresh_token = token.is_none_or(|token| !self.tokens.contains(&digest(token)));
        if self.calls.contains(&call) || !fresh_token {
            return Err(ClientError::CursorRepeated {
                tool: self.tool.clone(),
                page: self.pages,
            });
        }
        self.calls.insert(call);
        if let Some(token) = token {
            self.tokens.insert(digest(token));
        }
        Ok(())
    }

    /// Checks a page as it comes (its `completeness`, when it states one):
    /// [`ClientError::PageWentBack`] for a page starting before the end of the rows already
    /// returned (a page without `offset` says it starts at the first row), and
    /// [`ClientError::TotalChanged`] for a total other than the first page's.
    pub fn received(&mut self, completeness: Option<&Completeness>) -> Result<(), ClientError> {
        self.pages += 1;
        let Some(completeness) = completeness else {
            return Ok(());
        };
        let offset = completeness.offset();
        if let Some(end) = self.end
            && offset < end
        {
            return Err(ClientError::PageWentBack {
                tool: self.tool.clone(),
                page: self.pages,
                offset,
                end,
            });
        }
        if let Some(total) = completeness.total() {
            match self.total {
                Some(first) if first != total => {
                    return Err(ClientError::TotalChanged {
                        tool: self.tool.clone(),
                        first,
                        now: total,
                        page: self.pages,
                    });
                }
                _ => self.total = Some(total),
            }
        }
        self.rows = self.rows.saturating_add(completeness.returned());
        self.end = Some(offset.saturating_add(completeness.returned()));
        Ok(())
    }

    /// Pages received so far.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// Rows they returned (`completeness.returned`, summed).
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// The whole result's cardinality, as the pages state it.
    pub fn total(&self) -> Option<usize> {
        self.total
    }
}

fn digest(text: &str) -> u64 {
    let mut hasher = DefaultHasher::new();
    text.hash(&mut hasher);
    hasher.finish()
}

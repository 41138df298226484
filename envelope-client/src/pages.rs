//! Paging to the end: the `next-page` action followed exactly as given, the pages checked
//! against their completeness, a repeated cursor caught.

use std::marker::PhantomData;

use envelope_core::fields::completeness::CONTINUATION;
use envelope_core::paging::NEXT_PAGE;
use envelope_core::{Envelope, NextAction, Role};
use futures_core::Stream;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::client::{Client, decoded};
use crate::error::ClientError;
use crate::walk::WalkGuard;

/// How far [`Client::pages`] follows: it stops before the page that would pass a limit is
/// asked for, never in the middle of one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageLimits {
    /// Stop once this many rows (`completeness.returned`, summed) have come. `None`: no limit.
    pub max_rows: Option<usize>,
    /// Stop once the pages have cost this many tokens (`meta.tokens_estimated`, summed, where
    /// the server states it). `None`: no limit.
    pub max_tokens: Option<u64>,
    /// Stop after this many pages.
    pub max_pages: usize,
}

impl Default for PageLimits {
    /// No row or token limit; at most 1,000 pages.
    fn default() -> Self {
        PageLimits {
            max_rows: None,
            max_tokens: None,
            max_pages: 1_000,
        }
    }
}

impl PageLimits {
    /// Every page to the end, at most 1,000.
    pub fn to_the_end() -> Self {
        PageLimits::default()
    }

    /// Pages until `rows` rows have come.
    pub fn rows(rows: usize) -> Self {
        PageLimits {
            max_rows: Some(rows),
            ..PageLimits::default()
        }
    }
}

/// Why paging stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PagesEnd {
    /// The last page came: it offers no next page.
    Last,
    /// A page answered `ok: false` (yielded as read); there is no next page to follow.
    Failed,
    /// [`PageLimits::max_rows`] was reached.
    MaxRows,
    /// [`PageLimits::max_tokens`] was reached.
    MaxTokens,
    /// [`PageLimits::max_pages`] was reached.
    MaxPages,
    /// A [`ClientError`] was yielded.
    Error,
}

/// The next call paging makes.
enum Next {
    /// The caller's first call.
    First(String, Value),
    /// A page's next-page action, as given.
    Action(NextAction),
}

/// The pages of one paged call, in order: see [`Client::pages`]. Read them with
/// [`Pages::next`], or as a [`Stream`] with [`Pages::into_stream`].
pub struct Pages<'c, T> {
    client: &'c Client,
    tool: String,
    limits: PageLimits,
    next: Option<Next>,
    /// An error to yield after the page that revealed it.
    pending: Option<ClientError>,
    /// The call that continues past where paging stopped: see [`Pages::resume`].
    resume: Option<NextAction>,
    /// The arguments of the last call made: what a page's `completeness.continuation` is sent
    /// back with.
    arguments: Map<String, Value>,
    /// What the walk checks as it goes: loops, a continuation too long, pages that contradict
    /// the ones before.
    guard: WalkGuard,
    tokens: u64,
    pages: usize,
    end: Option<PagesEnd>,
    _data: PhantomData<fn() -> T>,
}

impl<T> std::fmt::Debug for Pages<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pages")
            // wire: not the wire, a field of this debug output
            .field("tool", &self.tool)
            .field("pages", &self.pages)
            .field("rows", &self.guard.rows())
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// The pages of `tool` called with `arguments`: the first page, then each page's
    /// `next-page` action called exactly as given, until a page offers none or a limit of
    /// `limits` is reached. Each call is made as by [`Client::call`].
    ///
    /// Checked on the way, by a [`WalkGuard`](crate::WalkGuard): `completeness.total` is the
    /// same on every page that states it ([`ClientError::TotalChanged`]), and no page starts
    /// before the rows already returned ([`ClientError::PageWentBack`]); a continuation longer
    /// than [`MAX_CONTINUATION_CHARS`](crate::MAX_CONTINUATION_CHARS) is not sent
    /// ([`ClientError::ContinuationTooLong`], its call the [`resume`](Pages::resume)); a
    /// next-page action that repeats a call already made, or
    /// sends a continuation already sent, stops paging with [`ClientError::CursorRepeated`]
    /// (after the page that offered it); a next-page action naming a tool the listing does not
    /// have, or failing its input schema, is refused without calling it. A page that fails
    /// (`ok: false`) is yielded as read and ends the paging. After an error, nothing more is
    /// yielded.
    pub fn pages<T: DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
        limits: PageLimits,
    ) -> Pages<'_, T> {
        Pages {
            client: self,
            tool: tool.to_owned(),
            limits,
            next: Some(Next::First(tool.to_owned(), arguments)),
            pending: None,
            resume: None,
            arguments: Map::new(),
            guard: WalkGuard::new(tool),
            tokens: 0,
            pages: 0,
            end: None,
            _data: PhantomData,
        }
    }
}

impl<'c, T: DeserializeOwned> Pages<'c, T> {
    /// The next page, `None` once paging has ended ([`Pages::end`] says why).
    pub async fn next(&mut self) -> Option<Result<Envelope<T>, ClientError>> {
        if let Some(error) = self.pending.take() {
            self.end = Some(PagesEnd::Error);
            return Some(Err(error));
        }
        let next = self.next.take()?;
        let attempted = match &next {
            Next::Action(action) => Some(action.clone()),
            Next::First(..) => None,
        };
        let outcome = self.page(next).await;
        match &outcome {
            Err(error) => {
                self.next = None;
                self.end = Some(PagesEnd::Error);
                // A call that did not complete can be made again; a page that contradicts the
                // pages before it cannot be continued.
                if !matches!(
                    error,
                    ClientError::TotalChanged { .. } | ClientError::PageWentBack { .. }
                ) {
                    self.resume = attempted;
                }
            }
            Ok(envelope) if envelope.error().is_some() => self.resume = attempted,
            Ok(_) => {}
        }
        Some(outcome)
    }

    /// The call that continues past where paging stopped, to make once the cause is gone: the
    /// next-page action a limit left unfollowed ([`PagesEnd::MaxRows`], `MaxTokens`,
    /// `MaxPages`), or the page call that failed (`ok: false`) or did not complete (an error
    /// of the transport, the retry policy or the answer's shape). The pages before it were
    /// yielded, so nothing fetched is lost. `None` while paging goes on, after the last page,
    /// on a repeated cursor or a page that contradicts the ones before, and when the first
    /// call itself failed (the caller's own call starts again).
    pub fn resume(&self) -> Option<&NextAction> {
        if self.next.is_some() || self.pending.is_some() {
            return None;
        }
        self.resume.as_ref()
    }

    /// Why paging ended; `None` while it goes on.
    pub fn end(&self) -> Option<PagesEnd> {
        if self.next.is_some() || self.pending.is_some() {
            return None;
        }
        self.end
    }

    /// The pages yielded so far.
    pub fn pages(&self) -> usize {
        self.pages
    }

    /// The rows they returned (`completeness.returned`, summed).
    pub fn rows(&self) -> usize {
        self.guard.rows()
    }

    /// The whole result's cardinality, as the pages state it.
    pub fn total(&self) -> Option<usize> {
        self.guard.total()
    }

    /// The pages as a [`Stream`].
    pub fn into_stream(self) -> impl Stream<Item = Result<Envelope<T>, ClientError>> {
        futures_util::stream::unfold(self, |mut pages| async move {
            let item = pages.next().await?;
            Some((item, pages))
        })
    }

    /// Makes the call `next`, checks its page, and lines up the page after it.
    async fn page(&mut self, next: Next) -> Result<Envelope<T>, ClientError> {
        let raw = match &next {
            Next::First(tool, arguments) => {
                let arguments = match arguments {
                    Value::Object(arguments) => arguments.clone(),
                    Value::Null => Map::new(),
                    _ => return Err(ClientError::ArgumentsNotObject { tool: tool.clone() }),
                };
                self.guard.sending(tool, &arguments)?;
                self.arguments.clone_from(&arguments);
                self.client.call_raw_retrying(tool, &arguments).await?
            }
            Next::Action(action) => {
                self.tool.clone_from(&action.tool);
                self.arguments.clone_from(&action.arguments);
                self.client.run_action(action).await?
            }
        };
        self.pages += 1;
        let envelope: Envelope<T> = decoded(&self.tool, &raw)?;
        if envelope.error().is_some() {
            self.end = Some(PagesEnd::Failed);
            return Ok(envelope);
        }
        self.guard.received(envelope.completeness())?;
        let tokens = envelope.meta().tokens_estimated().unwrap_or(0);
        self.tokens = self.tokens.saturating_add(tokens);
        self.line_up(&envelope);
        Ok(envelope)
    }

    /// Lines up the call after `envelope`: its next-page action, unless a limit is reached or
    /// the action repeats a call already made.
    fn line_up(&mut self, envelope: &Envelope<T>) {
        let offered = next_call(&self.tool, &self.arguments, envelope);
        let Some(action) = offered.as_ref() else {
            self.end = Some(PagesEnd::Last);
            return;
        };
        let limits = &self.limits;
        let reached = if self.pages >= limits.max_pages {
            Some(PagesEnd::MaxPages)
        } else if limits.max_rows.is_some_and(|max| self.guard.rows() >= max) {
            Some(PagesEnd::MaxRows)
        } else if limits.max_tokens.is_some_and(|max| self.tokens >= max) {
            Some(PagesEnd::MaxTokens)
        } else {
            None
        };
        if let Some(reached) = reached {
            self.end = Some(reached);
            self.resume = Some(action.clone());
            return;
        }
        match self.guard.sending(&action.tool, &action.arguments) {
            Ok(()) => self.next = Some(Next::Action(action.clone())),
            Err(refused) => {
                // The call a too-long continuation would make is what resumes, once the server
                // is fixed; a loop has nothing to resume.
                if matches!(refused, ClientError::ContinuationTooLong { .. }) {
                    self.resume = Some(action.clone());
                }
                self.pending = Some(refused);
            }
        }
    }
}

/// The call for the page after `envelope`, which `tool` answered to `arguments`: its
/// `next-page` action exactly as given (its `limit` included); else, for a page that carries
/// its token in `completeness.continuation` (where the contract puts a token no next action
/// carries, and where Frigg's contract always has it), the same call again with only
/// `continuation` set to it, as both contracts say; `None` on the last page. The kits' shared
/// cases (`clients/cases/next_page.json`) hold both kits to it.
///
/// ```
/// use serde_json::{Map, Value, json};
///
/// let page: envelope_core::Envelope<Value> = envelope_client::read::decode(&json!({
///     "ok": true, "verdict": "INFO", "data": {"rows": [1]},
///     "completeness": {"unit": "row", "returned": 1, "complete": false, "truncated": true,
///                      "truncation_reasons": ["page_limit"], "continuation": "tok-2"},
///     "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3},
/// }))?;
/// let asked: Map<String, Value> = json!({"query": "needle"}).as_object().cloned().unwrap_or_default();
/// let next = envelope_client::next_call("search", &asked, &page).expect("a next page");
/// assert_eq!(Value::Object(next.arguments), json!({"query": "needle", "continuation": "tok-2"}));
/// # Ok::<(), envelope_client::DecodeError>(())
/// ```
pub fn next_call<T>(
    tool: &str,
    arguments: &Map<String, Value>,
    envelope: &Envelope<T>,
) -> Option<NextAction> {
    if let Some(action) = envelope
        .next_actions()
        .iter()
        .find(|action| action.id == NEXT_PAGE)
    {
        return Some(action.clone());
    }
    let token = envelope.completeness()?.continuation()?;
    let mut arguments = arguments.clone();
    arguments.insert(CONTINUATION.to_owned(), Value::from(token));
    NextAction::new(
        NEXT_PAGE,
        Role::BroadenScope,
        0,
        tool.to_owned(),
        Value::Object(arguments),
        "the next page, by the page's own continuation",
    )
    .ok()
}

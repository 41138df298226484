//! Paging to the end: the `next-page` action followed exactly as given, the pages checked
//! against their completeness, a repeated cursor caught.

use std::marker::PhantomData;

use envelope_core::fields::completeness::CONTINUATION;
use envelope_core::fields::next_action as action;
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
        self.line_up(&raw);
        Ok(envelope)
    }

    /// Lines up the call after the page `answer`: its next-page action, unless a limit is
    /// reached or the action repeats a call already made.
    fn line_up(&mut self, answer: &Value) {
        let offered = next_call(&self.tool, &self.arguments, answer);
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

/// Where a wire puts a next-page action: the JSON pointer of the list, the `id` that marks
/// the action (or, where its steps have no id, the argument a page step carries), and the
/// names of its tool and its arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ActionPlace {
    /// The JSON pointer of the list of actions.
    pub pointer: &'static str,
    /// The `id` of the next-page action, where the wire's actions have ids.
    pub id: Option<&'static str>,
    /// The argument only a page step's arguments carry, where they have none.
    pub carries: Option<&'static str>,
    /// The name of an action's tool.
    pub tool: &'static str,
    /// The name of an action's arguments.
    pub arguments: &'static str,
}

/// Where every wire puts the page after a page, tried in order: the envelope's, Frigg's and
/// tsa's `next_actions` entry `next-page`; cos's, in its diagnostics block `data.meta`;
/// pincher's `_meta.next_steps` entry whose `args` carry the continuation. The Python kit's
/// `NEXT_PAGE_PLACES`; `clients/cases/next_page.json` holds both kits to the same table.
pub const NEXT_PAGE_PLACES: [ActionPlace; 3] = [
    ActionPlace {
        pointer: "/next_actions",
        id: Some(NEXT_PAGE),
        carries: None,
        tool: action::TOOL,
        arguments: action::ARGUMENTS,
    },
    ActionPlace {
        pointer: "/data/meta/next_actions",
        id: Some(NEXT_PAGE),
        carries: None,
        tool: action::TOOL,
        arguments: action::ARGUMENTS,
    },
    ActionPlace {
        pointer: "/_meta/next_steps",
        id: None,
        carries: Some(CONTINUATION),
        tool: action::TOOL,
        // wire: pincher's name for a step's arguments
        arguments: "args",
    },
];

/// Where a wire puts a page's token that no action carries (the envelope's place for one, and
/// where Frigg's contract always has it): the JSON pointers, tried in order after
/// [`NEXT_PAGE_PLACES`].
pub const TOKEN_PLACES: [&str; 1] = ["/completeness/continuation"];

/// The call for the page after `answer` (a page's structured content as it came, in any
/// dialect's wire), which `tool` answered to `arguments`: its next-page action exactly as
/// given (its `limit` included), found by [`NEXT_PAGE_PLACES`]; else, for a page that carries
/// its token in one of [`TOKEN_PLACES`], the same call again with only `continuation` set to
/// it, as both contracts say; `None` on the last page. The kits' shared cases
/// (`clients/cases/next_page.json`) hold both kits to it.
///
/// ```
/// use serde_json::{Map, Value, json};
///
/// let page = json!({
///     "ok": true, "verdict": "INFO", "data": {"rows": [1]},
///     "completeness": {"unit": "row", "returned": 1, "complete": false, "truncated": true,
///                      "truncation_reasons": ["page_limit"], "continuation": "tok-2"},
///     "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3},
/// });
/// let asked: Map<String, Value> = json!({"query": "needle"}).as_object().cloned().unwrap_or_default();
/// let next = envelope_client::next_call("search", &asked, &page).expect("a next page");
/// assert_eq!(Value::Object(next.arguments), json!({"query": "needle", "continuation": "tok-2"}));
/// ```
pub fn next_call(tool: &str, arguments: &Map<String, Value>, answer: &Value) -> Option<NextAction> {
    let next_page = |tool: &str, arguments: Map<String, Value>, reason: &str| {
        NextAction::new(
            NEXT_PAGE,
            Role::BroadenScope,
            0,
            tool.to_owned(),
            Value::Object(arguments),
            reason,
        )
        .ok()
    };
    for place in NEXT_PAGE_PLACES {
        let steps = answer.pointer(place.pointer).and_then(Value::as_array);
        for step in steps.into_iter().flatten() {
            let (Some(called), Some(given)) = (
                step.get(place.tool).and_then(Value::as_str),
                step.get(place.arguments).and_then(Value::as_object),
            ) else {
                continue;
            };
            let marked = place
                .id
                .is_some_and(|id| step.get(action::ID).and_then(Value::as_str) == Some(id));
            let carrying = place.carries.is_some_and(|name| given.contains_key(name));
            if marked || carrying {
                // wire: pincher's name for a step's reason is `why`
                let reason = [action::REASON, "why"]
                    .iter()
                    .find_map(|name| step.get(*name).and_then(Value::as_str))
                    .unwrap_or("the next page");
                return next_page(called, given.clone(), reason);
            }
        }
    }
    let token = TOKEN_PLACES
        .iter()
        .find_map(|pointer| answer.pointer(pointer).and_then(Value::as_str))
        .filter(|token| !token.is_empty())?;
    let mut arguments = arguments.clone();
    arguments.insert(CONTINUATION.to_owned(), Value::from(token));
    next_page(tool, arguments, "the next page")
}

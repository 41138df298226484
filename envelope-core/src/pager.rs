//! [`Pager`]: one page of a paged tool, from its typed arguments to its finished reply.
//!
//! A paged tool declares once which of its arguments carry the page size and the token
//! ([`PagedArgs`]) and how it pages ([`Paging`]: the unit, the page sizes, what the tokens are
//! bound to). [`Pager::open`] reads the page from the call; the tool produces the rows
//! [`Pager::takes`]; [`Pager::finish`] adds `completeness`, the honest `next_step` and the
//! typed next-page action, whose arguments carry the sealed token: followed verbatim, it is the
//! next page.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde_json::{Value, json};

use crate::completeness::{Completeness, IncompleteReason, TruncationReason, Unit};
use crate::context::ToolContext;
use crate::next_action::TypedTool;
use crate::next_action::{NextAction, Role};
use crate::paging_core::{
    Binding, Continuations, DEFAULT_CONTINUATION_FIELD, DEFAULT_LIMIT_FIELD, INVALID_LIMIT,
    NEXT_PAGE, Page, PageArgs, Resume, Snapshot,
};

use crate::reply::Reply;
use crate::tool_error::ToolError;

/// The id of the action a page whose rows a compact form shortened offers: the same page, as
/// the default form shows it.
pub const FULL_ROWS: &str = "full-rows";

/// The arguments of a paged tool: where a call says its page size and where it resumes.
///
/// A token is bound to the arguments' JSON without these two fields (and the legacy `offset`
/// and `resume_from`): it resumes only the same request, at any page size.
///
/// ```
/// use envelope_core::paging::PagedArgs;
///
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct ListArgs {
///     glob: Option<String>,
///     limit: Option<usize>,
///     continuation: Option<String>,
/// }
///
/// impl PagedArgs for ListArgs {
///     fn limit(&self) -> Option<usize> {
///         self.limit
///     }
///
///     fn continuation(&self) -> Option<&str> {
///         self.continuation.as_deref()
///     }
///
///     fn resume_at(&self, token: String) -> Self {
///         ListArgs { continuation: Some(token), ..self.clone() }
///     }
/// }
/// ```
pub trait PagedArgs: Serialize {
    /// The wire name of the page-size argument.
    const LIMIT_FIELD: &'static str = DEFAULT_LIMIT_FIELD;
    /// The wire name of the token argument.
    const CONTINUATION_FIELD: &'static str = DEFAULT_CONTINUATION_FIELD;

    /// The page size the call asked for, if any.
    fn limit(&self) -> Option<usize>;

    /// The token the call passed, if any.
    fn continuation(&self) -> Option<&str>;

    /// The same request, resuming at `token`: what following the next-page action calls.
    fn resume_at(&self, token: String) -> Self
    where
        Self: Sized;
}

/// Implements [`PagedArgs`] for an arguments struct whose page size is a field
/// `limit: Option<usize>` and whose token is a field `continuation: Option<String>` (wire names
/// `limit` and `continuation`); the struct must be `Clone`.
///
/// ```
/// #[derive(Clone, serde::Serialize, serde::Deserialize)]
/// struct ListArgs {
///     glob: Option<String>,
///     limit: Option<usize>,
///     continuation: Option<String>,
/// }
///
/// envelope_core::paged_args!(ListArgs);
///
/// use envelope_core::paging::PagedArgs;
/// let args = ListArgs { glob: None, limit: Some(5), continuation: None };
/// assert_eq!(args.resume_at("tok".into()).continuation.as_deref(), Some("tok"));
/// ```
#[macro_export]
macro_rules! paged_args {
    ($($args:ty),+ $(,)?) => {$(
        impl $crate::paging::PagedArgs for $args {
            fn limit(&self) -> ::core::option::Option<usize> {
                self.limit
            }

            fn continuation(&self) -> ::core::option::Option<&str> {
                self.continuation.as_deref()
            }

            fn resume_at(&self, token: ::std::string::String) -> Self {
                Self {
                    continuation: ::core::option::Option::Some(token),
                    ..::core::clone::Clone::clone(self)
                }
            }
        }
    )+};
}

/// How a tool pages: what one row is, the page sizes it accepts, what its tokens are bound to
/// besides the request, and how an agent asks for less.
///
/// ```
/// use envelope_core::Unit;
/// use envelope_core::paging::Paging;
///
/// let paging = Paging::new(Unit::FILE, 200)
///     .with_max_limit(1_000)
///     .with_scope("/srv/repo")
///     .with_snapshot("rev-41")
///     .with_advice("narrow `glob`");
/// # let _ = paging;
/// ```
#[derive(Debug, Clone)]
pub struct Paging {
    unit: Unit,
    default_limit: usize,
    max_limit: usize,
    scope: String,
    snapshot: String,
    advice: String,
}

impl Paging {
    /// Pages of `unit`s, `default_limit` of them when the call names no size (at least 1),
    /// any size up to `usize::MAX`, bound to nothing but the tool, the caller and the request.
    pub fn new(unit: Unit, default_limit: usize) -> Self {
        Paging {
            unit,
            default_limit: default_limit.max(1),
            max_limit: usize::MAX,
            scope: String::new(),
            snapshot: String::new(),
            advice: "narrow the request".to_owned(),
        }
    }

    /// The largest page size a call may ask for; more is refused as `INVALID_LIMIT`.
    #[must_use]
    pub fn with_max_limit(mut self, max: usize) -> Self {
        self.max_limit = max.max(1);
        self
    }

    /// What the request reaches beyond its arguments, such as the root it searches.
    #[must_use]
    pub fn with_scope(mut self, scope: impl Into<String>) -> Self {
        self.scope = scope.into();
        self
    }

    /// The data's snapshot, digested now.
    #[must_use]
    pub fn with_snapshot(mut self, snapshot: &(impl Snapshot + ?Sized)) -> Self {
        self.snapshot = snapshot.digest();
        self
    }

    /// How an agent asks for fewer rows, ending `next_step` (say, "narrow `glob`").
    #[must_use]
    pub fn with_advice(mut self, advice: impl Into<String>) -> Self {
        self.advice = advice.into();
        self
    }
}

/// What a paged tool counted: the rows on this page, the rows in all, and what kept the count
/// from being proven.
///
/// ```
/// use envelope_core::paging::PageCount;
/// use envelope_core::{IncompleteReason, TruncationReason};
///
/// let count = PageCount::new(50, 733)
///     .ended_by(TruncationReason::BudgetLimit)
///     .incomplete_because(IncompleteReason::UnreadableCandidate);
/// # let _ = count;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageCount {
    returned: usize,
    total: usize,
    ended_by: TruncationReason,
    incomplete: Vec<IncompleteReason>,
    shortened: Vec<&'static str>,
}

impl PageCount {
    /// `returned` rows on this page out of `total` in all (from the first page on); a page
    /// that leaves rows out was ended by its size.
    pub fn new(returned: usize, total: usize) -> Self {
        PageCount {
            returned,
            total,
            ended_by: TruncationReason::PageLimit,
            incomplete: Vec::new(),
            shortened: Vec::new(),
        }
    }

    /// The page's rows show the field `field` (its wire name) in part: a compact form asked
    /// for less of each row. `completeness.shortened` says so, and the page offers the
    /// `full-rows` action, the same page as the default form shows it.
    #[must_use]
    pub fn shortened(mut self, field: &'static str) -> Self {
        if !self.shortened.contains(&field) {
            self.shortened.push(field);
        }
        self
    }

    /// What ended the page when rows remain after it (by default its size).
    #[must_use]
    pub fn ended_by(mut self, reason: TruncationReason) -> Self {
        self.ended_by = reason;
        self
    }

    /// Something kept the tool from seeing every candidate: `total` is then not proven.
    #[must_use]
    pub fn incomplete_because(mut self, reason: IncompleteReason) -> Self {
        if !self.incomplete.contains(&reason) {
            self.incomplete.push(reason);
        }
        self
    }
}

/// One page of tool `T`: where it starts, how many rows it holds, and how its token is bound.
///
/// ```
/// use std::sync::Arc;
///
/// use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
/// use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool};
///
/// #[derive(Clone, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
/// struct CountArgs {
///     /// Rows per page.
///     limit: Option<usize>,
///     /// The next page's token.
///     continuation: Option<String>,
/// }
///
/// // `limit` and `continuation` say where the page is: the usual names, so the macro does.
/// envelope_core::paged_args!(CountArgs);
///
/// /// Count to a hundred, a page at a time.
/// #[tool(tier = lite, read_only)]
/// fn numbers(ctx: &ToolContext, args: CountArgs) -> ToolResult<Reply<Vec<u32>>> {
///     let pager = Pager::<numbers>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
///     let rows: Vec<u32> = (1..=100).filter(|n| pager.takes(*n as usize - 1)).collect();
///     let count = PageCount::new(rows.len(), 100);
///     pager.finish(ctx, &args, Reply::new(rows), count)
/// }
///
/// # use envelope_core::Tool as _;
/// # let key = ContinuationKey::generate(1)?;
/// # let ctx = ToolContext::new().with_state(Arc::new(Continuations::new(key)));
/// # let output = futures_executor_block_on(numbers {}.call(serde_json::json!({}), ctx));
/// # let completeness = output.envelope.completeness().expect("paged");
/// # assert_eq!((completeness.returned(), completeness.total()), (10, Some(100)));
/// # assert!(completeness.continuation().is_some());
/// # fn futures_executor_block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     let mut future = std::pin::pin!(future);
/// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
/// #     loop {
/// #         if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) {
/// #             return out;
/// #         }
/// #     }
/// # }
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Pager<T> {
    paging: Paging,
    request: Value,
    page: Page,
    tool: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for Pager<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pager")
            .field("paging", &self.paging)
            .field("page", &self.page)
            .finish_non_exhaustive()
    }
}

impl<T> Pager<T>
where
    T: TypedTool,
    T::Args: PagedArgs,
{
    /// Reads this call's page of tool `T` from its `args`: the page size (the default when
    /// absent; 0 and more than the maximum are refused as `INVALID_LIMIT`), and where to start
    /// (the beginning, or the position a valid token carries). The server must hold
    /// [`Continuations`] as state.
    pub fn open(ctx: &ToolContext, args: &T::Args, paging: Paging) -> Result<Self, ToolError> {
        let field = <T::Args as PagedArgs>::LIMIT_FIELD;
        let limit = match args.limit() {
            None => paging.default_limit.min(paging.max_limit),
            Some(limit) if (1..=paging.max_limit).contains(&limit) => limit,
            Some(_) => return Err(invalid_limit(field, paging.max_limit)),
        };
        let request = serde_json::to_value(args).map_err(ToolError::internal)?;
        let mut pager = Pager {
            paging,
            request,
            page: Page {
                start: 0,
                size: limit,
            },
            tool: PhantomData,
        };
        let continuations = ctx.state::<Continuations>()?;
        pager.page = continuations.page(
            &pager.binding(ctx),
            PageArgs::new(limit).with_continuation(args.continuation()),
        )?;
        Ok(pager)
    }

    /// Where this page starts and how many rows it may hold.
    pub fn page(&self) -> Page {
        self.page
    }

    /// Whether the `index`th row (0-based, counting every row from the first page on) is on
    /// this page.
    pub fn takes(&self, index: usize) -> bool {
        index >= self.page.start && index - self.page.start < self.page.size
    }

    /// How a summary line says where a continued page starts ("; this page starts at file
    /// 201"); empty on the first page.
    pub fn starts_at(&self) -> String {
        match self.page.start {
            0 => String::new(),
            start => format!(
                "; this page starts at {} {}",
                self.paging.unit.noun(1),
                start + 1
            ),
        }
    }

    /// Finishes `reply` as this page of tool `T`: its `completeness`, its `next_step`, and,
    /// when rows remain, the next-page action (id `next-page`, role `broaden_scope`): `args`
    /// resuming at the sealed continuation, so that calling it exactly as given is the next
    /// page.
    pub fn finish<D>(
        &self,
        ctx: &ToolContext,
        args: &T::Args,
        reply: Reply<D>,
        count: PageCount,
    ) -> Result<Reply<D>, ToolError> {
        // Positions count every row the tool could read, the same on each page of one
        // snapshot: paging works even when some candidates could not be read.
        let continuation = ctx.state::<Continuations>()?.next(
            &self.binding(ctx),
            self.page.start,
            count.returned,
            count.total,
        )?;
        let completeness = self
            .completeness(&count, continuation.clone())?
            .with_shortened(count.shortened.iter().copied());
        // A bigger page helps only when rows remain and the page size, not the budget, ended
        // the page.
        let rows_remain = self.page.start.min(count.total) + count.returned < count.total;
        // A page that continues says how in one phrase, the action to copy; one that cannot
        // says how to see the rest another way. Every word is paid on every page.
        let mut ways = Vec::new();
        if continuation.is_some() {
            ways.push(format!("follow `{NEXT_PAGE}`"));
        } else {
            if rows_remain && count.ended_by == TruncationReason::PageLimit {
                ways.push(format!("raise `{}`", <T::Args as PagedArgs>::LIMIT_FIELD));
            }
            ways.push(self.paging.advice.clone());
        }
        let advice = match ways.split_last() {
            Some((last, [])) => last.clone(),
            Some((last, rest)) => format!("{}, or {last}", rest.join(", ")),
            None => String::new(),
        };
        let mut reply = match completeness.next_step(&advice) {
            Some(step) => reply.next_step(step),
            None => reply,
        }
        .completeness(completeness)
        .resumable(self.resume(ctx)?);
        if let Some(token) = continuation {
            // The token travels once, in the action's own arguments: calling it exactly as
            // given is the next page.
            let next = NextAction::call::<T>(
                NEXT_PAGE,
                Role::BroadenScope,
                0,
                args.resume_at(token),
                self.next_page_reason(),
            )
            .map_err(ToolError::internal)?;
            reply = reply.next_actions([next]);
        }
        if !count.shortened.is_empty() {
            // This very page, every row whole: the call as made, without the compact form,
            // which is a per-call control and not among the tool's own arguments.
            let whole = NextAction::new(
                FULL_ROWS,
                Role::Inspect,
                0,
                T::NAME,
                args,
                "this page as the default form shows it, no row shortened",
            )
            .map_err(ToolError::internal)?;
            reply = reply.next_actions([whole]);
        }
        Ok(reply)
    }

    /// The page's completeness: `returned` rows after `offset` (the page's start) of `total`
    /// in all, honest about what could not be seen (then no total is claimed).
    fn completeness(
        &self,
        count: &PageCount,
        continuation: Option<String>,
    ) -> Result<Completeness, ToolError> {
        let unit = self.paging.unit.clone();
        let returned = count.returned;
        // A start past the end (the rows shrank under one snapshot) is an empty last page.
        let offset = self.page.start.min(count.total);
        let proven = count.incomplete.is_empty();
        let total = proven.then_some(count.total);
        let built = if offset + returned < count.total {
            Completeness::truncated_page(unit, returned, total, count.ended_by, continuation)
                .and_then(|page| page.with_offset(offset))
                .and_then(|page| page.with_incomplete_reasons(count.incomplete.clone()))
        } else if proven {
            Completeness::last_page(unit, offset, returned)
        } else {
            Completeness::incomplete(unit, returned, None, count.incomplete.clone())
                .and_then(|page| page.with_offset(offset))
        };
        built.map_err(ToolError::internal)
    }

    /// What the budget stage needs to re-seal this page's token after cutting its rows.
    fn resume(&self, ctx: &ToolContext) -> Result<Resume, ToolError> {
        let mut resume = Resume::new(ctx, self.request.clone(), self.page.start)?
            .with_scope(self.paging.scope.clone())
            .with_snapshot(self.paging.snapshot.clone());
        resume.continuation_field =
            std::borrow::Cow::Borrowed(<T::Args as PagedArgs>::CONTINUATION_FIELD);
        resume.limit_field = <T::Args as PagedArgs>::LIMIT_FIELD;
        Ok(resume)
    }

    fn next_page_reason(&self) -> String {
        // The action's id says what it is already: the reason stays short.
        "next page".to_owned()
    }

    fn binding<'a>(&'a self, ctx: &'a ToolContext) -> Binding<'a> {
        ctx.binding(&self.request)
            .with_continuation_field(<T::Args as PagedArgs>::CONTINUATION_FIELD)
            .with_limit_field(<T::Args as PagedArgs>::LIMIT_FIELD)
            .with_scope(&self.paging.scope)
            .with_snapshot(&self.paging.snapshot)
    }
}

// The constructor that reads the call's context lives beside the `Pager`, above
// `paging_core`, which never names the context.
impl Resume {
    /// How the budget stage re-seals the continuation of a page of the tool `ctx` runs: the
    /// call's `request` (its arguments; the continuation and page-size fields are left out of
    /// what the token is bound to), the page's first row `start`, bound to the caller, the
    /// dialect and the server's [`Continuations`] as `ctx` holds them, with the default field
    /// names (`continuation`, `limit`; the first renamed where the call's tool renames the
    /// control), no scope and no snapshot.
    ///
    /// A tool that pages without a typed [`Pager`](crate::paging::Pager) (one known only at
    /// run time, such as a tool a proxy fronts) hands the budget stage all the rows from
    /// `start` on, with this beside them ([`Reply::resumable`](crate::Reply::resumable) or
    /// [`ToolOutput::resume`](crate::stage::ToolOutput::resume)): the stage cuts the rows to
    /// the budget and seals the token that resumes after the last one sent. The server must
    /// hold [`Continuations`] as state.
    pub fn new(ctx: &ToolContext, request: Value, start: usize) -> Result<Resume, ToolError> {
        Ok(Resume {
            continuations: ctx.shared_state::<Continuations>()?,
            tool: ctx.tool_name().unwrap_or_default().to_owned(),
            session: ctx.caller_binding().to_owned(),
            request,
            scope: String::new(),
            snapshot: String::new(),
            dialect: ctx.dialect(),
            carried: serde_json::Map::new(),
            // The name the call's tool reads the paging argument under: its own, unless the
            // tool's arguments use it.
            continuation_field: match ctx
                .controls()
                .names
                .wire(crate::paging_core::DEFAULT_CONTINUATION_FIELD)
            {
                crate::paging_core::DEFAULT_CONTINUATION_FIELD => {
                    std::borrow::Cow::Borrowed(crate::paging_core::DEFAULT_CONTINUATION_FIELD)
                }
                renamed => std::borrow::Cow::Owned(renamed.to_owned()),
            },
            limit_field: crate::paging_core::DEFAULT_LIMIT_FIELD,
            start,
            // The action's id says what it is already: the reason stays short.
            reason: "next page".to_owned(),
            page_size: true,
        })
    }
}

fn invalid_limit(field: &str, max: usize) -> ToolError {
    let range = match max {
        usize::MAX => "at least 1".to_owned(),
        max => format!("from 1 to {max}"),
    };
    ToolError::validation(format!("`{field}` must be {range}"))
        .with_code(INVALID_LIMIT)
        .with_hint(format!(
            "omit `{field}` for the default page size, and page through the rest with the \
             `{NEXT_PAGE}` action"
        ))
        .with_data(json!({ "field": field }))
}

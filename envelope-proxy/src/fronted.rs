//! One upstream tool as an envelope tool: listed with its annotations as the upstream declares
//! them and the per-call controls added, called with the controls taken off, answered as an
//! envelope, paged when its answer is too big for one response.

use std::borrow::Cow;
use std::sync::Arc;

use envelope_budget::Estimator;
use envelope_core::paging::{
    CONTINUATION_SCOPE_MISMATCH, Continuations, PageArgs, Resume, STALE_CONTINUATION,
};
use envelope_core::schemars::Schema;
use envelope_core::stage::{ControlNames, Invocation, ToolOutput, add_controls_named};
use envelope_core::{
    BoxFuture, Completeness, Envelope, NextAction, Notice, Role, Tool, ToolContext, ToolError,
    ToolSpec, TruncationReason,
};
use serde_json::{Map, Value};

use crate::answer::Answer;
use crate::config::ResolvedTool;
use crate::errors::tool_error;
use crate::input::{Answered, Retry};
use crate::pages::{Rows, snapshot};
use crate::result_store::ResultStore;
use crate::store::call_key;
use crate::upstream::Upstream;

/// The wire name of the paging argument a paged tool is listed with.
const CONTINUATION: &str = envelope_core::paging::DEFAULT_CONTINUATION_FIELD;

/// `meta.baseline_method` of every proxied answer: the upstream's answer as it sent it.
pub const BASELINE_METHOD: &str = "upstream_raw";

/// The warning of a page whose answer the store did not keep whole.
pub const ANSWER_NOT_KEPT_WHOLE: &str = "answer_not_kept_whole";

/// The share of the budget an answer's `data` may take before it is paged: the rest is the
/// envelope's own fields.
const DATA_SHARE_PERCENT: usize = 85;

/// An upstream tool, fronted.
pub(crate) struct Fronted {
    /// Shared with each call, which holds it for as long as it runs.
    spec: Arc<ToolSpec>,
    /// The title in the upstream's annotations, as it declared it.
    annotations_title: Option<String>,
    /// The upstream's input schema, as it listed it.
    schema: Map<String, Value>,
    /// The argument names the upstream declares, and the paging argument.
    declared: Option<Vec<String>>,
    /// The paging argument's name: `continuation`, unless the upstream's own arguments use it.
    /// A too-big answer of a tool the upstream declares read-only pages by calling the
    /// upstream again; any other's, from the store.
    paging: Arc<str>,
    upstream: Arc<Upstream>,
    store: Arc<ResultStore>,
}

impl Fronted {
    /// The upstream's `tool`, served as `config` says; an error for a tool whose name or
    /// declaration cannot be served.
    pub(crate) fn new(
        tool: &rmcp::model::Tool,
        config: &ResolvedTool,
        upstream: Arc<Upstream>,
        store: Arc<ResultStore>,
    ) -> Result<Fronted, envelope_core::CoreError> {
        let description = tool
            .description
            .as_deref()
            .filter(|text| !text.trim().is_empty())
            .map_or_else(|| format!("The upstream's `{}`.", tool.name), str::to_owned);
        let mut spec = ToolSpec::new(tool.name.to_string(), description, config.tier);
        spec.title = tool.title.clone().map(Cow::Owned);
        let mut annotations_title = None;
        if let Some(annotations) = &tool.annotations {
            spec.read_only = annotations.read_only_hint;
            spec.destructive = annotations.destructive_hint;
            spec.idempotent = annotations.idempotent_hint;
            spec.open_world = annotations.open_world_hint;
            annotations_title.clone_from(&annotations.title);
        }
        spec.budget = config.budget;
        // A schema that refuses properties it does not name: an unknown argument is refused
        // here, as the upstream would, rather than warned of and left out.
        spec.strict_args =
            tool.input_schema.get("additionalProperties") == Some(&Value::Bool(false));
        spec.scopes = Cow::Owned(config.scopes.iter().cloned().map(Cow::Owned).collect());
        // An upstream that says it is read-only and destructive at once is taken at its
        // safer word.
        if spec.read_only == Some(true) && spec.destructive == Some(true) {
            spec.read_only = Some(false);
        }
        spec.validate()?;
        let schema = (*tool.input_schema).clone();
        // MCP's input schema is an object schema; one that is not would be listed to clients
        // that refuse the whole listing for it. Such a tool is left out, the rest served.
        let refuse = |reason: &str| {
            Err(envelope_core::CoreError::InvalidToolSpec {
                tool: tool.name.chars().take(128).collect(),
                reason: format!("its input schema {reason}"),
            })
        };
        if schema.get("type") != Some(&Value::String("object".to_owned())) {
            return refuse("is not of type `object`");
        }
        if schema
            .get("properties")
            .is_some_and(|properties| !properties.is_object())
        {
            return refuse("has `properties` that are not an object");
        }
        let own: Option<Vec<String>> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect());
        // An upstream argument named like a control keeps its name; the control is renamed
        // for this tool, read and offered under the new name (a `next-page` action carries
        // its token there), so that an action followed verbatim is valid against the listing.
        spec.controls = ControlNames::avoiding(own.as_deref().unwrap_or_default());
        let paging: Arc<str> = Arc::from(spec.controls.wire(CONTINUATION));
        let declared = own.map(|mut names| {
            names.push(paging.to_string());
            names
        });
        Ok(Fronted {
            spec: Arc::new(spec),
            annotations_title,
            schema,
            declared,
            paging,
            upstream,
            store,
        })
    }
}

impl Tool for Fronted {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn annotations_title(&self) -> Option<&str> {
        self.annotations_title.as_deref()
    }

    fn input_schema(&self) -> Schema {
        let mut schema = self.schema.clone();
        // The paging argument, listed with the tool's own (a lean listing leaves out only the
        // controls' shared descriptions): a `next-page` action is valid against the schema
        // listed. A page after the first calls a read-only tool again, and any other never:
        // its pages come from the answer the proxy kept.
        if let Some(Value::Object(properties)) = schema.get_mut("properties") {
            let description = self.spec.controls.describe(
                CONTINUATION,
                "The token of a `next-page` action this tool offered, passed back exactly as \
                 given: the next page of the same answer.",
            );
            properties.insert(
                self.paging.to_string(),
                serde_json::json!({ "type": "string", "description": description }),
            );
        }
        add_controls_named(Schema::from(schema), &self.spec.controls)
    }

    fn declared_arguments(&self) -> Option<Vec<String>> {
        self.declared.clone()
    }

    fn call(&self, arguments: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let upstream = Arc::clone(&self.upstream);
        let store = Arc::clone(&self.store);
        let spec = Arc::clone(&self.spec);
        let declared = self.declared.clone();
        let paging = Arc::clone(&self.paging);
        Box::pin(async move {
            let mut ctx = ctx;
            // The entry `#[tool]` has: unknown arguments warned of and left out (refused when
            // the upstream's schema closes its properties), `meta` stamped.
            let mut invocation = Invocation::start(&spec);
            let arguments = match invocation.arguments(&mut ctx, arguments, declared.as_deref()) {
                Ok(arguments) => arguments,
                Err(stopped) => return invocation.fail(&ctx, stopped),
            };
            let call = Call {
                name: &spec.name,
                upstream: &upstream,
                store: &store,
                paging: &paging,
                recalls: spec.read_only == Some(true),
            };
            let output = match answer(call, arguments, &ctx).await {
                Ok(output) => output,
                Err(error) => ToolOutput::from(Envelope::err(error)),
            };
            invocation.finish_output(&ctx, output)
        })
    }
}

/// Calls the upstream and answers as an envelope; a page after the first comes from the
/// upstream again (a read-only tool) or from the result store (any other).
async fn answer(
    call: Call<'_>,
    mut arguments: Map<String, Value>,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    arguments.remove(call.paging);
    let token = ctx.controls().continuation.clone();
    let request = Value::Object(arguments);
    // The store's key of this call: who called, which tool, with what arguments.
    let key = || call_key(ctx.caller_binding(), call.name, &request);
    if let Some(token) = &token
        && !call.recalls
    {
        // Never called twice: the page is the stored answer's.
        return stored_page(&call, ctx, &request, &key(), token).await;
    }
    if let Some(token) = &token {
        // A token that is not this request's (another caller's, edited, other arguments) is
        // refused before the upstream is called: only its answer's digest is left to check,
        // which needs the answer.
        match open(ctx, &request, "", token) {
            Err(error) if error.code() != Some(STALE_CONTINUATION) => {
                return Err(with_rerun(error, call.name, &request, true));
            }
            _ => {}
        }
    }
    let Value::Object(arguments) = &request else {
        return Err(ToolError::internal("the arguments are an object"));
    };
    let result = relayed(&call, arguments, ctx).await?;
    let answer = Answer::read(&result);
    if answer.is_error {
        return Err(tool_error(&answer.text));
    }
    let baseline = Estimator::default().estimate(&answer.raw);
    let too_big = ctx.response_budget().is_some_and(|budget| {
        ctx.response_size(&answer.data)
            .is_some_and(|size| size > budget / 100 * DATA_SHARE_PERCENT)
    });
    // Digested and cut into rows only when it pages: a small answer goes out as it came.
    let pages = too_big || token.is_some();
    let snapshot = if pages {
        snapshot(&answer.raw)
    } else {
        String::new()
    };
    // Where this page starts: a continuation is opened against the answer as it is now, and
    // refused as stale when it changed since the token was sealed.
    let start = match &token {
        Some(token) => open(ctx, &request, &snapshot, token)
            .map_err(|error| with_rerun(error, call.name, &request, true))?,
        None => 0,
    };
    let rows = pages.then(|| Rows::of(&answer.data)).flatten();
    let mut output = match rows {
        Some(rows) if call.recalls => {
            let total = rows.rows.len();
            page(
                ctx,
                &request,
                Page {
                    rows: &rows.rows,
                    unit: rows.unit,
                    total,
                    snapshot,
                    start,
                },
            )?
        }
        Some(rows) => {
            let stored = call.store.keep(key(), rows, snapshot).await;
            page(
                ctx,
                &request,
                Page {
                    rows: &stored.rows,
                    unit: stored.unit.clone(),
                    total: stored.total,
                    snapshot: stored.snapshot.clone(),
                    start: 0,
                },
            )?
        }
        None => ToolOutput::from(Envelope::ok(answer.data)),
    };
    output = output.with_baseline(BASELINE_METHOD, baseline);
    output.attachments = answer.attachments;
    Ok(output)
}

/// The upstream's answer to `arguments`, once it has whatever input it asks for first (an
/// upstream on 2026-07-28; see [`crate::input`]). Each round sends a copy: the arguments stay
/// the request the answer's pages are bound to.
async fn relayed(
    call: &Call<'_>,
    arguments: &Map<String, Value>,
    ctx: &ToolContext,
) -> Result<rmcp::model::CallToolResult, ToolError> {
    crate::input::until_answered(ctx, |retry| one_round(call, arguments.clone(), retry, ctx)).await
}

/// One call of the upstream; its progress reports relayed to this call's client as they
/// come, all of them before the answer, when the client listens.
async fn one_round(
    call: &Call<'_>,
    arguments: Map<String, Value>,
    retry: Option<Retry>,
    ctx: &ToolContext,
) -> Result<Answered, ToolError> {
    if !ctx.reports_progress() {
        return call
            .upstream
            .call_for(ctx, call.name, arguments, retry, None)
            .await;
    }
    let (sender, mut reports) = tokio::sync::mpsc::unbounded_channel();
    let answered = call
        .upstream
        .call_for(ctx, call.name, arguments, retry, Some(sender));
    tokio::pin!(answered);
    let result = loop {
        tokio::select! {
            result = &mut answered => break result,
            Some(report) = reports.recv() => {
                ctx.report_progress(report.progress, report.total, report.message.as_deref());
            }
        }
    };
    while let Ok(report) = reports.try_recv() {
        ctx.report_progress(report.progress, report.total, report.message.as_deref());
    }
    result
}

/// One call of a fronted tool: what answering it needs.
struct Call<'a> {
    name: &'a str,
    upstream: &'a Upstream,
    store: &'a ResultStore,
    /// The paging argument's name for this tool.
    paging: &'a str,
    /// Pages by calling the upstream again: declared read-only.
    recalls: bool,
}

/// The rows an answer is paged from, and where this page starts.
struct Page<'a> {
    /// Every row held (all of a fresh answer, those kept of a stored one); only those from
    /// `start` on are copied into the page.
    rows: &'a [Value],
    unit: envelope_core::Unit,
    /// How many rows the answer had, held or not.
    total: usize,
    snapshot: String,
    start: usize,
}

/// The rows from `page.start` on, with what the budget stage needs to cut them and seal the
/// `next-page` after the last row it sends; a page that ends where the store's bound cut the
/// answer says so, and offers no continuation past it.
fn page(ctx: &ToolContext, request: &Value, page: Page<'_>) -> Result<ToolOutput, ToolError> {
    let held = page.rows.len();
    let start = page.start.min(held);
    let rows = page.rows[start..].to_vec();
    let returned = rows.len();
    let mut envelope;
    if held < page.total {
        let completeness = Completeness::truncated_page(
            page.unit,
            returned,
            Some(page.total),
            TruncationReason::StoreLimit,
            None,
        )
        .and_then(|completeness| completeness.with_offset(start))
        .map_err(ToolError::internal)?;
        envelope = Envelope::ok(Value::Array(rows));
        // Said first: no page size to raise, and no page to follow past the bound.
        if let Some(step) = completeness.next_step("the rest was not kept; narrow the request") {
            envelope = envelope.with_next_step(step);
        }
        envelope = envelope.with_completeness(completeness);
        envelope = envelope.with_warning(Notice::warning(
            ANSWER_NOT_KEPT_WHOLE,
            format!(
                "the answer has {} rows; only the first {held} were kept, the rest cannot be \
                 paged to",
                page.total
            ),
        ));
    } else {
        let completeness =
            Completeness::last_page(page.unit, start, returned).map_err(ToolError::internal)?;
        envelope = Envelope::ok(Value::Array(rows)).with_completeness(completeness);
    }
    let mut output = ToolOutput::from(envelope);
    // The upstream's tool takes no page size of the proxy's: the advice after a cut is to
    // follow `next-page`.
    output.resume = Some(
        Resume::new(ctx, request.clone(), start)?
            .with_snapshot(page.snapshot)
            .without_page_size(),
    );
    Ok(output)
}

/// Where the page `token` resumes starts, for the answer digested as `snapshot`.
fn open(
    ctx: &ToolContext,
    request: &Value,
    snapshot: &str,
    token: &str,
) -> Result<usize, ToolError> {
    let binding = ctx.binding(request).with_snapshot(snapshot);
    let page = ctx.state::<Continuations>()?.page(
        &binding,
        PageArgs::new(usize::MAX).with_continuation(Some(token)),
    )?;
    Ok(page.start)
}

/// The page `token` resumes, from the answers the store keeps for this call: the one whose
/// digest it was sealed with. None of them (evicted, or never kept here): stale, with a rerun.
async fn stored_page(
    call: &Call<'_>,
    ctx: &ToolContext,
    request: &Value,
    key: &str,
    token: &str,
) -> Result<ToolOutput, ToolError> {
    let mut refused = None;
    for stored in call.store.answers(key).await? {
        match open(ctx, request, &stored.snapshot, token) {
            Ok(start) => {
                return page(
                    ctx,
                    request,
                    Page {
                        rows: &stored.rows,
                        unit: stored.unit.clone(),
                        total: stored.total,
                        snapshot: stored.snapshot.clone(),
                        start,
                    },
                );
            }
            // Sealed for another answer of the same call: try the next.
            Err(error) if error.code() == Some(STALE_CONTINUATION) => refused = Some(error),
            Err(error) => return Err(with_rerun(error, call.name, request, false)),
        }
    }
    // Nothing kept to open it against: read it once anyway, so an edited or misplaced token
    // gets its own refusal rather than "stale".
    let error = match refused {
        Some(error) => error,
        None => match open(ctx, request, "", token) {
            Err(error) if error.code() != Some(STALE_CONTINUATION) => {
                return Err(with_rerun(error, call.name, request, false));
            }
            _ => ToolError::validation(
                "the answer this `continuation` pages is no longer kept".to_owned(),
            )
            .with_code(STALE_CONTINUATION)
            .with_hint(
                "call the tool again for a new answer; it is not read-only, so it runs again",
            ),
        },
    };
    Err(with_rerun(error, call.name, request, false))
}

/// A refused continuation, with the call to start over when the answer moved on (or, for a
/// tool that is not read-only, is no longer kept) or the token is another call's (another
/// caller's, say): the rerun is this request's first page, for whoever calls it; for a tool
/// that is not read-only it runs the tool again, and says so.
fn with_rerun(error: ToolError, tool: &str, request: &Value, read_only: bool) -> ToolError {
    if error.code() != Some(STALE_CONTINUATION) && error.code() != Some(CONTINUATION_SCOPE_MISMATCH)
    {
        return error;
    }
    let arguments = request.as_object().cloned().unwrap_or_default();
    let reason = if read_only {
        "the first page of the answer as it is now"
    } else {
        "runs the tool again (it is not read-only) for a new answer's first page"
    };
    match NextAction::new("rerun", Role::Retry, 0, tool, arguments, reason) {
        Ok(action) => error.with_recovery(action),
        Err(_) => error,
    }
}

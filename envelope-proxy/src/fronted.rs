//! One upstream tool as an envelope tool: listed with its annotations as the upstream declares
//! them and the per-call controls added, called with the controls taken off, answered as an
//! envelope, paged when its answer is too big for one response.

use std::borrow::Cow;
use std::sync::Arc;

use envelope_budget::Estimator;
use envelope_core::paging::{Continuations, PageArgs, Resume, STALE_CONTINUATION};
use envelope_core::schemars::Schema;
use envelope_core::stage::{ToolOutput, add_controls};
use envelope_core::{
    BoxFuture, Completeness, Envelope, NextAction, Role, Tool, ToolContext, ToolError, ToolSpec,
};
use serde_json::{Map, Value};

use crate::answer::Answer;
use crate::config::ResolvedTool;
use crate::errors::tool_error;
use crate::pages::{Rows, snapshot};
use crate::upstream::Upstream;

/// The wire name of the paging argument a paged tool is listed with.
const CONTINUATION: &str = envelope_core::paging::DEFAULT_CONTINUATION_FIELD;

/// `meta.baseline_method` of every proxied answer: the upstream's answer as it sent it.
pub const BASELINE_METHOD: &str = "upstream_raw";

/// The share of the budget an answer's `data` may take before it is paged: the rest is the
/// envelope's own fields.
const DATA_SHARE_PERCENT: usize = 85;

/// An upstream tool, fronted.
pub(crate) struct Fronted {
    spec: ToolSpec,
    /// The title in the upstream's annotations, as it declared it.
    annotations_title: Option<String>,
    /// The upstream's input schema, as it listed it.
    schema: Map<String, Value>,
    /// The argument names the upstream declares, and `continuation` when the proxy pages it.
    declared: Option<Vec<String>>,
    /// Pages a too-big answer by calling the upstream again: the upstream declares it
    /// read-only, and takes no `continuation` of its own.
    pages: bool,
    upstream: Arc<Upstream>,
}

impl Fronted {
    /// The upstream's `tool`, served as `config` says; an error for a tool whose name or
    /// declaration cannot be served.
    pub(crate) fn new(
        tool: &rmcp::model::Tool,
        config: &ResolvedTool,
        upstream: Arc<Upstream>,
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
        spec.scopes = Cow::Owned(config.scopes.iter().cloned().map(Cow::Owned).collect());
        // An upstream that says it is read-only and destructive at once is taken at its
        // safer word.
        if spec.read_only == Some(true) && spec.destructive == Some(true) {
            spec.read_only = Some(false);
        }
        spec.validate()?;
        let schema = (*tool.input_schema).clone();
        let own: Option<Vec<String>> = schema
            .get("properties")
            .and_then(Value::as_object)
            .map(|properties| properties.keys().cloned().collect());
        let pages = spec.read_only == Some(true)
            && !own
                .as_ref()
                .is_some_and(|names| names.iter().any(|name| name == CONTINUATION));
        let declared = own.map(|mut names| {
            if pages {
                names.push(CONTINUATION.to_owned());
            }
            names
        });
        Ok(Fronted {
            spec,
            annotations_title,
            schema,
            declared,
            pages,
            upstream,
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
        if self.pages {
            // The paging argument, listed with the tool's own (a lean listing leaves out only
            // the controls' shared descriptions): a `next-page` action is valid against the
            // schema listed.
            if let Some(Value::Object(properties)) = schema.get_mut("properties") {
                properties.insert(
                    CONTINUATION.to_owned(),
                    serde_json::json!({
                        "type": "string",
                        "description": "The token of a `next-page` action this tool offered, \
                            passed back exactly as given: the next page of the same answer."
                    }),
                );
            }
        }
        add_controls(Schema::from(schema))
    }

    fn declared_arguments(&self) -> Option<Vec<String>> {
        self.declared.clone()
    }

    fn call(&self, arguments: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let upstream = Arc::clone(&self.upstream);
        let name = self.spec.name.to_string();
        let pages = self.pages;
        Box::pin(async move {
            match answer(&upstream, &name, pages, arguments, &ctx).await {
                Ok(output) => output,
                Err(error) => ToolOutput::from(Envelope::err(error)),
            }
        })
    }
}

/// Calls the upstream and answers as an envelope.
async fn answer(
    upstream: &Upstream,
    name: &str,
    pages: bool,
    arguments: Value,
    ctx: &ToolContext,
) -> Result<ToolOutput, ToolError> {
    let mut arguments = match arguments {
        Value::Object(arguments) => arguments,
        Value::Null => Map::new(),
        // The door refuses arguments that are not an object before the tool runs.
        _ => return Err(ToolError::validation("arguments must be a JSON object")),
    };
    let token = if pages {
        arguments.remove(CONTINUATION);
        ctx.controls().continuation.clone()
    } else {
        None
    };
    let result = upstream.call(name, arguments.clone()).await?;
    let answer = Answer::read(&result);
    if answer.is_error {
        return Err(tool_error(&answer.text));
    }
    let baseline = Estimator::default().estimate(&answer.raw);
    let request = Value::Object(arguments);
    let snapshot = snapshot(&answer.raw);
    // Where this page starts: a continuation is opened against the answer as it is now, and
    // refused as stale when it changed since the token was sealed.
    let start = match &token {
        Some(token) => {
            let binding = ctx.binding(&request).with_snapshot(&snapshot);
            let continuations = ctx.state::<Continuations>()?;
            let page = continuations
                .page(
                    &binding,
                    PageArgs::new(usize::MAX).with_continuation(Some(token)),
                )
                .map_err(|error| with_rerun(error, name, &request))?;
            page.start
        }
        None => 0,
    };
    let too_big = ctx.response_budget().is_some_and(|budget| {
        ctx.response_size(&answer.data)
            .is_some_and(|size| size > budget / 100 * DATA_SHARE_PERCENT)
    });
    let mut resume = None;
    let envelope = match Rows::of(&answer.data).filter(|_| too_big || token.is_some()) {
        Some(rows) => {
            let total = rows.rows.len();
            let start = start.min(total);
            let page: Vec<Value> = rows.rows.into_iter().skip(start).collect();
            let completeness = Completeness::last_page(rows.unit, start, page.len())
                .map_err(ToolError::internal)?;
            if pages {
                resume = Some(Resume::new(ctx, request.clone(), start)?.with_snapshot(snapshot));
            }
            Envelope::ok(Value::Array(page)).with_completeness(completeness)
        }
        None => Envelope::ok(answer.data),
    };
    let mut output = ToolOutput::from(envelope).with_baseline(BASELINE_METHOD, baseline);
    output.resume = resume;
    output.attachments = answer.attachments;
    Ok(output)
}

/// A refused continuation, with the call to start over when the answer moved on.
fn with_rerun(error: ToolError, tool: &str, request: &Value) -> ToolError {
    if error.code() != Some(STALE_CONTINUATION) {
        return error;
    }
    let arguments = request.as_object().cloned().unwrap_or_default();
    match NextAction::new(
        "rerun",
        Role::Retry,
        0,
        tool,
        arguments,
        "the first page of the answer as it is now",
    ) {
        Ok(action) => error.with_recovery(action),
        Err(_) => error,
    }
}

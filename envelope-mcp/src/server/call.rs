//! The call pipeline, stage by stage: the call's budget, the context the tool runs in, the tool
//! under its deadline, then the response through the budget stage.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use envelope_budget::{CallBudget, Prepared, prepare};
use envelope_core::stage::{Cancellation, Controls, OutputFormat, ProgressSink, ResponseMode};
use envelope_core::stage::{ToolOutput, carry_argument, meta_stamp, retain_next_actions};
use envelope_core::{
    Arguments, Caller, ClientChannel, DIALECT_CONTROL, Dialect, DialectSet, Envelope, Tier, Tool,
    ToolContext, ToolSpec, control_given_twice,
};
use envelope_dialect::Rendering;
use serde_json::Value;
use tracing::Instrument;

use super::EnvelopeServer;
use super::refused::refused;
use super::scopes::Shown;
use super::stop::{Stop, past_deadline};

/// What one call needs from the transport around it.
pub(crate) struct CallExtras {
    pub(crate) client_request_id: Option<String>,
    /// The transport's session (HTTP's `Mcp-Session-Id`).
    pub(crate) session: Option<String>,
    /// The caller the transport authenticated (over HTTP, by its access token): the scope
    /// gate holds the call to it, and continuations are bound to its principal.
    pub(crate) caller: Option<Caller>,
    /// Whether the caller is shown only the tools it may call (a filtered listing): next
    /// actions suggesting any other are dropped too.
    pub(crate) callable_only: bool,
    pub(crate) progress: Option<Arc<dyn ProgressSink>>,
    pub(crate) cancelled: Option<Arc<dyn Cancellation>>,
    /// The client the tool may ask for input, a completion, or send logs to.
    pub(crate) client: Option<Arc<dyn ClientChannel>>,
    /// The caller's W3C trace context, which the call's span joins.
    #[cfg(feature = "otel")]
    pub(crate) trace: crate::otel::TraceContext,
    /// Whether the transport sends attachments beside the envelope (MCP does; the REST
    /// gateway's JSON body does not, so its answers note each attachment `dropped`).
    pub(crate) carries_media: bool,
    /// The dialect the call answers in unless it asks for another, when it is not the server's:
    /// the HTTP API's is always the envelope's.
    pub(crate) dialect: Option<Dialect>,
    /// A call opted out of trimming (the REST gateway's `apply_budget=false`): its response is
    /// cut only to this ceiling.
    pub(crate) unbudgeted_ceiling: Option<usize>,
    /// The per-call control the request's text named twice, which the parsed arguments no
    /// longer show: the call is refused before its tool runs.
    pub(crate) given_twice: Option<&'static str>,
}

/// A call's response, with what the result's `_meta` carries besides it.
pub(crate) struct Answer {
    pub(crate) prepared: Prepared,
    pub(crate) tier: Tier,
    pub(crate) client_request_id: Option<String>,
}

impl Default for CallExtras {
    /// A call outside any transport: no client, no progress, media carried (the caller reads
    /// [`Prepared::attachments`]).
    fn default() -> Self {
        CallExtras {
            client_request_id: None,
            session: None,
            caller: None,
            callable_only: false,
            progress: None,
            cancelled: None,
            client: None,
            #[cfg(feature = "otel")]
            trace: crate::otel::TraceContext::default(),
            carries_media: true,
            unbudgeted_ceiling: None,
            dialect: None,
            given_twice: None,
        }
    }
}

impl EnvelopeServer {
    /// Calls a tool outside any MCP session, as the `call` command of a server binary does.
    /// `None` when no tool has that name.
    ///
    /// Arguments read from text ([`Arguments::from_json`]) are refused `invalid_control` when
    /// the text names a per-call control twice, as every transport refuses them.
    pub async fn call(&self, name: &str, arguments: impl Into<Arguments>) -> Option<Prepared> {
        let tool = self.inner.tools.get(name)?;
        let arguments = arguments.into();
        let extras = CallExtras {
            given_twice: arguments.given_twice(),
            ..CallExtras::default()
        };
        let answer = self.call_with(tool, arguments.into_value(), extras).await;
        Some(answer.prepared)
    }

    /// One call of `tool`, stage by stage: the call's budget, asked of the budget stage once;
    /// the context the tool runs in, sized by it; the scope gate; the tool under its deadline (its entry
    /// decodes the arguments and the per-call controls, once); then the response encoded,
    /// shaped, trimmed and stamped by the budget stage under the same budget.
    pub(crate) async fn call_with(
        &self,
        tool: &dyn Tool,
        arguments: Value,
        extras: CallExtras,
    ) -> Answer {
        let _running = self.inner.calls.begin();
        let spec = tool.spec();
        #[cfg(feature = "otel")]
        let trace = extras.trace.clone();
        let mut budget = self.inner.config.budget.for_call(spec.budget);
        if let Some(ceiling) = extras.unbudgeted_ceiling {
            budget = budget.raised_to(ceiling);
        }
        if !extras.carries_media {
            budget = budget.without_media();
        }
        // Who the answer's next actions are for, when the caller is shown only what it may call.
        let shown_to = extras.callable_only.then(|| extras.caller.clone());
        let given_twice = extras.given_twice;
        let dialect = extras.dialect.unwrap_or(self.inner.config.dialect);
        let (ctx, stop) = self.context_for(extras, &budget);
        // The correlation id as the envelope keeps it (`meta.client_request_id`): a header the
        // HTTP layer replaced with a ULID is the request id, not a client's id.
        let span = crate::observe::call_span(spec, ctx.request_id(), ctx.client_request_id());
        #[cfg(feature = "otel")]
        trace.adopt(&span);
        // A control named twice, then a caller without the tool's scopes, is refused before the
        // tool runs.
        let refused = match given_twice {
            Some(control) => Some(refused(spec, &ctx, control_given_twice(control))),
            None => super::scopes::refusal(spec, &ctx, &arguments),
        };
        let output = match refused {
            Some(refused) => refused,
            None => {
                self.run(tool, arguments, ctx, &stop)
                    .instrument(span.clone())
                    .await
            }
        };
        let latency_ms = output.envelope.meta().latency_ms();
        let shown = match &shown_to {
            Some(caller) => Shown::Callable(caller.as_ref()),
            None => Shown::All,
        };
        let answer = span.in_scope(|| self.answer(spec, output, &budget, shown, dialect));
        crate::observe::record_outcome(
            &span,
            &answer.prepared.structured,
            answer.prepared.tokens_estimated,
            latency_ms,
        );
        answer
    }

    /// The context a call runs in under `budget`, and the signal that stops its work.
    fn context_for(&self, extras: CallExtras, budget: &CallBudget) -> (ToolContext, Arc<Stop>) {
        let config = &self.inner.config;
        // A transport that fixes the dialect (the HTTP API) offers that one alone.
        let offered = match extras.dialect {
            Some(fixed) => DialectSet::only(fixed),
            None => config.offered_dialects(),
        };
        let mut ctx = ToolContext::new()
            .with_dialect(extras.dialect.unwrap_or(config.dialect))
            .with_offered_dialects(offered)
            .with_client_request_id(extras.client_request_id.as_deref())
            .with_disabled_modules(Arc::clone(&self.inner.disabled))
            .with_states(Arc::clone(&config.states));
        if let Some(session) = extras.session {
            ctx = ctx.with_session(session);
        }
        if let Some(caller) = extras.caller {
            ctx = ctx.with_caller(caller);
        }
        if let Some(progress) = extras.progress {
            ctx = ctx.with_progress(progress);
        }
        if let Some(client) = extras.client {
            ctx = ctx.with_client(client);
        }
        // The client's cancellation, or the deadline's: either stops the work.
        let stop = Arc::new(Stop {
            client: extras.cancelled,
            deadline_passed: AtomicBool::new(false),
        });
        ctx = ctx.with_cancellation(Arc::clone(&stop) as Arc<dyn Cancellation>);
        if let Some(probe) = &config.index {
            ctx = ctx.with_index_status(probe());
        }
        // A tool that builds rows up to what fits sizes them as the budget stage will.
        if let Some(sizer) = budget.sizer() {
            ctx = ctx.with_sizer(sizer);
        }
        (ctx, stop)
    }

    /// Runs `tool` under the call deadline; past it, the tool's work is told to stop and the
    /// call answers `deadline_exceeded`, shaped by the controls read leniently from the
    /// arguments (the tool's entry, which decodes them, did not finish).
    async fn run(
        &self,
        tool: &dyn Tool,
        arguments: Value,
        ctx: ToolContext,
        stop: &Stop,
    ) -> ToolOutput {
        let request_id = *ctx.request_id();
        let Some(limit) = self.inner.config.call_timeout else {
            return tool.call(arguments, ctx).await;
        };
        let controls = Controls::from_arguments(&arguments);
        match tokio::time::timeout(limit, tool.call(arguments, ctx)).await {
            Ok(output) => output,
            Err(_) => {
                stop.deadline_passed.store(true, Ordering::Relaxed);
                ToolOutput::from(past_deadline(tool.spec(), request_id, limit))
                    .with_controls(controls)
            }
        }
    }

    /// The response to `output`: actions this server cannot run, or that suggest a tool not
    /// `shown` to the caller, dropped; the capability tags stamped when the controls keep
    /// them; then the budget stage.
    fn answer(
        &self,
        spec: &ToolSpec,
        mut output: ToolOutput,
        budget: &CallBudget,
        shown: Shown<'_>,
        server_dialect: Dialect,
    ) -> Answer {
        self.drop_hidden_actions(&mut output.envelope, shown);
        self.drop_unrunnable_actions(&mut output.envelope, spec.name);
        // A call that chose its dialect keeps it on the calls it is offered: following one
        // answers in the same wire (and a continuation, bound to its dialect, resumes).
        if let Some(asked) = output.controls.dialect {
            let tools = &self.inner.tools;
            carry_argument(
                &mut output.envelope,
                DIALECT_CONTROL,
                &Value::String(asked.name().to_owned()),
                |action| tools.get(&action.tool).is_some(),
            );
        }
        let dialect = output.controls.dialect.unwrap_or(server_dialect);
        // Another contract's wire is rendered from the whole envelope: it decides itself what
        // of `meta` it stamps, and shapes it by the controls the call asked for. The envelope's
        // own wire, the common case, takes nothing of this.
        let rendering = (dialect != Dialect::Envelope).then(|| {
            let whole = Controls {
                response_mode: ResponseMode::Full,
                output_format: OutputFormat::Json,
                compact_only: false,
                ..output.controls.clone()
            };
            Rendering {
                controls: std::mem::replace(&mut output.controls, whole),
                estimator: budget.policy().estimator,
            }
        });
        // Only `response_mode: full` keeps them in `meta`; `_meta` always carries them.
        if output.controls.keeps_full_meta() {
            meta_stamp(&mut output.envelope).capabilities(self.capabilities.tags.clone());
        }
        // Read before shaping: `compact_only` leaves it out of `meta`, not out of `_meta`.
        let client_request_id = output
            .envelope
            .meta()
            .client_request_id()
            .map(str::to_owned);
        let prepared = prepare(output, budget);
        Answer {
            prepared: match &rendering {
                Some(rendering) => envelope_dialect::apply(dialect, prepared, rendering),
                None => prepared,
            },
            tier: spec.tier,
            client_request_id,
        }
    }

    /// Drops suggested calls to a tool the caller is not `shown`: filtered means hidden, in an
    /// answer's next actions as in the listing. Not logged: a tool that suggests a write to a
    /// caller that may only read is doing nothing wrong.
    fn drop_hidden_actions<P>(&self, envelope: &mut Envelope<P>, shown: Shown<'_>) {
        if matches!(shown, Shown::All) || envelope.next_actions().is_empty() {
            return;
        }
        let tools = &self.inner.tools;
        // A tool not served is left to the next pass, which says so.
        retain_next_actions(envelope, |action| {
            tools
                .get(&action.tool)
                .is_none_or(|tool| shown.includes(tool.spec()))
        });
    }

    /// Drops suggested calls this server cannot run: to a tool it does not serve, or with
    /// arguments that fail that tool's input schema. Logs how many, never what: arguments can
    /// carry user data.
    fn drop_unrunnable_actions<P>(&self, envelope: &mut Envelope<P>, tool: &str) {
        if envelope.next_actions().is_empty() {
            return;
        }
        let inputs = &self.inner.inputs;
        let dropped = retain_next_actions(envelope, |action| {
            inputs
                .get(action.tool.as_str())
                .is_some_and(|input| input.is_valid(&Value::Object(action.arguments.clone())))
        });
        if dropped > 0 {
            tracing::warn!(
                tool,
                dropped,
                "dropped next actions the served tools cannot run"
            );
        }
    }
}

impl EnvelopeServer {
    /// A call of `name` refused for its scopes, as the scope gate refuses it (the `permission`
    /// envelope, code `insufficient_scope`, naming what is missing), with the scopes the tool
    /// declares: what an HTTP answer's step-up challenge asks for. `None` when no tool has that
    /// name or `caller` may call it. The tool does not run.
    #[cfg(feature = "auth")]
    pub(crate) async fn refuse_for_scope(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        caller: &envelope_core::Caller,
        client_request_id: Option<&str>,
    ) -> Option<(&'static [&'static str], rmcp::model::CallToolResult)> {
        let tool = self.inner.tools.get(name)?;
        let scopes = tool.spec().scopes;
        if caller.may(scopes) {
            return None;
        }
        let extras = CallExtras {
            client_request_id: client_request_id.map(str::to_owned),
            caller: Some(caller.clone()),
            ..CallExtras::default()
        };
        let arguments = Value::Object(arguments.unwrap_or_default());
        let answer = self.call_with(tool, arguments, extras).await;
        Some((scopes, self.result(answer)))
    }
}

//! The call pipeline after the door: the refusal the door decided or the tool under its
//! deadline, then the response through the budget stage and the call's dialect.

use std::sync::Arc;

use envelope_budget::{Prepared, prepare, prepare_as};
use envelope_core::stage::{Controls, OutputFormat, ResponseMode};
use envelope_core::stage::{ToolOutput, meta_stamp, retain_next_actions};
use envelope_core::{Arguments, Dialect, Envelope, Tier};
use envelope_dialect::Rendering;
use serde_json::Value;
use tracing::Instrument;

use super::EnvelopeServer;
use super::door::{Call, CallExtras};
use super::missing::MissingCapability;
use super::scopes::Shown;
use super::served::{Chosen, Served};
use super::stop::past_deadline;

/// A call's response, with what the result's `_meta` carries besides it.
pub(crate) struct Answer {
    pub(crate) prepared: Prepared,
    pub(crate) tier: Tier,
    pub(crate) client_request_id: Option<String>,
    /// The client capability the call failed for want of, if that is why it failed.
    pub(crate) missing: Option<MissingCapability>,
}

impl EnvelopeServer {
    /// Calls a tool outside any MCP session, as the `call` command of a server binary does.
    /// `None` when no tool has that name.
    ///
    /// Arguments read from text ([`Arguments::from_json`]) are refused `invalid_control` when
    /// the text names a per-call control twice, as every transport refuses them.
    pub async fn call(&self, name: &str, arguments: impl Into<Arguments>) -> Option<Prepared> {
        let chosen = self.served().choose(name)?;
        let arguments = arguments.into();
        let extras = CallExtras {
            given_twice: arguments.given_twice(),
            ..CallExtras::default()
        };
        let answer = self.call_with(chosen, arguments.into_value(), extras).await;
        Some(answer.prepared)
    }

    /// One call of `tool`: decided at the door ([`EnvelopeServer::door`]), then answered
    /// ([`EnvelopeServer::pass`]).
    pub(crate) async fn call_with(
        &self,
        chosen: Chosen,
        arguments: Value,
        extras: CallExtras,
    ) -> Answer {
        self.pass(self.door(chosen, arguments, extras)).await
    }

    /// The call `call` the door decided, stage by stage: its refusal, or the tool under its
    /// deadline (its entry decodes the tool's own arguments); then the response encoded,
    /// shaped, trimmed and stamped by the budget stage under the call's budget, in its
    /// dialect.
    pub(crate) async fn pass(&self, mut call: Call) -> Answer {
        let _running = self.inner.calls.begin();
        let tool = Arc::clone(&call.chosen.tool);
        let spec = tool.spec();
        // The correlation id as the envelope keeps it (`meta.client_request_id`): a header the
        // HTTP layer replaced with a ULID is the request id, not a client's id.
        let span =
            crate::observe::call_span(spec, call.ctx.request_id(), call.ctx.client_request_id());
        #[cfg(feature = "otel")]
        call.trace.adopt(&span);
        let output = match call.refused_output() {
            Some(refused) => refused,
            None => self.run(&mut call).instrument(span.clone()).await,
        };
        let latency_ms = output.envelope.meta().latency_ms();
        let answer = span.in_scope(|| self.answer(&call, output));
        crate::observe::record_outcome(
            &span,
            &answer.prepared.structured,
            answer.prepared.tokens_estimated,
            latency_ms,
        );
        answer
    }

    /// Runs the call's tool under the call deadline; past it, the tool's work is told to stop
    /// and the call answers `deadline_exceeded`.
    async fn run(&self, call: &mut Call) -> ToolOutput {
        let arguments = std::mem::take(&mut call.arguments);
        let ctx = call.ctx.clone();
        let request_id = *ctx.request_id();
        let tool = &call.chosen.tool;
        let turns = call.chosen.served.turns.get(&tool.spec().name);
        let work = async {
            // A blocking tool's turn first: waiting for it counts against the deadline.
            let Some(turns) = turns else {
                return tool.call(arguments, ctx).await;
            };
            let _turn = turns.take().await;
            let started = std::time::Instant::now();
            let output = tool.call(arguments, ctx).await;
            turns.took(started.elapsed());
            output
        };
        let Some(limit) = self.inner.config.call_timeout else {
            return work.await;
        };
        match tokio::time::timeout(limit, work).await {
            Ok(output) => output,
            Err(_) => {
                call.stop.deadline_passed.cancel();
                ToolOutput::from(past_deadline(call.spec(), request_id, limit))
            }
        }
    }

    /// The response to `output`, shaped by the controls the door decided: actions this server
    /// cannot run, or that suggest a tool the caller is not shown, dropped; the capability tags
    /// stamped when the controls keep them; then the budget stage, which carries the call's
    /// `dialect` to the actions it keeps, and the call's dialect.
    fn answer(&self, call: &Call, mut output: ToolOutput) -> Answer {
        let shown = match &call.shown_to {
            Some(caller) => Shown::Callable(caller.as_ref()),
            None => Shown::All,
        };
        let served = &call.chosen.served;
        drop_hidden_actions(served, &mut output.envelope, shown);
        drop_unrunnable_actions(served, &mut output.envelope, &call.spec().name);
        output.controls = call.controls.clone();
        // Another contract's wire is rendered from the whole envelope: it decides itself what
        // of `meta` it stamps, and shapes it by the controls the call asked for. The envelope's
        // own wire, the common case, takes nothing of this.
        let rendering = (call.dialect != Dialect::Envelope).then(|| {
            let whole = Controls {
                response_mode: ResponseMode::Full,
                output_format: OutputFormat::Json,
                compact_only: false,
                ..output.controls.clone()
            };
            Rendering {
                controls: std::mem::replace(&mut output.controls, whole),
                estimator: call.budget.policy().estimator,
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
        let missing = output.envelope.error().and_then(MissingCapability::of);
        // Another contract's wire is what is sent, so the budget holds on it.
        let prepared = match &rendering {
            Some(rendering) => prepare_as(output, &call.budget, &|prepared| {
                envelope_dialect::apply(call.dialect, prepared, rendering)
            }),
            None => prepare(output, &call.budget),
        };
        Answer {
            prepared,
            tier: call.spec().tier,
            client_request_id,
            missing,
        }
    }
}

/// Drops suggested calls to a tool the caller is not `shown`: filtered means hidden, in an
/// answer's next actions as in the listing. Not logged: a tool that suggests a write to a
/// caller that may only read is doing nothing wrong.
fn drop_hidden_actions<P>(served: &Served, envelope: &mut Envelope<P>, shown: Shown<'_>) {
    if matches!(shown, Shown::All) || envelope.next_actions().is_empty() {
        return;
    }
    // A tool not served is left to the next pass, which says so.
    retain_next_actions(envelope, |action| {
        served
            .tools
            .get(&action.tool)
            .is_none_or(|tool| shown.includes(tool.spec()))
    });
}

/// Drops suggested calls the `served` tools cannot run: to a tool not served, or with
/// arguments that fail that tool's input schema. Logs how many, never what: arguments can
/// carry user data.
fn drop_unrunnable_actions<P>(served: &Served, envelope: &mut Envelope<P>, tool: &str) {
    if envelope.next_actions().is_empty() {
        return;
    }
    let dropped = retain_next_actions(envelope, |action| {
        served
            .inputs
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

impl EnvelopeServer {
    /// The scopes the tool named `name` declares; `None` when no tool has that name.
    #[cfg(feature = "auth")]
    pub(crate) fn tool_scopes(&self, name: &str) -> Option<Vec<envelope_core::SpecText>> {
        Some(self.served().tools.get(name)?.spec().scopes.to_vec())
    }

    /// A call of `name` by `caller` refused for its scopes, as the door refuses it: the
    /// refusal's message, and the `permission` envelope (code `insufficient_scope`, naming
    /// what is missing) as the call would answer it. `None` when no tool has that name or
    /// `caller` may call it. The tool does not run.
    #[cfg(feature = "auth")]
    pub(crate) async fn refused_for_scope(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        caller: &envelope_core::Caller,
        client_request_id: Option<&str>,
    ) -> Option<(String, Value)> {
        let chosen = self.served().choose(name)?;
        let extras = CallExtras {
            client_request_id: client_request_id.map(str::to_owned),
            caller: Some(caller.clone()),
            ..CallExtras::default()
        };
        let arguments = Value::Object(arguments.unwrap_or_default());
        let call = self.door(chosen, arguments, extras);
        let message = call.scope_refusal()?.to_owned();
        let answer = self.pass(call).await;
        let envelope = self.result(answer).structured_content.unwrap_or_default();
        Some((message, envelope))
    }
}

//! The door: each call decided once, before anything runs. One function reads a call's
//! request (the tool, its arguments, what the transport knows of the caller) and builds a
//! [`Call`] that every later stage reads: the controls split from the arguments by the tool's
//! declared argument names, the dialect the answer is written in, the budget, the caller,
//! what the caller is shown, and whether the call is refused before its tool runs.
//!
//! The refusals are decided in one order: a control named twice; a caller without the tool's
//! scopes; the tool's module switched off; controls that cannot be read or written in the
//! answer's dialect. The tool's own arguments are the tool's entry to decode.

use std::sync::Arc;

use envelope_budget::CallBudget;
use envelope_core::stage::{
    Cancellation, ControlSplit, Controls, Dialects, ProgressSink, ToolOutput, module_disabled,
    refused_at_entry, split_controls,
};
use envelope_core::{
    Caller, ClientChannel, Dialect, DialectSet, Notice, ToolContext, ToolError, ToolSpec,
    control_given_twice, insufficient_scope,
};
use serde_json::Value;

use super::EnvelopeServer;
use super::refused::refused;
use super::scopes::may_call;
use super::served::Chosen;
use super::stop::Stop;

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

/// One call, decided: what every stage after the door reads. No stage reads a control out of
/// the arguments again.
pub(crate) struct Call {
    /// The tool, and the served table the call reads throughout.
    pub(super) chosen: Chosen,
    /// The tool's own arguments: the controls split off, but one it declares itself.
    pub(super) arguments: Value,
    /// The controls the answer is shaped by: those the call gave, once read and checked; read
    /// leniently for a refusal of its scopes; none for a refusal of the controls themselves.
    pub(super) controls: Controls,
    /// The controls exactly as given, by name (the HTTP API judges a dialect asked by them).
    #[cfg(feature = "rest")]
    given: serde_json::Map<String, Value>,
    /// The wire the answer is written in: the call's `dialect` control, else the transport's,
    /// else the server's.
    pub(super) dialect: Dialect,
    pub(super) budget: CallBudget,
    /// Who the answer's next actions are for, when the caller is shown only what it may call.
    pub(super) shown_to: Option<Option<Caller>>,
    /// The context the tool runs in (its caller, its decided controls) and what stops it.
    pub(super) ctx: ToolContext,
    pub(super) stop: Arc<Stop>,
    /// Why the call is answered without its tool running, if it is.
    pub(super) refusal: Option<Refusal>,
    #[cfg(feature = "otel")]
    pub(super) trace: crate::otel::TraceContext,
}

/// Why a call is refused at the door.
pub(super) enum Refusal {
    /// A control named twice, or a caller without the tool's scopes: answered as the gate's
    /// refusal, the tool named but not entered.
    Gate {
        error: ToolError,
        /// Whether it is the scope gate's: an HTTP answer then challenges for the scopes
        /// (read where the OAuth resource server is built in, feature `auth`).
        #[cfg_attr(not(feature = "auth"), allow(dead_code))]
        for_scope: bool,
    },
    /// The tool's module switched off, or controls that cannot be honoured: answered as the
    /// tool's entry answers a refusal, with what was found to warn of.
    Entry {
        error: ToolError,
        notices: Vec<Notice>,
    },
}

impl Call {
    /// The tool's declaration.
    pub(super) fn spec(&self) -> &ToolSpec {
        self.chosen.tool.spec()
    }

    /// The controls the call gave, exactly as given, by name.
    #[cfg(feature = "rest")]
    pub(crate) fn given(&self) -> &serde_json::Map<String, Value> {
        &self.given
    }

    /// Whether the scope gate refuses the call: its caller lacks a scope the tool declares.
    #[cfg(all(feature = "rest", feature = "auth"))]
    pub(crate) fn refused_for_scope(&self) -> bool {
        matches!(
            self.refusal,
            Some(Refusal::Gate {
                for_scope: true,
                ..
            })
        )
    }

    /// The message of the scope gate's refusal, when it refuses the call.
    #[cfg(feature = "auth")]
    pub(crate) fn scope_refusal(&self) -> Option<&str> {
        match &self.refusal {
            Some(Refusal::Gate {
                error,
                for_scope: true,
            }) => Some(error.message()),
            _ => None,
        }
    }

    /// The answer of a refused call: the gate's refusal stamped as the tool's, or the tool's
    /// entry's own; `None` when the call is not refused.
    pub(super) fn refused_output(&mut self) -> Option<ToolOutput> {
        match self.refusal.take()? {
            Refusal::Gate { error, .. } => Some(refused(self.spec(), &self.ctx, error)),
            Refusal::Entry { error, notices } => {
                Some(refused_at_entry(self.spec(), &self.ctx, error, notices))
            }
        }
    }
}

impl EnvelopeServer {
    /// The door: the `chosen` tool called with `arguments` by what `extras` tells of the
    /// transport, decided once. Nothing runs; [`EnvelopeServer::pass`] answers it.
    pub(crate) fn door(&self, chosen: Chosen, arguments: Value, extras: CallExtras) -> Call {
        let config = &self.inner.config;
        let tool = Arc::clone(&chosen.tool);
        let spec = tool.spec();
        let mut budget = config.budget.for_call(spec.budget);
        if let Some(ceiling) = extras.unbudgeted_ceiling {
            budget = budget.raised_to(ceiling);
        }
        if !extras.carries_media {
            budget = budget.without_media();
        }
        let shown_to = extras.callable_only.then(|| extras.caller.clone());
        // A transport that fixes the dialect (the HTTP API) offers that one alone.
        let (dialect, offered) = match extras.dialect {
            Some(fixed) => (fixed, DialectSet::only(fixed)),
            None => (config.dialect, config.offered_dialects()),
        };
        let declared = chosen
            .served
            .declared
            .get(&spec.name)
            .and_then(Option::as_deref);
        let dialects = Dialects {
            dialect,
            offered,
            expressible: envelope_dialect::EXPRESSIBLE,
        };
        let split = split_controls(&spec.name, arguments, declared, &spec.controls, dialects);
        let given_twice = extras.given_twice;
        #[cfg(feature = "otel")]
        let trace = extras.trace.clone();
        let (ctx, stop) = self.context_for(extras, dialect, offered, &budget);
        // Named here for every tool, a hand-written one too (its paging binds to the name).
        let ctx = ctx.with_tool_name(spec.name.clone());

        let gate = |error, for_scope| Some(Refusal::Gate { error, for_scope });
        let disabled = spec
            .module
            .as_deref()
            .filter(|module| ctx.is_module_disabled(module));
        // The controls as given, whatever is refused: the HTTP API judges the dialect asked
        // before anything else.
        let given = match &split {
            Ok(split) => split.given.clone(),
            Err(refused) => refused.given.clone(),
        };
        let (arguments, controls, refusal, ctx) = if let Some(control) = given_twice {
            let refusal = gate(control_given_twice(control), false);
            (Value::Null, Controls::default(), refusal, ctx)
        } else if !may_call(ctx.caller(), spec) {
            let missing = ctx
                .caller()
                .map(|caller| caller.scopes().missing(&spec.scopes))
                .unwrap_or_default();
            let error = insufficient_scope(&spec.name, &spec.scopes, &missing);
            (
                Value::Null,
                Controls::lenient(&given),
                gate(error, true),
                ctx,
            )
        } else if let Some(module) = disabled {
            let refusal = Some(Refusal::Entry {
                error: module_disabled(module),
                notices: Vec::new(),
            });
            (Value::Null, Controls::default(), refusal, ctx)
        } else {
            match split {
                Err(refused) => {
                    let refusal = Some(Refusal::Entry {
                        error: refused.error,
                        notices: refused.notices,
                    });
                    (Value::Null, refused.controls, refusal, ctx)
                }
                Ok(ControlSplit {
                    arguments,
                    controls,
                    notices,
                    ..
                }) => {
                    let ctx = ctx.with_decided_controls(controls.clone(), notices);
                    (Value::Object(arguments), controls, None, ctx)
                }
            }
        };
        Call {
            chosen,
            arguments,
            dialect: controls.dialect.unwrap_or(dialect),
            controls,
            #[cfg(feature = "rest")]
            given,
            budget,
            shown_to,
            ctx,
            stop,
            refusal,
            #[cfg(feature = "otel")]
            trace,
        }
    }

    /// The context a call runs in under `budget`, answering in `dialect` unless it asks for
    /// one of `offered`, and the signal that stops its work.
    fn context_for(
        &self,
        extras: CallExtras,
        dialect: Dialect,
        offered: DialectSet,
        budget: &CallBudget,
    ) -> (ToolContext, Arc<Stop>) {
        let config = &self.inner.config;
        let mut ctx = ToolContext::new()
            .with_dialect(dialect)
            .with_offered_dialects(offered)
            .with_expressible(envelope_dialect::EXPRESSIBLE)
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
            deadline_passed: tokio_util::sync::CancellationToken::new(),
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
}

//! One call of one tool: the module gate, argument decoding, and the envelope of the body's
//! outcome with `meta` stamped.

use std::time::Instant;

use schemars::Schema;
use serde_json::{Map, Value, json};

use super::input::{KeyCache, declared_properties, empty_input_schema, input_schema, schema_for};
use super::split::{decode_value, split_controls};
use super::typing::{Outcome, Returns, ToolArgs};
use crate::context::ToolContext;
use crate::controls::Controls;
use crate::envelope::Envelope;
use crate::fields::code;
use crate::meta::MetaStamp;
use crate::notice::Notice;
use crate::output::ToolOutput;
use crate::paging_core::{
    Continuations, DEFAULT_CONTINUATION_FIELD, LEGACY_START_FIELDS, Sealed, TARGET_REF_FIELD,
    misplaced, mixed_forms,
};
use crate::panic_capture::{Panicked, catch_unwind_sync, install_panic_hook, log_internal};
use crate::payload::Payload;
use crate::tool::ToolSpec;
use crate::tool_error::{Category, ToolError};

/// What a tool needs of its arguments type `A`, as plain function pointers. `#[tool]` builds it
/// once per tool, in a `const`, so a type lacking `Deserialize` or `JsonSchema` is reported once,
/// there, and not again at each use.
#[derive(Debug)]
pub struct ArgsFns<A> {
    /// The tool's input schema.
    pub input_schema: fn() -> Schema,
    /// The argument names the tool declares, the controls aside; `None` when its schema
    /// cannot list them.
    pub declared: fn() -> Option<Vec<String>>,
    /// Gates the module and decodes the arguments, for a call of a `#[tool]`, whose spec is
    /// `'static`.
    pub decode:
        fn(&mut Invocation<'static>, &mut ToolContext, Value, &KeyCache) -> Result<A, Stopped>,
}

/// The functions of a tool taking `A`.
pub const fn args_fns<A: ToolArgs>() -> ArgsFns<A> {
    ArgsFns {
        input_schema: input_schema::<A>,
        declared: declared_of::<A>,
        decode: Invocation::decode::<A>,
    }
}

/// The argument names `A` declares; `None` when its schema cannot list them.
fn declared_of<A: ToolArgs>() -> Option<Vec<String>> {
    declared_properties(&schema_for::<A>())
}

/// A tool without arguments declares none.
fn declares_nothing() -> Option<Vec<String>> {
    Some(Vec::new())
}

/// The functions of a tool without arguments: controls only.
pub const fn no_args_fns() -> ArgsFns<()> {
    ArgsFns {
        input_schema: empty_input_schema,
        declared: declares_nothing,
        decode: Invocation::decode_nothing,
    }
}

/// How many unknown argument names a response names; the rest are counted.
pub const MAX_UNKNOWN_NAMED: usize = 8;

/// How many characters of an unknown argument's name a response echoes.
pub const MAX_ECHOED_KEY_CHARS: usize = 64;

/// `text` cut to `max` characters, with `…` when cut.
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text.to_owned(),
    }
}

/// One call of one tool, from its first step to its stamped envelope.
#[derive(Debug)]
pub struct Invocation<'s> {
    spec: &'s ToolSpec,
    started: Instant,
    warnings: Vec<Notice>,
}

impl<'s> Invocation<'s> {
    /// Starts the clock.
    pub fn start(spec: &'s ToolSpec) -> Self {
        install_panic_hook();
        Invocation {
            spec,
            started: Instant::now(),
            warnings: Vec::new(),
        }
    }

    /// Names the tool in `ctx`, then refuses the call when its module is switched off; a
    /// server's door gated it already.
    fn gate(&self, ctx: &mut ToolContext) -> Result<(), ToolError> {
        ctx.set_tool(self.spec.name.clone());
        match self.spec.module.as_deref() {
            Some(module) if !ctx.controls_decided() && ctx.is_module_disabled(module) => {
                Err(ToolError::module_disabled(module))
            }
            _ => Ok(()),
        }
    }

    /// Adds what the answer warns of, found before the tool ran (by a server's door).
    #[must_use]
    pub fn with_warnings(mut self, warnings: Vec<Notice>) -> Self {
        self.warnings.extend(warnings);
        self
    }

    /// Splits the arguments into the controls (into `ctx`) and the tool's own object, and deals
    /// with unknown keys: a warning each, or one `validation` error under `strict_args`. A
    /// server's door split the controls already ([`ToolContext::with_decided_controls`]): its
    /// arguments are the tool's own.
    fn split(
        &mut self,
        ctx: &mut ToolContext,
        arguments: Value,
        declared: Option<&[String]>,
    ) -> Result<Map<String, Value>, ToolError> {
        let mut object = match ctx.take_decided() {
            Some(notices) => {
                self.warnings.extend(notices);
                match arguments {
                    Value::Object(object) => object,
                    _ => Map::new(),
                }
            }
            None => {
                let split = split_controls(
                    &self.spec.name,
                    arguments,
                    declared,
                    &self.spec.controls,
                    ctx.dialects(),
                );
                match split {
                    Ok(split) => {
                        self.warnings.extend(split.notices);
                        ctx.set_controls(split.controls);
                        split.arguments
                    }
                    Err(refusal) => {
                        self.warnings.extend(refusal.notices);
                        ctx.set_controls(refusal.controls);
                        return Err(refusal.error);
                    }
                }
            }
        };
        let declares = |key: &str| declared.is_some_and(|keys| keys.iter().any(|k| k == key));

        let Some(declared) = declared else {
            return Ok(object);
        };
        let unknown: Vec<String> = object
            .keys()
            .filter(|key| !declares(key))
            .cloned()
            .collect();
        if unknown.is_empty() {
            return Ok(object);
        }
        // The paging argument's name for this tool: its own, unless the tool's arguments use it.
        let paging = self
            .spec
            .controls
            .wire(DEFAULT_CONTINUATION_FIELD)
            .to_owned();
        refuse_misplaced_tokens(ctx, &object, &unknown, &declares, &paging)?;
        refuse_mixed_starts(&object, &unknown, &declares, &paging)?;
        let mut accepted: Vec<&str> = declared.iter().map(String::as_str).collect();
        accepted.extend(self.spec.controls.wires());
        accepted.sort_unstable();
        accepted.dedup();
        // What a client sent decides how many keys there are and how long they are; what goes
        // back names a bounded number of them, each cut short, and counts the rest.
        let named: Vec<String> = unknown
            .iter()
            .take(MAX_UNKNOWN_NAMED)
            .map(|key| shorten(key, MAX_ECHOED_KEY_CHARS))
            .collect();
        let more = unknown.len() - named.len();
        if self.spec.strict_args {
            let mut listed = named
                .iter()
                .map(|k| format!("`{k}`"))
                .collect::<Vec<_>>()
                .join(", ");
            if more > 0 {
                listed.push_str(&format!(" and {more} more"));
            }
            return Err(ToolError::validation(format!("unknown argument {listed}"))
                .with_code(code::UNKNOWN_ARG)
                .with_hint(format!("accepted arguments: {}", accepted.join(", ")))
                .with_data(json!({ "unknown": named, "more": more, "accepted": accepted })));
        }
        for key in &unknown {
            object.remove(key);
        }
        for key in named {
            self.warnings.push(
                Notice::warning(
                    code::UNKNOWN_ARG,
                    format!("unknown argument `{key}` was ignored"),
                )
                .with_data(json!({ "argument": key, "accepted": accepted })),
            );
        }
        if more > 0 {
            self.warnings.push(
                Notice::warning(
                    code::UNKNOWN_ARG,
                    format!("{more} more unknown arguments were ignored"),
                )
                .with_data(json!({ "more": more, "accepted": accepted })),
            );
        }
        Ok(object)
    }

    /// Gates the module and splits the arguments of a tool known only at run time (one a
    /// server fronts for another), which declares the argument names `declared` (`None`: every
    /// key is the tool's): the tool's own object, each unknown key warned of and left out, or
    /// the call refused under `strict_args`, as `#[tool]`'s entry does before it decodes.
    /// Finish what the tool answers with [`finish_output`](Self::finish_output), or a refusal
    /// with [`fail`](Self::fail).
    pub fn arguments(
        &mut self,
        ctx: &mut ToolContext,
        arguments: Value,
        declared: Option<&[String]>,
    ) -> Result<Map<String, Value>, Stopped> {
        self.gate(ctx)?;
        Ok(self.split(ctx, arguments, declared)?)
    }

    /// Gates the module and decodes the arguments into `A`. A panic in `A`'s `Deserialize` is
    /// caught like one in the body.
    pub fn decode<A: ToolArgs>(
        &mut self,
        ctx: &mut ToolContext,
        arguments: Value,
        keys: &KeyCache,
    ) -> Result<A, Stopped> {
        self.gate(ctx)?;
        let declared = keys.0.get_or_init(|| {
            declared_properties(&schema_for::<A>()).unwrap_or_else(|| vec!["*".to_owned()])
        });
        // "*" marks a schema whose fields cannot be listed: accept every key then.
        let declared = (declared.as_slice() != ["*"]).then_some(declared.as_slice());
        let object = self.split(ctx, arguments, declared)?;
        Ok(catch_unwind_sync(|| decode_value(Value::Object(object)))??)
    }

    /// Gates the module and checks that a tool without arguments got none but controls.
    pub fn decode_nothing(
        &mut self,
        ctx: &mut ToolContext,
        arguments: Value,
        keys: &KeyCache,
    ) -> Result<(), Stopped> {
        self.gate(ctx)?;
        let declared = keys.0.get_or_init(Vec::new);
        Ok(self.split(ctx, arguments, Some(declared)).map(drop)?)
    }

    /// The envelope of a call that stopped before its body ran.
    pub fn fail(self, ctx: &ToolContext, stopped: Stopped) -> ToolOutput {
        type Refused = Result<Value, ToolError>;
        match stopped {
            Stopped::Refused(error) => self.finish::<Refused>(ctx, Ok(Err(error))),
            Stopped::Panicked(panicked) => self.finish::<Refused>(ctx, Err(panicked)),
        }
    }

    /// The envelope of the body's outcome, for the tool whose descriptor is `T`: the return
    /// type is read through the descriptor, so a wrong one is reported once, at
    /// [`Returns`].
    pub fn finish_tool<T: Returns>(
        self,
        ctx: &ToolContext,
        outcome: Result<T::Output, Panicked>,
    ) -> ToolOutput {
        self.finish(ctx, outcome)
    }

    /// Maps the body's outcome to an envelope around its typed payload, and stamps `meta`.
    ///
    /// The outcome's conversion into a reply or an error runs under panic capture: a panic in
    /// an author's `From` is masked and logged like one in the body, once. The payload is
    /// encoded later, by the budget stage, under the same capture
    /// ([`ToolOutput::encode_payload`]).
    fn finish<O: Outcome>(self, ctx: &ToolContext, outcome: Result<O, Panicked>) -> ToolOutput {
        let request_id = *ctx.request_id();
        let answered = outcome.and_then(|outcome| catch_unwind_sync(|| outcome.into_reply()));
        let output = match answered {
            Ok(Ok(mut reply)) => ToolOutput {
                baseline: reply.take_baseline(),
                resume: reply.take_resume(),
                attachments: reply.take_attachments(),
                envelope: reply.into_envelope_around(request_id, Payload::typed),
                controls: Controls::default(),
            },
            Ok(Err(error)) => {
                if error.category() == Category::Internal {
                    log_internal(&self.spec.name, &request_id, &error);
                }
                ToolOutput::from(Envelope::err_for(error, request_id))
            }
            // Logged here only: the masked error below is not logged again.
            Err(panicked) => {
                panicked.log(&self.spec.name, &request_id);
                ToolOutput::from(Envelope::err_for(
                    ToolError::internal(panicked.message),
                    request_id,
                ))
            }
        };
        self.finish_output(ctx, output)
    }

    /// Finishes the output a tool built by hand, as `#[tool]`'s entry finishes its own: what
    /// was found to warn of on entry ([`arguments`](Self::arguments)), `meta` stamped, shaped by
    /// the call's controls.
    pub fn finish_output(self, ctx: &ToolContext, mut output: ToolOutput) -> ToolOutput {
        let mut envelope = output.envelope;
        for warning in self.warnings {
            envelope = envelope.with_warning(warning);
        }
        MetaStamp(envelope.meta_mut())
            .tool(
                self.spec.name.clone(),
                self.spec.tier,
                self.spec.is_idempotent(),
            )
            .client_request_id(ctx.client_request_id())
            .index_status(ctx.index_status())
            .layer(self.spec.layer.clone())
            .latency(self.started.elapsed());
        output.envelope = envelope;
        output.controls = ctx.controls().clone();
        output
    }
}

/// The answer of a call to `spec` a server's door refused with `error` before the tool's entry
/// ran (its module switched off, controls it cannot honour), with what it found to warn of:
/// stamped as the entry stamps its own refusals, shaped by the controls in `ctx`.
pub fn refused_at_entry(
    spec: &ToolSpec,
    ctx: &ToolContext,
    error: ToolError,
    warnings: Vec<Notice>,
) -> ToolOutput {
    Invocation::start(spec)
        .with_warnings(warnings)
        .fail(ctx, Stopped::Refused(error))
}

/// Why a call stopped before its body ran: a refusal (module off, bad arguments) or a panic in
/// the arguments' `Deserialize`.
#[derive(Debug)]
pub enum Stopped {
    /// The call was refused with this error.
    Refused(ToolError),
    /// Decoding the arguments panicked.
    Panicked(Panicked),
}

impl From<ToolError> for Stopped {
    fn from(error: ToolError) -> Self {
        Stopped::Refused(error)
    }
}

impl From<Panicked> for Stopped {
    fn from(panicked: Panicked) -> Self {
        Stopped::Panicked(panicked)
    }
}

/// Refuses a call that passes one of this server's tokens under an argument the tool does not
/// declare (`cursor`, `page_token`, …): ignored with a warning, it would silently restart
/// paging from the first page, or read nothing. The check is the token's seal, so no other
/// text is mistaken for one; it runs only for a call that has unknown arguments.
/// Refuses a legacy start (`offset`, `resume_from`) the tool does not declare, sent beside the
/// continuation it does: `MIXED_CONTINUATION_FORMS`, as a tool that declares both refuses it,
/// never the start dropped with an `unknown_arg` warning while the page resumes elsewhere.
fn refuse_mixed_starts(
    object: &Map<String, Value>,
    unknown: &[String],
    declares: &dyn Fn(&str) -> bool,
    field: &str,
) -> Result<(), ToolError> {
    let resumes = declares(field) && object.get(field).is_some_and(|token| !token.is_null());
    let legacy = unknown
        .iter()
        .any(|key| LEGACY_START_FIELDS.contains(&key.as_str()) && !object[key].is_null());
    if resumes && legacy {
        return Err(mixed_forms(field));
    }
    Ok(())
}

fn refuse_misplaced_tokens(
    ctx: &ToolContext,
    object: &Map<String, Value>,
    unknown: &[String],
    declares: &dyn Fn(&str) -> bool,
    paging: &str,
) -> Result<(), ToolError> {
    let Ok(continuations) = ctx.state::<Continuations>() else {
        return Ok(());
    };
    for key in unknown.iter().take(MAX_UNKNOWN_NAMED) {
        let Some(Value::String(text)) = object.get(key) else {
            continue;
        };
        let Some(found) = continuations.recognize(text) else {
            continue;
        };
        // The argument the tool takes it as, when it has the usual name; a tool that names it
        // otherwise is told of by the action that carries it.
        let usual = match found {
            Sealed::Continuation => paging,
            _ => TARGET_REF_FIELD,
        };
        let takes = declares(usual).then_some(usual);
        return Err(misplaced(&shorten(key, MAX_ECHOED_KEY_CHARS), found, takes));
    }
    Ok(())
}

//! One call of one tool: the module gate, argument decoding, and the envelope of the body's
//! outcome with `meta` stamped.

use std::time::Instant;

use schemars::Schema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use super::input::{KeyCache, declared_properties, empty_input_schema, input_schema, schema_for};
use super::typing::{Outcome, Returns, ToolArgs};
use crate::context::{Controls, ToolContext};
use crate::dialect::{DIALECT_CONTROL, Dialect};
use crate::envelope::Envelope;
use crate::fields::code;
use crate::meta::MetaStamp;
use crate::notice::Notice;
use crate::paging_core::{
    Continuations, DEFAULT_CONTINUATION_FIELD, INVALID_ARGUMENT, Sealed, TARGET_REF_FIELD,
    misplaced,
};
use crate::panic_capture::{Panicked, catch_unwind_sync, install_panic_hook, log_internal};
use crate::payload::Payload;
use crate::stage::ToolOutput;
use crate::tool::ToolSpec;
use crate::tool_error::{Category, ToolError};
use serde::Deserialize as _;

/// What a tool needs of its arguments type `A`, as plain function pointers. `#[tool]` builds it
/// once per tool, in a `const`, so a type lacking `Deserialize` or `JsonSchema` is reported once,
/// there, and not again at each use.
#[derive(Debug)]
pub struct ArgsFns<A> {
    /// The tool's input schema.
    pub input_schema: fn() -> Schema,
    /// Gates the module and decodes the arguments.
    pub decode: fn(&mut Invocation, &mut ToolContext, Value, &KeyCache) -> Result<A, Stopped>,
}

/// The functions of a tool taking `A`.
pub const fn args_fns<A: ToolArgs>() -> ArgsFns<A> {
    ArgsFns {
        input_schema: input_schema::<A>,
        decode: Invocation::decode::<A>,
    }
}

/// The functions of a tool without arguments: controls only.
pub const fn no_args_fns() -> ArgsFns<()> {
    ArgsFns {
        input_schema: empty_input_schema,
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
pub struct Invocation {
    spec: &'static ToolSpec,
    started: Instant,
    warnings: Vec<Notice>,
}

impl Invocation {
    /// Starts the clock.
    pub fn start(spec: &'static ToolSpec) -> Self {
        install_panic_hook();
        Invocation {
            spec,
            started: Instant::now(),
            warnings: Vec::new(),
        }
    }

    /// Names the tool in `ctx`, then refuses the call when its module is switched off.
    fn gate(&self, ctx: &mut ToolContext) -> Result<(), ToolError> {
        ctx.set_tool(self.spec.name);
        match self.spec.module {
            Some(module) if ctx.is_module_disabled(module) => {
                Err(ToolError::module_disabled(module))
            }
            _ => Ok(()),
        }
    }

    /// Splits the arguments into the controls (into `ctx`) and the tool's own object, and deals
    /// with unknown keys: a warning each, or one `validation` error under `strict_args`.
    fn split(
        &mut self,
        ctx: &mut ToolContext,
        arguments: Value,
        declared: Option<&[String]>,
    ) -> Result<Map<String, Value>, ToolError> {
        let mut object = match arguments {
            Value::Object(object) => object,
            Value::Null => Map::new(),
            other => {
                return Err(ToolError::validation(format!(
                    "arguments must be a JSON object, got {}",
                    json_kind(&other)
                ))
                .with_code(code::ARGUMENTS_NOT_OBJECT));
            }
        };
        let declares = |key: &str| declared.is_some_and(|keys| keys.iter().any(|k| k == key));

        let mut controls = Map::new();
        for key in Controls::KEYS {
            let value = if declares(key) {
                object.get(key).cloned()
            } else {
                object.remove(key)
            };
            if let Some(value) = value {
                controls.insert(key.to_owned(), value);
            }
        }
        // Every tool accepts `continuation`, but only a tool that declares it pages: anywhere
        // else it would be dropped without a word, and the agent would think it paged.
        // wire: the paging argument
        if controls.contains_key("continuation") && declared.is_some() && !declares("continuation")
        {
            self.warnings.push(Notice::warning(
                code::CONTINUATION_IGNORED,
                format!(
                    "`{}` does not page; `continuation` was ignored",
                    self.spec.name
                ),
            ));
        }
        if let Some(given) = controls.get(DIALECT_CONTROL)
            && Dialect::deserialize(given).is_err()
        {
            return Err(Dialect::unknown(given));
        }
        if !controls.is_empty() {
            let decoded = decode_value::<Controls>(Value::Object(controls.clone()))?;
            if let Some(asked) = decoded.dialect
                && !ctx.offered_dialects().contains(asked)
            {
                return Err(asked.not_offered(ctx.offered_dialects()));
            }
            ctx.set_controls(decoded);
            // What the answer's dialect cannot write is refused before the tool runs, never
            // dropped from the answer without a word.
            let dialect = ctx.dialect();
            if let Some((control, value)) = controls
                .iter()
                .find(|(control, value)| !dialect.expresses(control, value))
            {
                return Err(dialect.cannot_express(control, value));
            }
        }

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
        refuse_misplaced_tokens(ctx, &object, &unknown, &declares)?;
        let mut accepted: Vec<&str> = declared.iter().map(String::as_str).collect();
        accepted.extend(Controls::KEYS);
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
        let mut output = match answered {
            Ok(Ok(mut reply)) => ToolOutput {
                baseline: reply.take_baseline(),
                resume: reply.take_resume(),
                attachments: reply.take_attachments(),
                envelope: reply.into_envelope_around(request_id, Payload::typed),
                controls: Controls::default(),
            },
            Ok(Err(error)) => {
                if error.category() == Category::Internal {
                    log_internal(self.spec.name, &request_id, &error);
                }
                ToolOutput::from(Envelope::err_for(error, request_id))
            }
            // Logged here only: the masked error below is not logged again.
            Err(panicked) => {
                panicked.log(self.spec.name, &request_id);
                ToolOutput::from(Envelope::err_for(
                    ToolError::internal(panicked.message),
                    request_id,
                ))
            }
        };
        let mut envelope = output.envelope;
        for warning in self.warnings {
            envelope = envelope.with_warning(warning);
        }
        MetaStamp(envelope.meta_mut())
            .tool(self.spec.name, self.spec.tier, self.spec.is_idempotent())
            .client_request_id(ctx.client_request_id())
            .index_status(ctx.index_status())
            .layer(self.spec.layer)
            .latency(self.started.elapsed());
        output.envelope = envelope;
        output.controls = ctx.controls().clone();
        output
    }
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
fn refuse_misplaced_tokens(
    ctx: &ToolContext,
    object: &Map<String, Value>,
    unknown: &[String],
    declares: &dyn Fn(&str) -> bool,
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
            Sealed::Continuation => DEFAULT_CONTINUATION_FIELD,
            _ => TARGET_REF_FIELD,
        };
        let takes = declares(usual).then_some(usual);
        return Err(misplaced(&shorten(key, MAX_ECHOED_KEY_CHARS), found, takes));
    }
    Ok(())
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes with the failing field named: `invalid argument `limit`: invalid type: …`.
fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let field = error.path().to_string();
        let inner = error.into_inner();
        if field == "." {
            ToolError::validation(format!("invalid arguments: {inner}"))
                .with_code(code::INVALID_ARGUMENTS)
        } else {
            ToolError::validation(format!("invalid argument `{field}`: {inner}"))
                .with_code(INVALID_ARGUMENT)
                .with_data(json!({ "field": field }))
        }
    })
}

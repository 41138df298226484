//! The call pipeline `#[tool]` emits calls to: module gate, argument decoding, the body under
//! panic capture, error mapping and the meta stamp. Reached only through `crate::__private`, by
//! generated code.

use std::any::Any;
use std::backtrace::{Backtrace, BacktraceStatus};
use std::cell::{Cell, RefCell};
use std::future::{Future, poll_fn};
use std::marker::PhantomData;
use std::panic::{self, AssertUnwindSafe};
use std::pin::pin;
use std::sync::{Once, OnceLock};
use std::task::Poll;
use std::time::Instant;

use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

use crate::context::{Controls, OutputFormat, ResponseMode, ToolContext};
use crate::envelope::Envelope;
use crate::meta::MetaStamp;
use crate::notice::Notice;
use crate::payload::Payload;
use crate::reply::{IntoReply, Reply};
use crate::request_id::RequestId;
use crate::stage::ToolOutput;
use crate::tool::{ToolSpec, Toolset};
use crate::tool_error::{Category, ToolError};

/// A type `#[tool]` can decode a call's arguments into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's arguments type",
    label = "needs `serde::Deserialize` and `schemars::JsonSchema`",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}`"
)]
pub trait ToolArgs: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgs for T {}

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

/// A return type `#[tool]` understands: a `Result` whose `Ok` is a payload or a [`Reply`] and
/// whose `Err` converts into [`ToolError`].
#[diagnostic::on_unimplemented(
    message = "`#[tool]` functions must return `Result<T, E>`, found `{Self}`",
    label = "not a result the tool wrapper understands",
    note = "`T` must be `Serialize` (or a `Reply`), and `E` must convert into `ToolError`"
)]
pub trait Outcome {
    /// The payload type: it travels typed to the budget stage, which encodes it.
    type Data: Serialize + Send + 'static;

    /// The reply or the error.
    fn into_reply(self) -> Result<Reply<Self::Data>, ToolError>;
}

impl<T: IntoReply, E: Into<ToolError>> Outcome for Result<T, E> {
    type Data = T::Data;

    fn into_reply(self) -> Result<Reply<T::Data>, ToolError> {
        self.map(IntoReply::into_reply).map_err(Into::into)
    }
}

/// The return type of a `#[tool]` function, named once: `#[tool]` implements it on the
/// descriptor `T`, and everything else reads the return type as `T::Output`. A return type
/// that is not a result, or whose payload cannot be serialized, is then one error, where this
/// bound is checked.
pub trait Returns {
    /// The function's return type.
    type Output: Outcome;
}

/// The payload type of the tool whose descriptor is `T`.
type DataOf<T> = <<T as Returns>::Output as Outcome>::Data;

/// Picks the output schema of the tool whose descriptor is `T` by what its payload type
/// implements: `data` typed by the payload's schema when it implements `JsonSchema`, the
/// envelope with any payload otherwise.
///
/// `#[tool]` writes `(&DataSchema::<T>::NEW).output_schema()` in non-generic code, with both
/// traits in scope. Method lookup tries the receiver `&DataSchema<T>` before adding another
/// reference, so [`TypedData`] (implemented on `DataSchema<T>`, taking `&self`) wins whenever
/// its bound holds, and [`UntypedData`] (on `&DataSchema<T>`) answers otherwise.
pub struct DataSchema<T: ?Sized>(PhantomData<fn() -> Box<T>>);

impl<T: ?Sized> DataSchema<T> {
    /// The selector.
    pub const NEW: Self = DataSchema(PhantomData);
}

/// The output schema of a tool whose payload has a schema.
pub trait TypedData {
    /// The envelope's schema with `data` typed.
    fn output_schema(&self) -> Schema;
}

impl<T: Returns> TypedData for DataSchema<T>
where
    DataOf<T>: JsonSchema,
{
    fn output_schema(&self) -> Schema {
        crate::schema::output_schema_for::<DataOf<T>>()
    }
}

/// The output schema of a tool whose payload has none: any JSON as `data`.
pub trait UntypedData {
    /// The envelope's schema.
    fn output_schema(&self) -> Schema;
}

impl<T: ?Sized> UntypedData for &DataSchema<T> {
    fn output_schema(&self) -> Schema {
        crate::schema::output_schema_for::<Value>()
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

/// Room for the longest message [`name_clash`] writes: its text plus a 128-byte name.
const CLASH_CAPACITY: usize = 192;

/// The message `toolset!` fails to compile with when two of its tools share a name.
#[derive(Debug)]
pub struct NameClash {
    bytes: [u8; CLASH_CAPACITY],
    len: usize,
}

impl NameClash {
    /// The message, or `None` when every name is unique.
    pub const fn message(&self) -> Option<&str> {
        if self.len == 0 {
            return None;
        }
        match std::str::from_utf8(self.bytes.split_at(self.len).0) {
            Ok(message) => Some(message),
            Err(_) => Some("two tools in this `toolset!` have the same name"),
        }
    }

    const fn push(&mut self, text: &str) {
        let text = text.as_bytes();
        let mut i = 0;
        while i < text.len() && self.len < CLASH_CAPACITY {
            self.bytes[self.len] = text[i];
            self.len += 1;
            i += 1;
        }
    }
}

/// Finds the first name that appears twice. `toolset!` calls it in a `const` and panics with the
/// message, so a clash fails the build and names the tool.
pub const fn name_clash(names: &[&str]) -> NameClash {
    let mut clash = NameClash {
        bytes: [0; CLASH_CAPACITY],
        len: 0,
    };
    let mut i = 0;
    while i < names.len() {
        let mut j = i + 1;
        while j < names.len() {
            if str_eq(names[i], names[j]) {
                clash.push("two tools in this `toolset!` are named `");
                clash.push(names[i]);
                clash.push("`");
                return clash;
            }
            j += 1;
        }
        i += 1;
    }
    clash
}

const fn str_eq(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

/// Builds a toolset whose names `toolset!` has already proven unique.
pub fn toolset_of(tools: Vec<Box<dyn crate::tool::Tool>>) -> Toolset {
    match Toolset::new(tools) {
        Ok(toolset) => toolset,
        // `name_clash` ran at compile time on the same names.
        Err(error) => unreachable!("{error}"),
    }
}

/// The argument names one tool accepts, computed once per tool.
#[derive(Debug)]
pub struct KeyCache(OnceLock<Vec<String>>);

impl KeyCache {
    /// An empty cache, for a `static`.
    pub const fn new() -> Self {
        KeyCache(OnceLock::new())
    }
}

impl Default for KeyCache {
    fn default() -> Self {
        Self::new()
    }
}

fn schema_for<A: JsonSchema>() -> Value {
    crate::schema::input_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// Property names declared by a schema: at the root, and in `allOf`/`anyOf`/`oneOf` members
/// (what `#[serde(flatten)]` produces), following local `$ref`s. `None` when the schema does not
/// describe an object's fields, so unknown keys cannot be judged.
fn declared_properties(schema: &Value) -> Option<Vec<String>> {
    fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
        match node.get("$ref").and_then(Value::as_str) {
            Some(pointer) => pointer
                .strip_prefix('#')
                .and_then(|pointer| root.pointer(pointer))
                .unwrap_or(node),
            None => node,
        }
    }
    fn collect(root: &Value, node: &Value, out: &mut Vec<String>, depth: usize) -> bool {
        let node = resolve(root, node);
        let mut found = false;
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            out.extend(properties.keys().cloned());
            found = true;
        }
        if depth < 4 {
            for key in ["allOf", "anyOf", "oneOf"] {
                for member in node
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    found |= collect(root, member, out, depth + 1);
                }
            }
        }
        found
    }
    let mut out = Vec::new();
    collect(schema, schema, &mut out, 0).then(|| {
        out.sort_unstable();
        out.dedup();
        out
    })
}

/// The shaping controls' property schemas, in the compact form every tool's input schema
/// carries: self-contained (no `$ref` into definitions the tool's schema may not have), one
/// line of description each, wire values from the enums themselves.
///
/// `continuation` is not among them: a tool that pages declares it in its own arguments, and a
/// tool that does not page must not advertise it.
fn controls_properties() -> Map<String, Value> {
    fn names<T: Serialize>(values: &[T]) -> Vec<Value> {
        values
            .iter()
            .filter_map(|value| serde_json::to_value(value).ok())
            .collect()
    }
    let properties = json!({
        "response_mode": {
            "description": "`compact` (default) leaves observability fields out of `meta`; `full` keeps them.",
            "enum": names(&ResponseMode::ALL),
        },
        "output_format": {
            "description": "How the text content mirrors the result: `json` (default) or `toon`.",
            "enum": names(&OutputFormat::ALL),
        },
        "compact_only": {
            "description": "Keep only the fields an agent branches on.",
            "type": "boolean",
        },
    });
    match properties {
        Value::Object(properties) => properties,
        _ => Map::new(),
    }
}

/// The input schema of a tool taking `A`: `A`'s schema with the per-call controls added.
pub fn input_schema<A: ToolArgs>() -> Schema {
    let mut schema = schema_for::<A>();
    let controls = controls_properties();
    match schema.get_mut("properties").and_then(Value::as_object_mut) {
        Some(properties) => {
            for (key, value) in controls {
                properties.entry(key).or_insert(value);
            }
        }
        None => {
            // An arguments type without plain properties (an enum, a flattened union): the
            // controls ride beside it.
            let inner = std::mem::take(&mut schema);
            let defs = inner.get("$defs").cloned();
            let mut wrapper = json!({
                "type": "object",
                "allOf": [inner],
                "properties": controls,
            });
            if let Some(defs) = defs {
                wrapper["$defs"] = defs;
            }
            schema = wrapper;
        }
    }
    Schema::try_from(schema).unwrap_or_else(|_| Schema::from(true))
}

/// The input schema of a tool without arguments: the per-call controls only.
pub fn empty_input_schema() -> Schema {
    let schema = json!({
        "type": "object",
        "properties": controls_properties(),
    });
    Schema::try_from(schema).unwrap_or_else(|_| Schema::from(true))
}

thread_local! {
    /// Set while a tool's body runs on this thread, so the hook knows whose panic it sees.
    static IN_TOOL: Cell<bool> = const { Cell::new(false) };
    /// Where the last in-tool panic on this thread happened, and its backtrace.
    static LAST_PANIC: RefCell<Option<(String, String)>> = const { RefCell::new(None) };
}

static HOOK: Once = Once::new();

/// Installs the library's panic hook once per process. Inside a tool body it records the
/// location and backtrace for the server log (which gets the panic instead of stderr); anywhere
/// else it hands the panic to the hook that was installed before it.
pub fn install_panic_hook() {
    HOOK.call_once(|| {
        let previous = panic::take_hook();
        panic::set_hook(Box::new(move |info| {
            if IN_TOOL.with(Cell::get) {
                let location = info
                    .location()
                    .map(ToString::to_string)
                    .unwrap_or_else(|| "unknown location".to_owned());
                // Only when asked for (`RUST_BACKTRACE` or `RUST_LIB_BACKTRACE`): symbolizing
                // loads the binary's debug info, about 100 MiB resident for a debug build from
                // the first panic on, and costs CPU on every one. The location is always kept.
                let backtrace = Backtrace::capture();
                let backtrace = match backtrace.status() {
                    BacktraceStatus::Captured => backtrace.to_string(),
                    _ => "disabled; set RUST_BACKTRACE=1".to_owned(),
                };
                LAST_PANIC.with(|slot| *slot.borrow_mut() = Some((location, backtrace)));
            } else {
                previous(info);
            }
        }));
    });
}

/// Marks this thread as running a tool body until dropped.
struct InTool(bool);

impl InTool {
    fn enter() -> Self {
        InTool(IN_TOOL.with(|flag| flag.replace(true)))
    }
}

impl Drop for InTool {
    fn drop(&mut self) {
        IN_TOOL.with(|flag| flag.set(self.0));
    }
}

/// A panic caught in a tool body.
#[derive(Debug)]
pub struct Panicked {
    pub(crate) message: String,
    location: String,
    backtrace: String,
}

impl Panicked {
    /// Logs the panic, once, for the call of `tool` named `request_id`: the envelope masks it.
    pub(crate) fn log(&self, tool: &str, request_id: &RequestId) {
        tracing::error!(
            tool,
            request_id = %request_id,
            pid = std::process::id(),
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
            message = %self.message,
            location = %self.location,
            backtrace = %self.backtrace,
            "tool panicked"
        );
    }

    fn from_payload(payload: Box<dyn Any + Send>) -> Self {
        // Caught on another thread by `catch_panic` and re-raised here: it knows where it was.
        let payload = match payload.downcast::<Panicked>() {
            Ok(panicked) => return *panicked,
            Err(payload) => payload,
        };
        let message = if let Some(text) = payload.downcast_ref::<&str>() {
            (*text).to_owned()
        } else if let Some(text) = payload.downcast_ref::<String>() {
            text.clone()
        } else {
            "panic with a non-string payload".to_owned()
        };
        let (location, backtrace) = LAST_PANIC
            .with(|slot| slot.borrow_mut().take())
            .unwrap_or_else(|| ("unknown location".to_owned(), "unavailable".to_owned()));
        Panicked {
            message,
            location,
            backtrace,
        }
    }
}

/// Runs work a tool hands to another thread (tokio's blocking pool, a thread of its own),
/// catching a panic there with its location and backtrace, as the tool's own body would.
///
/// Re-raise the payload in the tool with [`std::panic::resume_unwind`]: the `#[tool]` wrapper
/// then masks and logs it once, naming where it happened rather than an unknown location.
///
/// ```
/// let worker = std::thread::spawn(|| {
///     envelope_core::stage::catch_panic(|| -> u32 { panic!("on the worker") })
/// });
/// let caught = worker.join().expect("the worker itself does not panic");
/// assert!(caught.is_err());
/// // In a tool: `caught.unwrap_or_else(|payload| std::panic::resume_unwind(payload))`.
/// ```
pub fn catch_panic<R>(work: impl FnOnce() -> R) -> Result<R, Box<dyn Any + Send>> {
    install_panic_hook();
    catch_unwind_sync(work).map_err(|panicked| Box::new(panicked) as Box<dyn Any + Send>)
}

/// Runs a sync tool body, catching a panic.
pub fn catch_unwind_sync<R>(body: impl FnOnce() -> R) -> Result<R, Panicked> {
    let _in_tool = InTool::enter();
    panic::catch_unwind(AssertUnwindSafe(body)).map_err(Panicked::from_payload)
}

/// Runs a sync tool body on tokio's blocking pool (`#[tool(blocking)]`), catching a panic
/// there with its location. Outside a tokio runtime the body runs in place.
#[cfg(feature = "blocking")]
pub async fn catch_unwind_blocking<R, F>(body: F) -> Result<R, Panicked>
where
    R: Send + 'static,
    F: FnOnce() -> R + Send + 'static,
{
    install_panic_hook();
    if tokio::runtime::Handle::try_current().is_err() {
        return catch_unwind_sync(body);
    }
    match tokio::task::spawn_blocking(move || catch_unwind_sync(body)).await {
        Ok(outcome) => outcome,
        // Only a runtime shutting down cancels a blocking task; the panic case is caught inside.
        Err(error) => Err(Panicked {
            message: format!("the blocking task did not finish: {error}"),
            location: "the blocking pool".to_owned(),
            backtrace: String::new(),
        }),
    }
}

/// Stands in for the `blocking` feature when it is off, so `#[tool(blocking)]` says what to do.
#[cfg(not(feature = "blocking"))]
#[diagnostic::on_unimplemented(
    message = "`#[tool(blocking)]` needs envelope-core's `blocking` feature",
    label = "this tool's body would run on tokio's blocking pool",
    note = "enable the feature (it is on by default): `envelope-core = {{ version = \"0.1\", \
            features = [\"blocking\"] }}`, or drop `blocking`"
)]
pub trait BlockingFeature {}

/// Without the `blocking` feature, `#[tool(blocking)]` does not compile: see [`BlockingFeature`].
#[cfg(not(feature = "blocking"))]
pub async fn catch_unwind_blocking<R, F>(body: F) -> Result<R, Panicked>
where
    F: FnOnce() -> R + BlockingFeature,
{
    catch_unwind_sync(body)
}

/// Runs an async tool body, catching a panic in any poll, the first included.
pub async fn catch_unwind<F: Future>(future: F) -> Result<F::Output, Panicked> {
    let mut future = pin!(future);
    poll_fn(|cx| {
        let _in_tool = InTool::enter();
        match panic::catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Ready(output)) => Poll::Ready(Ok(output)),
            Ok(Poll::Pending) => Poll::Pending,
            Err(payload) => Poll::Ready(Err(Panicked::from_payload(payload))),
        }
    })
    .await
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
                .with_code("arguments_not_object"));
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
        if controls.contains_key("continuation") && declared.is_some() && !declares("continuation")
        {
            self.warnings.push(Notice::warning(
                "continuation_ignored",
                format!(
                    "`{}` does not page; `continuation` was ignored",
                    self.spec.name
                ),
            ));
        }
        if !controls.is_empty() {
            let controls = decode_value::<Controls>(Value::Object(controls))?;
            ctx.set_controls(controls);
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
                .with_code("unknown_arg")
                .with_hint(format!("accepted arguments: {}", accepted.join(", ")))
                .with_data(json!({ "unknown": named, "more": more, "accepted": accepted })));
        }
        for key in &unknown {
            object.remove(key);
        }
        for key in named {
            self.warnings.push(
                Notice::warning(
                    "unknown_arg",
                    format!("unknown argument `{key}` was ignored"),
                )
                .with_data(json!({ "argument": key, "accepted": accepted })),
            );
        }
        if more > 0 {
            self.warnings.push(
                Notice::warning(
                    "unknown_arg",
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
                envelope: reply.into_envelope_for(request_id).map_data(Payload::typed),
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

/// Logs an internal error a tool answered with, once: the envelope masks its detail.
pub(crate) fn log_internal(tool: &str, request_id: &RequestId, error: &ToolError) {
    if let Some(detail) = error.detail() {
        tracing::error!(
            tool,
            request_id = %request_id,
            pid = std::process::id(),
            thread = std::thread::current().name().unwrap_or("<unnamed>"),
            message = %detail,
            backtrace = %error.backtrace().unwrap_or("disabled; set RUST_BACKTRACE=1"),
            "tool failed with an internal error"
        );
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
                .with_code("invalid_arguments")
        } else {
            ToolError::validation(format!("invalid argument `{field}`: {inner}"))
                .with_code("invalid_argument")
                .with_data(json!({ "field": field }))
        }
    })
}

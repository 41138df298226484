//! The typed contract of agent-grade tool responses.
//!
//! Every response is an [`Envelope`]: it says whether the call worked (`ok`), what the agent
//! should make of it ([`Verdict`]), how complete it is ([`Completeness`]), why it is empty
//! ([`EmptyReason`]), what to call next ([`NextAction`]), and, on failure, whether a retry can
//! help ([`ToolError`], [`Category`]). `meta` is stamped by the library, never by tool code.
//!
//! Invariant: no I/O here. This crate knows nothing of budgets or transports.
//!
//! # The map
//!
//! - [`tool`] turns a documented function into a tool; [`toolset!`] gathers tools for a server.
//! - [`Reply`] is what a tool returns beside its payload: [`Verdict`], [`Completeness`],
//!   [`EmptyReason`], [`NextAction`]s, [`Notice`]s. [`ToolResult`] is its result type.
//! - [`ToolError`] and its [`Category`] say what failed and whether a retry helps;
//!   [`ResultExt`] categorizes a foreign error where it happens.
//! - [`ToolContext`] is the call a tool serves: the request id, progress, cancellation, and the
//!   server's typed state ([`ToolContext::state`]).
//! - [`Envelope`] is the wire shape every answer takes; [`Meta`] is what the library stamps.
//! - [`paging`]: paging and follow-ups, stateless: the [`Pager`](paging::Pager) a paged tool
//!   pages with, sealed continuations, and target refs a follow-up tool acts on.
//! - [`schema`]: the envelope's JSON Schema and each tool's output schema.
//! - [`stage`]: the hand-offs a server makes around a call (for transports and the budget
//!   stage, and for a tool implemented by hand).
//! - [`fields`] (with [`meta_keys`] for `meta`) and [`limits`]: the wire names of the
//!   envelope's fields, spelled once, and the bounds the library keeps.
//!
//! A tool, whole:
//!
//! ```
//! use envelope_core::{Reply, ToolContext, ToolResult, Verdict, tool};
//!
//! #[derive(serde::Deserialize, schemars::JsonSchema)]
//! struct Args {
//!     /// The word to count.
//!     word: String,
//! }
//!
//! /// Count the letters of a word.
//! #[tool(tier = lite, read_only)]
//! async fn letters(ctx: &ToolContext, args: Args) -> ToolResult<Reply<usize>> {
//!     let count = args.word.chars().count();
//!     Ok(Reply::new(count).verdict(Verdict::Info).summary_line(format!("{count} letters")))
//! }
//! # let _ = letters;
//! ```
//!
//! ```
//! use envelope_core::{Completeness, Envelope, ToolError, TruncationReason, Unit};
//!
//! // A page of 40 files out of 512, cut by the page limit.
//! let page = Completeness::truncated_page(Unit::FILE, 40, Some(512), TruncationReason::PageLimit, None)?;
//! let envelope = Envelope::ok(vec!["src/lib.rs"; 40]).with_completeness(page);
//! assert_eq!(envelope.next_step(), Some("showing 40 of 512 files — raise the limit or narrow the query"));
//!
//! // A failure an agent can branch on without reading prose.
//! let failed: Envelope<()> = Envelope::err(ToolError::transient("backend timed out"));
//! let wire = serde_json::to_value(&failed)?;
//! assert_eq!(wire["ok"], false);
//! assert_eq!(wire["verdict"], "ERROR");
//! assert_eq!(wire["error"]["category"], "transient");
//! assert_eq!(wire["error"]["retryable"], true);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod arguments;
mod attachment;
mod bounded;
mod caller;
mod canonical;
pub use canonical::canonical_json;
mod capability;
mod client;
mod completeness;
mod context;
mod control_names;
mod controls;
mod deep;
mod dialect;
mod empty_reason;
mod envelope;
mod error;
mod expressible;
pub mod fields;
mod future;
mod meta;
mod next_action;
mod not_run;
mod notice;
mod output;
mod pager;
pub mod paging;
mod paging_core;
mod panic_capture;
mod payload;
mod reply;
mod request_id;
mod runtime;
pub mod schema;
pub mod stage;
mod tier;
mod tool;
mod tool_error;
mod verdict;
mod wire;

// What a tool author writes against. Everything else has a module of its own: `paging`,
// `schema`, `stage` (the hand-offs a server makes), `meta_keys` and `limits`.
pub use arguments::{
    Arguments, control_given_twice, first_control_twice, first_control_twice_in_params,
};
pub use attachment::{
    Attachment, AttachmentKind, AttachmentNote, Delivery, ResourceContents, ResourceLink,
};
pub use caller::{Caller, INSUFFICIENT_SCOPE, Principal, Scopes, insufficient_scope};
pub use capability::Capability;
pub use client::{
    CLIENT_REQUEST_FAILED, CLIENT_RESPONSE_INVALID, ClientChannel, ClientError, ClientFeature,
    ELICITATION_UNAVAILABLE, Elicited, LogLevel, ROOTS_UNAVAILABLE, Root, SAMPLING_UNAVAILABLE,
    Sampled, SamplingMessage, SamplingRequest, SamplingRole,
};
pub use completeness::{Completeness, CompletenessParts, IncompleteReason, TruncationReason, Unit};
pub use context::{NOT_CONFIGURED, ToolContext};
pub use dialect::{DIALECT_CONTROL, Dialect, DialectSet};
pub use empty_reason::{EmptyReason, UnknownEmptyReason};
pub use envelope::Envelope;
pub use error::{CoreError, Violation};
pub use expressible::{Expressed, Expressible};
pub use fields::envelope::ALL as ENVELOPE_FIELDS;
pub use fields::meta as meta_keys;
pub use future::BoxFuture;
pub use meta::{BinaryDrift, IndexStatus, Meta, SCHEMA_VERSION, TokensMethod};
pub use next_action::{Dependency, DependencyMode, NextAction, Role, TypedTool};
pub use not_run::{NOT_RUN_CODES, NOT_RUN_FIELD};
pub use notice::{Notice, Severity};
pub use reply::{IntoReply, Reply, ToolResult};
pub use request_id::RequestId;
pub use tier::Tier;
pub use tool::{SpecText, Tool, ToolSpec, Toolset};
pub use tool_error::{Categorize, Category, INTERNAL_MESSAGE, ResultExt, ToolError};
pub use verdict::Verdict;

/// The fixed bounds the library keeps, whatever a caller sends.
pub mod limits {
    pub use crate::bounded::MAX_PAYLOAD_DEPTH;
    pub use crate::next_action::MAX_NEXT_ACTIONS;
    pub use crate::request_id::MAX_CLIENT_ID_CHARS;
    pub use crate::runtime::{MAX_ECHOED_KEY_CHARS, MAX_UNKNOWN_NAMED};
}

// What a tool's types derive from, re-exported so a crate of tools needs no other dependency
// for them: `#[derive(envelope_core::serde::Deserialize, envelope_core::schemars::JsonSchema)]`
// with `#[serde(crate = "envelope_core::serde")]` and `#[schemars(crate = "envelope_core::schemars")]`.
pub use schemars;
pub use serde;
pub use serde_json;

/// Turns a documented function into a tool whose every answer is a contract-conformant
/// [`Envelope`].
///
/// ```
/// use envelope_core::{tool, Tool, ToolContext, ToolResult};
/// use serde::{Deserialize, Serialize};
///
/// #[derive(Deserialize, schemars::JsonSchema)]
/// struct SearchArgs {
///     /// The literal to look for.
///     query: String,
/// }
///
/// #[derive(Serialize)]
/// struct Hits {
///     count: usize,
/// }
///
/// /// Search the workspace for a literal string.
/// #[tool(tier = lite, read_only, layer = "docs")]
/// async fn search_text(ctx: &ToolContext, args: SearchArgs) -> ToolResult<Hits> {
///     Ok(Hits { count: args.query.len() })
/// }
///
/// // The function stays callable as written; `search_text {}` is its descriptor.
/// let output = futures_lite_block_on(search_text {}.call(
///     serde_json::json!({"query": "needle"}),
///     ToolContext::new(),
/// ));
/// // The payload travels typed; the budget stage encodes it.
/// let (output, ()) =
///     output.encode_payload(|payload| Ok((serde_json::to_value(payload)?, ())));
/// let envelope = output.envelope;
/// assert!(envelope.is_ok());
/// assert_eq!(envelope.data().map(|d| d["count"].clone()), Some(6.into()));
/// assert_eq!(envelope.meta().tool(), Some("search_text"));
/// # fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     let mut future = std::pin::pin!(future);
/// #     let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
/// #     loop {
/// #         if let std::task::Poll::Ready(out) = future.as_mut().poll(&mut cx) { return out; }
/// #     }
/// # }
/// ```
///
/// Keys: `tier` (required: `lite`, `standard` or `heavy`), `name` (default: the function's
/// name), `title`, `read_only` (implies `idempotent`), `idempotent`, `destructive`,
/// `open_world`, `layer`, `module` (the gate), `budget` (characters), `strict_args`,
/// `blocking` (a sync body runs on tokio's blocking pool, so file or CPU work does not stall
/// the runtime; feature `blocking`, on by default), and `crate = path` for crates that re-export
/// `envelope_core`. The doc comment is the description.
///
/// `tier` is required because clients act on it: it is listed with the tool (`_meta` of the
/// listing and of every result, `meta.complexity_tier` under `response_mode: full`), so a client
/// can route cheap calls to cheap models and schedule heavy ones. It does not change the
/// response budget, which is the server's policy (`budget` overrides it per tool). Declare what
/// a typical call costs: [`Tier`] says what each level promises.
///
/// Parameters: an optional `&ToolContext` (spelled so: the macro reads tokens, so a renamed
/// import is not recognised) and one owned arguments struct implementing
/// `serde::Deserialize` and `schemars::JsonSchema`, in either order, or none. The return type
/// is a `Result` whose `Ok` is a `Serialize` payload or a [`Reply`] and whose `Err` converts
/// into [`ToolError`].
#[cfg(feature = "derive")]
pub use envelope_derive::tool;

// Used by code that #[tool] generates and by the sibling envelope crates. Not public API.
#[doc(hidden)]
pub mod __private {
    pub use crate::control_names::ControlNames;
    pub use crate::future::BoxFuture;
    pub use crate::panic_capture::{
        Panicked, catch_unwind, catch_unwind_blocking, catch_unwind_sync,
    };
    pub use crate::runtime::{
        ArgsFns, DataSchema, Invocation, KeyCache, NameClash, Outcome, Returns, Stopped, ToolArgs,
        TypedData, UntypedData, args_fns, empty_input_schema, input_schema, name_clash,
        no_args_fns, toolset_of,
    };
    pub use crate::tier::Tier;
    pub use schemars::Schema;
    pub use serde_json::Value;

    pub use crate::output::ToolOutput;
}

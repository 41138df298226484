//! The call pipeline `#[tool]` emits calls to: module gate, argument decoding, the body under
//! panic capture, error mapping and the meta stamp. Reached only through `crate::__private`, by
//! generated code.
//!
//! - [`typing`]: the traits a tool's arguments and return type are checked against.
//! - [`names`]: tool names proven unique in a `toolset!`.
//! - [`input`]: a tool's input schema and the argument names it declares.
//! - [`split`]: the per-call controls split from a call's arguments, the one place they are
//!   read.
//! - [`invocation`]: one call, from the module gate to the stamped envelope.
//!
//! The panic capture the body runs under is [`crate::panic_capture`], shared with the stages.

mod input;
mod invocation;
mod names;
mod split;
mod typing;

pub use input::{KeyCache, add_controls, add_controls_named, empty_input_schema, input_schema};
pub use invocation::{
    ArgsFns, Invocation, MAX_ECHOED_KEY_CHARS, MAX_UNKNOWN_NAMED, Stopped, args_fns, no_args_fns,
    refused_at_entry,
};
pub use names::{NameClash, name_clash, toolset_of};
pub use split::{ControlRefusal, ControlSplit, split_controls};
pub use typing::{DataSchema, Outcome, Returns, ToolArgs, TypedData, UntypedData};

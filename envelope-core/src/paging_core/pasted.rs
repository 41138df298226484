//! Tokens pasted wrongly. A model hands a continuation or a target ref back by copying it, and
//! a copy can go wrong: quoted twice, cut short, padded with whitespace, or put under another
//! argument. Each of these is refused with one `invalid_argument` error that names the argument
//! and what to copy instead, never read as a fresh request (which would silently restart paging
//! from the first page).
//!
//! [`Continuations::recognize`](super::Continuations::recognize) tells what a text sealed by
//! this server's keys is, whatever argument it arrived in: only the seal is checked, so an
//! unknown argument holding a genuine token of another call is still recognized as misplaced.
//! Nothing here knows a token's layout; this module only words the errors.

use serde_json::{Map, Value, json};

use super::codes::NEXT_PAGE;
use crate::tool_error::ToolError;

/// The usual name of the argument that takes a target ref.
pub const TARGET_REF_FIELD: &str = "target_ref";

pub use crate::tool_error::INVALID_ARGUMENT;

/// What a text sealed by this server is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Sealed {
    /// A continuation token: a next-page action's `continuation` argument.
    Continuation,
    /// A target ref: a page's `target_ref`, passed to a follow-up tool with a row's location.
    TargetRef,
}

impl Sealed {
    fn noun(self) -> &'static str {
        match self {
            Sealed::Continuation => "a continuation token",
            Sealed::TargetRef => "a target ref",
        }
    }

    /// Where a model copies this kind of token from, whole.
    fn source(self) -> String {
        match self {
            Sealed::Continuation => format!(
                "call the `{NEXT_PAGE}` action of the answer that gave it exactly as given: its \
                 `tool` with its `arguments`, unchanged"
            ),
            Sealed::TargetRef => "pass the page's `target_ref` exactly as it was given, with the \
                 row's own location"
                .to_owned(),
        }
    }
}

/// The error of argument `field`, which takes `expected`, holding `found` instead (another kind
/// of token), or, when `found` is `None`, a text that is no token this server sealed as it
/// stands: one changed on its way back.
pub(crate) fn mispasted(field: &str, expected: Sealed, found: Option<Sealed>) -> ToolError {
    let message = match found {
        Some(found) => format!("`{field}` holds {}, not {}", found.noun(), expected.noun()),
        None => format!(
            "`{field}` is not {} as this server wrote it: it was changed on the way back \
             (quoted, cut short or padded)",
            expected.noun()
        ),
    };
    let source = found.unwrap_or(expected);
    with_field(
        ToolError::validation(message)
            .with_code(INVALID_ARGUMENT)
            .with_hint(source.source()),
        field,
        source,
    )
}

/// The error of an argument the tool does not declare, `field`, holding a token of this
/// server's that the tool takes as `takes` (when known).
pub(crate) fn misplaced(field: &str, found: Sealed, takes: Option<&str>) -> ToolError {
    let message = match takes {
        Some(takes) => format!(
            "`{field}` holds {}; this tool takes it as `{takes}`",
            found.noun()
        ),
        None => format!(
            "`{field}` holds {}, which this tool does not take as `{field}`",
            found.noun()
        ),
    };
    with_field(
        ToolError::validation(message)
            .with_code(INVALID_ARGUMENT)
            .with_hint(found.source()),
        field,
        found,
    )
}

/// `data`: the argument at fault and, for a continuation, the action to copy instead.
fn with_field(error: ToolError, field: &str, source: Sealed) -> ToolError {
    let mut data = Map::new();
    data.insert("field".into(), json!(field));
    if source == Sealed::Continuation {
        data.insert("action".into(), json!(NEXT_PAGE));
    }
    error.with_data(Value::Object(data))
}

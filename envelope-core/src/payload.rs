//! A tool's payload between the tool and the budget stage, and how a tool sizes its rows.
//!
//! The runtime runs the tool and keeps its payload typed: it is encoded once, by the budget
//! stage, where it is trimmed, so that rows that could never be sent are never converted. The
//! stage encodes it through [`ToolOutput::encode_payload`](crate::stage::ToolOutput), which
//! keeps the runtime's panic capture around the payload's `Serialize`. A hand-written tool (or
//! a transport answering for one) hands over JSON instead, which passes through as it is.
//!
//! A tool that builds rows up to what fits asks the [`ResponseSizer`] the transport installed
//! on its context ([`ToolContext::response_budget`](crate::ToolContext::response_budget),
//! [`ToolContext::response_size`](crate::ToolContext::response_size)).

use std::fmt;

use serde::Serialize;
use serde_json::Value;

/// What a serializable payload needs to travel from the tool to the budget stage.
trait TypedPayload: erased_serde::Serialize + Send {}

impl<T: Serialize + Send> TypedPayload for T {}

/// A tool's payload: typed as the tool returned it, or JSON.
///
/// It serializes as the payload does. It is never compared by content: any two compare equal,
/// so an envelope around one compares by everything else.
pub struct Payload(Repr);

enum Repr {
    Typed(Box<dyn TypedPayload>),
    Json(Value),
}

impl Payload {
    /// A typed payload, encoded later by the budget stage.
    pub(crate) fn typed<T: Serialize + Send + 'static>(data: T) -> Self {
        Payload(Repr::Typed(Box::new(data)))
    }

    /// A payload that is JSON already.
    pub fn json(value: Value) -> Self {
        Payload(Repr::Json(value))
    }

    /// The JSON, when the payload is JSON already.
    pub fn as_json(&self) -> Option<&Value> {
        match &self.0 {
            Repr::Json(value) => Some(value),
            Repr::Typed(_) => None,
        }
    }

    /// The payload as JSON: a typed payload through `encode`, which also returns what it
    /// measured on the way; JSON as it is, with what `measure` makes of it.
    pub(crate) fn into_json<M, E>(
        self,
        encode: impl FnOnce(&dyn erased_serde::Serialize) -> Result<(Value, M), E>,
        measure: impl FnOnce(&Value) -> M,
    ) -> Result<(Value, M), E> {
        match self.0 {
            Repr::Typed(data) => {
                let data: &dyn erased_serde::Serialize = &*data;
                encode(data)
            }
            Repr::Json(value) => {
                let measured = measure(&value);
                Ok((value, measured))
            }
        }
    }
}

impl From<Value> for Payload {
    fn from(value: Value) -> Self {
        Payload::json(value)
    }
}

impl Serialize for Payload {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match &self.0 {
            Repr::Typed(data) => erased_serde::serialize(&**data, serializer),
            Repr::Json(value) => value.serialize(serializer),
        }
    }
}

impl fmt::Debug for Payload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::Typed(_) => f.write_str("Payload(typed)"),
            Repr::Json(value) => f.debug_tuple("Payload").field(value).finish(),
        }
    }
}

impl PartialEq for Payload {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Sizes what a tool puts in its response against the call's budget. Implemented by the budget
/// stage and installed on the [`ToolContext`](crate::ToolContext) by the transport; core only
/// calls it, for the tool.
pub trait ResponseSizer: Send + Sync {
    /// The response budget, in token-normalized characters (about four per token).
    fn budget_chars(&self) -> usize;

    /// What `value` will take of that budget once sent, in the same token-normalized
    /// characters; `None` when it cannot be serialized.
    fn size_of(&self, value: &dyn erased_serde::Serialize) -> Option<usize>;
}

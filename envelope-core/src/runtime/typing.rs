//! The types `#[tool]` checks a tool against: its arguments ([`ToolArgs`]), its return type
//! ([`Outcome`], read through [`Returns`]) and the output schema its payload type picks
//! ([`DataSchema`]).

use std::marker::PhantomData;

use schemars::{JsonSchema, Schema};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::reply::{IntoReply, Reply};
use crate::tool_error::ToolError;

/// A type `#[tool]` can decode a call's arguments into.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool's arguments type",
    label = "needs `serde::Deserialize` and `schemars::JsonSchema`",
    note = "add `#[derive(serde::Deserialize, schemars::JsonSchema)]` to `{Self}`"
)]
pub trait ToolArgs: DeserializeOwned + JsonSchema {}

impl<T: DeserializeOwned + JsonSchema> ToolArgs for T {}

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

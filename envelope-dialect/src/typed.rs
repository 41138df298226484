//! What the dialects' typed shapes share: [`Flag`], a boolean member that has one value in a
//! given shape (`ok: false` on a failure), [`present`], which reads a member that may be
//! `null` apart from one that is absent, [`inline_schema`], a type's JSON Schema as one
//! document to place in a dialect's schema, and [`unreadable`], what a view makes of an answer
//! its type does not read.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::de::{Deserialize, Deserializer, Error as _};
use serde::ser::{Serialize, Serializer};

/// The boolean `VALUE`, and only it: serializes as `VALUE`, refuses the other value when read,
/// and is described as `{"const": VALUE}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Flag<const VALUE: bool>;

impl<const VALUE: bool> Serialize for Flag<VALUE> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_bool(VALUE)
    }
}

impl<'de, const VALUE: bool> Deserialize<'de> for Flag<VALUE> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let read = bool::deserialize(deserializer)?;
        if read == VALUE {
            Ok(Flag)
        } else {
            Err(D::Error::custom(format_args!("expected `{VALUE}`")))
        }
    }
}

impl<const VALUE: bool> JsonSchema for Flag<VALUE> {
    fn schema_name() -> Cow<'static, str> {
        Cow::Borrowed(if VALUE { "True" } else { "False" })
    }

    fn inline_schema() -> bool {
        true
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({ "const": VALUE })
    }
}

/// The JSON Schema of `T`, its definitions inlined (a dialect's schema is one document) and no
/// title (the dialect's schema has its own).
pub(crate) fn inline_schema<T: JsonSchema>() -> serde_json::Value {
    let settings = schemars::generate::SchemaSettings::draft2020_12().with(|settings| {
        settings.inline_subschemas = true;
        settings.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<T>()
        .to_value();
    if let serde_json::Value::Object(object) = &mut schema {
        object.remove("title");
    }
    schema
}

/// Reads a member that is present, `null` included, as `Some` (with `#[serde(default)]`, an
/// absent one is `None`): a payload of `null` and no payload are different answers.
pub(crate) fn present<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> Result<Option<serde_json::Value>, D::Error> {
    serde_json::Value::deserialize(deserializer).map(Some)
}

/// What is not an answer of the contract `what` (its type did not read it, for `error`), read
/// back as the envelope's `internal` failure saying so: nothing of it passes for a success.
pub(crate) fn unreadable(what: &str, error: &serde_json::Error) -> serde_json::Value {
    use envelope_core::fields::{envelope as field, error as failure};
    serde_json::json!({
        field::OK: false,
        field::ERROR: {
            failure::CATEGORY: envelope_core::Category::Internal.as_str(),
            failure::MESSAGE: format!("not {what}: {error}"),
        },
    })
}

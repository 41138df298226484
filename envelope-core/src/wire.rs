//! The trait impls every wire-vocabulary type shares, written once.
//!
//! A wire vocabulary (a verdict, a category, a unit, a capability tag, an empty reason) is a
//! string on the wire with an `as_str`. Closed sets derive their serde impls and get `Display`
//! here; open sets (where a reader must accept names it does not know) get all four impls
//! here, from `as_str`, a constructor from the wire name, and the list of known names.

/// `Display` as the wire name, for a type with `fn as_str(&self) -> &str`.
macro_rules! wire_display {
    ($($ty:ty),+ $(,)?) => {$(
        impl ::std::fmt::Display for $ty {
            fn fmt(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    )+};
}

/// `Display`, `Serialize`, `Deserialize` and `JsonSchema` for an open wire vocabulary: written
/// as `as_str()`, read with `$from_wire` (`fn(String) -> Result<Self, impl Display>`), and
/// described in its schema as a string with the `$known` names as examples.
macro_rules! open_wire_string {
    (
        $ty:ident,
        from_wire: $from_wire:expr,
        known: $known:expr,
        description: $description:literal
        $(, pattern: $pattern:literal)? $(,)?
    ) => {
        crate::wire::wire_display!($ty);

        impl ::serde::Serialize for $ty {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }

        impl<'de> ::serde::Deserialize<'de> for $ty {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                let name = <String as ::serde::Deserialize>::deserialize(deserializer)?;
                ($from_wire)(name).map_err(::serde::de::Error::custom)
            }
        }

        impl ::schemars::JsonSchema for $ty {
            fn schema_name() -> ::std::borrow::Cow<'static, str> {
                stringify!($ty).into()
            }

            fn json_schema(_: &mut ::schemars::SchemaGenerator) -> ::schemars::Schema {
                let known: Vec<&str> = $known.iter().map($ty::as_str).collect();
                let schema = ::schemars::json_schema!({
                    "description": $description,
                    "type": "string",
                    "examples": known,
                });
                $(let schema = {
                    let mut schema = schema;
                    schema.insert("pattern".to_owned(), $pattern.into());
                    schema
                };)?
                schema
            }
        }
    };
}

pub(crate) use {open_wire_string, wire_display};

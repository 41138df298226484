//! Wire vocabularies, declared one way: [`vocabulary!`].
//!
//! A wire vocabulary (a verdict, a category, a role, a tier, a severity, a unit, a reason, a
//! capability tag) is a set of names that travel as strings. Each is declared once, as its
//! names with their wire strings and, where the set has one, a line of prose per name; the
//! macro writes the type, the list of names, `as_str`, the prose getter and `Display`. Closed
//! sets derive their serde impls beside it; open sets (where a reader must accept names it does
//! not know) get theirs from `open_wire_string!`.

/// Declares a wire vocabulary. Four forms:
///
/// - `pub enum Name { Variant = "wire", … }`: a closed set; `ALL`, `as_str`, `Display`.
/// - the same preceded by `fn text;` with `Variant = "wire": "text"`: plus
///   `const fn text(self) -> &'static str`.
/// - `fn text; open Name { CONST = "wire": "text"; … }` on a `Cow<'static, str>` newtype: an
///   open set of known names as constants, `KNOWN`, and `fn text(&self) -> Option<&str>`.
/// - `pub enum Name, other Other(Unknown) { Variant = "wire": "meaning" => "response", … }`:
///   an open enum whose unknown names read into `Other`.
macro_rules! vocabulary {
    (
        $(#[$text_doc:meta])* fn $text:ident;
        $(#[$attr:meta])*
        pub enum $name:ident {
            $($(#[$doc:meta])* $variant:ident = $wire:literal: $line:literal,)*
        }
    ) => {
        crate::wire::vocabulary! {
            $(#[$attr])*
            pub enum $name {
                $($(#[$doc])* $variant = $wire,)*
            }
        }

        impl $name {
            $(#[$text_doc])*
            pub const fn $text(self) -> &'static str {
                match self {
                    $($name::$variant => $line,)*
                }
            }
        }
    };
    (
        $(#[$attr:meta])*
        pub enum $name:ident {
            $($(#[$doc:meta])* $variant:ident = $wire:literal,)*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
        pub enum $name {
            $($(#[$doc])* $variant,)*
        }

        impl $name {
            /// Every name, in the order the contract documents them.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The wire name.
            pub const fn as_str(self) -> &'static str {
                match self {
                    $($name::$variant => $wire,)*
                }
            }
        }

        crate::wire::wire_display!($name);
    };
    (
        $(#[$text_doc:meta])* $vis:vis fn $text:ident;
        open $name:ident {
            $($(#[$doc:meta])* $konst:ident = $wire:literal: $line:literal;)*
        }
    ) => {
        impl $name {
            $($(#[$doc])* pub const $konst: $name = $name(::std::borrow::Cow::Borrowed($wire));)*

            /// Every name the contract defines, in order.
            pub const KNOWN: &'static [$name] = &[$($name::$konst),*];

            $(#[$text_doc])*
            $vis fn $text(&self) -> Option<&'static str> {
                match self.as_str() {
                    $($wire => Some($line),)*
                    _ => None,
                }
            }
        }
    };
    (
        $(#[$attr:meta])*
        pub enum $name:ident, other $other:ident($unknown:ident) {
            $($(#[$doc:meta])* $variant:ident = $wire:literal: $meaning:literal => $response:literal,)*
        }
    ) => {
        $(#[$attr])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash)]
        #[non_exhaustive]
        pub enum $name {
            $($(#[$doc])* $variant,)*
            /// A value from a newer contract, read as is; branch on it as "unknown".
            $other($unknown),
        }

        impl $name {
            /// Every documented name, in order.
            pub const ALL: &'static [$name] = &[$($name::$variant),*];

            /// The wire name.
            pub fn as_str(&self) -> &str {
                match self {
                    $($name::$variant => $wire,)*
                    $name::$other(raw) => raw.as_str(),
                }
            }

            /// What it means, in one line.
            pub fn meaning(&self) -> &'static str {
                match self {
                    $($name::$variant => $meaning,)*
                    $name::$other(_) => "A reason this version of the contract does not know.",
                }
            }

            /// What an agent should do about it.
            pub fn agent_response(&self) -> &'static str {
                match self {
                    $($name::$variant => $response,)*
                    $name::$other(_) => "Read `diagnosis`; do not retry the same call unchanged.",
                }
            }

            fn from_wire(raw: &str) -> $name {
                match raw {
                    $($wire => $name::$variant,)*
                    other => $name::$other($unknown(other.to_owned())),
                }
            }
        }
    };
}

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

pub(crate) use {open_wire_string, vocabulary, wire_display};

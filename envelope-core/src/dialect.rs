//! [`Dialect`]: which wire an answer is written in, the envelope's own or one of the four source
//! contracts it unifies, and which per-call controls each can express.
//!
//! The dialect is chosen once per server and may be overridden per call with the `dialect`
//! control. Every dialect renders the same typed envelope; this module only names them, for
//! what is decided before a tool runs: the `dialect` control and the binding of continuations.
//! What each dialect can write, and the rendering itself, are its contract in
//! `envelope-dialect`, a stage of its own after the budget stage; the server installs what
//! each can write on the context ([`Expressible`](crate::Expressible)).
//!
//! ```
//! use envelope_core::Dialect;
//!
//! let dialect: Dialect = "frigg".parse()?;
//! assert_eq!(dialect, Dialect::Frigg);
//! assert_eq!(dialect.to_string(), "frigg");
//! # Ok::<(), envelope_core::ToolError>(())
//! ```

use std::fmt;
use std::str::FromStr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::tool_error::{INVALID_ARGUMENT, ToolError};

/// The per-call control that selects the dialect of one answer.
// wire: an argument name
pub const DIALECT_CONTROL: &str = "dialect";

/// `dialect`: the wire an answer is written in.
///
/// Wire names: `envelope` (the default), `pincher`, `cos`, `tsa`, `frigg`.
///
/// Only the name lives here, for what is decided before a tool runs (the `dialect` control,
/// the binding of continuations, the controls a call may send in it); everything a dialect
/// writes and reads is its `Contract` in `envelope-dialect`. Non-exhaustive: a dialect is added
/// as one variant here and one implementation there.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    Hash,
    PartialOrd,
    Ord,
    Serialize,
    Deserialize,
    JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Dialect {
    /// `envelope`: this library's own contract (the default).
    #[default]
    Envelope,
    /// `pincher`: the payload under `result`, everything else in a `_meta` block.
    Pincher,
    /// `cos`: the `ok` / `data` / `error` envelope with a `data.meta` diagnostics block.
    Cos,
    /// `tsa`: tree-sitter-analyzer's agent envelope (`success`, `verdict`, honest truncation,
    /// TOON in `toon_content`).
    Tsa,
    /// `frigg`: Frigg's separate completeness, recovery and identity fields.
    Frigg,
}

impl Dialect {
    /// Every dialect, in wire order.
    pub const ALL: [Dialect; 5] = [
        Dialect::Envelope,
        Dialect::Pincher,
        Dialect::Cos,
        Dialect::Tsa,
        Dialect::Frigg,
    ];

    /// The wire name.
    pub fn name(self) -> &'static str {
        match self {
            Dialect::Envelope => "envelope",
            Dialect::Pincher => "pincher",
            Dialect::Cos => "cos",
            Dialect::Tsa => "tsa",
            Dialect::Frigg => "frigg",
        }
    }

    /// The source contract a dialect speaks, in a few words.
    pub fn contract(self) -> &'static str {
        match self {
            Dialect::Envelope => "this library's envelope",
            Dialect::Pincher => "pincher's `_meta` envelope",
            Dialect::Cos => "the `cos_*` error envelope",
            Dialect::Tsa => "tree-sitter-analyzer's agent envelope",
            Dialect::Frigg => "Frigg's result and recovery contracts",
        }
    }

    /// Every dialect with the contract it speaks: the `data` of each refusal naming a
    /// dialect, so that the agent reading it can pick again without another round trip. What
    /// each can write of the controls is the dialect stage's to say
    /// ([`Expressible::table`](crate::Expressible::table)).
    pub fn table() -> Value {
        Value::Array(
            Self::ALL
                .iter()
                .map(|dialect| json!({ "name": dialect.name(), "contract": dialect.contract() }))
                .collect(),
        )
    }

    /// The names of every dialect, comma-separated, for messages.
    pub fn names() -> String {
        Self::ALL
            .iter()
            .map(|dialect| format!("`{}`", dialect.name()))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The refusal of a `dialect` value that names no dialect; `field` is the control's name
    /// on the tool (`dialect`, or its renamed name where the tool takes an argument of that
    /// name).
    pub fn unknown(given: &Value, field: &str) -> ToolError {
        let shown = match given {
            // What a client sent is echoed bounded.
            Value::String(name) if name.chars().count() <= 40 => format!("`{name}`"),
            Value::String(name) => format!("`{}…`", name.chars().take(40).collect::<String>()),
            Value::Null => "null".to_owned(),
            Value::Bool(_) | Value::Number(_) => format!("`{given}`"),
            Value::Array(_) => "an array".to_owned(),
            Value::Object(_) => "an object".to_owned(),
        };
        ToolError::validation(format!(
            "`{field}` is {shown}, which names no dialect; the dialects are {}",
            Self::names()
        ))
        .with_code(INVALID_ARGUMENT)
        .with_hint(format!(
            "pass one of {} as `{field}`, or leave it out for the server's default",
            Self::names()
        ))
        .with_data(json!({ "field": field, "dialects": Self::table() }))
    }

    /// The refusal of a call asking for this dialect from a server that does not offer it:
    /// MCP clients validate an answer against the listed output schema, which describes only
    /// the `offered` dialects. `field` is the control's name on the tool.
    pub fn not_offered(self, offered: DialectSet, field: &str) -> ToolError {
        let names = offered
            .iter()
            .map(|dialect| format!("`{dialect}`"))
            .collect::<Vec<_>>()
            .join(", ");
        ToolError::validation(format!(
            "this server does not answer in the `{}` dialect: its listing describes {names} only",
            self.name()
        ))
        .with_code(INVALID_ARGUMENT)
        .with_hint(format!("leave `{field}` out, or pass one of {names}"))
        .with_data(json!({
            "field": field,
            "offered": offered.iter().map(Dialect::name).collect::<Vec<_>>(),
            "dialects": Self::table(),
        }))
    }

    /// The refusal of a continuation issued in `issued`, presented in a call answered in this
    /// dialect: following the `next-page` action as given resumes in the dialect it started in.
    pub fn continuation_from(self, issued: Dialect, field: &str) -> ToolError {
        ToolError::validation(format!(
            "`{field}` was issued in the `{}` dialect; this call answers in `{}`",
            issued.name(),
            self.name()
        ))
        .with_code(INVALID_ARGUMENT)
        .with_hint(format!(
            "follow the `next-page` action exactly as given (with `{DIALECT_CONTROL}: {}`), or \
             call again without `{field}` to start over in `{}`",
            issued.name(),
            self.name()
        ))
        .with_data(json!({
            "field": field,
            "issued_in": issued.name(),
            "dialect": self.name(),
            "dialects": Self::table(),
        }))
    }
}

/// A set of dialects: the ones a server answers in (its own, and those a call may ask for),
/// which a call's `dialect` control must name one of. `Copy`, a bit per dialect.
///
/// ```
/// use envelope_core::{Dialect, DialectSet};
///
/// let offered = DialectSet::only(Dialect::Envelope).with(Dialect::Cos);
/// assert!(offered.contains(Dialect::Cos));
/// assert!(!offered.contains(Dialect::Tsa));
/// assert_eq!(offered.iter().collect::<Vec<_>>(), [Dialect::Envelope, Dialect::Cos]);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DialectSet(u8);

impl DialectSet {
    /// Every dialect.
    pub const ALL: DialectSet = DialectSet((1 << Dialect::ALL.len()) - 1);

    /// The set of `dialect` alone.
    pub const fn only(dialect: Dialect) -> DialectSet {
        DialectSet(1 << dialect as u8)
    }

    /// This set with `dialect` too.
    #[must_use]
    pub const fn with(self, dialect: Dialect) -> DialectSet {
        DialectSet(self.0 | 1 << dialect as u8)
    }

    /// Whether `dialect` is in the set.
    pub const fn contains(self, dialect: Dialect) -> bool {
        self.0 & (1 << dialect as u8) != 0
    }

    /// The dialects in the set, in wire order.
    pub fn iter(self) -> impl Iterator<Item = Dialect> {
        Dialect::ALL
            .into_iter()
            .filter(move |dialect| self.contains(*dialect))
    }
}

impl Default for DialectSet {
    fn default() -> Self {
        DialectSet::ALL
    }
}

impl FromIterator<Dialect> for DialectSet {
    fn from_iter<I: IntoIterator<Item = Dialect>>(dialects: I) -> Self {
        dialects
            .into_iter()
            .fold(DialectSet(0), |set, dialect| set.with(dialect))
    }
}

impl fmt::Display for Dialect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Dialect {
    type Err = ToolError;

    /// Reads a wire name; anything else is the `invalid_argument` refusal naming the dialects.
    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Self::ALL
            .into_iter()
            .find(|dialect| dialect.name() == name)
            .ok_or_else(|| Self::unknown(&Value::String(name.to_owned()), DIALECT_CONTROL))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_through_serde_and_from_str() {
        for dialect in Dialect::ALL {
            let wire = serde_json::to_value(dialect).expect("serializes");
            assert_eq!(wire, json!(dialect.name()));
            assert_eq!(dialect.name().parse::<Dialect>().expect("parses"), dialect);
        }
    }

    #[test]
    fn an_unknown_name_is_refused_with_every_dialect_listed() {
        let error = "yaml".parse::<Dialect>().expect_err("no such dialect");
        let wire = serde_json::to_value(&error).expect("serializes");
        assert_eq!(wire["code"], INVALID_ARGUMENT);
        assert_eq!(wire["category"], "validation");
        let listed: Vec<&str> = wire["data"]["dialects"]
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|entry| entry["name"].as_str())
            .collect();
        assert_eq!(listed, ["envelope", "pincher", "cos", "tsa", "frigg"]);
        assert!(
            wire["message"]
                .as_str()
                .expect("a message")
                .contains("`yaml`")
        );
    }
}

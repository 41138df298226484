//! [`Expressible`]: which per-call controls each dialect can write, as the server's dialect
//! stage knows it.
//!
//! Core names the dialects ([`Dialect`]) but does not know what each can write: that is each
//! dialect's contract, in `envelope-dialect`. What core needs of it is one question asked
//! before a tool runs (can the answer's dialect write this control's value?), so a server
//! installs the answer on the context ([`ToolContext::with_expressible`]) and core asks it.
//! A call asking for what its dialect cannot write is refused there (`invalid_argument`),
//! never answered in a form that drops it silently.
//!
//! ```
//! use envelope_core::{Dialect, Expressed, Expressible};
//! use serde_json::json;
//!
//! fn writes(dialect: Dialect) -> &'static [Expressed] {
//!     const FULL: &[Expressed] = &[Expressed { control: "response_mode", values: "full" }];
//!     match dialect {
//!         Dialect::Envelope | Dialect::Frigg => FULL,
//!         _ => &[],
//!     }
//! }
//! let expressible = Expressible::new(writes);
//! assert!(expressible.expresses(Dialect::Frigg, "response_mode", &json!("full")));
//! assert!(!expressible.expresses(Dialect::Cos, "response_mode", &json!("full")));
//! // A control at its default value is expressible everywhere, and every dialect pages.
//! assert!(expressible.expresses(Dialect::Cos, "response_mode", &json!("compact")));
//! assert!(expressible.expresses(Dialect::Cos, "continuation", &json!("tok")));
//! ```
//!
//! [`ToolContext::with_expressible`]: crate::ToolContext::with_expressible

use std::fmt;

use serde_json::{Value, json};

use crate::control_names::ControlNames;
use crate::controls::Controls;
use crate::dialect::{DIALECT_CONTROL, Dialect, DialectSet};
use crate::tool_error::{INVALID_ARGUMENT, ToolError};

/// A per-call control's values other than its default, which a dialect can write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Expressed {
    /// The control's argument name.
    pub control: &'static str,
    /// Its values other than the default, as the docs name them.
    pub values: &'static str,
}

/// What each dialect can write of the per-call controls beyond their defaults: a function
/// from a dialect to its [`Expressed`] values, installed by the server from its dialect stage.
///
/// Only [`Expressible::GATED`] controls are asked about: a control's default is written by
/// every dialect, every dialect pages (`continuation`), and a tool's own arguments are not a
/// dialect's business.
#[derive(Clone, Copy)]
pub struct Expressible(fn(Dialect) -> &'static [Expressed]);

impl Expressible {
    /// The controls whose non-default values a dialect may be unable to write.
    pub const GATED: [&'static str; 3] = ["response_mode", "output_format", "compact_only"];

    /// The abilities `writes` lists, dialect by dialect.
    pub const fn new(writes: fn(Dialect) -> &'static [Expressed]) -> Self {
        Expressible(writes)
    }

    /// What a context knows without a dialect stage: the envelope's own wire writes every
    /// control (it is core's own), and no other dialect writes anything but the defaults.
    pub const ENVELOPE_ONLY: Expressible = Expressible(envelope_only);

    /// What `dialect` can write of the gated controls.
    pub fn of(self, dialect: Dialect) -> &'static [Expressed] {
        (self.0)(dialect)
    }

    /// Whether `dialect` can write `control` set to a value other than its default. Controls
    /// outside [`Expressible::GATED`] (paging, the dialect itself, a tool's own arguments): true.
    pub fn supports(self, dialect: Dialect, control: &str) -> bool {
        !Self::GATED.contains(&control)
            || self
                .of(dialect)
                .iter()
                .any(|expressed| expressed.control == control)
    }

    /// Whether `dialect` can write `control` set to `value`: every dialect writes a control's
    /// default ([`Controls::is_default`]); another value only a dialect that
    /// [`supports`](Expressible::supports) the control.
    pub fn expresses(self, dialect: Dialect, control: &str, value: &Value) -> bool {
        Controls::is_default(control, value) || self.supports(dialect, control)
    }

    /// The dialects that can write `control`'s non-default values, in wire order.
    pub fn able(self, control: &str) -> Vec<Dialect> {
        Dialect::ALL
            .into_iter()
            .filter(|dialect| self.supports(*dialect, control))
            .collect()
    }

    /// Every dialect with what it can write: the `data` of the refusal of a control, so that
    /// the agent reading it can pick again without another round trip. Every dialect pages,
    /// which each entry says last.
    pub fn table(self) -> Value {
        Value::Array(
            Dialect::ALL
                .iter()
                .map(|dialect| {
                    let mut supports: Vec<String> = self
                        .of(*dialect)
                        .iter()
                        .map(|expressed| format!("{}: {}", expressed.control, expressed.values))
                        .collect();
                    // wire: the paging argument
                    supports.push("continuation: a token".to_owned());
                    json!({
                        "name": dialect.name(),
                        "contract": dialect.contract(),
                        "supports": supports,
                    })
                })
                .collect(),
        )
    }

    /// The refusal of `control` set to `value`, which `dialect` cannot write, naming each
    /// control as `names` has it on the tool (renamed where the tool takes an argument of
    /// its name).
    pub fn cannot_express(
        self,
        dialect: Dialect,
        control: &str,
        value: &Value,
        names: &ControlNames,
    ) -> ToolError {
        let able = self
            .able(control)
            .iter()
            .map(|able| format!("`{able}`"))
            .collect::<Vec<_>>()
            .join(", ");
        let field = names.wire(control);
        let asks = names.wire(DIALECT_CONTROL);
        ToolError::validation(format!(
            "the `{}` dialect cannot express `{field}: {value}`; only {able} can",
            dialect.name(),
        ))
        .with_code(INVALID_ARGUMENT)
        .with_hint(format!(
            "leave `{field}` out, or ask for one of those with `{asks}`"
        ))
        .with_data(json!({
            "field": field,
            "dialect": dialect.name(),
            "dialects": self.table(),
        }))
    }
}

/// The dialects one call may answer in, as its server decided them before the call.
#[derive(Debug, Clone, Copy, Default)]
pub struct Dialects {
    /// The dialect the answer is written in unless the call's `dialect` control asks for
    /// another.
    pub dialect: Dialect,
    /// The dialects that control may name.
    pub offered: DialectSet,
    /// What each dialect can write of the other controls.
    pub expressible: Expressible,
}

/// [`Expressible::ENVELOPE_ONLY`]'s table.
fn envelope_only(dialect: Dialect) -> &'static [Expressed] {
    const EVERY_CONTROL: &[Expressed] = &[
        Expressed {
            control: "response_mode",
            values: "full",
        },
        Expressed {
            control: "output_format",
            values: "toon",
        },
        Expressed {
            control: "compact_only",
            values: "true",
        },
    ];
    match dialect {
        Dialect::Envelope => EVERY_CONTROL,
        _ => &[],
    }
}

impl Default for Expressible {
    fn default() -> Self {
        Expressible::ENVELOPE_ONLY
    }
}

impl fmt::Debug for Expressible {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(
                Dialect::ALL
                    .iter()
                    .map(|dialect| (dialect.name(), self.of(*dialect))),
            )
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_a_dialect_stage_only_the_envelope_writes_other_values() {
        let expressible = Expressible::default();
        for dialect in Dialect::ALL {
            assert!(expressible.expresses(dialect, "response_mode", &json!("compact")));
            assert!(expressible.expresses(dialect, "output_format", &json!("json")));
            assert!(expressible.expresses(dialect, "compact_only", &json!(false)));
            assert!(expressible.expresses(dialect, "continuation", &json!("tok")));
            assert!(expressible.expresses(dialect, "path", &json!("anything")));
            assert_eq!(
                expressible.expresses(dialect, "output_format", &json!("toon")),
                dialect == Dialect::Envelope
            );
        }
        let error = expressible.cannot_express(
            Dialect::Cos,
            "output_format",
            &json!("toon"),
            &ControlNames::STANDARD,
        );
        let wire = serde_json::to_value(&error).expect("serializes");
        assert_eq!(wire["code"], INVALID_ARGUMENT);
        assert!(
            wire["message"]
                .as_str()
                .expect("a message")
                .contains("only `envelope` can")
        );
        let listed = &wire["data"]["dialects"][2];
        assert_eq!(listed["name"], "cos");
        assert_eq!(listed["supports"], json!(["continuation: a token"]));
    }
}

//! The envelope in the wire of the contracts it unifies: one stage after the budget stage that
//! renders the same typed envelope in pincher's `_meta` envelope, the `cos_*` error envelope,
//! tree-sitter-analyzer's agent envelope or Frigg's result and recovery contracts.
//!
//! A server picks its dialect ([`Dialect`], `envelope` by default) and a call may ask for
//! another with the `dialect` control. Each dialect writes its own field names, value
//! taxonomy and placement; what a dialect has no place for is dropped by a documented rule
//! ([`dropped`]), never invented, and what a source contract has that an envelope cannot say is
//! listed ([`unexpressed`]). `docs/DIALECTS.md` is generated from those tables, and each
//! dialect's JSON Schema ([`schema`]) into `docs/dialects/`.
//!
//! ```
//! use envelope_core::{Dialect, Envelope, ToolError};
//! use envelope_dialect::{Rendering, render};
//!
//! let failed: Envelope<()> = Envelope::err(ToolError::not_found("no task named T-1"));
//! let wire = serde_json::to_value(&failed)?;
//! let cos = render(Dialect::Cos, &wire, &Rendering::default());
//! assert_eq!(cos["ok"], false);
//! assert_eq!(cos["error"]["category"], "not_found");
//! assert_eq!(cos["error"]["retryable"], false);
//! # Ok::<(), serde_json::Error>(())
//! ```

/// Implements [`Contract`] for a dialect module's unit type `$contract` from the module's own
/// items, named alike in every dialect: `render`, `view`, `schema`, what it can write of the
/// controls `EXPRESSES`, the gap tables `UNEXPRESSED` and `DROPPED`, and `clauses::CLAUSES`;
/// what differs is given: the dialect's name, the paragraph on its placement, and how its own
/// success field is read.
macro_rules! contract {
    (
        $contract:ident,
        $dialect:expr,
        placement: $placement:expr,
        succeeded: |$answer:ident| $succeeded:expr $(,)?
    ) => {
        impl $crate::Contract for $contract {
            fn dialect(&self) -> envelope_core::Dialect {
                $dialect
            }

            fn placement(&self) -> &'static str {
                $placement
            }

            fn render(
                &self,
                wire: &$crate::Wire<'_>,
                how: &$crate::Rendering,
            ) -> serde_json::Value {
                render(wire, how)
            }

            fn view(&self, answer: &serde_json::Value) -> serde_json::Value {
                view(answer)
            }

            fn schema(&self, data: &serde_json::Value) -> serde_json::Value {
                schema(data)
            }

            fn succeeded(&self, $answer: &serde_json::Value) -> bool {
                $succeeded
            }

            fn expresses(&self) -> &'static [envelope_core::Expressed] {
                EXPRESSES
            }

            fn unexpressed(&self) -> &'static [$crate::Gap] {
                UNEXPRESSED
            }

            fn dropped(&self) -> &'static [$crate::Gap] {
                DROPPED
            }

            fn clauses(&self) -> &'static [$crate::Clause] {
                clauses::CLAUSES
            }
        }
    };
}

mod clause;
mod copy;
mod cos;
mod frigg;
mod pincher;
mod read;
mod tsa;
mod typed;

use envelope_budget::{Estimator, Prepared};
use envelope_core::stage::Controls;
use envelope_core::{Dialect, Expressed, Expressible};
use serde_json::Value;

pub use clause::{Clause, EVERY_DIALECT, Held};
pub use cos::Cos;
pub use frigg::Frigg;
pub use pincher::Pincher;
pub use read::Wire;
pub use tsa::Tsa;

/// How one answer is rendered: the controls the call asked for (before the budget stage
/// shaped the envelope) and the estimator the server counts tokens with.
#[derive(Debug, Clone, Default)]
pub struct Rendering {
    /// The call's controls as it sent them.
    pub controls: Controls,
    /// How the dialect's token fields are counted.
    pub estimator: Estimator,
}

/// One line of a dialect's gap tables: a field, and why it is left out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Gap {
    /// The field or feature, as its contract names it.
    pub field: &'static str,
    /// Why the other side cannot carry it.
    pub why: &'static str,
}

/// One wire an answer can be written in, and everything this crate knows of it, in one place:
/// how the envelope is written in it and read back from it, the schema of its answers, which
/// of its fields says the call worked, and the gap tables between it and the envelope.
///
/// Each dialect implements it once ([`Pincher`], [`Cos`], [`Tsa`], [`Frigg`], and
/// [`EnvelopeWire`] for the envelope's own); [`contract`] is the one place a [`Dialect`] name
/// is turned into its implementation.
pub trait Contract: Send + Sync + 'static {
    /// The name continuations are bound to and calls ask for with the `dialect` control.
    fn dialect(&self) -> Dialect;

    /// How the dialect places the envelope's parts, in a paragraph: what `docs/DIALECTS.md`
    /// opens the dialect's section with.
    fn placement(&self) -> &'static str;

    /// The envelope read by `wire` (as the budget stage wrote it), written in this dialect.
    fn render(&self, wire: &Wire<'_>, how: &Rendering) -> Value;

    /// `answer`, written in this dialect, read back as the envelope it carries: every envelope
    /// field the dialect has a place for, under the envelope's names, and none it has not.
    fn view(&self, answer: &Value) -> Value;

    /// The JSON Schema of this dialect's answers, `data` the payload's schema (`true` for any).
    fn schema(&self, data: &Value) -> Value;

    /// Whether `answer` says the call worked, by the dialect's own success field: what MCP's
    /// `isError` follows and a command-line caller exits by.
    fn succeeded(&self, answer: &Value) -> bool;

    /// What this dialect can write of the per-call controls beyond their defaults (a control's
    /// default every dialect writes, and every dialect pages): a call asking for another value
    /// is refused before the tool runs ([`EXPRESSIBLE`]).
    fn expresses(&self) -> &'static [Expressed];

    /// What the source contract has that an envelope cannot express, with why.
    fn unexpressed(&self) -> &'static [Gap];

    /// What an envelope has that this dialect cannot carry, with the rule that drops it.
    fn dropped(&self) -> &'static [Gap];

    /// The source contract's clauses an answer can be checked against, each with the test
    /// that holds it or the gap that says why not (besides [`EVERY_DIALECT`]'s).
    fn clauses(&self) -> &'static [Clause];
}

/// The implementation of `dialect`.
///
/// [`Dialect`] is non-exhaustive: a name core gains before this crate implements it is written
/// in the envelope's own wire (whose [`Contract::dialect`] then is not the name asked for, which
/// this crate's tests refuse for every dialect it knows).
pub fn contract(dialect: Dialect) -> &'static dyn Contract {
    match dialect {
        Dialect::Pincher => &Pincher,
        Dialect::Cos => &Cos,
        Dialect::Tsa => &Tsa,
        Dialect::Frigg => &Frigg,
        _ => &EnvelopeWire,
    }
}

/// What every dialect can write of the per-call controls, from each [`Contract::expresses`]:
/// what a server installs on each call's context
/// ([`ToolContext::with_expressible`](envelope_core::ToolContext::with_expressible)), so that
/// a control the answer's dialect cannot write is refused before the tool runs.
///
/// ```
/// use envelope_core::Dialect;
/// use envelope_dialect::EXPRESSIBLE;
/// use serde_json::json;
///
/// assert!(EXPRESSIBLE.expresses(Dialect::Tsa, "output_format", &json!("toon")));
/// assert!(!EXPRESSIBLE.expresses(Dialect::Cos, "output_format", &json!("toon")));
/// assert!(EXPRESSIBLE.expresses(Dialect::Frigg, "response_mode", &json!("full")));
/// ```
pub const EXPRESSIBLE: Expressible = Expressible::new(expresses);

/// [`Contract::expresses`] of `dialect`'s contract.
fn expresses(dialect: Dialect) -> &'static [Expressed] {
    contract(dialect).expresses()
}

/// The envelope's own wire, as a [`Contract`]: written and read back unchanged.
#[derive(Debug, Clone, Copy, Default)]
pub struct EnvelopeWire;

impl Contract for EnvelopeWire {
    fn dialect(&self) -> Dialect {
        Dialect::Envelope
    }

    fn placement(&self) -> &'static str {
        "The envelope as `docs/CONTRACT.md` describes it."
    }

    fn render(&self, wire: &Wire<'_>, _how: &Rendering) -> Value {
        wire.envelope().clone()
    }

    fn view(&self, answer: &Value) -> Value {
        answer.clone()
    }

    /// The envelope's whole schema: its `data` is any payload.
    fn schema(&self, _data: &Value) -> Value {
        envelope_core::schema::envelope_schema().to_value()
    }

    fn succeeded(&self, answer: &Value) -> bool {
        answer
            .get(envelope_core::fields::envelope::OK)
            .and_then(Value::as_bool)
            == Some(true)
    }

    /// Every control: `meta`'s observability fields for `response_mode: full`, the text
    /// mirror for `output_format: toon`, the control surface for `compact_only: true`.
    fn expresses(&self) -> &'static [Expressed] {
        Expressible::ENVELOPE_ONLY.of(Dialect::Envelope)
    }

    fn unexpressed(&self) -> &'static [Gap] {
        &[]
    }

    fn dropped(&self) -> &'static [Gap] {
        &[]
    }

    fn clauses(&self) -> &'static [Clause] {
        &[]
    }
}

/// `envelope` as it came from the budget stage, written in `dialect`. The envelope's own
/// dialect returns it unchanged.
pub fn render(dialect: Dialect, envelope: &Value, how: &Rendering) -> Value {
    contract(dialect).render(&Wire::new(envelope), how)
}

/// `answer`, written in `dialect`, read back as the envelope it carries ([`Contract::view`]):
/// what a checker or an agent kit written against the envelope reads a dialect's answers
/// through.
pub fn view(dialect: Dialect, answer: &Value) -> Value {
    contract(dialect).view(answer)
}

/// The JSON Schema (draft 2020-12) of `dialect`'s responses, with `data` the payload's schema
/// (`true` for any payload) and `defs` the definitions it refers to (`#/$defs/…`).
pub fn schema(dialect: Dialect, data: &Value, defs: Option<&Value>) -> Value {
    let mut schema = contract(dialect).schema(data);
    if dialect == Dialect::Envelope {
        return schema;
    }
    if let Value::Object(object) = &mut schema {
        // Every dialect answers with an object. Said at the root, beside the branches: MCP
        // before 2026-07-28 lists only an object-rooted output schema (rmcp drops any other for
        // those peers), so a root of bare alternatives would leave older clients no schema.
        object.insert("type".to_owned(), Value::String("object".to_owned()));
        object.insert(
            "$schema".to_owned(),
            Value::String("https://json-schema.org/draft/2020-12/schema".to_owned()),
        );
        // The payload's definitions beside the dialect's own (which keep their names).
        if let Some(Value::Object(payload)) = defs {
            let merged = object
                .entry("$defs")
                .or_insert_with(|| Value::Object(serde_json::Map::new()));
            if let Value::Object(merged) = merged {
                for (name, def) in payload {
                    merged.entry(name.clone()).or_insert_with(|| def.clone());
                }
            }
        }
        if object
            .get("$defs")
            .and_then(Value::as_object)
            .is_some_and(serde_json::Map::is_empty)
        {
            object.remove("$defs");
        }
    }
    schema
}

/// The schema of a tool's answers in `dialect`, from the tool's envelope output schema (whose
/// ok branch types `data`).
pub fn output_schema(dialect: Dialect, envelope_output: &Value) -> Value {
    if dialect == Dialect::Envelope {
        return envelope_output.clone();
    }
    let data = envelope_output
        .pointer("/oneOf/0/properties/data")
        .cloned()
        .unwrap_or(Value::Bool(true));
    schema(dialect, &data, envelope_output.get("$defs"))
}

/// How `dialect` places the envelope's parts ([`Contract::placement`]).
pub fn placement(dialect: Dialect) -> &'static str {
    contract(dialect).placement()
}

/// What a source contract has that an envelope cannot express, with why.
pub fn unexpressed(dialect: Dialect) -> &'static [Gap] {
    contract(dialect).unexpressed()
}

/// What an envelope has that `dialect` cannot carry, with the rule that drops it.
pub fn dropped(dialect: Dialect) -> &'static [Gap] {
    contract(dialect).dropped()
}

/// The budget stage's response, rendered in `dialect`: the structured content, its compact
/// JSON mirror (the text channel; a TOON form travels inside the dialects that have a place
/// for it), the token estimate of that JSON, and whether the call worked by the dialect's own
/// success field ([`Contract::succeeded`]), which MCP's `isError` follows.
pub fn apply(dialect: Dialect, prepared: Prepared, how: &Rendering) -> Prepared {
    if dialect == Dialect::Envelope {
        return prepared;
    }
    let contract = contract(dialect);
    let structured = contract.render(&Wire::new(&prepared.structured), how);
    let json = serde_json::to_string(&structured).unwrap_or_default();
    Prepared {
        ok: contract.succeeded(&structured),
        tokens_estimated: Some(how.estimator.estimate(&json)),
        structured,
        json,
        toon: None,
        ..prepared
    }
}

/// Writes at `pointer` (an existing object member's path) the estimated tokens of `value`'s
/// compact JSON, that count included: repeated until the count no longer changes its own
/// length (at most a few rounds; the larger count is kept if it oscillates).
pub fn stamp_tokens(value: &mut Value, pointer: &str, estimator: Estimator) {
    let mut count = 0u64;
    for _ in 0..4 {
        if let Some(slot) = value.pointer_mut(pointer) {
            *slot = Value::from(count);
        }
        let next = estimator.estimate(&serde_json::to_string(value).unwrap_or_default());
        if next <= count {
            return;
        }
        count = next;
    }
    if let Some(slot) = value.pointer_mut(pointer) {
        *slot = Value::from(count);
    }
}

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

mod copy;
mod cos;
mod frigg;
mod pincher;
mod read;
mod tsa;

use envelope_budget::{Estimator, Prepared};
use envelope_core::Dialect;
use envelope_core::stage::Controls;
use serde_json::Value;

pub use read::Wire;

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

/// `envelope` as it came from the budget stage, written in `dialect`. The envelope's own
/// dialect returns it unchanged.
pub fn render(dialect: Dialect, envelope: &Value, how: &Rendering) -> Value {
    let wire = Wire::new(envelope);
    match dialect {
        Dialect::Envelope => envelope.clone(),
        Dialect::Pincher => pincher::render(&wire, how),
        Dialect::Cos => cos::render(&wire, how),
        Dialect::Tsa => tsa::render(&wire, how),
        Dialect::Frigg => frigg::render(&wire, how),
    }
}

/// `answer`, written in `dialect`, read back as the envelope it carries: every envelope field
/// the dialect has a place for, under the envelope's names, and none it has not (a dialect
/// without a request id yields an envelope without `meta.request_id`). What a checker or an
/// agent kit written against the envelope reads a dialect's answers through.
pub fn view(dialect: Dialect, answer: &Value) -> Value {
    match dialect {
        Dialect::Envelope => answer.clone(),
        Dialect::Pincher => pincher::view(answer),
        Dialect::Cos => cos::view(answer),
        Dialect::Tsa => tsa::view(answer),
        Dialect::Frigg => frigg::view(answer),
    }
}

/// The JSON Schema (draft 2020-12) of `dialect`'s responses, with `data` the payload's schema
/// (`true` for any payload) and `defs` the definitions it refers to (`#/$defs/…`).
pub fn schema(dialect: Dialect, data: &Value, defs: Option<&Value>) -> Value {
    let mut schema = match dialect {
        Dialect::Envelope => return envelope_schema(data, defs),
        Dialect::Pincher => pincher::schema(data),
        Dialect::Cos => cos::schema(data),
        Dialect::Tsa => tsa::schema(data),
        Dialect::Frigg => frigg::schema(data),
    };
    if let Value::Object(object) = &mut schema {
        // Every dialect answers with an object. Said at the root, beside the branches: MCP
        // before 2026-07-28 lists only an object-rooted output schema (rmcp drops any other for
        // those peers), so a root of bare alternatives would leave older clients no schema.
        object.insert("type".to_owned(), Value::String("object".to_owned()));
        object.insert(
            "$schema".to_owned(),
            Value::String("https://json-schema.org/draft/2020-12/schema".to_owned()),
        );
        if let Some(defs) = defs.filter(|defs| defs.as_object().is_some_and(|d| !d.is_empty())) {
            object.insert("$defs".to_owned(), defs.clone());
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

fn envelope_schema(data: &Value, defs: Option<&Value>) -> Value {
    let _ = (data, defs);
    envelope_core::schema::envelope_schema().to_value()
}

/// How `dialect` places the envelope's parts, in a paragraph: what `docs/DIALECTS.md` opens
/// each dialect's section with.
pub fn placement(dialect: Dialect) -> &'static str {
    match dialect {
        Dialect::Envelope => "The envelope as `docs/CONTRACT.md` describes it.",
        Dialect::Pincher => {
            "Success is `{\"result\": data, \"_meta\": {…}}`; a failure has no `result`, its \
             message is `_meta.diagnosis` and the error itself the first `_meta.diagnosis_v2` \
             entry (`{code, severity: \"error\", message, data: {category, retryable, …}}`). \
             `_meta` holds `request_id`, `tokens_used` (of `result`) and the savings against the \
             baseline, `complexity_tier`, `latency_ms`, `empty_reason` (in pincher's names where \
             they differ), `diagnosis`, `diagnosis_v2`, `next_steps` (`{tool, args, why}` from \
             the next actions, `args` exactly as given, so the `next-page` step pages), \
             `warnings_v2`, `capabilities` and the drift fields. pincher has no verdict, \
             `next_step` or completeness field: a cut travels as a `warnings_v2` entry code \
             `truncated` (its data the completeness and the trimmer's markers), a verdict that \
             obliges the agent as one code `verdict`."
        }
        Dialect::Cos => {
            "A failure is exactly `{\"ok\": false, \"error\": {\"category\", \"retryable\", \
             \"message\"}}` (the categories and retryable defaults are the envelope's own). A \
             success is `{\"ok\": true, \"data\": …}` with the diagnostics block `data.meta`: \
             `layer`, `tokens_estimated` (of the whole response, itself included), `truncated` \
             and the trimmer's markers under their names (the envelope took them from this \
             contract). The contract lets tools add keys to `data.meta`: the agent-facing \
             signals it has no field for travel there under the envelope's names \
             (`completeness`, `next_actions` with the `next-page` action's arguments as given, \
             `next_step`, `summary_line`, a verdict other than `INFO`, `empty_reason` and \
             `diagnosis`, `warnings`, `diagnostics`). A list payload is sent as `{\"results\": \
             [...], \"meta\"}`, a scalar or null one as `{\"value\", \"meta\"}`."
        }
        Dialect::Tsa => {
            "One flat object: `success` and `verdict` always (a failure is `ERROR`); \
             `summary_line`, `next_step` and `agent_summary` `{summary_line, verdict, next_step}`; \
             on failure `error` (the message), `error_type` (the code, else the category), \
             `hint`; `warnings` as `\"<code>: <message>\"` lines; honest truncation as \
             `truncated`, `<unit>_count`, `<units>_listed`, `listed_cap` (when the page size was \
             the cap) and a `next_step` with the real numbers; `next_actions` unchanged; the \
             payload's members at the top level (whole under `data` when one would collide). With \
             `output_format: toon` the whole response is TOON in `toon_content` (`format: \
             \"toon\"`), and `compact_only` keeps only the contract's control surface."
        }
        Dialect::Frigg => {
            "Size, coverage, trust, identity and recovery in separate fields: the rows (an \
             object payload's members) at the top level beside `completeness` in Frigg's shape, \
             with the next page's token in `completeness.continuation` and the `next-page` \
             action in `next_actions` unchanged; a failure as the recovery grammar `error_code`, \
             `message`, `correction_hint`, `retryable` (with `related_tools`); an empty result \
             as `zero_hit_reason` in Frigg's names; a verdict other than the default, a budget \
             cut, warnings and diagnostics as `diagnostics` entries. `response_mode: full` adds \
             `notes` (the envelope's prose) and `runtime` (its `meta`, the token count made of \
             this wire)."
        }
    }
}

/// What a source contract has that an envelope cannot express, with why.
pub fn unexpressed(dialect: Dialect) -> &'static [Gap] {
    match dialect {
        Dialect::Envelope => &[],
        Dialect::Pincher => pincher::UNEXPRESSED,
        Dialect::Cos => cos::UNEXPRESSED,
        Dialect::Tsa => tsa::UNEXPRESSED,
        Dialect::Frigg => frigg::UNEXPRESSED,
    }
}

/// What an envelope has that `dialect` cannot carry, with the rule that drops it.
pub fn dropped(dialect: Dialect) -> &'static [Gap] {
    match dialect {
        Dialect::Envelope => &[],
        Dialect::Pincher => pincher::DROPPED,
        Dialect::Cos => cos::DROPPED,
        Dialect::Tsa => tsa::DROPPED,
        Dialect::Frigg => frigg::DROPPED,
    }
}

/// The budget stage's response, rendered in `dialect`: the structured content, its compact
/// JSON mirror (the text channel; a TOON form travels inside the dialects that have a place
/// for it), and the token estimate of that JSON.
pub fn apply(dialect: Dialect, prepared: Prepared, how: &Rendering) -> Prepared {
    if dialect == Dialect::Envelope {
        return prepared;
    }
    let structured = render(dialect, &prepared.structured, how);
    let json = serde_json::to_string(&structured).unwrap_or_default();
    Prepared {
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

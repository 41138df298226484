//! The `frigg` dialect: Frigg's result and recovery contracts, which keep size, coverage,
//! trust, identity and recovery in separate fields an agent reads directly.
//!
//! Placement, in brief:
//! - **Rows**: an object payload's members sit at the top level, beside `completeness`. When
//!   one of them is named like a field this dialect writes ([`RESERVED`]), the whole payload
//!   goes under `data` instead, unflattened, as a list, string or number payload always does
//!   (a null payload has nothing to carry and is left out).
//! - **Size and coverage**: `completeness` in Frigg's shape, with the next page's token in
//!   `completeness.continuation`; the `next-page` action stays in `next_actions` unchanged.
//! - **Recovery**: a failure is the flattened grammar `error_code`, `message`,
//!   `correction_hint`, `retryable` (with `related_tools` and the error's own `data`); an empty
//!   result is `zero_hit_reason` (with `message` and `correction_hint`).
//! - **Trust and freshness**: what has no field of its own in Frigg but must not be lost (a
//!   verdict other than the default, a budget cut, the envelope's warnings and diagnostics,
//!   index drift, attachments not sent) is one entry each in `diagnostics`, which compact keeps.
//! - **Detail**: `response_mode: full` adds `notes` (the envelope's prose) and `runtime` (the
//!   envelope's `meta` observability, its token count restamped for this wire).

mod clauses;
mod diagnostics;
mod gaps;
mod paging;
mod recovery;
mod runtime;
mod schema;
mod view;
mod wire;

use envelope_core::Dialect;
use envelope_core::stage::ResponseMode;
use serde_json::Value;

use crate::{Rendering, Wire};
use wire::Answer;

pub(crate) use gaps::{DROPPED, UNEXPRESSED};
pub(crate) use schema::schema;
pub(crate) use view::view;

/// The top-level fields this dialect writes. An object payload with a member of one of these
/// names is not flattened (it goes whole under `data`), so that no row field is overwritten and
/// a client finds every page of one tool in the same place.
pub(crate) const RESERVED: [&str; 12] = [
    "completeness",
    "next_actions",
    "error_code",
    "message",
    "correction_hint",
    "retryable",
    "related_tools",
    "zero_hit_reason",
    "diagnostics",
    "notes",
    "runtime",
    "data",
];

/// The envelope read by `wire`, written in Frigg's fields. Never panics: a field of an odd
/// shape is left out rather than guessed.
pub(crate) fn render(wire: &Wire<'_>, how: &Rendering) -> Value {
    let mut answer = Answer::default();
    place_payload(wire, &mut answer);
    paging::write(wire, &mut answer);
    recovery::write(wire, &mut answer);
    diagnostics::write(wire, &mut answer);
    let full = how.controls.response_mode == ResponseMode::Full;
    if full {
        runtime::write_notes(wire, &mut answer);
    }
    let mut value = answer.to_value();
    if full {
        runtime::write_runtime(wire, &mut value, how.estimator);
    }
    value
}

/// Writes the payload: flattened when it is an object none of whose members is reserved, else
/// whole under `data` (a null payload, or none, writes nothing).
fn place_payload(wire: &Wire<'_>, answer: &mut Answer) {
    // An error's `data` is the error's, not a payload: the recovery writes it.
    if recovery::failed(wire) {
        return;
    }
    match wire.data() {
        None | Some(Value::Null) => {}
        Some(Value::Object(rows)) if !rows.keys().any(|key| is_reserved(key)) => {
            answer.rows = rows.clone();
        }
        Some(payload) => answer.data = Some(payload.clone()),
    }
}

/// Whether `key` names a field this dialect writes.
fn is_reserved(key: &str) -> bool {
    RESERVED.contains(&key)
}

/// Frigg's result and recovery contracts, as a [`Contract`]: see the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Frigg;

/// `response_mode: full`: Frigg's own `full` mode (notes and runtime). It has no place for
/// TOON and no control surface.
const EXPRESSES: &[envelope_core::Expressed] = &[envelope_core::Expressed {
    control: "response_mode",
    values: "full",
}];

contract!(
    Frigg,
    Dialect::Frigg,
    placement: "Size, coverage, trust, identity and recovery in separate fields: the rows (an \
             object payload's members) at the top level beside `completeness` in Frigg's shape, \
             with the next page's token in `completeness.continuation` and the `next-page` \
             action in `next_actions` unchanged; a failure as the recovery grammar `error_code`, \
             `message`, `correction_hint`, `retryable` (with `related_tools`); an empty result \
             as `zero_hit_reason` in Frigg's names; a verdict other than the default, a budget \
             cut, warnings and diagnostics as `diagnostics` entries. `response_mode: full` adds \
             `notes` (the envelope's prose) and `runtime` (its `meta`, the token count made of \
             this wire).",
    // The recovery grammar's code is written on failure only.
    succeeded: |answer| answer.get("error_code").is_none(),
);

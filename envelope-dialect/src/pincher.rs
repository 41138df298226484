//! The `pincher` dialect: pincher's `_meta` envelope, in which the payload travels under
//! `result` and everything an agent loop branches on sits in one `_meta` block.
//!
//! Placement, in brief:
//!
//! - Success: `{"result": data, "_meta": {…}}`. Failure: `result` is null (pincher's host
//!   loop returns `resp["result"]` from every answer); `_meta.diagnosis` is the
//!   error's message and the first `_meta.diagnosis_v2` entry is the error itself
//!   (`{code: error code or category, severity: "error", message, data: {category, retryable,
//!   hint?, retry_after_ms?, data?}}`).
//! - `_meta` holds, in the contract's order: `request_id`; `tokens_used` (the estimated tokens
//!   of `result`'s compact JSON) and the savings against the baseline, recomputed against
//!   `tokens_used` as the contract defines them; `complexity_tier`, `latency_ms`;
//!   `empty_reason` (renamed into pincher's enum where pincher names the same reason
//!   differently), `diagnosis`, `diagnosis_v2` (from `diagnostics`); `next_steps` (from
//!   `next_actions`, in order, `arguments` as given); `warnings_v2`; `capabilities`;
//!   `binary_drift_warning`, `schema_version` (the index schema the binary runs, when the
//!   envelope says it), `schema_version_at_index`.
//! - pincher has no verdict, `next_step` or completeness field, so what an agent must not lose
//!   from them travels in `warnings_v2`, whose codes are open: a cut (a truncated or incomplete
//!   collection, or the budget trimmer's markers) as code `truncated` (or `incomplete`), and a
//!   verdict that obliges the agent as code `verdict`. Paging needs nothing extra: the
//!   `next-page` action is a `next_steps` entry whose `args` carry the continuation.
//!
//! What the envelope has that `_meta` cannot carry is listed in [`DROPPED`], with its rule; what
//! pincher's contract has that an envelope cannot say, in [`UNEXPRESSED`].

mod clauses;
mod gaps;
mod meta;
mod notices;
mod schema;
mod view;
mod wire;

use envelope_core::Dialect;
use serde_json::Value;

use crate::{Rendering, Wire};
use wire::Response;

pub(crate) use gaps::{DROPPED, UNEXPRESSED};
pub(crate) use schema::schema;
pub(crate) use view::view;

/// The envelope read by `wire`, written in this dialect.
pub(crate) fn render(wire: &Wire<'_>, how: &Rendering) -> Value {
    // The payload only on success (an envelope's `data` is absent on failure anyway), but
    // `result` always: pincher's own host loop ends in `return resp["result"]` on every answer,
    // so a failure, or a success with nothing to return, has `result: null`.
    let result = wire.ok().then(|| wire.data()).flatten();
    let response = Response {
        meta: meta::build(wire, result, how),
        result: result.cloned().unwrap_or(Value::Null),
    };
    // A type of plain fields and JSON values: it always serializes.
    serde_json::to_value(response).unwrap_or_default()
}

/// pincher's `_meta` envelope, as a [`Contract`]: see the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Pincher;

/// Nothing beyond the defaults: pincher stamps the same `_meta` on every call (no `full`), has
/// no place for TOON and no control surface.
const EXPRESSES: &[envelope_core::Expressed] = &[];

contract!(
    Pincher,
    Dialect::Pincher,
    placement: "Success is `{\"result\": data, \"_meta\": {…}}`; a failure's `result` is null, its \
             message is `_meta.diagnosis` and the error itself the first `_meta.diagnosis_v2` \
             entry (`{code, severity: \"error\", message, data: {category, retryable, …}}`). \
             `_meta` holds `request_id`, `tokens_used` (of `result`) and the savings against the \
             baseline, `complexity_tier`, `latency_ms`, `empty_reason` (in pincher's names where \
             they differ), `diagnosis`, `diagnosis_v2`, `next_steps` (`{tool, args, why}` from \
             the next actions, `args` exactly as given, so the `next-page` step pages), \
             `warnings_v2`, `capabilities` and the drift fields. pincher has no verdict, \
             `next_step` or completeness field: a cut travels as a `warnings_v2` entry code \
             `truncated` (its data the completeness and the trimmer's markers), a verdict that \
             obliges the agent as one code `verdict`.",
    // A failure's `result` is null and its error the first `diagnosis_v2` entry.
    succeeded: |answer| view::succeeded(answer),
);

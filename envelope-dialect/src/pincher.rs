//! The `pincher` dialect: pincher's `_meta` envelope, in which the payload travels under
//! `result` and everything an agent loop branches on sits in one `_meta` block.
//!
//! Placement, in brief:
//!
//! - Success: `{"result": data, "_meta": {…}}`. Failure: no `result`; `_meta.diagnosis` is the
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

mod gaps;
mod meta;
mod notices;
mod schema;
mod view;

use serde_json::{Map, Value};

use crate::{Rendering, Wire};

pub(crate) use gaps::{DROPPED, UNEXPRESSED};
pub(crate) use schema::schema;
pub(crate) use view::view;

/// The member holding the payload on success.
const RESULT: &str = "result";
/// The member holding everything else.
const META: &str = "_meta";

/// The envelope read by `wire`, written in this dialect.
pub(crate) fn render(wire: &Wire<'_>, how: &Rendering) -> Value {
    // The payload only on success: a failed call has no `result` in pincher's contract, and an
    // envelope's `data` is absent on failure anyway.
    let result = wire.ok().then(|| wire.data()).flatten();
    let mut response = Map::new();
    if let Some(result) = result {
        response.insert(RESULT.to_owned(), result.clone());
    }
    response.insert(
        META.to_owned(),
        Value::Object(meta::build(wire, result, how)),
    );
    Value::Object(response)
}

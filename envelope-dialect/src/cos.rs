//! The `cos` dialect: the `cos_*` tools' error envelope, `{ok, data}` on success and
//! `{ok, error: {category, retryable, message}}` on failure, with the diagnostics block
//! `data.meta`.
//!
//! Placement rules, in brief:
//!
//! - A failure is exactly `{"ok": false, "error": {"category", "retryable", "message"}}`: the
//!   envelope's categories are this contract's own, with the same retryable defaults; nothing
//!   else of a failed envelope has a place (see [`DROPPED`]).
//! - A success is `{"ok": true, "data": …}` with the diagnostics block in `data.meta`: `layer`
//!   (when the tool declares one), `tokens_estimated` (of the whole rendered response, itself
//!   included), `truncated` (whether the budget trimmer cut) and every trimmer marker under the
//!   name it has in the envelope's `meta` (the envelope took those names from this contract).
//! - The contract lets tools add their own keys to `data.meta`; the agent-facing signals the
//!   contract has no field for travel there under the envelope's names: `completeness`,
//!   `next_actions` (with the `next-page` action's arguments exactly as given, so an agent can
//!   page), `next_step`, `summary_line`, a verdict other than `INFO`, `empty_reason` with
//!   `diagnosis`, `warnings`, `diagnostics`, `binary_drift_warning` and `attachments`.
//! - An object payload gets `meta` as a member; its own `meta` object, if any, is kept with the
//!   library's keys winning, as the contract lets callers add keys but never spoof the
//!   library's. A list payload is sent as `{"results": [...], "meta": {...}}` (`results` is the
//!   contract's first trimmable key, so the trimmer's root-list markers read
//!   `truncated_results_from`/`_to`), a scalar or null one as `{"value": …, "meta": {...}}`, so
//!   that no payload loses the block that says it was cut or how to page.
//!
//! The controls this contract cannot express (`response_mode: full`, TOON, `compact_only`) are
//! refused before the tool runs, so rendering ignores them.

mod block;
mod clauses;
mod failure;
mod gaps;
mod placement;
mod schema;
mod shape;
mod view;
mod wire;

use envelope_core::Dialect;
use serde_json::{Map, Value};

use crate::{Rendering, Wire};

pub(crate) use gaps::{DROPPED, UNEXPRESSED};
pub(crate) use schema::schema;
pub(crate) use view::view;

/// The contract's own keys (top level, `data.meta` stamps, the error object).
mod key {
    /// `ok`: success or failure.
    pub(super) const OK: &str = "ok";
    /// `data`: the payload, with the diagnostics block.
    pub(super) const DATA: &str = "data";
    /// `error`: the failure.
    pub(super) const ERROR: &str = "error";
    /// `meta`: the diagnostics block inside `data`.
    pub(super) const META: &str = "meta";
    /// `layer`: which retrieval layer answered.
    pub(super) const LAYER: &str = "layer";
    /// `tokens_estimated`: the block's token count of the whole response.
    pub(super) const TOKENS_ESTIMATED: &str = "tokens_estimated";
    /// `truncated`: whether the budget trimmer cut.
    pub(super) const TRUNCATED: &str = "truncated";
    /// `results`: where a list payload goes.
    pub(super) const RESULTS: &str = "results";
    /// `value`: where a scalar or null payload goes.
    pub(super) const VALUE: &str = "value";
}

/// The envelope read by `wire`, written in this dialect.
pub(crate) fn render(wire: &Wire<'_>, how: &Rendering) -> Value {
    if !wire.ok() {
        return failure::render(wire);
    }
    let shape = shape::Shape::of(wire.data());
    let block = block::diagnostics(wire, shape);
    let data = placement::place(wire.data(), shape, block);
    let mut response = Map::new();
    response.insert(key::OK.to_owned(), Value::Bool(true));
    response.insert(key::DATA.to_owned(), data);
    let mut response = Value::Object(response);
    let pointer = format!("/{}/{}/{}", key::DATA, key::META, key::TOKENS_ESTIMATED);
    crate::stamp_tokens(&mut response, &pointer, how.estimator);
    response
}

/// the `cos_*` error envelope, as a [`Contract`]: see the module.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cos;

/// Nothing beyond the defaults: cos stamps the same diagnostics on every call (no `full`), has
/// no place for TOON and no control surface.
const EXPRESSES: &[envelope_core::Expressed] = &[];

contract!(
    Cos,
    Dialect::Cos,
    placement: "A failure is exactly `{\"ok\": false, \"error\": {\"category\", \"retryable\", \
             \"message\"}}` (the categories and retryable defaults are the envelope's own). A \
             success is `{\"ok\": true, \"data\": …}` with the diagnostics block `data.meta`: \
             `layer`, `tokens_estimated` (of the whole response, itself included), `truncated` \
             and the trimmer's markers under their names (the envelope took them from this \
             contract). The contract lets tools add keys to `data.meta`: the agent-facing \
             signals it has no field for travel there under the envelope's names \
             (`completeness`, `next_actions` with the `next-page` action's arguments as given, \
             `next_step`, `summary_line`, a verdict other than `INFO`, `empty_reason` and \
             `diagnosis`, `warnings`, `diagnostics`). A list payload is sent as `{\"results\": \
             [...], \"meta\"}`, a scalar or null one as `{\"value\", \"meta\"}`.",
    succeeded: |answer| answer.get(key::OK).and_then(Value::as_bool) == Some(true),
);

//! Shaping by the per-call controls: what `response_mode` and `compact_only` leave out.

use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::stage::{Controls, ResponseMode};
use serde_json::{Map, Value};

/// `meta` fields that only observability pipelines read, or that the listing already says (the
/// tool's name, tier, idempotency and layer); `response_mode: compact` (the default) leaves
/// them out, since every one costs the model tokens it cannot act on, and so does
/// `tokens_estimated` (counted all the same: [`Prepared::tokens_estimated`](crate::Prepared::tokens_estimated)). Nothing an agent
/// branches on is here: `request_id`, `truncated` and its markers and the index drift stay.
pub const COMPACT_DROPPED_META: &[&str] = &[
    keys::CLIENT_REQUEST_ID,
    keys::TOOL,
    keys::COMPLEXITY_TIER,
    keys::IDEMPOTENT,
    keys::LATENCY_MS,
    keys::TOKENS_METHOD,
    keys::TOKENS_SAVED,
    keys::TOKENS_SAVED_PCT,
    keys::BASELINE_METHOD,
    keys::LAYER,
    keys::SCHEMA_VERSION,
    keys::CAPABILITIES,
];

/// The top-level fields `compact_only` keeps: the control surface an agent branches on, and the
/// next actions it follows (the next page's continuation travels in one).
pub const CONTROL_SURFACE: &[&str] = &[
    field::OK,
    field::VERDICT,
    field::SUMMARY_LINE,
    field::NEXT_STEP,
    field::DATA,
    field::ERROR,
    field::COMPLETENESS,
    field::NEXT_ACTIONS,
    field::EMPTY_REASON,
    field::DIAGNOSIS,
    field::META,
];

/// The `meta` fields `compact_only` keeps.
pub const CONTROL_SURFACE_META: &[&str] = &[
    keys::REQUEST_ID,
    keys::TRUNCATED,
    keys::ENVELOPE_UNSHRINKABLE,
    // What was attached and whether it was sent: what an agent acts on, like `truncated`.
    keys::ATTACHMENTS,
];

/// Applies `response_mode` and `compact_only`.
pub(crate) fn shape(rest: &mut Map<String, Value>, controls: &Controls) {
    if controls.compact_only {
        rest.retain(|key, _| CONTROL_SURFACE.contains(&key.as_str()));
        if let Some(Value::Object(meta)) = rest.get_mut(field::META) {
            meta.retain(|key, _| {
                CONTROL_SURFACE_META.contains(&key.as_str()) || key.starts_with(keys::MARKER_PREFIX)
            });
        }
    } else if controls.response_mode == ResponseMode::Compact
        && let Some(Value::Object(meta)) = rest.get_mut(field::META)
    {
        meta.retain(|key, _| !COMPACT_DROPPED_META.contains(&key.as_str()));
    }
}

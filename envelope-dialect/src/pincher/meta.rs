//! The `_meta` block: pincher's field names, filled from the envelope's fields and `meta`.

use envelope_core::fields::next_action as action;
use envelope_core::meta_keys;
use envelope_core::{BinaryDrift, EmptyReason};
use serde_json::{Map, Value};

use super::notices;
use super::wire::{Meta, Step};
use crate::{Rendering, Wire};

/// The envelope's empty reasons that pincher's enum names differently: `(envelope, pincher)`.
/// Every other reason keeps its name: the identical ones mean the same, and pincher's enum is
/// open (its consumers default-branch on a value they do not know), so a reason pincher lacks
/// travels as the envelope names it rather than being forced onto a wrong pincher value.
pub(super) const RENAMED_EMPTY_REASONS: [(EmptyReason, &str); 3] = [
    (EmptyReason::NotIndexed, "no_project_indexed"),
    (EmptyReason::LowConfidence, "low_confidence_extractor"),
    (EmptyReason::NoMatch, "no_results_in_corpus"),
];

/// `_meta` for the envelope read by `wire`, whose payload on success is `result`: each field
/// the envelope has something to say in, typed, and none it has not.
pub(super) fn build(wire: &Wire<'_>, result: Option<&Value>, how: &Rendering) -> Meta {
    let text = |key: &str| {
        wire.meta_field(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    let typed = |key: &str| wire.meta_field(key).and_then(Value::as_u64);
    let (tokens_used, tokens_saved, tokens_saved_pct) = cost(wire, result, how);
    let warnings_v2 = notices::warnings_v2(wire);
    let drift = wire
        .meta_field(meta_keys::BINARY_DRIFT_WARNING)
        .and_then(|warning| serde_json::from_value::<BinaryDrift>(warning.clone()).ok());
    Meta {
        request_id: text(meta_keys::REQUEST_ID),
        tokens_used,
        tokens_saved,
        tokens_saved_pct,
        baseline_method: text(meta_keys::BASELINE_METHOD),
        complexity_tier: wire
            .meta_field(meta_keys::COMPLEXITY_TIER)
            .and_then(|tier| serde_json::from_value(tier.clone()).ok()),
        latency_ms: typed(meta_keys::LATENCY_MS),
        empty_reason: wire
            .empty_reason()
            .map(|reason| pincher_empty_reason(reason).to_owned()),
        diagnosis: diagnosis_prose(wire),
        diagnosis_v2: notices::diagnosis_v2(wire),
        next_steps: wire.next_actions().iter().filter_map(next_step).collect(),
        // The legacy string list ships beside `warnings_v2` ("consumers can read either"): the
        // same entries, their messages.
        warnings: warnings_v2
            .iter()
            .map(|entry| entry.message.clone())
            .collect(),
        warnings_v2,
        capabilities: capabilities(wire),
        // pincher's `schema_version` is the index schema the running binary understands, the
        // number `schema_version_at_index` is compared with. The envelope says it only inside
        // a drift warning (`running_version`); its own `meta.schema_version` versions the
        // envelope's wire and is not written here, where a client would compare it with the
        // index's version.
        schema_version: drift.as_ref().map(|drift| i64::from(drift.running_version)),
        binary_drift_warning: drift,
        schema_version_at_index: wire
            .meta_field(meta_keys::SCHEMA_VERSION_AT_INDEX)
            .and_then(Value::as_i64),
        project_id: None,
        project_name: None,
        session_id: None,
        added: Map::new(),
    }
}

/// `tokens_used`, `tokens_saved` and `tokens_saved_pct`.
///
/// pincher counts `tokens_used` over the payload alone and defines `tokens_saved` as the
/// baseline's tokens minus `tokens_used`, and `tokens_saved_pct` as that share of the baseline.
/// The envelope counts the whole response (`tokens_estimated`) and saves against that, so the
/// baseline is recovered (`tokens_saved + tokens_estimated`) and the savings recomputed
/// against `tokens_used`. When it cannot be recovered (no payload, no savings stamped, or no
/// response size), the savings are left out: the envelope's, counted against another size,
/// would not be the difference pincher defines, and a missing field means "not applicable".
fn cost(
    wire: &Wire<'_>,
    result: Option<&Value>,
    how: &Rendering,
) -> (Option<u64>, Option<i64>, Option<f64>) {
    let used = result.map(|result| {
        how.estimator
            .estimate(&serde_json::to_string(result).unwrap_or_default())
    });
    match used.and_then(|used| recomputed_savings(wire, used)) {
        Some((saved, pct)) => (used, Some(saved), pct),
        None => (used, None, None),
    }
}

/// The savings against the envelope's baseline when the payload alone costs `used` tokens:
/// `(saved, percent of the baseline, one decimal)`, or `None` when the envelope stamped no
/// savings or no response size to recover the baseline from. The percentage is left out of a
/// baseline of no tokens, of which no share can be taken.
fn recomputed_savings(wire: &Wire<'_>, used: u64) -> Option<(i64, Option<f64>)> {
    let saved = wire.meta_field(meta_keys::TOKENS_SAVED)?.as_i64()?;
    let estimated = wire.meta_field(meta_keys::TOKENS_ESTIMATED)?.as_u64()?;
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let baseline = saved.saturating_add(wide(estimated));
    let saved = baseline.saturating_sub(wide(used));
    // The same rounding as the envelope's own percentage; token counts are far below 2^53, so
    // the float conversions are exact.
    let pct = (baseline > 0).then(|| (saved as f64 / baseline as f64 * 1000.0).round() / 10.0);
    Some((saved, pct))
}

/// pincher's name for the envelope's empty reason `reason`.
pub(super) fn pincher_empty_reason(reason: &str) -> &str {
    RENAMED_EMPTY_REASONS
        .iter()
        .find(|(ours, _)| ours.as_str() == reason)
        .map_or(reason, |(_, theirs)| theirs)
}

/// `diagnosis`: on failure the error's message (pincher says what went wrong there), followed
/// by the envelope's own diagnosis prose if it has one; on success that prose alone.
fn diagnosis_prose(wire: &Wire<'_>) -> Option<String> {
    let prose = wire.diagnosis();
    if wire.ok() {
        return prose.map(str::to_owned);
    }
    match (notices::error_message(wire), prose) {
        (Some(message), Some(prose)) => Some(format!("{message} — {prose}")),
        (Some(message), None) => Some(message.to_owned()),
        (None, prose) => prose.map(str::to_owned),
    }
}

/// One `next_steps` entry from one next action: `{tool, args, why}`, `args` the action's
/// `arguments` exactly as given (the `next-page` action's carry the continuation). The
/// envelope's order is kept (already sorted by stage, so running them in turn honours their
/// dependencies); an action without a tool or an argument object cannot be scheduled and is
/// left out.
fn next_step(next: &Value) -> Option<Step> {
    Some(Step {
        tool: next.get(action::TOOL)?.as_str()?.to_owned(),
        args: next.get(action::ARGUMENTS)?.as_object()?.clone(),
        why: next
            .get(action::REASON)
            .and_then(Value::as_str)
            .map(str::to_owned),
    })
}

/// `capabilities`: the server's tags as it advertised them (an open list in both contracts).
fn capabilities(wire: &Wire<'_>) -> Option<Vec<String>> {
    let tags = wire
        .meta_field(meta_keys::CAPABILITIES)?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect();
    Some(tags)
}

//! The `_meta` block: pincher's field names, filled from the envelope's fields and `meta`.

use envelope_core::fields::next_action as action;
use envelope_core::meta_keys;
use envelope_core::{BinaryDrift, EmptyReason};
use serde_json::{Map, Value};

use super::notices;
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

/// `_meta` for the envelope read by `wire`, whose payload on success is `result`.
pub(super) fn build(
    wire: &Wire<'_>,
    result: Option<&Value>,
    how: &Rendering,
) -> Map<String, Value> {
    let mut meta = Map::new();
    copy(wire, &mut meta, meta_keys::REQUEST_ID, "request_id");
    cost(wire, result, how, &mut meta);
    copy(
        wire,
        &mut meta,
        meta_keys::COMPLEXITY_TIER,
        "complexity_tier",
    );
    copy(wire, &mut meta, meta_keys::LATENCY_MS, "latency_ms");
    diagnosis(wire, &mut meta);
    put_list(&mut meta, "next_steps", next_steps(wire));
    put_list(&mut meta, "warnings_v2", notices::warnings_v2(wire));
    capabilities(wire, &mut meta);
    drift(wire, &mut meta);
    meta
}

/// Copies `meta.<from>` to `_meta.<to>` when the envelope has it.
fn copy(wire: &Wire<'_>, meta: &mut Map<String, Value>, from: &str, to: &str) {
    if let Some(value) = wire.meta_field(from) {
        meta.insert(to.to_owned(), value.clone());
    }
}

/// Inserts a list only when it has entries: an absent field means "not applicable".
fn put_list(meta: &mut Map<String, Value>, key: &str, list: Vec<Value>) {
    if !list.is_empty() {
        meta.insert(key.to_owned(), Value::Array(list));
    }
}

/// `tokens_used`, `tokens_saved`, `tokens_saved_pct` and `baseline_method`.
///
/// pincher counts `tokens_used` over the payload alone and defines `tokens_saved` as the
/// baseline's tokens minus `tokens_used`. The envelope counts the whole response
/// (`tokens_estimated`) and saves against that, so the baseline is recovered
/// (`tokens_saved + tokens_estimated`) and the savings recomputed against `tokens_used`. Without
/// a payload or without `tokens_estimated` the envelope's savings travel as it stamped them.
fn cost(wire: &Wire<'_>, result: Option<&Value>, how: &Rendering, meta: &mut Map<String, Value>) {
    let used = result.map(|result| {
        how.estimator
            .estimate(&serde_json::to_string(result).unwrap_or_default())
    });
    if let Some(used) = used {
        meta.insert("tokens_used".to_owned(), Value::from(used));
    }
    match used.and_then(|used| recomputed_savings(wire, used)) {
        Some((saved, pct)) => {
            meta.insert("tokens_saved".to_owned(), Value::from(saved));
            meta.insert("tokens_saved_pct".to_owned(), Value::from(pct));
        }
        None => {
            copy(wire, meta, meta_keys::TOKENS_SAVED, "tokens_saved");
            copy(wire, meta, meta_keys::TOKENS_SAVED_PCT, "tokens_saved_pct");
        }
    }
    copy(wire, meta, meta_keys::BASELINE_METHOD, "baseline_method");
}

/// The savings against the envelope's baseline when the payload alone costs `used` tokens:
/// `(saved, percent of the baseline, one decimal)`, or `None` when the envelope stamped no
/// savings or no response size to recover the baseline from.
fn recomputed_savings(wire: &Wire<'_>, used: u64) -> Option<(i64, f64)> {
    let saved = wire.meta_field(meta_keys::TOKENS_SAVED)?.as_i64()?;
    let estimated = wire.meta_field(meta_keys::TOKENS_ESTIMATED)?.as_u64()?;
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let baseline = saved.saturating_add(wide(estimated));
    let saved = baseline.saturating_sub(wide(used));
    // The same rounding as the envelope's own percentage; token counts are far below 2^53, so
    // the float conversions are exact.
    let pct = if baseline > 0 {
        (saved as f64 / baseline as f64 * 1000.0).round() / 10.0
    } else {
        0.0
    };
    Some((saved, pct))
}

/// `empty_reason`, `diagnosis` and `diagnosis_v2`.
fn diagnosis(wire: &Wire<'_>, meta: &mut Map<String, Value>) {
    if let Some(reason) = wire.empty_reason() {
        meta.insert(
            "empty_reason".to_owned(),
            Value::from(pincher_empty_reason(reason)),
        );
    }
    if let Some(prose) = diagnosis_prose(wire) {
        meta.insert("diagnosis".to_owned(), Value::from(prose));
    }
    put_list(meta, "diagnosis_v2", notices::diagnosis_v2(wire));
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

/// `next_steps`: each next action as `{tool, args, why}`, in the envelope's order (already
/// sorted by stage, so running them in turn honours their dependencies). `args` are the
/// action's `arguments` exactly as given: the `next-page` action's carry the continuation.
/// An action without a tool or an argument object cannot be scheduled and is left out.
fn next_steps(wire: &Wire<'_>) -> Vec<Value> {
    wire.next_actions().iter().filter_map(next_step).collect()
}

/// One `next_steps` entry from one next action.
fn next_step(next: &Value) -> Option<Value> {
    let tool = next.get(action::TOOL)?.as_str()?;
    let args = next.get(action::ARGUMENTS)?.as_object()?;
    let mut step = Map::new();
    step.insert("tool".to_owned(), Value::from(tool));
    step.insert("args".to_owned(), Value::Object(args.clone()));
    if let Some(why) = next.get(action::REASON).and_then(Value::as_str) {
        step.insert("why".to_owned(), Value::from(why));
    }
    Some(Value::Object(step))
}

/// `capabilities`: the server's tags as it advertised them (an open list in both contracts).
fn capabilities(wire: &Wire<'_>, meta: &mut Map<String, Value>) {
    let Some(tags) = wire
        .meta_field(meta_keys::CAPABILITIES)
        .and_then(Value::as_array)
    else {
        return;
    };
    let tags: Vec<Value> = tags.iter().filter(|tag| tag.is_string()).cloned().collect();
    meta.insert("capabilities".to_owned(), Value::Array(tags));
}

/// `binary_drift_warning`, `schema_version` and `schema_version_at_index`.
///
/// pincher's `schema_version` is the index schema the running binary understands, the number
/// `schema_version_at_index` is compared with. The envelope says it only inside a drift
/// warning (`running_version`); its own `meta.schema_version` versions the envelope's wire and
/// is not written here, where a client would compare it with the index's version.
fn drift(wire: &Wire<'_>, meta: &mut Map<String, Value>) {
    let warning = wire
        .meta_field(meta_keys::BINARY_DRIFT_WARNING)
        .filter(|warning| warning.is_object());
    if let Some(warning) = warning {
        meta.insert("binary_drift_warning".to_owned(), warning.clone());
    }
    let running = warning
        .and_then(|warning| serde_json::from_value::<BinaryDrift>(warning.clone()).ok())
        .map(|drift| drift.running_version);
    if let Some(running) = running {
        meta.insert("schema_version".to_owned(), Value::from(running));
    }
    copy(
        wire,
        meta,
        meta_keys::SCHEMA_VERSION_AT_INDEX,
        "schema_version_at_index",
    );
}

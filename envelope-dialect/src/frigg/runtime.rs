//! What `response_mode: full` adds: `notes` (the envelope's prose, which Frigg's compact form
//! leaves out, since a Frigg client reads fields, not notes) and `runtime` (the envelope's
//! `meta` observability), its token count restamped for the bytes of this wire.

use envelope_budget::Estimator;
use envelope_core::meta_keys as keys;
use serde_json::{Map, Value};

use super::wire::Answer;
use crate::Wire;

/// `meta` members `diagnostics` already carries, kept out of `runtime` (besides every
/// `truncated_*` marker).
const IN_DIAGNOSTICS: [&str; 5] = [
    keys::TRUNCATED,
    keys::ENVELOPE_UNSHRINKABLE,
    keys::BINARY_DRIFT_WARNING,
    keys::SCHEMA_VERSION_AT_INDEX,
    keys::ATTACHMENTS,
];

/// Writes `notes`: `summary_line`, `next_step`, and a diagnosis that `message` could not take
/// (a failure's message took it), in that order.
pub(super) fn write_notes(wire: &Wire<'_>, answer: &mut Answer) {
    let message = answer.message.as_deref();
    let diagnosis = wire.diagnosis().filter(|d| Some(*d) != message);
    answer.notes = [wire.summary_line(), wire.next_step(), diagnosis]
        .into_iter()
        .flatten()
        .map(str::to_owned)
        .collect();
}

/// Writes `runtime`: `meta`'s observability members as they are, but `tokens_estimated`
/// (counted again over this rendering, itself included) and `tokens_saved`/`tokens_saved_pct`
/// (against the same baseline, recomputed from the new count).
pub(super) fn write_runtime(wire: &Wire<'_>, value: &mut Value, estimator: Estimator) {
    let Some(meta) = wire.meta() else {
        return;
    };
    let runtime: Map<String, Value> = meta
        .iter()
        .filter(|(key, _)| {
            !IN_DIAGNOSTICS.contains(&key.as_str()) && !key.starts_with(keys::MARKER_PREFIX)
        })
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    if runtime.is_empty() {
        return;
    }
    let restamp = runtime.contains_key(keys::TOKENS_ESTIMATED);
    let baseline = baseline_tokens(&runtime);
    if let Value::Object(out) = value {
        out.insert("runtime".to_owned(), Value::Object(runtime));
    }
    if restamp {
        stamp(value, baseline, estimator);
    }
}

/// The baseline the envelope's savings were measured against: its tokens plus the saving.
fn baseline_tokens(runtime: &Map<String, Value>) -> Option<u64> {
    let used = runtime.get(keys::TOKENS_ESTIMATED)?.as_u64()?;
    let saved = runtime.get(keys::TOKENS_SAVED)?.as_i64()?;
    let used = i64::try_from(used).ok()?;
    u64::try_from(used.checked_add(saved)?).ok()
}

/// Stamps `runtime.tokens_estimated`, then the savings against `baseline`, until the count no
/// longer moves (the savings' digits are part of what is counted).
fn stamp(value: &mut Value, baseline: Option<u64>, estimator: Estimator) {
    const TOKENS: &str = "/runtime/tokens_estimated";
    for _ in 0..3 {
        let before = value.pointer(TOKENS).and_then(Value::as_u64);
        crate::stamp_tokens(value, TOKENS, estimator);
        let Some(used) = value.pointer(TOKENS).and_then(Value::as_u64) else {
            return;
        };
        if let (Some(baseline), Some(Value::Object(runtime))) =
            (baseline, value.pointer_mut("/runtime"))
        {
            let (saved, pct) = savings(baseline, used);
            runtime.insert(keys::TOKENS_SAVED.to_owned(), Value::from(saved));
            runtime.insert(keys::TOKENS_SAVED_PCT.to_owned(), Value::from(pct));
        } else {
            return;
        }
        if before == Some(used) {
            return;
        }
    }
}

/// `tokens_saved` and `tokens_saved_pct` (one decimal) of `used` tokens against `baseline`, as
/// the budget stage computes them.
fn savings(baseline: u64, used: u64) -> (i64, f64) {
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let saved = wide(baseline).saturating_sub(wide(used));
    let pct = if baseline > 0 {
        // Precision loss past 2^53 tokens is irrelevant to a percentage with one decimal.
        #[allow(clippy::cast_precision_loss)]
        let ratio = saved as f64 / baseline as f64;
        (ratio * 1000.0).round() / 10.0
    } else {
        0.0
    };
    (saved, pct)
}

//! The stamps the budget stage writes in `meta`: the token count of the bytes sent (itself
//! included), how it was made, the savings against a declared baseline, and the trimmer's
//! markers.

use envelope_core::TokensMethod;
use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::stage::Baseline;
use serde_json::{Map, Value, json};

use crate::size::{member_key_counts, rest_counts, value_counts};
use crate::tokens::{Counts, Estimator};

/// Room for the stamps written after the own fields are fitted: `tokens_estimated` and
/// `tokens_method` at their widest, `truncated` and `envelope_unshrinkable`, with their keys.
pub(crate) const STAMPS_RESERVE: usize = 128;

/// The widest token count and method: [`reserve_stamps`] sizes the response with them, and
/// [`stamped_rest_counts`] takes exactly them back out.
pub(crate) const WIDEST_TOKENS: u64 = u64::MAX;
pub(crate) const WIDEST_METHOD: TokensMethod = TokensMethod::ScriptAware;

/// Writes the stamps that come after trimming at their widest, so the trimmer sizes them:
/// `tokens_estimated`, `tokens_method` (when `with_method`), `truncated`. The real values are
/// never wider.
pub(crate) fn reserve_stamps(
    rest: &mut Map<String, Value>,
    baseline: Option<&Baseline>,
    with_method: bool,
) {
    let Some(Value::Object(meta)) = rest.get_mut(field::META) else {
        return;
    };
    meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(WIDEST_TOKENS));
    if with_method {
        meta.insert(keys::TOKENS_METHOD.to_owned(), json!(WIDEST_METHOD));
    }
    meta.entry(keys::TRUNCATED).or_insert(json!(false));
    // The savings against a baseline are stamped last, from the final count: their widest.
    if let Some(baseline) = baseline {
        meta.insert(keys::BASELINE_METHOD.to_owned(), json!(baseline.method));
        meta.insert(keys::TOKENS_SAVED.to_owned(), json!(i64::MIN));
        meta.insert(keys::TOKENS_SAVED_PCT.to_owned(), json!(f64::MIN));
    }
}

/// The counts [`stamp_tokens`] starts from, derived from those of the rest with the widest
/// stamps [`reserve_stamps`] wrote: the same bytes but for the token count, left out, and the
/// method, whose real name replaces the widest. Exact: JSON's quotes and separators keep every
/// run count inside the value it belongs to.
pub(crate) fn stamped_rest_counts(reserved: Counts, method: Option<TokensMethod>) -> Counts {
    match method {
        Some(method) => {
            let widest = digits(WIDEST_TOKENS) + value_counts(&json!(WIDEST_METHOD));
            crate::size::sub(reserved, widest) + value_counts(&json!(method))
        }
        None => crate::size::sub(reserved, digits(WIDEST_TOKENS)),
    }
}

/// Writes the trimmer's markers into `meta`, keeping markers from an earlier trim.
pub(crate) fn merge_markers(
    rest: &mut Map<String, Value>,
    markers: std::collections::BTreeMap<String, Value>,
    cut_any: bool,
    unshrinkable: bool,
) {
    let Some(Value::Object(meta)) = rest.get_mut(field::META) else {
        return;
    };
    let already = meta
        .get(keys::TRUNCATED)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    meta.insert(keys::TRUNCATED.to_owned(), json!(already || cut_any));
    for (key, value) in markers {
        // A second trim of a list keeps the first trim's "from": the original length.
        if key.ends_with(keys::LIST_CUT_FROM_SUFFIX) && meta.contains_key(&key) {
            continue;
        }
        meta.insert(key, value);
    }
    if unshrinkable {
        meta.insert(keys::ENVELOPE_UNSHRINKABLE.to_owned(), json!(true));
    }
}

/// What the token count is made of, besides its own digits and the savings.
pub(crate) struct StampBase {
    /// Whether the response carries `data`.
    pub(crate) with_data: bool,
    /// The counts of the payload as sent.
    pub(crate) data_counts: Counts,
    /// The counts of everything else with the real `tokens_method` and no token count, when
    /// already known; `None` writes the rest out to count it.
    pub(crate) rest: Option<Counts>,
}

/// Stamps `tokens_estimated` (of the whole response, this field included), `tokens_method`
/// (when given: under `response_mode: full`), and the savings against a declared baseline.
pub(crate) fn stamp_tokens(
    rest: &mut Map<String, Value>,
    stamp: StampBase,
    estimator: Estimator,
    method: Option<TokensMethod>,
    baseline: Option<&Baseline>,
) {
    let Some(Value::Object(meta)) = rest.get_mut(field::META) else {
        return;
    };
    if let Some(method) = method {
        meta.insert(keys::TOKENS_METHOD.to_owned(), json!(method));
    }
    if let Some(baseline) = baseline {
        // Placeholders of the final width are set below, once the count is known; the widest
        // ones `reserve_stamps` wrote would be counted twice.
        meta.insert(keys::BASELINE_METHOD.to_owned(), json!(baseline.method));
        meta.remove(keys::TOKENS_SAVED);
        meta.remove(keys::TOKENS_SAVED_PCT);
    }
    let base = match stamp.rest {
        Some(rest) => rest + stamp.data_counts,
        None => {
            meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(0));
            sub_digits(rest_counts(rest, stamp.with_data) + stamp.data_counts, 1)
        }
    };
    let tokens = token_fixed_point(base, estimator, baseline);
    let Some(Value::Object(meta)) = rest.get_mut(field::META) else {
        return;
    };
    meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(tokens));
    if let Some(baseline) = baseline {
        let (saved, pct) = savings(baseline.tokens, tokens);
        meta.insert(keys::TOKENS_SAVED.to_owned(), json!(saved));
        meta.insert(keys::TOKENS_SAVED_PCT.to_owned(), json!(pct));
    }
}

/// The token count of a response whose other bytes count `base`: a fixed point, since the
/// count's own digits (and the savings computed from it) are part of what it counts.
pub(crate) fn token_fixed_point(
    base: Counts,
    estimator: Estimator,
    baseline: Option<&Baseline>,
) -> u64 {
    let mut tokens = estimator.tokens(&(base + digits(0)));
    for _ in 0..8 {
        let with_savings = base + digits(tokens) + savings_counts(baseline, tokens);
        let next = estimator.tokens(&with_savings);
        if next == tokens {
            break;
        }
        tokens = next;
    }
    tokens
}

/// `tokens_saved` and `tokens_saved_pct` = saved / (saved + used) × 100, one decimal; negative
/// when the response cost more than the baseline.
fn savings(baseline_tokens: u64, used: u64) -> (i64, f64) {
    // Saturating: a baseline the author declared past `i64::MAX` must not overflow.
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let saved = wide(baseline_tokens).saturating_sub(wide(used));
    let denominator = baseline_tokens as f64;
    let pct = if denominator > 0.0 {
        (saved as f64 / denominator * 1000.0).round() / 10.0
    } else {
        0.0
    };
    (saved, pct)
}

fn savings_counts(baseline: Option<&Baseline>, tokens: u64) -> Counts {
    let Some(baseline) = baseline else {
        return Counts::default();
    };
    let (saved, pct) = savings(baseline.tokens, tokens);
    member_key_counts(keys::TOKENS_SAVED, true)
        + value_counts(&json!(saved))
        + member_key_counts(keys::TOKENS_SAVED_PCT, true)
        + value_counts(&json!(pct))
}

/// The counts of `n` written out: its digits, one run of them.
pub(crate) fn digits(n: u64) -> Counts {
    Counts {
        digits: u64::from(n.checked_ilog10().unwrap_or(0) + 1),
        digit_runs: 1,
        ..Counts::default()
    }
}

/// `counts` without a number of `n` digits (one run of them).
pub(crate) fn sub_digits(counts: Counts, n: u64) -> Counts {
    let number = Counts {
        digits: n,
        digit_runs: 1,
        ..Counts::default()
    };
    counts.saturating_sub(&number)
}

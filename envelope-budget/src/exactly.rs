//! Keeping a budget by the exact token count (feature `exact`).
//!
//! The estimator is linear in a text's counts, which holds a kind of text as a whole within a
//! few percent but one response of it only within about a fifth (see the crate README). Trimming
//! stays on the estimate, whose counts add up row by row; an [`ExactCounter`] then checks the
//! bytes about to be sent. When they are over the budget, the response is prepared again from a
//! copy of the tool's output against a budget lowered by how far off the estimate was, until the
//! exact count fits or [`MAX_RETRIES`] passes have been spent.
//!
//! The budget stage ([`prepare`](crate::prepare)) does the passes; these are their pieces. Two
//! policies use it ([`BudgetPolicy`](crate::BudgetPolicy)):
//! - `exact`: every response is counted exactly and stamped `tokens_method: "exact_*"`;
//! - `exact_when_tight`: only a response whose estimate is within [`TIGHT_MARGIN`] of its
//!   budget is, so a response far within its budget is never counted exactly (it still pays
//!   for the copy of its payload kept in case it must be prepared again).

use envelope_core::meta_keys as keys;
use envelope_core::stage::{EncoderMeasure, ToolOutput};
use serde_json::{Value, json};

use crate::tokens::ExactCounter;
use crate::trim::{MAX_DEPTH, nested_deeper_than};

/// How close to its budget, as a fraction of it, an estimated response must come to be counted
/// exactly under `exact_when_tight`: the estimator's worst error on one response of held-out
/// text is about 17%.
pub const TIGHT_MARGIN: f64 = 0.2;

/// How many times a response over its budget by the exact count is prepared again.
pub const MAX_RETRIES: usize = 6;

/// Which exact counting a policy asks for: `always` stamps every response exactly.
pub(crate) struct ExactCheck {
    pub(crate) counter: ExactCounter,
    pub(crate) always: bool,
}

/// Whether a response whose estimate is `estimated` comes close enough to `budget` to be
/// counted exactly under `exact_when_tight`.
pub(crate) fn is_tight(estimated: u64, budget: usize) -> bool {
    estimated as f64 >= budget as f64 * (1.0 - TIGHT_MARGIN)
}

/// The budget to prepare a response again under, after one prepared under `target` came to
/// `estimated` by the estimate and `exact` by the exact count, over `budget`: the estimate
/// scaled by how far the exact count is from it, a percent lower each pass so that rounding
/// cannot stall it, and always below `target`.
pub(crate) fn lowered(target: usize, budget: usize, estimated: u64, exact: u64) -> usize {
    let ratio = estimated.max(1) as f64 / exact.max(1) as f64;
    let scaled = (budget as f64 * ratio * 0.99) as usize;
    scaled.min(target.saturating_sub(1)).max(1)
}

/// Whether a payload can be copied to prepare again: one nested past the depth limit is not
/// (the copy would recurse that deep; the depth cut leaves it unshrinkable past its marker
/// anyway).
pub(crate) fn copyable(output: &ToolOutput) -> bool {
    !output
        .envelope
        .data()
        .is_some_and(|data| nested_deeper_than(data, MAX_DEPTH))
}

/// A copy of `output` to prepare again. What the encoder measured is left behind: it describes
/// the rows as first converted, and the trimmer measures them itself without it.
pub(crate) fn spare_of(output: &ToolOutput) -> ToolOutput {
    ToolOutput {
        envelope: output.envelope.clone(),
        baseline: output.baseline.clone(),
        precut: output.precut.clone(),
        measure: EncoderMeasure::default(),
        controls: output.controls.clone(),
        resume: output.resume.clone(),
    }
}

/// Characters or four per token, whichever is more: how budgets are counted.
pub(crate) fn normalized(json: &str, tokens: u64) -> u64 {
    (json.chars().count() as u64).max(tokens.saturating_mul(4))
}

/// Re-stamps `tokens_estimated` with the exact count of the final bytes, itself included: a
/// count is written, the bytes counted again, until the count is a fixed point (a digit more
/// can change it).
pub(crate) fn stamp_exact(structured: &mut Value, counter: ExactCounter) {
    let set = |structured: &mut Value, key: &str, value: Value| {
        if let Some(Value::Object(meta)) = structured.get_mut("meta") {
            meta.insert(key.to_owned(), value);
        }
    };
    // The method is stamped only where the mode stamps it (`response_mode: full`).
    let stamps_method = structured["meta"].get(keys::TOKENS_METHOD).is_some();
    if stamps_method {
        set(structured, keys::TOKENS_METHOD, json!(counter.method()));
    }
    let mut tokens = 0_usize;
    for _ in 0..8 {
        set(structured, keys::TOKENS_ESTIMATED, json!(tokens));
        let counted = counter.count(&serde_json::to_string(structured).unwrap_or_default());
        if counted == tokens {
            return;
        }
        tokens = counted;
    }
    set(structured, keys::TOKENS_ESTIMATED, json!(tokens));
}

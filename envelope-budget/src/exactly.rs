//! Keeping a budget by the exact token count (feature `exact`).
//!
//! The estimator is linear in a text's counts, which holds a kind of text as a whole within a
//! few percent but one response of it only within about a fifth (see the crate README). Trimming
//! stays on the estimate, whose counts add up row by row; an [`ExactCounter`] then checks the
//! bytes about to be sent. When they are over the budget, the response is prepared again from a
//! copy of the tool's output against a budget lowered by how far off the estimate was, until the
//! exact count fits or [`MAX_RETRIES`] passes have been spent.
//!
//! Two policies use it ([`BudgetPolicy`]):
//! - `exact`: every response is counted exactly and stamped `tokens_method: "exact_*"`;
//! - `exact_when_tight`: only a response whose estimate is within [`TIGHT_MARGIN`] of its
//!   budget is, so a response far within its budget costs nothing more than the estimate.

use envelope_core::meta_keys as keys;
use envelope_core::stage::Controls;
use envelope_core::stage::{EncoderMeasure, ToolOutput};
use serde_json::{Value, json};

use crate::respond::{BudgetPolicy, Prepared, prepare_within, with_mirror};
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

/// [`prepare`](crate::prepare) with the budget kept by `check`'s exact count.
pub(crate) fn prepare_exactly(
    output: ToolOutput,
    controls: &Controls,
    tool_budget: Option<usize>,
    policy: &BudgetPolicy,
    check: ExactCheck,
) -> Prepared {
    let budget = output
        .envelope
        .data()
        .and_then(|data| policy.budget_for(tool_budget, data));
    // What to prepare again from when the exact count is over. The encoder converted no row
    // past the budget, so this copies about a budget's worth of payload at most. A payload
    // nested past the depth limit is not copied (the copy would recurse that deep); the depth
    // cut leaves it unshrinkable past its marker anyway.
    let spare = budget
        .filter(|_| {
            !output
                .envelope
                .data()
                .is_some_and(|data| nested_deeper_than(data, MAX_DEPTH))
        })
        .map(|_| spare_of(&output));
    let mut prepared = prepare_within(output, controls, tool_budget, policy, None);
    let tight = budget.is_some_and(|budget| {
        let estimated = estimated_size(&prepared, policy);
        estimated as f64 >= budget as f64 * (1.0 - TIGHT_MARGIN)
    });
    if !check.always && !tight {
        return prepared;
    }
    let mut estimated = estimated_size(&prepared, policy);
    prepared = stamped(prepared, check.counter, controls);
    let (Some(budget), Some(spare)) = (budget, spare) else {
        return prepared;
    };
    let mut target = budget;
    for _ in 0..MAX_RETRIES {
        let size = exact_size(&prepared);
        if size <= budget as u64 || target <= 1 {
            break;
        }
        // The estimate this response came to, scaled by how far the exact count is from it,
        // is where the estimator must stop for the exact count to reach the budget; a percent
        // more each pass, so that rounding cannot stall it.
        let ratio = estimated.max(1) as f64 / size as f64;
        let scaled = (budget as f64 * ratio * 0.99) as usize;
        target = scaled.min(target - 1).max(1);
        let again = prepare_within(
            spare_of(&spare),
            controls,
            tool_budget,
            policy,
            Some(target),
        );
        estimated = estimated_size(&again, policy);
        prepared = stamped(again, check.counter, controls);
    }
    prepared
}

/// A copy of `output` to prepare again. What the encoder measured is left behind: it describes
/// the rows as first converted, and the trimmer measures them itself without it.
fn spare_of(output: &ToolOutput) -> ToolOutput {
    ToolOutput {
        envelope: output.envelope.clone(),
        baseline: output.baseline.clone(),
        precut: output.precut.clone(),
        measure: EncoderMeasure::default(),
        controls: output.controls.clone(),
        resume: output.resume.clone(),
    }
}

/// The response's size in token-normalized characters by the estimate it was stamped with.
fn estimated_size(prepared: &Prepared, policy: &BudgetPolicy) -> u64 {
    let tokens = prepared.structured["meta"][keys::TOKENS_ESTIMATED]
        .as_u64()
        .unwrap_or_else(|| policy.estimator.estimate(&prepared.json));
    normalized(&prepared.json, tokens)
}

/// The response's size in token-normalized characters by its exact stamp.
fn exact_size(prepared: &Prepared) -> u64 {
    let tokens = prepared.structured["meta"][keys::TOKENS_ESTIMATED]
        .as_u64()
        .unwrap_or(u64::MAX / 4);
    normalized(&prepared.json, tokens)
}

/// Characters or four per token, whichever is more: how budgets are counted.
fn normalized(json: &str, tokens: u64) -> u64 {
    (json.chars().count() as u64).max(tokens.saturating_mul(4))
}

/// `prepared` stamped with `counter`'s exact count of its own JSON, that count included, and
/// its JSON and text mirror written again.
fn stamped(prepared: Prepared, counter: ExactCounter, controls: &Controls) -> Prepared {
    let Prepared {
        mut structured,
        leftovers,
        ..
    } = prepared;
    stamp_exact(&mut structured, counter);
    let json = serde_json::to_string(&structured).unwrap_or_default();
    with_mirror(structured, json, controls, leftovers)
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
    set(structured, keys::TOKENS_METHOD, json!(counter.method()));
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

//! Preparing a response again under a lowered budget, from a copy of the tool's output, when
//! the bytes about to be sent are over the budget although the envelope was trimmed to it.
//!
//! Two things measure those bytes differently from the trimmer's estimate: an exact token count
//! ([`exactly`](crate::exactly), feature `exact`), and a wire form the envelope is written in
//! after the budget stage ([`prepare_as`](crate::prepare_as): another contract's dialect, whose
//! own field names and placement can be larger than the envelope's). Either way the response is
//! prepared again from a copy of the output against a budget lowered by how far over it came,
//! until what is sent fits or [`MAX_RETRIES`] passes have been spent. A pass at the lowest
//! budget that still does not fit is the trimmer's unshrinkable answer, flagged
//! `envelope_unshrinkable`, and the form writes that flag in its own place.

use envelope_core::stage::ToolOutput;
use serde_json::Value;

use crate::call::CallBudget;
use crate::encode::Encoded;
use crate::pass::prepare_within;
use crate::policy::BudgetPolicy;
use crate::prepared::Prepared;
use crate::trim::{MAX_DEPTH, nested_deeper_than};

/// How many times a response over its budget by what is sent is prepared again.
pub const MAX_RETRIES: usize = 6;

/// Characters or four per token, whichever is more: how budgets are counted.
pub(crate) fn normalized(json: &str, tokens: u64) -> u64 {
    (json.chars().count() as u64).max(tokens.saturating_mul(4))
}

/// The response's size in token-normalized characters by the estimate it was stamped with
/// (or, without a stamp, by the policy's estimate of its JSON).
pub(crate) fn estimated_size(prepared: &Prepared, policy: &BudgetPolicy) -> u64 {
    let tokens = prepared
        .tokens_estimated
        .unwrap_or_else(|| policy.estimator.estimate(&prepared.json));
    normalized(&prepared.json, tokens)
}

/// The budget to prepare a response again under, after one prepared under `target` came to
/// `trimmed` by the trimmer's measure and `sent` by what is sent, over `budget`: the budget
/// scaled by how far the two are apart, a percent lower each pass so that rounding cannot stall
/// it, and always below `target`.
fn lowered(target: usize, budget: usize, trimmed: u64, sent: u64) -> usize {
    let ratio = trimmed.max(1) as f64 / sent.max(1) as f64;
    let scaled = (budget as f64 * ratio * 0.99) as usize;
    scaled.min(target.saturating_sub(1)).max(1)
}

/// Whether a payload can be copied to prepare again: one nested past the depth limit is not
/// (the copy would recurse that deep; the depth cut leaves it unshrinkable past its marker
/// anyway).
pub(crate) fn copyable(output: &ToolOutput<Value>) -> bool {
    !output
        .envelope
        .data()
        .is_some_and(|data| nested_deeper_than(data, MAX_DEPTH))
}

/// A copy of `output` to prepare again, with what the encoder cut. What the encoder measured
/// is left behind: it describes the rows as first converted, and the trimmer measures them
/// itself without it.
pub(crate) fn spare_of(
    output: &ToolOutput<Value>,
    encoded: &Encoded,
) -> (ToolOutput<Value>, Encoded) {
    let copy = ToolOutput {
        envelope: output.envelope.clone(),
        baseline: output.baseline.clone(),
        controls: output.controls.clone(),
        resume: output.resume.clone(),
        attachments: Vec::new(),
    };
    (copy, encoded.cut_only())
}

/// The budget stage's response written by `form`, kept within the call's budget on the bytes
/// `form` writes: prepared again from a copy of `output` under a lowered budget while they are
/// over it (see the module). `size` measures what is sent, in token-normalized characters.
pub(crate) fn prepare_sent(
    output: ToolOutput<Value>,
    encoded: Encoded,
    call: &CallBudget,
    form: &dyn Fn(Prepared) -> Prepared,
    size: &dyn Fn(&Prepared) -> u64,
) -> Prepared {
    let policy = call.policy();
    let budget = output
        .envelope
        .data()
        .and_then(|data| call.budget_for(data));
    // Made before knowing whether it is needed: the output is consumed by the first pass.
    let spare = budget
        .filter(|_| copyable(&output))
        .map(|_| spare_of(&output, &encoded));
    let first = prepare_within(output, encoded, call, None);
    let trimmed = estimated_size(&first, policy);
    let sent = form(first);
    match (budget, spare) {
        (Some(budget), Some(spare)) => {
            again_while_over(sent, trimmed, budget, &spare, call, form, size)
        }
        _ => sent,
    }
}

/// `sent`, or while `size` puts it over `budget`, the response prepared again from `spare`
/// under a budget lowered by how far over it came (`trimmed` is what the trimmer measured of
/// the pass that was sent), each pass written by `form`: at most [`MAX_RETRIES`] passes, and
/// none below a budget of one.
pub(crate) fn again_while_over(
    mut sent: Prepared,
    mut trimmed: u64,
    budget: usize,
    spare: &(ToolOutput<Value>, Encoded),
    call: &CallBudget,
    form: &dyn Fn(Prepared) -> Prepared,
    size: &dyn Fn(&Prepared) -> u64,
) -> Prepared {
    let mut target = budget;
    for _ in 0..MAX_RETRIES {
        let over = size(&sent);
        if over <= budget as u64 || target <= 1 {
            break;
        }
        target = lowered(target, budget, trimmed, over);
        let (output, encoded) = spare_of(&spare.0, &spare.1);
        let again = prepare_within(output, encoded, call, Some(target));
        trimmed = estimated_size(&again, call.policy());
        sent = form(again);
    }
    sent
}

//! Keeping a budget by the exact token count (feature `exact`).
//!
//! The estimator is linear in a text's counts, which holds a kind of text as a whole within a
//! few percent but one response of it only within about a fifth (see the crate README). Trimming
//! stays on the estimate, whose counts add up row by row; an [`ExactCounter`] then checks the
//! bytes about to be sent. When they are over the budget, the response is prepared again from a
//! copy of the tool's output against a budget lowered by how far off the estimate was, until the
//! exact count fits or [`MAX_RETRIES`] passes have been spent.
//!
//! The budget stage ([`prepare`](crate::prepare)) does the passes, here. Two
//! policies use it ([`BudgetPolicy`](crate::BudgetPolicy)):
//! - `exact`: every response is counted exactly and stamped `tokens_method: "exact_*"`;
//! - `exact_when_tight`: only a response whose estimate is within [`TIGHT_MARGIN`] of its
//!   budget is, so a response far within its budget is never counted exactly (it still pays
//!   for the copy of its payload kept in case it must be prepared again).

use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::stage::{Controls, ToolOutput};
use serde_json::{Value, json};

use crate::again::{again_while_over, copyable, estimated_size, normalized, spare_of};
use crate::call::CallBudget;
use crate::encode::Encoded;
use crate::pass::prepare_within;
use crate::policy::BudgetPolicy;
use crate::prepared::{Outcome, Prepared, with_mirror};
use crate::tokens::ExactCounter;

/// How close to its budget, as a fraction of it, an estimated response must come to be counted
/// exactly under `exact_when_tight`: the estimator's worst error on one response of held-out
/// text is about 17%.
pub const TIGHT_MARGIN: f64 = 0.2;

pub use crate::again::MAX_RETRIES;

/// Which exact counting a policy asks for: `always` stamps every response exactly.
pub(crate) struct ExactCheck {
    pub(crate) counter: ExactCounter,
    pub(crate) always: bool,
}

impl ExactCheck {
    /// The exact counting `policy` asks for, if any.
    pub(crate) fn of(policy: &BudgetPolicy) -> Option<ExactCheck> {
        match (policy.exact, policy.exact_when_tight) {
            (Some(counter), _) => Some(ExactCheck {
                counter,
                always: true,
            }),
            (None, Some(counter)) => Some(ExactCheck {
                counter,
                always: false,
            }),
            (None, None) => None,
        }
    }
}

/// Whether a response whose estimate is `estimated` comes close enough to `budget` to be
/// counted exactly under `exact_when_tight`.
fn is_tight(estimated: u64, budget: usize) -> bool {
    estimated as f64 >= budget as f64 * (1.0 - TIGHT_MARGIN)
}

/// Re-stamps `tokens_estimated` with the exact count of the final bytes, itself included: a
/// count is written, the bytes counted again, until the count is a fixed point (a digit more
/// can change it).
fn stamp_exact(structured: &mut Value, counter: ExactCounter) {
    let set = |structured: &mut Value, key: &str, value: Value| {
        if let Some(Value::Object(meta)) = structured.get_mut(field::META) {
            meta.insert(key.to_owned(), value);
        }
    };
    // The method is stamped only where the mode stamps it (`response_mode: full`).
    let stamps_method = structured[field::META].get(keys::TOKENS_METHOD).is_some();
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

/// [`prepare`](crate::prepare) with the budget kept by `check`'s exact count (see the module),
/// of an output whose payload is encoded.
pub(crate) fn prepare_exactly(
    output: ToolOutput<Value>,
    encoded: Encoded,
    call: &CallBudget,
    check: ExactCheck,
) -> Prepared {
    let (policy, controls) = (call.policy(), output.controls.clone());
    let controls = &controls;
    let budget = output
        .envelope
        .data()
        .and_then(|data| call.budget_for(data));
    // What to prepare again from when the exact count is over. Made before knowing whether it
    // is needed: the output is consumed by the first pass. With the budget-aware encoder a
    // list payload holds little more than a budget's worth of rows; a graph is whole.
    let spare = budget
        .filter(|_| copyable(&output))
        .map(|_| spare_of(&output, &encoded));
    let prepared = prepare_within(output, encoded, call, None);
    let estimated = estimated_size(&prepared, policy);
    if !check.always && !budget.is_some_and(|budget| is_tight(estimated, budget)) {
        return prepared;
    }
    let stamp = |prepared| stamped_exactly(prepared, check.counter, controls);
    let prepared = stamp(prepared);
    match (budget, spare) {
        (Some(budget), Some(spare)) => again_while_over(
            prepared,
            estimated,
            budget,
            &spare,
            call,
            &stamp,
            &exact_size,
        ),
        _ => prepared,
    }
}

/// The response's size in token-normalized characters by its exact stamp.
fn exact_size(prepared: &Prepared) -> u64 {
    let tokens = prepared.tokens_estimated.unwrap_or(u64::MAX / 4);
    normalized(&prepared.json, tokens)
}

/// `prepared` stamped with `counter`'s exact count of its own JSON, that count included, and
/// its JSON and text mirror written again.
fn stamped_exactly(
    prepared: Prepared,
    counter: crate::ExactCounter,
    controls: &Controls,
) -> Prepared {
    let Prepared {
        ok,
        request_id,
        mut structured,
        leftovers,
        ..
    } = prepared;
    stamp_exact(&mut structured, counter);
    let json = serde_json::to_string(&structured).unwrap_or_default();
    with_mirror(
        Outcome { ok, request_id },
        structured,
        json,
        controls,
        leftovers,
    )
}

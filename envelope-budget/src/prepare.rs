//! The boundary: a tool's output in, the bytes an agent receives out.
//!
//! [`prepare`] encodes the tool's typed payload (rows that could never be sent are not even
//! converted), then shapes the response to the per-call controls, trims it to its budget,
//! reconciles `completeness` and `next_step` with the rows actually sent, and stamps the token
//! accounting of those bytes, itself included: one pass by the estimate ([`crate::pass`]), or
//! passes checked by an exact count when the policy asks for it (feature `exact`).

use envelope_core::stage::{ToolOutput, carry_arguments, to_value_within};
use serde_json::Value;

use crate::call::CallBudget;
use crate::encode::Encoded;
use crate::prepared::Prepared;

/// Encodes, shapes, trims and stamps one tool's output (an envelope converts into one) under
/// `budget`, the call's ([`BudgetPolicy::for_call`](crate::BudgetPolicy::for_call)). The
/// response is shaped by the controls the output carries
/// ([`ToolOutput::with_controls`]; a tool's entry decodes them from its arguments).
///
/// Attached media are placed first: they may take up to
/// [`MEDIA_SHARE_PERCENT`](crate::MEDIA_SHARE_PERCENT) of the budget, the envelope is trimmed to
/// what they leave, and `meta.attachments` says of each whether it was sent, linked or dropped.
pub fn prepare(output: impl Into<ToolOutput>, budget: &CallBudget) -> Prepared {
    let mut output = output.into();
    // What the call asked that the calls it is offered ask again: carried here, before the
    // trim measures the actions, and by the next page the trim may mint.
    let carried = output.controls.carried();
    if !carried.is_empty() {
        carry_arguments(&mut output.envelope, &carried);
        output.resume = output.resume.map(|resume| resume.carrying(&carried));
    }
    let attachments = std::mem::take(&mut output.attachments);
    let placed = crate::media::place(attachments, budget.media_chars(), &mut output.envelope);
    let budget = &budget.less_media(placed.chars);
    let (output, encoded) = encode(output, budget);
    #[cfg(feature = "exact")]
    if let Some(check) = crate::exactly::ExactCheck::of(budget.policy()) {
        let mut prepared = crate::exactly::prepare_exactly(output, encoded, budget, check);
        prepared.attachments = placed.sent;
        return prepared;
    }
    let mut prepared = crate::pass::prepare_within(output, encoded, budget, None);
    prepared.attachments = placed.sent;
    prepared
}

/// The output with its payload encoded: by the call's budget encoder, under the runtime's
/// panic capture; whole, when nothing is trimmed.
fn encode(output: ToolOutput, budget: &CallBudget) -> (ToolOutput<Value>, Encoded) {
    match budget.encoder() {
        Some(encoder) => output.encode_payload(|payload| encoder.encode(payload)),
        None => {
            output.encode_payload(|payload| Ok((to_value_within(&payload, 0)?, Encoded::default())))
        }
    }
}

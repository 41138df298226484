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
    prepare_in(output.into(), budget, None)
}

/// [`prepare`], for a response sent in another form than the envelope's own: `form` writes each
/// pass of the budget stage in it (another contract's dialect), and the budget holds on the
/// bytes `form` writes. While they are over it, the response is prepared again from a copy of
/// the tool's output under a lowered budget (at most
/// [`MAX_RETRIES`](crate::MAX_RETRIES) times); one that cannot fit even so is the
/// trimmer's unshrinkable answer, `meta.envelope_unshrinkable`, in whatever place `form` gives
/// it. `form` must keep [`Prepared::tokens_estimated`] the count of its [`Prepared::json`].
///
/// ```
/// use envelope_budget::{BudgetPolicy, Prepared, prepare_as};
/// use envelope_core::Envelope;
/// use serde_json::json;
///
/// let budget = BudgetPolicy::default().with_agent_chars(Some(2_000)).for_call(None);
/// let rows: Vec<_> = (0..1_000).map(|i| json!({ "line": i })).collect();
/// // A form that spells every row's key five times longer than the envelope does.
/// let verbose = |prepared: Prepared| {
///     let json = prepared.json.replace("\"line\"", "\"line_number_\"");
///     Prepared { tokens_estimated: Some(json.len() as u64 / 4), json, ..prepared }
/// };
/// let sent = prepare_as(Envelope::ok(json!(rows)), &budget, &verbose);
/// assert!(sent.json.chars().count() <= 2_000);
/// ```
pub fn prepare_as(
    output: impl Into<ToolOutput>,
    budget: &CallBudget,
    form: &dyn Fn(Prepared) -> Prepared,
) -> Prepared {
    prepare_in(output.into(), budget, Some(form))
}

/// [`prepare`] or [`prepare_as`]: the budget kept on what `form` writes, when there is one.
fn prepare_in(
    mut output: ToolOutput,
    budget: &CallBudget,
    form: Option<&dyn Fn(Prepared) -> Prepared>,
) -> Prepared {
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
    let mut prepared = match form {
        Some(form) => {
            let policy = *budget.policy();
            let size = move |sent: &Prepared| sent_size(&policy, sent);
            crate::again::prepare_sent(output, encoded, budget, form, &size)
        }
        None => prepare_envelope(output, encoded, budget),
    };
    prepared.attachments = placed.sent;
    prepared
}

/// The envelope's own response: one pass by the estimate, or passes checked by the exact count.
fn prepare_envelope(output: ToolOutput<Value>, encoded: Encoded, budget: &CallBudget) -> Prepared {
    #[cfg(feature = "exact")]
    if let Some(check) = crate::exactly::ExactCheck::of(budget.policy()) {
        return crate::exactly::prepare_exactly(output, encoded, budget, check);
    }
    crate::pass::prepare_within(output, encoded, budget, None)
}

/// The size of what is sent in another form, in token-normalized characters: by the exact
/// count under a policy that counts exactly, else by the count the form stamped.
fn sent_size(policy: &crate::BudgetPolicy, sent: &Prepared) -> u64 {
    #[cfg(feature = "exact")]
    if let Some(counter) = policy.exact.or(policy.exact_when_tight) {
        return crate::again::normalized(&sent.json, counter.count(&sent.json) as u64);
    }
    crate::again::estimated_size(sent, policy)
}

/// The output with its payload encoded: by the call's budget encoder, under the runtime's
/// panic capture; whole, when nothing is trimmed.
fn encode(output: ToolOutput, budget: &CallBudget) -> (ToolOutput<Value>, Encoded) {
    match budget.encoder() {
        Some(encoder) => output.encode_payload_measuring(
            |payload| encoder.encode(payload),
            |json| encoder.measure_json(json),
        ),
        None => {
            output.encode_payload(|payload| Ok((to_value_within(&payload, 0)?, Encoded::default())))
        }
    }
}

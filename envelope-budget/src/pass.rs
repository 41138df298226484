//! One pass of the budget stage, by the estimate: the own fields shaped and fitted, the payload
//! trimmed down the ladder, `completeness` reconciled with the rows kept, the stamps written.

use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::stage::{Controls, ToolOutput, take_data};
use serde_json::{Map, Value, json};

use crate::call::CallBudget;
use crate::cut::{Leftovers, ListCut, ROOT_LIST_KEY};
use crate::encode::{Encoded, MeasuredLists};
use crate::own_fields;
use crate::prepared::{Outcome, Prepared, with_mirror};
use crate::prose::{prose_reserve, reconcile_prose};
use crate::reconcile::{
    Continue, Described, completeness_reserve, keep_orphan_token, reconcile_completeness,
};
use crate::shape::shape;
use crate::size::rest_counts;
use crate::stamps::{
    STAMPS_RESERVE, StampBase, merge_markers, reserve_stamps, stamp_tokens, stamped_rest_counts,
};
use crate::subgraph::is_graph;
use crate::tokens::{Counts, Estimator};
use crate::trim::{MAX_DEPTH, cut_depth, nested_deeper_than, trim_measured};
use crate::write::{write_fitting, write_response};

/// [`prepare`](crate::prepare) by the estimate alone, of an output whose payload is encoded:
/// `encoded` is what the encoder cut and measured. `lowered` replaces the policy's budget for
/// the payload when given (the exact check lowers it).
pub(crate) fn prepare_within(
    output: ToolOutput<Value>,
    encoded: Encoded,
    budget: &CallBudget,
    lowered: Option<usize>,
) -> Prepared {
    let ToolOutput {
        mut envelope,
        baseline,
        controls,
        resume,
        // Placed by `prepare` before the payload was encoded.
        attachments: _,
    } = output;
    let Encoded { precut, measured } = encoded;
    let call = budget;
    let policy = call.policy();
    let controls = &controls;
    let outcome = Outcome::of(&envelope);
    let data = take_data(&mut envelope);
    // What the envelope says of its rows, typed, beside the JSON written from it.
    let described = Described {
        completeness: envelope.completeness(),
        actions: envelope.next_actions(),
    };
    // How long the list `completeness` describes was: its `next_step` is written again from
    // it when cut; another cut list the prose speaks of is led by what was sent.
    let described_rows = described
        .completeness
        .map(|completeness| completeness.returned());
    // Savings are observability-only: `compact` leaves them out with the rest of that group.
    let full = controls.keeps_full_meta();
    let baseline = baseline.filter(|_| full);
    // How the count was made is observability too: a model cannot act on it.
    let method = full.then(|| policy.estimator.method());
    let mut rest = match serde_json::to_value(&envelope) {
        Ok(Value::Object(rest)) => rest,
        // An envelope always serializes to an object; keep going with an empty one if not.
        _ => Map::new(),
    };
    shape(&mut rest, controls);
    keep_orphan_token(
        &mut rest,
        described
            .completeness
            .and_then(|completeness| completeness.continuation()),
    );
    let estimator = policy.estimator;
    let budget = data
        .as_ref()
        .and_then(|data| call.budget_for(data))
        .map(|policed| lowered.unwrap_or(policed));
    // The envelope's own fields obey the budget too: all of it without a payload (an error);
    // beside one, half of it, checked below once the rest is sized anyway.
    if data.is_none()
        && let Some(limit) = call.budget_for(&Value::Null)
    {
        // Every answer under a budget says whether it was cut, an error's too.
        if let Some(Value::Object(meta)) = rest.get_mut(field::META) {
            meta.entry(keys::TRUNCATED).or_insert(json!(false));
        }
        let limit = limit.saturating_sub(STAMPS_RESERVE);
        fit_own_fields(&mut rest, limit, estimator, |rest| rest_counts(rest, false));
    }

    let measured = Some(&measured);
    // The common case: the payload was converted whole and the response fits. It is written
    // out once, and its token count spliced into those bytes.
    if let (Some(budget), Some(payload), Some(whole)) =
        (budget, &data, measured.and_then(MeasuredLists::whole))
        && precut.is_empty()
        && baseline.is_none()
        && !nested_deeper_than(payload, MAX_DEPTH)
    {
        let bare_list = payload.as_array().map(Vec::len);
        let reserve = completeness_reserve(&rest, described, resume.as_ref(), bare_list)
            + prose_reserve(&rest, payload, &precut, described_rows);
        if let Some(json) = write_fitting(&mut rest, whole, reserve, budget, estimator, method) {
            return finish(outcome, rest, data, json, controls, Leftovers::default());
        }
    }

    let mut leftovers = Leftovers::default();
    // The counts of everything but the payload and the token count, when known without
    // writing the rest out again (see `stamped_rest_counts`).
    let mut rest_base = None;
    // The payload's JSON as the encoder wrote it, while the payload stays as encoded.
    let mut data_json = measured
        .and_then(MeasuredLists::whole)
        .filter(|_| precut.is_empty())
        .map(|whole| whole.json.as_str());
    let (data, data_counts) = match (budget, data) {
        (Some(budget), Some(payload)) => {
            // Stamps written after trimming take room: size them at their widest now.
            reserve_stamps(&mut rest, baseline.as_ref(), method.is_some());
            let mut reserved = rest_counts(&rest, true);
            // What reconciling a cut may write is own fields too: sized with them, so that
            // trimming the result again changes nothing.
            let bare_list = payload.as_array().map(Vec::len);
            let mut reserve = completeness_reserve(&rest, described, resume.as_ref(), bare_list)
                + prose_reserve(&rest, &payload, &precut, described_rows);
            // Half the budget for the envelope's own fields, which leaves the payload the rest.
            if estimator.normalized_size(&(reserved + reserve)) > (budget / 2) as u64 {
                fit_own_fields(&mut rest, budget / 2, estimator, |rest| {
                    rest_counts(rest, true) + reserve
                });
                reserved = rest_counts(&rest, true);
                reserve = completeness_reserve(&rest, described, resume.as_ref(), bare_list)
                    + prose_reserve(&rest, &payload, &precut, described_rows);
            }
            let fixed = reserved + reserve;
            // A subgraph cut keeps ranked rows, not a prefix: no position resumes after it.
            let resumable = resume.as_ref().filter(|_| !is_graph(&payload));
            let trimmed = trim_measured(
                payload,
                fixed,
                budget,
                estimator,
                policy.list_order,
                &precut,
                measured,
            );
            if trimmed.cut_any {
                data_json = None;
            }
            let untouched = !trimmed.cut_any
                && !trimmed.unshrinkable
                && trimmed.markers.is_empty()
                && trimmed.list_cuts.is_empty();
            if untouched {
                // Nothing to mark or reconcile: the rest is as sized, but for the stamps.
                rest_base = baseline
                    .is_none()
                    .then(|| stamped_rest_counts(reserved, method));
            } else {
                merge_markers(
                    &mut rest,
                    trimmed.markers,
                    trimmed.cut_any,
                    trimmed.unshrinkable,
                );
                reconcile_prose(&mut rest, &trimmed.list_cuts, described_rows);
                reconcile_completeness(
                    &mut rest,
                    described,
                    &trimmed.list_cuts,
                    Continue::after(resumable),
                );
            }
            leftovers = trimmed.leftovers;
            (Some(trimmed.data), trimmed.data_counts)
        }
        (None, Some(payload)) => {
            // No budget, but nesting too deep to serialize safely is still cut.
            data_json = None;
            let trimmed = cut_depth(payload);
            if trimmed.cut_any {
                merge_markers(&mut rest, trimmed.markers, true, false);
            }
            // Without a budget no encoder should have cut anything; if one did, say so.
            let cuts: Vec<ListCut> = precut
                .iter()
                .map(|(key, full)| ListCut {
                    key: key.clone(),
                    from: *full,
                    to: list_len(&trimmed.data, key),
                })
                .collect();
            if !cuts.is_empty() {
                let markers = cuts
                    .iter()
                    .flat_map(|cut| {
                        [
                            (keys::list_cut_from(&cut.key), json!(cut.from)),
                            (keys::list_cut_to(&cut.key), json!(cut.to)),
                        ]
                    })
                    .collect();
                merge_markers(&mut rest, markers, true, false);
                reconcile_prose(&mut rest, &cuts, described_rows);
                reconcile_completeness(
                    &mut rest,
                    described,
                    &cuts,
                    Continue::after(resume.as_ref()),
                );
            }
            leftovers = trimmed.leftovers;
            (Some(trimmed.data), trimmed.data_counts)
        }
        (_, None) => (None, Counts::default()),
    };

    stamp_tokens(
        &mut rest,
        StampBase {
            with_data: data.is_some(),
            data_counts,
            rest: rest_base,
        },
        estimator,
        method,
        baseline.as_ref(),
    );
    // The payload is most of the text; when it went out as encoded, its JSON is not written
    // a second time.
    let spliced = match (&data, data_json) {
        (Some(_), Some(data_json)) => Some(write_response(&rest, Some(data_json)).json),
        _ => None,
    };
    let mut structured = rest;
    if let Some(data) = data {
        structured.insert(field::DATA.to_owned(), data);
    }
    let structured = Value::Object(structured);
    let json = spliced.unwrap_or_else(|| serde_json::to_string(&structured).unwrap_or_default());
    with_mirror(outcome, structured, json, controls, leftovers)
}

/// The response from its own fields and payload, written out as `json`.
fn finish(
    outcome: Outcome,
    mut rest: Map<String, Value>,
    data: Option<Value>,
    json: String,
    controls: &Controls,
    leftovers: Leftovers,
) -> Prepared {
    if let Some(data) = data {
        rest.insert(field::DATA.to_owned(), data);
    }
    with_mirror(outcome, Value::Object(rest), json, controls, leftovers)
}

/// The length of the list under `key` in `data` (the payload itself for the root list).
fn list_len(data: &Value, key: &str) -> usize {
    match data {
        Value::Array(items) if key == ROOT_LIST_KEY => items.len(),
        _ => data.get(key).and_then(Value::as_array).map_or(0, Vec::len),
    }
}

/// Cuts the envelope's own fields (`rest`) to `limit` as measured by `size`, and says so in
/// `meta` when anything was cut.
fn fit_own_fields(
    rest: &mut Map<String, Value>,
    limit: usize,
    estimator: Estimator,
    size: impl Fn(&Map<String, Value>) -> Counts,
) {
    let fitted = own_fields::fit(rest, limit, estimator, size);
    if fitted.cut_any {
        merge_markers(rest, Default::default(), true, fitted.unshrinkable);
    }
}

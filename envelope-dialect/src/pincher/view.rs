//! A pincher answer read back as the envelope it carries.

use envelope_core::fields::{envelope as field, error, meta as meta_field, next_action as action};
use envelope_core::paging::{DEFAULT_CONTINUATION_FIELD, NEXT_PAGE};
use envelope_core::stage::ControlNames;
use serde::Deserialize;
use serde_json::{Map, Value};

use super::meta::RENAMED_EMPTY_REASONS;
use super::notices;
use super::wire::{Entry, Response, Step};
use crate::copy;
use crate::typed::unreadable;

/// `{result, _meta}` as an envelope: `result` as `data`; a failure (`result` null, its error
/// the first `diagnosis_v2` entry, of severity `error`) as the envelope's `error`; `next_steps` as
/// next actions (the one whose `args` carry a continuation is the `next-page` action);
/// a `truncated` warning's completeness as `completeness`, its markers in `meta`; the
/// remaining `warnings_v2` and `diagnosis_v2` entries as warnings and diagnostics; the
/// empty reason renamed back; `request_id`, tier and latency in `meta`.
pub(crate) fn view(answer: &Value) -> Value {
    // Read through the type it is written from; an answer of another shape is not this
    // dialect's, and reads as a failure that says so.
    let response = match Response::deserialize(answer) {
        Ok(response) => response,
        Err(error) => return unreadable("a pincher answer", &error),
    };
    let failed = response.failure().is_some();
    let Response { result, mut meta } = response;
    let mut diagnoses = std::mem::take(&mut meta.diagnosis_v2);
    let failure = failed.then(|| diagnoses.remove(0));
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(failure.is_none()));
    if let Some(entry) = &failure {
        out.insert(field::ERROR.to_owned(), error_of(entry));
    } else {
        out.insert(field::DATA.to_owned(), result);
    }
    let mut envelope_meta = Map::new();
    copy::put(
        &mut envelope_meta,
        meta_field::REQUEST_ID,
        meta.request_id.as_ref(),
    );
    copy::put(
        &mut envelope_meta,
        meta_field::COMPLEXITY_TIER,
        meta.complexity_tier.as_ref(),
    );
    copy::put(
        &mut envelope_meta,
        meta_field::LATENCY_MS,
        meta.latency_ms.as_ref(),
    );
    copy::put(
        &mut envelope_meta,
        meta_field::CAPABILITIES,
        meta.capabilities.as_ref(),
    );
    copy::put(
        &mut envelope_meta,
        meta_field::BINARY_DRIFT_WARNING,
        meta.binary_drift_warning.as_ref(),
    );
    copy::put(
        &mut envelope_meta,
        meta_field::SCHEMA_VERSION_AT_INDEX,
        meta.schema_version_at_index.as_ref(),
    );
    let mut warnings = Vec::new();
    for entry in meta.warnings_v2 {
        if entry.code != notices::TRUNCATED {
            warnings.push(entry);
            continue;
        }
        if let Some(Value::Object(data)) = entry.data {
            for (name, value) in data {
                if name == field::COMPLETENESS {
                    out.insert(name, value);
                } else {
                    envelope_meta.insert(name, value);
                }
            }
        }
    }
    // The envelope's warnings that pincher files as diagnoses (`unknown_arg`) go back.
    let (filed, diagnoses): (Vec<Entry>, Vec<Entry>) =
        diagnoses.into_iter().partition(notices::is_diagnosis);
    warnings.extend(filed);
    copy::put_list(&mut out, field::WARNINGS, &warnings);
    copy::put_list(&mut out, field::DIAGNOSTICS, &diagnoses);
    let actions = next_actions(&meta.next_steps);
    if !actions.is_empty() {
        out.insert(field::NEXT_ACTIONS.to_owned(), Value::Array(actions));
    }
    if let Some(reason) = &meta.empty_reason {
        out.insert(
            field::EMPTY_REASON.to_owned(),
            Value::from(empty_reason(reason)),
        );
        if failure.is_none()
            && let Some(diagnosis) = &meta.diagnosis
        {
            out.insert(field::DIAGNOSIS.to_owned(), Value::from(diagnosis.as_str()));
        }
    }
    out.insert(field::META.to_owned(), Value::Object(envelope_meta));
    Value::Object(out)
}

/// Whether `answer` says the call worked: it reads as a pincher answer that is not a failure.
pub(super) fn succeeded(answer: &Value) -> bool {
    Response::deserialize(answer).is_ok_and(|response| response.failure().is_none())
}

/// The envelope's `error` from its `diagnosis_v2` entry.
fn error_of(entry: &Entry) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(data)) = &entry.data {
        out.extend(
            data.iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
    }
    out.insert(
        error::MESSAGE.to_owned(),
        Value::from(entry.message.as_str()),
    );
    let category = out.get(error::CATEGORY).and_then(Value::as_str);
    if Some(entry.code.as_str()) != category {
        out.insert(error::CODE.to_owned(), Value::from(entry.code.as_str()));
    }
    Value::Object(out)
}

/// `next_steps` as next actions, in order: `{tool, args, why}` as `{id, role, tool,
/// arguments, reason}`, the step whose `args` carry a continuation (under the control's name,
/// or its renamed one) being `next-page`.
fn next_actions(steps: &[Step]) -> Vec<Value> {
    steps
        .iter()
        .enumerate()
        .map(|(at, step)| {
            // Under its own name, or renamed where the tool takes an argument of that name.
            let pages = step
                .args
                .keys()
                .any(|name| ControlNames::may_name(DEFAULT_CONTINUATION_FIELD, name));
            let id = if pages {
                NEXT_PAGE.to_owned()
            } else {
                format!("step-{}", at + 1)
            };
            let role = if pages { "broaden_scope" } else { "inspect" };
            let mut action_out = Map::new();
            action_out.insert(action::ID.to_owned(), Value::from(id));
            action_out.insert(action::ROLE.to_owned(), Value::from(role));
            action_out.insert(action::TOOL.to_owned(), Value::from(step.tool.as_str()));
            action_out.insert(
                action::ARGUMENTS.to_owned(),
                Value::Object(step.args.clone()),
            );
            let why = step.why.as_deref().unwrap_or(&step.tool);
            action_out.insert(action::REASON.to_owned(), Value::from(why));
            Value::Object(action_out)
        })
        .collect()
}

/// The envelope's empty reason for pincher's `reason` (renamed ones back, the rest as named).
fn empty_reason(reason: &str) -> String {
    RENAMED_EMPTY_REASONS
        .iter()
        .find(|(_, pincher)| *pincher == reason)
        .map_or_else(
            || reason.to_owned(),
            |(envelope, _)| envelope.as_str().to_owned(),
        )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_step_carrying_a_renamed_continuation_is_the_next_page() {
        let answer = json!({
            "result": ["row"],
            "_meta": {
                "next_steps": [
                    // A tool that takes a `continuation` of its own pages by the renamed one,
                    // which the step carries alone.
                    { "tool": "read", "args": { "path": "p", "envelope_continuation": "tok" } },
                    { "tool": "read", "args": { "path": "other" } },
                ],
            },
        });
        let envelope = view(&answer);
        let ids: Vec<&str> = envelope[field::NEXT_ACTIONS]
            .as_array()
            .expect("next actions")
            .iter()
            .filter_map(|next| next[action::ID].as_str())
            .collect();
        assert_eq!(ids, [NEXT_PAGE, "step-2"], "{envelope}");
    }
}

//! A pincher answer read back as the envelope it carries.

use envelope_core::fields::{envelope as field, error, meta as meta_field, next_action as action};
use envelope_core::paging::{DEFAULT_CONTINUATION_FIELD, NEXT_PAGE};
use serde_json::{Map, Value};

use super::meta::RENAMED_EMPTY_REASONS;
use super::notices;
use super::{META, RESULT};
use crate::copy;

/// `{result, _meta}` as an envelope: `result` as `data`; a failure (`result` null, its error
/// the first `diagnosis_v2` entry, of severity `error`) as the envelope's `error`; `next_steps` as
/// next actions (the one whose `args` carry a continuation is the `next-page` action);
/// a `truncated` warning's completeness as `completeness`, its markers in `meta`; the
/// remaining `warnings_v2` and `diagnosis_v2` entries as warnings and diagnostics; the
/// empty reason renamed back; `request_id`, tier and latency in `meta`.
pub(crate) fn view(answer: &Value) -> Value {
    let empty = Map::new();
    let meta = answer
        .get(META)
        .and_then(Value::as_object)
        .unwrap_or(&empty);
    let mut diagnoses: Vec<Value> = list(meta, "diagnosis_v2");
    let failure = failure_of(answer).map(|_| diagnoses.remove(0));
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(failure.is_none()));
    if let Some(entry) = &failure {
        out.insert(field::ERROR.to_owned(), error_of(entry));
    } else if let Some(result) = answer.get(RESULT) {
        out.insert(field::DATA.to_owned(), result.clone());
    }
    let mut envelope_meta = Map::new();
    copy::present(
        &mut envelope_meta,
        &[
            meta_field::REQUEST_ID,
            meta_field::COMPLEXITY_TIER,
            meta_field::LATENCY_MS,
            meta_field::CAPABILITIES,
            meta_field::BINARY_DRIFT_WARNING,
            meta_field::SCHEMA_VERSION_AT_INDEX,
        ],
        |key| meta.get(key),
    );
    let mut warnings = Vec::new();
    for entry in list(meta, "warnings_v2") {
        match entry.get("code").and_then(Value::as_str) {
            Some(notices::TRUNCATED) => {
                if let Some(Value::Object(data)) = entry.get("data") {
                    for (name, value) in data {
                        if name == field::COMPLETENESS {
                            out.insert(name.clone(), value.clone());
                        } else {
                            envelope_meta.insert(name.clone(), value.clone());
                        }
                    }
                }
            }
            _ => warnings.push(entry),
        }
    }
    // The envelope's warnings that pincher files as diagnoses (`unknown_arg`) go back.
    let (filed, diagnoses): (Vec<Value>, Vec<Value>) =
        diagnoses.into_iter().partition(notices::is_diagnosis);
    warnings.extend(filed);
    if !warnings.is_empty() {
        out.insert(field::WARNINGS.to_owned(), Value::Array(warnings));
    }
    if !diagnoses.is_empty() {
        out.insert(field::DIAGNOSTICS.to_owned(), Value::Array(diagnoses));
    }
    let actions = next_actions(meta);
    if !actions.is_empty() {
        out.insert(field::NEXT_ACTIONS.to_owned(), Value::Array(actions));
    }
    if let Some(reason) = meta.get("empty_reason").and_then(Value::as_str) {
        out.insert(
            field::EMPTY_REASON.to_owned(),
            Value::from(empty_reason(reason)),
        );
        if failure.is_none()
            && let Some(diagnosis) = meta.get("diagnosis")
        {
            out.insert(field::DIAGNOSIS.to_owned(), diagnosis.clone());
        }
    }
    out.insert(field::META.to_owned(), Value::Object(envelope_meta));
    Value::Object(out)
}

/// The entries of the list `key` in `_meta` (none when absent or not a list).
fn list(meta: &Map<String, Value>, key: &str) -> Vec<Value> {
    meta.get(key)
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
}

/// Whether a `diagnosis_v2` entry is a failed call's error: severity `error`, its data naming
/// a category.
fn is_error_entry(entry: &Value) -> bool {
    entry.get("severity").and_then(Value::as_str) == Some("error")
        && entry
            .pointer(&format!("/data/{}", error::CATEGORY))
            .is_some_and(Value::is_string)
}

/// The error of a failed answer: its `result` null (or absent, as older answers had it) and
/// its first `diagnosis_v2` entry the error (severity `error`, with `data.category`), as a
/// failure is written. `None` for a success.
pub(super) fn failure_of(answer: &Value) -> Option<&Value> {
    if answer.get(RESULT).is_some_and(|result| !result.is_null()) {
        return None;
    }
    answer
        .get(META)?
        .get("diagnosis_v2")?
        .as_array()?
        .first()
        .filter(|entry| is_error_entry(entry))
}

/// The envelope's `error` from its `diagnosis_v2` entry.
fn error_of(entry: &Value) -> Value {
    let mut out = Map::new();
    if let Some(Value::Object(data)) = entry.get("data") {
        out.extend(
            data.iter()
                .map(|(name, value)| (name.clone(), value.clone())),
        );
    }
    if let Some(message) = entry.get("message") {
        out.insert(error::MESSAGE.to_owned(), message.clone());
    }
    let code = entry.get("code").and_then(Value::as_str);
    let category = out.get(error::CATEGORY).and_then(Value::as_str);
    if let Some(code) = code.filter(|code| Some(*code) != category) {
        out.insert(error::CODE.to_owned(), Value::from(code));
    }
    Value::Object(out)
}

/// `next_steps` as next actions, in order: `{tool, args, why}` as `{id, role, tool,
/// arguments, reason}`, the step whose `args` carry a continuation being `next-page`.
fn next_actions(meta: &Map<String, Value>) -> Vec<Value> {
    list(meta, "next_steps")
        .into_iter()
        .enumerate()
        .filter_map(|(at, step)| {
            let tool = step.get("tool")?.as_str()?;
            let arguments = step.get("args")?.as_object()?;
            let pages = arguments.contains_key(DEFAULT_CONTINUATION_FIELD);
            let id = if pages {
                NEXT_PAGE.to_owned()
            } else {
                format!("step-{}", at + 1)
            };
            let role = if pages { "broaden_scope" } else { "inspect" };
            let mut action_out = Map::new();
            action_out.insert(action::ID.to_owned(), Value::from(id));
            action_out.insert(action::ROLE.to_owned(), Value::from(role));
            action_out.insert(action::TOOL.to_owned(), Value::from(tool));
            action_out.insert(
                action::ARGUMENTS.to_owned(),
                Value::Object(arguments.clone()),
            );
            let why = step.get("why").and_then(Value::as_str).unwrap_or(tool);
            action_out.insert(action::REASON.to_owned(), Value::from(why));
            Some(Value::Object(action_out))
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

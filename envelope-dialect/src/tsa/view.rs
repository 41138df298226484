//! A TSA answer read back as the envelope it carries.

use envelope_core::fields::{
    completeness as counted, envelope as field, error, meta as meta_field,
};
use envelope_core::{Category, TruncationReason, Verdict};
use serde_json::{Map, Value, json};

use serde::Deserialize;

use super::keys;
use super::wire::Answer;
use crate::copy;
use crate::typed::unreadable;

/// The flat TSA object as an envelope: `success`, `verdict` and the triage fields under the
/// envelope's names; a failure's `error`/`error_type`/`hint`/`retryable`; each warning line
/// `"<code>: <message>"` as a notice; `next_actions` as they are; the trimmer's markers in
/// `meta`; `completeness` only where its counts say it exactly (a page cut by its size alone,
/// `listed_cap` written, or a whole collection); the payload (`data`, else the members no TSA
/// field claims). A TOON form's payload stays in `toon_content`, which is not decoded here.
pub(crate) fn view(answer: &Value) -> Value {
    // Read through the type it is written from; an answer of another shape is not this
    // dialect's, and reads as a failure that says so.
    let answer = match Answer::deserialize(answer) {
        Ok(answer) => answer,
        Err(error) => return unreadable("a tree-sitter-analyzer agent envelope", &error),
    };
    // A missing target is a success in this contract and the envelope's `not_found` failure.
    let missing =
        answer.success && answer.verdict == Some(Verdict::NotFound) && answer.error_type.is_some();
    let ok = answer.success && !missing;
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(ok));
    if missing {
        out.insert(field::ERROR.to_owned(), not_found(&answer));
        return Value::Object(out);
    }
    copy::put(&mut out, field::VERDICT, answer.verdict);
    copy::put(&mut out, field::SUMMARY_LINE, answer.summary_line.as_ref());
    copy::put(&mut out, field::NEXT_STEP, answer.next_step.as_ref());
    copy::put_list(&mut out, field::NEXT_ACTIONS, &answer.next_actions);
    if !ok {
        out.insert(field::ERROR.to_owned(), failure(&answer));
    }
    let warnings: Vec<Value> = answer.warnings.iter().map(|line| notice(line)).collect();
    if !warnings.is_empty() {
        out.insert(field::WARNINGS.to_owned(), Value::Array(warnings));
    }
    let counts = Counts::read(&answer);
    if let Some(completeness) = counts
        .as_ref()
        .and_then(|counts| counts.completeness(&answer))
    {
        out.insert(field::COMPLETENESS.to_owned(), completeness);
    }
    let markers: Map<String, Value> = answer
        .beside
        .iter()
        .filter(|(name, _)| is_marker(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if ok {
        out.insert(field::DATA.to_owned(), payload(&answer, counts.as_ref()));
    }
    let mut meta = Map::new();
    if !markers.is_empty() {
        meta.insert(meta_field::TRUNCATED.to_owned(), Value::Bool(true));
        meta.extend(markers);
    }
    out.insert(field::META.to_owned(), Value::Object(meta));
    Value::Object(out)
}

/// A trimmer marker the dialect copies to the top level.
fn is_marker(name: &str) -> bool {
    name.starts_with(meta_field::MARKER_PREFIX) && name != keys::TRUNCATED
}

/// The envelope's `error` from the flat failure fields: `error_type` is the category when it
/// names one, else the code.
fn failure(answer: &Answer) -> Value {
    let mut out = Map::new();
    if let Some(kind) = &answer.error_type {
        let is_category = Category::ALL
            .iter()
            .any(|category| category.as_str() == kind);
        let name = if is_category {
            error::CATEGORY
        } else {
            error::CODE
        };
        out.insert(name.to_owned(), Value::from(kind.as_str()));
    }
    copy::put(&mut out, error::MESSAGE, answer.error.as_ref());
    copy::put(&mut out, error::HINT, answer.hint.as_ref());
    copy::put(&mut out, error::RETRYABLE, answer.retryable);
    copy::put(&mut out, error::RETRY_AFTER_MS, answer.retry_after_ms);
    Value::Object(out)
}

/// The envelope's `not_found` error from a `NOT_FOUND` answer: its message the
/// `summary_line`, its hint the `next_step`, its code the `error_type` (unless that is the
/// category itself).
fn not_found(answer: &Answer) -> Value {
    let mut out = Map::new();
    out.insert(
        error::CATEGORY.to_owned(),
        Value::from(Category::NotFound.as_str()),
    );
    if let Some(kind) = answer
        .error_type
        .as_deref()
        .filter(|kind| *kind != Category::NotFound.as_str())
    {
        out.insert(error::CODE.to_owned(), Value::from(kind));
    }
    copy::put(&mut out, error::MESSAGE, answer.summary_line.as_ref());
    copy::put(&mut out, error::HINT, answer.next_step.as_ref());
    copy::put(&mut out, error::RETRYABLE, answer.retryable);
    Value::Object(out)
}

/// A warning line `"<code>: <message>"` as a notice (a line without a code is all message).
fn notice(line: &str) -> Value {
    let (code, message) = match line.split_once(": ") {
        Some((code, message)) if !code.contains(' ') => (code, message),
        _ => ("warning", line),
    };
    json!({ "code": code, "severity": "warning", "message": message })
}

/// The honest-truncation counts: `<units>_listed`, `<unit>_count`, `listed_cap`, `truncated`.
struct Counts {
    listed_key: String,
    count_key: Option<String>,
    unit: String,
    returned: u64,
    total: Option<u64>,
    truncated: bool,
    capped: bool,
}

impl Counts {
    /// The counts, when the answer lists a collection (`<units>_listed` beside `truncated`).
    fn read(answer: &Answer) -> Option<Counts> {
        let truncated = answer.truncated?;
        let top = &answer.beside;
        let (listed_key, returned) = top.iter().find_map(|(name, value)| {
            name.strip_suffix(keys::LISTED_SUFFIX)
                .filter(|plural| !plural.is_empty())
                .and(value.as_u64())
                .map(|returned| (name.clone(), returned))
        })?;
        let found = top.iter().find_map(|(name, value)| {
            let unit = name.strip_suffix(keys::COUNT_SUFFIX)?;
            let total = value.as_u64()?;
            listed_key
                .starts_with(unit)
                .then(|| (name.clone(), unit.to_owned(), total))
        });
        let plural = listed_key.trim_end_matches(keys::LISTED_SUFFIX);
        let (count_key, unit, total) = match found {
            Some((key, unit, total)) => (Some(key), unit, Some(total)),
            None => (None, plural.trim_end_matches('s').to_owned(), None),
        };
        Some(Counts {
            listed_key,
            count_key,
            unit: unit.replace('_', " "),
            returned,
            total,
            truncated,
            capped: answer.listed_cap.is_some(),
        })
    }

    /// `completeness`, when the counts determine it: a page cut by its size alone, or a whole
    /// collection with its exact total. Any other cut's reasons are not in the wire.
    fn completeness(&self, answer: &Answer) -> Option<Value> {
        let offset = answer
            .beside
            .iter()
            .find(|(name, _)| name.ends_with(keys::OFFSET_SUFFIX))
            .and_then(|(_, value)| value.as_u64());
        let mut out = Map::new();
        out.insert(counted::UNIT.to_owned(), Value::from(self.unit.as_str()));
        out.insert(counted::RETURNED.to_owned(), Value::from(self.returned));
        if let Some(offset) = offset {
            out.insert(counted::OFFSET.to_owned(), Value::from(offset));
        }
        if let Some(total) = self.total {
            out.insert(counted::TOTAL.to_owned(), Value::from(total));
        }
        match (self.truncated, self.capped) {
            (true, true) => {
                out.insert(counted::COMPLETE.to_owned(), Value::Bool(false));
                out.insert(counted::TRUNCATED.to_owned(), Value::Bool(true));
                out.insert(
                    counted::TRUNCATION_REASONS.to_owned(),
                    json!([TruncationReason::PageLimit.as_str()]),
                );
            }
            (false, _)
                if self.total == Some(self.returned + offset.unwrap_or(0))
                    || self.total.is_some_and(|total| total <= self.returned) =>
            {
                out.insert(counted::COMPLETE.to_owned(), Value::Bool(true));
                out.insert(counted::TRUNCATED.to_owned(), Value::Bool(false));
            }
            _ => return None,
        }
        Some(Value::Object(out))
    }
}

/// The payload: `data` when the dialect put it there, else every member no TSA field claims.
fn payload(answer: &Answer, counts: Option<&Counts>) -> Value {
    if let Some(data) = &answer.data {
        return data.clone();
    }
    let derived = |name: &str| {
        counts.is_some_and(|counts| {
            name == counts.listed_key
                || counts.count_key.as_deref() == Some(name)
                || name.ends_with(keys::OFFSET_SUFFIX)
        })
    };
    Value::Object(
        answer
            .beside
            .iter()
            .filter(|(name, _)| !is_marker(name) && !derived(name))
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    )
}

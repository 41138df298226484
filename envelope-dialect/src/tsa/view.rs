//! A TSA answer read back as the envelope it carries.

use envelope_core::fields::{
    completeness as counted, envelope as field, error, meta as meta_field,
};
use envelope_core::{Category, TruncationReason, Verdict};
use serde_json::{Map, Value, json};

use super::keys;
use crate::copy;

/// The flat TSA object as an envelope: `success`, `verdict` and the triage fields under the
/// envelope's names; a failure's `error`/`error_type`/`hint`/`retryable`; each warning line
/// `"<code>: <message>"` as a notice; `next_actions` as they are; the trimmer's markers in
/// `meta`; `completeness` only where its counts say it exactly (a page cut by its size alone,
/// `listed_cap` written, or a whole collection); the payload (`data`, else the members no TSA
/// field claims). A TOON form's payload stays in `toon_content`, which is not decoded here.
pub(crate) fn view(answer: &Value) -> Value {
    let Some(top) = answer.as_object() else {
        return Value::Object(Map::from_iter([(field::OK.to_owned(), Value::Bool(false))]));
    };
    let success = top
        .get(keys::SUCCESS)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    // A missing target is a success in this contract and the envelope's `not_found` failure.
    let missing = success
        && top.get(keys::VERDICT).and_then(Value::as_str) == Some(Verdict::NotFound.as_str())
        && top.contains_key(keys::ERROR_TYPE);
    let ok = success && !missing;
    let mut out = Map::new();
    out.insert(field::OK.to_owned(), Value::Bool(ok));
    if missing {
        out.insert(field::ERROR.to_owned(), not_found(top));
        return Value::Object(out);
    }
    copy::renamed(
        &mut out,
        [
            (keys::VERDICT, field::VERDICT),
            (keys::SUMMARY_LINE, field::SUMMARY_LINE),
            (keys::NEXT_STEP, field::NEXT_STEP),
            (keys::NEXT_ACTIONS, field::NEXT_ACTIONS),
        ],
        |key| top.get(key),
    );
    if !ok {
        out.insert(field::ERROR.to_owned(), failure(top));
    }
    let warnings: Vec<Value> = top
        .get(keys::WARNINGS)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(notice)
        .collect();
    if !warnings.is_empty() {
        out.insert(field::WARNINGS.to_owned(), Value::Array(warnings));
    }
    let counts = Counts::read(top);
    if let Some(completeness) = counts.as_ref().and_then(|counts| counts.completeness(top)) {
        out.insert(field::COMPLETENESS.to_owned(), completeness);
    }
    let markers: Map<String, Value> = top
        .iter()
        .filter(|(name, _)| is_marker(name))
        .map(|(name, value)| (name.clone(), value.clone()))
        .collect();
    if ok {
        out.insert(field::DATA.to_owned(), payload(top, counts.as_ref()));
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
fn failure(top: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    if let Some(kind) = top.get(keys::ERROR_TYPE).and_then(Value::as_str) {
        let is_category = Category::ALL
            .iter()
            .any(|category| category.as_str() == kind);
        let name = if is_category {
            error::CATEGORY
        } else {
            error::CODE
        };
        out.insert(name.to_owned(), Value::from(kind));
    }
    copy::renamed(
        &mut out,
        [
            (keys::ERROR, error::MESSAGE),
            (keys::HINT, error::HINT),
            (keys::RETRYABLE, error::RETRYABLE),
            (keys::RETRY_AFTER_MS, error::RETRY_AFTER_MS),
        ],
        |key| top.get(key),
    );
    Value::Object(out)
}

/// The envelope's `not_found` error from a `NOT_FOUND` answer: its message the
/// `summary_line`, its hint the `next_step`, its code the `error_type` (unless that is the
/// category itself).
fn not_found(top: &Map<String, Value>) -> Value {
    let mut out = Map::new();
    out.insert(
        error::CATEGORY.to_owned(),
        Value::from(Category::NotFound.as_str()),
    );
    if let Some(kind) = top
        .get(keys::ERROR_TYPE)
        .and_then(Value::as_str)
        .filter(|kind| *kind != Category::NotFound.as_str())
    {
        out.insert(error::CODE.to_owned(), Value::from(kind));
    }
    copy::renamed(
        &mut out,
        [
            (keys::SUMMARY_LINE, error::MESSAGE),
            (keys::NEXT_STEP, error::HINT),
            (keys::RETRYABLE, error::RETRYABLE),
        ],
        |key| top.get(key),
    );
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
    fn read(top: &Map<String, Value>) -> Option<Counts> {
        let truncated = top.get(keys::TRUNCATED)?.as_bool()?;
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
            capped: top.contains_key(keys::LISTED_CAP),
        })
    }

    /// `completeness`, when the counts determine it: a page cut by its size alone, or a whole
    /// collection with its exact total. Any other cut's reasons are not in the wire.
    fn completeness(&self, top: &Map<String, Value>) -> Option<Value> {
        let offset = top
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
fn payload(top: &Map<String, Value>, counts: Option<&Counts>) -> Value {
    if let Some(data) = top.get(keys::DATA) {
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
        top.iter()
            .filter(|(name, _)| {
                !keys::OWNED.contains(&name.as_str()) && !is_marker(name) && !derived(name)
            })
            .map(|(name, value)| (name.clone(), value.clone()))
            .collect(),
    )
}

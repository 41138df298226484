//! `diagnostics`: Frigg's "index and freshness diagnostics", which compact keeps. Each signal
//! an agent must not lose that has no field of its own in Frigg is one `{code, severity,
//! message, data?}` entry here, in this order: a verdict other than the default, a budget cut,
//! the envelope's warnings then its diagnostics (as they are), index drift, attachments.

use envelope_core::fields::completeness;
use envelope_core::meta_keys as keys;
use envelope_core::{Notice, Severity, Verdict};
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::recovery::failed;
use super::wire::Answer;
use crate::Wire;

/// Entry code of a verdict other than the one a Frigg reader infers (INFO on success, ERROR on
/// a failure).
pub(super) const VERDICT: &str = "verdict";
/// Entry code of the response budget's cut (or of an answer it could not cut enough).
pub(super) const RESPONSE_BUDGET: &str = "response_budget";
/// Entry code of stored data newer than the running binary.
pub(super) const BINARY_DRIFT: &str = "binary_drift";
/// Entry code of the schema version the index was built with.
pub(super) const INDEX_SCHEMA: &str = "index_schema_version";
/// Entry code of the media attached beside the answer.
pub(super) const ATTACHMENTS: &str = "attachments";

/// Writes `diagnostics` when there is anything to say.
pub(super) fn write(wire: &Wire<'_>, answer: &mut Answer) {
    let entries = &mut answer.diagnostics;
    entries.extend(verdict(wire));
    entries.extend(budget(wire));
    entries.extend(
        wire.warnings()
            .iter()
            .chain(wire.diagnostics())
            .filter_map(|notice| Notice::deserialize(notice).ok()),
    );
    entries.extend(freshness(wire));
    entries.extend(attachments(wire));
}

/// One entry: `{code, severity, message, data?}`, the envelope's notice shape.
fn entry(code: &str, severity: Severity, message: &str, data: Option<Value>) -> Notice {
    Notice {
        data,
        ..Notice::new(code, severity, message)
    }
}

/// The verdict, unless it is the one a Frigg reader infers: its message is what the verdict
/// obliges the agent to do.
fn verdict(wire: &Wire<'_>) -> Option<Notice> {
    let verdict = Verdict::canonicalize(wire.verdict()?);
    let implied = if failed(wire) {
        Verdict::Error
    } else {
        Verdict::Info
    };
    if verdict == implied {
        return None;
    }
    let severity = match verdict {
        Verdict::Unsafe => Severity::Error,
        Verdict::Review | Verdict::Caution | Verdict::Warn => Severity::Warning,
        Verdict::Safe | Verdict::Info | Verdict::Error | Verdict::NotFound => Severity::Info,
    };
    Some(entry(
        VERDICT,
        severity,
        verdict.obligation(),
        Some(json!({ VERDICT: verdict.as_str() })),
    ))
}

/// The response budget's statement: `meta.truncated` with every `truncated_*` marker and
/// `envelope_unshrinkable`, when the trimmer cut something or could not cut enough; and, when
/// the budget ended the page (`budget_limit`, which Frigg's closed list writes `page_limit`),
/// the envelope's own `truncation_reasons`, so that the cause is said and can be read back.
fn budget(wire: &Wire<'_>) -> Option<Notice> {
    let unshrinkable = wire.meta_field(keys::ENVELOPE_UNSHRINKABLE);
    let markers: Map<String, Value> = wire
        .trim_markers()
        .map(|(key, value)| (key.clone(), value.clone()))
        .collect();
    let reasons = wire.completeness_field(completeness::TRUNCATION_REASONS);
    let ended_page = wire.budget_ended_page();
    let cut = wire.budget_cut() || !markers.is_empty() || ended_page;
    let stuck = unshrinkable.and_then(Value::as_bool).unwrap_or(false);
    if !cut && !stuck {
        return None;
    }
    let mut data = Map::new();
    data.insert(keys::TRUNCATED.to_owned(), Value::Bool(cut));
    data.extend(markers);
    if let Some(unshrinkable) = unshrinkable {
        data.insert(keys::ENVELOPE_UNSHRINKABLE.to_owned(), unshrinkable.clone());
    }
    if let (true, Some(reasons)) = (ended_page, reasons) {
        data.insert(completeness::TRUNCATION_REASONS.to_owned(), reasons.clone());
    }
    let message = if stuck {
        "the answer is over the response budget and could not be cut further"
    } else if ended_page {
        "the response budget ended this page (`page_limit`); follow `next-page` for the rest"
    } else {
        "the response budget cut this answer; `data` names each cut"
    };
    Some(entry(
        RESPONSE_BUDGET,
        Severity::Warning,
        message,
        Some(Value::Object(data)),
    ))
}

/// Index freshness: stored data newer than the binary, and the schema version of the index.
fn freshness(wire: &Wire<'_>) -> Vec<Notice> {
    let mut entries = Vec::new();
    if let Some(drift) = wire.meta_field(keys::BINARY_DRIFT_WARNING) {
        let message = drift
            .get("remediation")
            .and_then(Value::as_str)
            .unwrap_or("the stored data was written by a newer version than the one running");
        entries.push(entry(
            BINARY_DRIFT,
            Severity::Warning,
            message,
            Some(drift.clone()),
        ));
    }
    if let Some(version) = wire.meta_field(keys::SCHEMA_VERSION_AT_INDEX) {
        entries.push(entry(
            INDEX_SCHEMA,
            Severity::Info,
            "the schema version the index was built with",
            Some(json!({ keys::SCHEMA_VERSION_AT_INDEX: version })),
        ));
    }
    entries
}

/// The media attached beside the answer and whether each was sent; a warning when one was not.
fn attachments(wire: &Wire<'_>) -> Option<Notice> {
    let attachments = wire.meta_field(keys::ATTACHMENTS)?;
    let all_sent = attachments.as_array().is_some_and(|list| {
        list.iter()
            .all(|note| note.get("delivery").and_then(Value::as_str) == Some("sent"))
    });
    let (severity, message) = if all_sent {
        (Severity::Info, "media attached beside the answer, all sent")
    } else {
        (
            Severity::Warning,
            "media attached beside the answer, not all sent: see each `delivery`",
        )
    };
    Some(entry(
        ATTACHMENTS,
        severity,
        message,
        Some(json!({ keys::ATTACHMENTS: attachments })),
    ))
}

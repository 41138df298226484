//! The TOON form and the control surface. With `output_format: toon` the whole response is
//! TOON-encoded into `toon_content`, marked `format: "toon"`, with the scalar metadata kept
//! alongside; `compact_only: true` then reduces the top level to the control surface.

use std::collections::BTreeSet;

use envelope_core::stage::{Controls, OutputFormat};
use serde_json::{Map, Value};

use super::keys;

/// Whether the call gets the TOON form: it asked for TOON, or for `compact_only`, whose
/// control surface the contract defines over TOON responses only (a reduced response must
/// keep the full payload somewhere, and `toon_content` is that place).
pub(super) fn wanted(controls: &Controls) -> bool {
    controls.compact_only || controls.output_format == OutputFormat::Toon
}

/// The TOON form of `full` (the response in its JSON form), `payload` the keys that hold the
/// payload.
///
/// - `toon_content`: `full` TOON-encoded, so everything the top level leaves out is there;
/// - `format: "toon"`, and `output_format`: the echo of the format the call asked for (`json`
///   when only `compact_only` was asked);
/// - the top level keeps the dialect's metadata and the payload's scalar members; the
///   payload's lists and objects live in `toon_content` only;
/// - under `compact_only`, only the control surface.
///
/// A response too deep to encode stays in its JSON form (no `format` marker), whole: a
/// response without its payload would be worse than one in the other format.
pub(super) fn form(
    full: Map<String, Value>,
    payload: &BTreeSet<String>,
    controls: &Controls,
) -> Value {
    let Ok(content) = envelope_budget::encode_toon(&Value::Object(full.clone())) else {
        return Value::Object(full);
    };
    let mut out: Map<String, Value> = full
        .into_iter()
        .filter(|(key, value)| !(payload.contains(key) && is_container(value)))
        .collect();
    out.insert(keys::FORMAT.to_owned(), Value::from(keys::TOON));
    out.insert(keys::TOON_CONTENT.to_owned(), Value::String(content));
    out.insert(
        keys::OUTPUT_FORMAT.to_owned(),
        serde_json::to_value(controls.output_format).unwrap_or(Value::Null),
    );
    if controls.compact_only {
        reduce_to_control_surface(&mut out);
    }
    Value::Object(out)
}

/// Keeps only the control surface's keys that have a value ("keys that this particular call
/// has no value for … are simply absent", and null is no value). Idempotent: a reduced
/// response reduces to itself.
pub(super) fn reduce_to_control_surface(response: &mut Map<String, Value>) {
    response.retain(|key, value| keys::CONTROL_SURFACE.contains(&key.as_str()) && !value.is_null());
}

fn is_container(value: &Value) -> bool {
    matches!(value, Value::Array(_) | Value::Object(_))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The seed's `TOON_CONTROL_SURFACE` table, row by row.
    const SEED_TABLE: [&str; 13] = [
        "success",
        "format",
        "toon_content",
        "verdict",
        "error",
        "error_type",
        "output_format",
        "summary_line",
        "hint",
        "file_path",
        "pr_url",
        "pr_number",
        "deprecation",
    ];

    #[test]
    fn the_control_surface_is_exactly_the_seeds_table() {
        let ours: BTreeSet<&str> = keys::CONTROL_SURFACE.into_iter().collect();
        let seed: BTreeSet<&str> = SEED_TABLE.into_iter().collect();
        assert_eq!(ours, seed);
        assert_eq!(ours.len(), keys::CONTROL_SURFACE.len(), "no duplicates");
    }

    #[test]
    fn reducing_is_idempotent() {
        let mut response = json!({
            "success": true, "format": "toon", "toon_content": "x: 1", "verdict": "INFO",
            "output_format": "toon", "next_actions": [], "warnings": ["a: b"], "callers": [1],
            "file_path": "a.rs", "caller_count": 3,
        })
        .as_object()
        .cloned()
        .unwrap_or_default();
        reduce_to_control_surface(&mut response);
        let once = response.clone();
        reduce_to_control_surface(&mut response);
        assert_eq!(response, once);
        assert!(once.keys().all(|key| SEED_TABLE.contains(&key.as_str())));
        assert_eq!(once.len(), 6);
    }
}

//! Rung 6: the longest strings, cut on a character boundary.

use envelope_core::meta_keys as keys;
use serde_json::{Value, json};

use super::*;

/// JSON-pointer escaping of one path segment.
fn pointer_segment(segment: &str) -> String {
    segment.replace('~', "~0").replace('/', "~1")
}

/// Rung 6: strings of at least [`LONG_STRING_CHARS`] characters, longest first, cut on a char
/// boundary and suffixed with [`TRUNCATION_SUFFIX`]. Marker `truncated_string_fields` lists their
/// JSON pointers.
pub(super) fn long_strings(data: &mut Value, job: &mut Job) {
    let mut strings: Vec<(String, &mut String, usize)> = Vec::new();
    let mut stack: Vec<(String, &mut Value)> = vec![(String::new(), data)];
    while let Some((path, node)) = stack.pop() {
        match node {
            Value::String(text) => {
                let chars = text.chars().count();
                if chars >= LONG_STRING_CHARS {
                    strings.push((path, text, chars));
                }
            }
            Value::Array(items) => stack.extend(
                items
                    .iter_mut()
                    .enumerate()
                    .map(|(index, item)| (format!("{path}/{index}"), item)),
            ),
            Value::Object(map) => stack.extend(
                map.iter_mut()
                    .map(|(key, item)| (format!("{path}/{}", pointer_segment(key)), item)),
            ),
            _ => {}
        }
    }
    strings.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    let mut cut_paths: Vec<String> = job
        .markers
        .get(keys::TRUNCATED_STRING_FIELDS)
        .and_then(Value::as_array)
        .map(|paths| {
            paths
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let suffix = Counts::of(TRUNCATION_SUFFIX);
    for (path, text, chars) in strings {
        if !job.over() {
            break;
        }
        let before = string_counts(text);
        let mut paths_after = cut_paths.clone();
        paths_after.push(path.clone());
        let marker = json!(paths_after);
        let marker_delta = marker_counts(keys::TRUNCATED_STRING_FIELDS, &marker);
        let existing = job
            .markers
            .get(keys::TRUNCATED_STRING_FIELDS)
            .map(|old| marker_counts(keys::TRUNCATED_STRING_FIELDS, old))
            .unwrap_or_default();
        // Keep the longest prefix (in chars) whose cut string fits.
        let prefix_counts = |keep: usize| -> Counts {
            let end = text
                .char_indices()
                .nth(keep)
                .map_or(text.len(), |(at, _)| at);
            string_counts(&text[..end]) + suffix
        };
        let keep = largest(0, chars.saturating_sub(1), |keep| {
            let data = sub(job.data, before) + prefix_counts(keep);
            job.fits(data, sub(marker_delta, existing))
        })
        .unwrap_or(0);
        let end = text
            .char_indices()
            .nth(keep)
            .map_or(text.len(), |(at, _)| at);
        let after = prefix_counts(keep);
        text.truncate(end);
        text.push_str(TRUNCATION_SUFFIX);
        job.data = sub(job.data, before) + after;
        cut_paths.push(path);
        job.set_marker(keys::TRUNCATED_STRING_FIELDS.to_owned(), json!(cut_paths));
    }
}

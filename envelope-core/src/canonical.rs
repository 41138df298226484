//! Canonical JSON: one byte string per JSON value, whatever the map order in memory.
//!
//! Used wherever two values are compared or digested (next-action targets, continuation
//! request digests), so that `serde_json`'s `preserve_order` feature, which any crate in a build
//! may switch on, cannot change the outcome.

use std::fmt::Write as _;

use serde_json::Value;

/// Writes `value` as compact JSON with object keys sorted by their UTF-8 bytes.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::new();
    write_canonical(value, &mut out);
    out
}

fn write_canonical(value: &Value, out: &mut String) {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<_> = map.iter().collect();
            entries.sort_unstable_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (index, (key, item)) in entries.into_iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_canonical(item, out);
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_canonical(item, out);
            }
            out.push(']');
        }
        Value::String(text) => write_string(text, out),
        // Numbers, booleans and null print the same under every feature set.
        scalar => {
            let _ = write!(out, "{scalar}");
        }
    }
}

fn write_string(text: &str, out: &mut String) {
    // A string's JSON form does not depend on map order, so serde_json's escaping is canonical.
    out.push_str(&Value::String(text.to_owned()).to_string());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_order_does_not_matter() {
        let a: Value =
            serde_json::from_str(r#"{"b":1,"a":{"y":[1,{"d":2,"c":3}],"x":"é\n"}}"#).expect("json");
        let b: Value =
            serde_json::from_str(r#"{"a":{"x":"é\n","y":[1,{"c":3,"d":2}]},"b":1}"#).expect("json");
        assert_eq!(canonical_json(&a), canonical_json(&b));
        assert_eq!(
            canonical_json(&a),
            r#"{"a":{"x":"é\n","y":[1,{"c":3,"d":2}]},"b":1}"#
        );
    }
}

//! An answer too big for one response, as rows the budget stage can cut and a continuation can
//! resume: text by lines (a line longer than [`MAX_ROW_CHARS`] in pieces of that many
//! characters), a JSON list by its items.
//!
//! A text row keeps its line ending, so the rows of every page, joined with nothing between
//! them, are the upstream's text byte for byte.

use envelope_core::Unit;
use serde_json::Value;
use sha2::{Digest as _, Sha256};

/// The longest text row: a longer line is sent in pieces of this many characters, so that one
/// row always fits a page (the smallest budget a server is likely given is some thousands of
/// characters).
pub const MAX_ROW_CHARS: usize = 1_000;

/// The unit of a text answer's rows: `line` (one line, or a piece of a long one).
pub(crate) fn line_unit() -> Unit {
    // Snake case and short: `custom` accepts it.
    Unit::custom("line").unwrap_or(Unit::ITEM)
}

/// An answer's rows, and where they were found.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Rows {
    /// The rows, in order.
    pub(crate) rows: Vec<Value>,
    /// What one row is.
    pub(crate) unit: Unit,
    /// The member of an object answer the rows are, if they are not the answer itself.
    pub(crate) member: Option<String>,
}

impl Rows {
    /// The rows of `data`: a list's items, a text's lines, or those of the one member of an
    /// object; `None` for anything else (the budget stage then trims it, its cuts marked).
    pub(crate) fn of(data: &Value) -> Option<Rows> {
        match data {
            Value::Array(items) => Some(Rows {
                rows: items.clone(),
                unit: Unit::ITEM,
                member: None,
            }),
            Value::String(text) => Some(Rows {
                rows: lines(text).into_iter().map(Value::String).collect(),
                unit: line_unit(),
                member: None,
            }),
            Value::Object(members) if members.len() == 1 => {
                let (name, inner) = members.iter().next()?;
                if !(inner.is_array() || inner.is_string()) {
                    return None;
                }
                let mut rows = Rows::of(inner)?;
                rows.member = Some(name.clone());
                Some(rows)
            }
            _ => None,
        }
    }
}

/// `text` in rows: each line with its ending, a line longer than [`MAX_ROW_CHARS`] in pieces.
pub(crate) fn lines(text: &str) -> Vec<String> {
    let mut rows = Vec::new();
    for line in text.split_inclusive('\n') {
        let mut rest = line;
        while let Some((cut, _)) = rest.char_indices().nth(MAX_ROW_CHARS) {
            rows.push(rest[..cut].to_owned());
            rest = &rest[cut..];
        }
        if !rest.is_empty() {
            rows.push(rest.to_owned());
        }
    }
    rows
}

/// The snapshot a read-only tool's continuation is bound to: a digest of the upstream's answer
/// as it sent it. A page asked for after the answer changed is refused as stale.
pub(crate) fn snapshot(raw: &str) -> String {
    let digest = Sha256::digest(raw.as_bytes());
    digest
        .iter()
        .take(16)
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn text_rows_joined_are_the_text() {
        let long = "é".repeat(MAX_ROW_CHARS * 2 + 7);
        let text = format!("first\n\n{long}\nlast without ending");
        let rows = lines(&text);
        assert_eq!(rows.concat(), text);
        assert!(rows.iter().all(|row| row.chars().count() <= MAX_ROW_CHARS));
        assert_eq!(rows[0], "first\n");
        assert_eq!(rows[1], "\n");
        assert_eq!(rows.len(), 2 + 3 + 1);
    }

    #[test]
    fn rows_are_a_list_a_text_or_an_objects_one_member() {
        assert_eq!(
            Rows::of(&json!([1, 2])).map(|rows| rows.rows.len()),
            Some(2)
        );
        let member = Rows::of(&json!({"content": "a\nb"})).expect("one member");
        assert_eq!(member.member.as_deref(), Some("content"));
        assert_eq!(member.rows, [json!("a\n"), json!("b")]);
        assert_eq!(Rows::of(&json!({"a": "x", "b": "y"})), None);
        assert_eq!(Rows::of(&json!(7)), None);
    }
}

//! Keeping the envelope's prose true to the rows sent when the budget cut a list that
//! `completeness` does not describe: a `next_step` that names the list or its original length
//! ("700 files reach it: inspect the importers in `data.direct`") would otherwise send an agent
//! to read rows that are no longer there. It is led by what was sent ("showing 417 of 700
//! `direct` (the response budget cut the rest); …"), and the room that takes is reserved before
//! trimming, so that the budget still holds.

use envelope_core::fields::envelope as field;
use serde_json::{Map, Value};

use crate::cut::{ListCut, ROOT_LIST_KEY};
use crate::tokens::Counts;

/// What leads a `next_step` whose list the budget cut.
fn lead(key: &str, from: usize, to: usize) -> String {
    format!("showing {to} of {from} `{key}` (the response budget cut the rest); ")
}

/// Whether `text` speaks of the list under `key` of `len` rows: it names the key in code
/// (`` `direct` `` or `data.direct`) or states the length as a number of its own.
fn mentions(text: &str, key: &str, len: usize) -> bool {
    text.contains(&format!("`{key}`"))
        || text.contains(&format!("data.{key}"))
        || states_number(text, len)
}

/// Whether `number` appears in `text` with no digit on either side: whether prose states that
/// count ("3 of 39", not "139").
pub fn states_number(text: &str, number: usize) -> bool {
    let digits = number.to_string();
    let bytes = text.as_bytes();
    text.match_indices(&digits).any(|(at, _)| {
        let before = at.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(at + digits.len()).copied();
        !before.is_some_and(|b| b.is_ascii_digit()) && !after.is_some_and(|b| b.is_ascii_digit())
    })
}

/// Room for the leads [`reconcile_prose`] may write: for each top-level list of an object
/// `payload` that the `next_step` in `rest` speaks of, but the one `completeness` describes
/// (`described_rows` long), its lead at its widest (the kept count has no more digits than the
/// original). A list the encoder already cut short (`precut`: key and full length) counts at
/// its full length, as the prose does.
pub(crate) fn prose_reserve(
    rest: &Map<String, Value>,
    payload: &Value,
    precut: &[(String, usize)],
    described_rows: Option<usize>,
) -> Counts {
    let (Some(step), Value::Object(members)) = (next_step(rest), payload) else {
        return Counts::default();
    };
    let mut reserve = Counts::default();
    for (key, value) in members {
        let Value::Array(rows) = value else { continue };
        let len = precut
            .iter()
            .find(|(cut, _)| cut == key)
            .map_or(rows.len(), |(_, full)| *full);
        if Some(len) != described_rows && mentions(step, key, len) {
            reserve.add_str(&lead(key, len, len));
        }
    }
    reserve
}

/// Leads `next_step` with what was sent of each list the budget `cuts` that it speaks of,
/// except the one `completeness` describes (`described_rows` long before the cut), whose
/// `next_step` is written again from the completeness itself.
pub(crate) fn reconcile_prose(
    rest: &mut Map<String, Value>,
    cuts: &[ListCut],
    described_rows: Option<usize>,
) {
    let Some(step) = next_step(rest) else {
        return;
    };
    let leads: String = cuts
        .iter()
        .filter(|cut| cut.key != ROOT_LIST_KEY && Some(cut.from) != described_rows)
        .filter(|cut| cut.to < cut.from && mentions(step, &cut.key, cut.from))
        .map(|cut| lead(&cut.key, cut.from, cut.to))
        .collect();
    if !leads.is_empty() {
        let step = format!("{leads}{step}");
        rest.insert(field::NEXT_STEP.to_owned(), Value::String(step));
    }
}

fn next_step(rest: &Map<String, Value>) -> Option<&str> {
    rest.get(field::NEXT_STEP).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn cut(key: &str, from: usize, to: usize) -> ListCut {
        ListCut {
            key: key.to_owned(),
            from,
            to,
        }
    }

    #[test]
    fn a_step_naming_a_cut_list_is_led_by_what_was_sent() {
        let mut rest = Map::new();
        rest.insert(
            field::NEXT_STEP.to_owned(),
            json!("700 files reach it: inspect the importers in `data.direct` before acting"),
        );
        reconcile_prose(&mut rest, &[cut("direct", 700, 417)], None);
        assert_eq!(
            rest[field::NEXT_STEP],
            "showing 417 of 700 `direct` (the response budget cut the rest); 700 files reach \
             it: inspect the importers in `data.direct` before acting"
        );
    }

    #[test]
    fn a_step_about_something_else_is_left_alone() {
        let mut rest = Map::new();
        rest.insert(
            field::NEXT_STEP.to_owned(),
            json!("run the tests in 7000 ms"),
        );
        reconcile_prose(&mut rest, &[cut("direct", 700, 417)], None);
        assert_eq!(rest[field::NEXT_STEP], "run the tests in 7000 ms");
        // The list completeness describes is written again from it, not led.
        rest.insert(field::NEXT_STEP.to_owned(), json!("showing 20 of 700 rows"));
        reconcile_prose(&mut rest, &[cut("rows", 20, 12)], Some(20));
        assert_eq!(rest[field::NEXT_STEP], "showing 20 of 700 rows");
    }

    #[test]
    fn the_reserve_covers_the_widest_lead() {
        let mut rest = Map::new();
        rest.insert(field::NEXT_STEP.to_owned(), json!("3 files reach it"));
        let payload = json!({ "direct": ["a", "b", "c"], "other": [1] });
        let reserve = prose_reserve(&rest, &payload, &[], None);
        assert_eq!(reserve.chars(), lead("direct", 3, 3).chars().count() as u64);
        let mut after = rest.clone();
        reconcile_prose(&mut after, &[cut("direct", 3, 1)], None);
        let grown = after[field::NEXT_STEP].as_str().map_or(0, str::len)
            - rest[field::NEXT_STEP].as_str().map_or(0, str::len);
        assert!(grown as u64 <= reserve.chars());
    }
}

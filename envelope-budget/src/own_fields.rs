//! The envelope's own fields (everything but `data`) within the budget.
//!
//! The trimmer cuts the payload; these fields are the tool's prose and the contract's control
//! surface. Prose can still be unbounded: an argument decoder's message quotes the bad value, so
//! a 1 MB string in the wrong place once made a 2 MB error answer. When the own fields alone
//! are over their share of the budget, they are cut in this order until they fit:
//!
//! 1. the longest strings, outside `meta` and `completeness` (ids, stamps, counts) and outside
//!    the arguments and ids of next actions (which must stay runnable as given: the next-page
//!    call carries the continuation token), all cut to a common length that falls until they
//!    fit, each kept to at least [`KEPT_CHARS`] characters and ending in [`TRUNCATION_SUFFIX`];
//! 2. the next actions but the next-page call (a suggestion is optional; a wrong one is not),
//!    which is kept: it is how an agent that copies actions pages on.
//!
//! Whatever was cut sets `meta.truncated`; when even that is not enough, so does
//! `meta.envelope_unshrinkable`.

use envelope_core::fields::envelope as field;
use envelope_core::fields::next_action as action_field;
use envelope_core::paging::NEXT_PAGE;
use serde_json::{Map, Value};

use crate::cut::TRUNCATION_SUFFIX;
use crate::tokens::{Counts, Estimator};

/// A cut string keeps at least this many characters, so it still says what it is about.
pub(crate) const KEPT_CHARS: usize = 256;

/// Top-level members whose strings are never cut: ids, stamps, enums, counts.
const UNCUT: &[&str] = &[
    field::META,
    field::COMPLETENESS,
    field::OK,
    field::VERDICT,
    field::EMPTY_REASON,
];

/// Members of a next action whose strings are never cut: what it calls it with, and the id
/// the others' dependencies name.
const UNCUT_IN_ACTIONS: &[&str] = &[action_field::ARGUMENTS, action_field::ID];

/// What [`fit`] did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Fitted {
    /// Something was cut.
    pub cut_any: bool,
    /// Still over the limit after every cut.
    pub unshrinkable: bool,
}

/// Cuts `rest` (the envelope without `data`) to `limit` token-normalized characters as the
/// module says; `size` measures it.
pub(crate) fn fit(
    rest: &mut Map<String, Value>,
    limit: usize,
    estimator: Estimator,
    size: impl Fn(&Map<String, Value>) -> Counts,
) -> Fitted {
    let measure = |rest: &Map<String, Value>| estimator.normalized_size(&size(rest)) as usize;
    let mut fitted = Fitted::default();
    let mut over = measure(rest).saturating_sub(limit);
    // Water-filling from the top: every cuttable string longer than a common length is cut to
    // it. The first length takes off what is over from the longest; each further pass halves
    // it. However many strings there are, a few passes (each one walk and one measure) do.
    let mut cap: Option<usize> = None;
    while over > 0 {
        let mut strings = prose(rest);
        let Some(longest) = strings.iter().map(|(chars, _)| *chars).max() else {
            break;
        };
        let next = match cap {
            None => longest.saturating_sub(over + TRUNCATION_SUFFIX.chars().count()),
            Some(cap) => cap / 2,
        }
        .min(longest - 1)
        .max(KEPT_CHARS);
        for (chars, text) in &mut strings {
            if *chars > next {
                cut_string(text, next);
            }
        }
        cap = Some(next);
        fitted.cut_any = true;
        over = measure(rest).saturating_sub(limit);
        if next == KEPT_CHARS {
            break;
        }
    }
    // Then the next actions, all but the next-page call: it takes the continuation, which is
    // never cut, and is how an agent that follows actions pages on.
    if over > 0 && keep_only_next_page(rest) {
        fitted.cut_any = true;
        over = measure(rest).saturating_sub(limit);
    }
    fitted.unshrinkable = over > 0;
    fitted
}

/// Keeps only the next-page action (the one that carries the page's continuation in its
/// arguments); whether any other was dropped.
fn keep_only_next_page(rest: &mut Map<String, Value>) -> bool {
    let Some(Value::Array(actions)) = rest.get_mut(field::NEXT_ACTIONS) else {
        return false;
    };
    let before = actions.len();
    actions.retain(|action| action[action_field::ID] == NEXT_PAGE);
    let dropped = actions.len() < before;
    if actions.is_empty() {
        rest.remove(field::NEXT_ACTIONS);
    }
    dropped
}

/// The strings of `rest` that may be cut and are longer than [`KEPT_CHARS`] (plus the suffix,
/// so a cut string is never cut again), each with its length in characters. Walks with an
/// explicit stack: `error.data` is whatever the tool put there, nested however deep.
fn prose(rest: &mut Map<String, Value>) -> Vec<(usize, &mut String)> {
    let floor = KEPT_CHARS + TRUNCATION_SUFFIX.chars().count();
    let mut stack: Vec<&mut Value> = Vec::new();
    for (key, value) in rest.iter_mut() {
        if UNCUT.contains(&key.as_str()) {
            continue;
        }
        if key == field::NEXT_ACTIONS {
            // An action's reason may be cut; its arguments and id may not.
            if let Value::Array(actions) = value {
                for action in actions.iter_mut().filter_map(Value::as_object_mut) {
                    stack.extend(
                        action
                            .iter_mut()
                            .filter(|(key, _)| !UNCUT_IN_ACTIONS.contains(&key.as_str()))
                            .map(|(_, value)| value),
                    );
                }
            }
            continue;
        }
        stack.push(value);
    }
    let mut found = Vec::new();
    while let Some(value) = stack.pop() {
        match value {
            // Bytes bound characters from above: count only what may qualify.
            Value::String(text) if text.len() > floor => {
                let chars = text.chars().count();
                if chars > floor {
                    found.push((chars, text));
                }
            }
            Value::Array(items) => stack.extend(items.iter_mut()),
            Value::Object(members) => stack.extend(members.values_mut()),
            _ => {}
        }
    }
    found
}

/// Keeps the first `keep` characters of `text` and appends [`TRUNCATION_SUFFIX`].
fn cut_string(text: &mut String, keep: usize) {
    if let Some((end, _)) = text.char_indices().nth(keep) {
        text.truncate(end);
        text.push_str(TRUNCATION_SUFFIX);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn bytes(rest: &Map<String, Value>) -> Counts {
        Counts::of_bytes(&serde_json::to_vec(rest).expect("a map serializes"))
    }

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => unreachable!("an object literal"),
        }
    }

    #[test]
    fn an_echoed_megabyte_is_cut_to_the_limit_and_ids_are_kept() {
        let token = "t".repeat(600);
        let mut rest = object(json!({
            "ok": false,
            "error": {
                "category": "validation",
                "message": format!("invalid type: string \"{}\", expected u32", "x".repeat(1 << 20)),
                "data": {"field": "limit", "nested": [[["y".repeat(50_000)]]]}
            },
            "completeness": {"continuation": token},
            "next_actions": [{"id": "retry", "reason": "r".repeat(5_000), "arguments": {"q": "a".repeat(2_000)}}],
            "meta": {"request_id": "01ABC"}
        }));
        let estimator = Estimator::default();
        let fitted = fit(&mut rest, 8_000, estimator, bytes);
        assert_eq!(
            fitted,
            Fitted {
                cut_any: true,
                unshrinkable: false
            }
        );
        assert!(estimator.normalized_size(&bytes(&rest)) <= 8_000);
        let message = rest["error"]["message"].as_str().expect("a message");
        assert!(
            message.starts_with("invalid type: string \"xxx"),
            "{message}"
        );
        assert!(message.ends_with(TRUNCATION_SUFFIX));
        assert_eq!(rest["error"]["data"]["field"], "limit");
        assert_eq!(rest["completeness"]["continuation"], token.as_str());
        assert_eq!(
            rest["next_actions"][0]["arguments"]["q"]
                .as_str()
                .map(str::len),
            Some(2_000)
        );
    }

    #[test]
    fn over_budget_only_the_next_page_call_is_kept() {
        let mut rest = object(json!({
            "ok": true,
            "next_actions": [
                {"id": "inspect", "tool": "t", "reason": "r".repeat(4_000), "arguments": {"q": "a".repeat(3_000)}},
                {"id": "next-page", "tool": "t", "reason": "next page", "arguments": {"q": "a".repeat(3_000), "continuation": "tok"}},
            ],
            "meta": {"request_id": "01ABC"}
        }));
        let fitted = fit(&mut rest, 1_000, Estimator::default(), bytes);
        assert!(fitted.cut_any);
        let ids: Vec<&Value> = rest["next_actions"]
            .as_array()
            .expect("kept")
            .iter()
            .map(|action| &action["id"])
            .collect();
        assert_eq!(ids, [&json!("next-page")]);
        assert_eq!(rest["next_actions"][0]["arguments"]["continuation"], "tok");
    }

    #[test]
    fn what_fits_is_left_alone_and_what_cannot_fit_says_so() {
        let original = object(json!({"ok": true, "summary_line": "short", "meta": {}}));
        let mut rest = original.clone();
        assert_eq!(
            fit(&mut rest, 1_000, Estimator::default(), bytes),
            Fitted::default()
        );
        assert_eq!(rest, original);

        // Only uncuttable bytes: the actions go, and the rest is marked unshrinkable.
        let mut rest = object(json!({
            "next_actions": [{"id": "x", "arguments": {"q": "a".repeat(3_000)}}],
            "meta": {"request_id": "r".repeat(3_000)}
        }));
        let fitted = fit(&mut rest, 1_000, Estimator::default(), bytes);
        assert_eq!(
            fitted,
            Fitted {
                cut_any: true,
                unshrinkable: true
            }
        );
        assert!(!rest.contains_key("next_actions"));
    }

    #[test]
    fn thousands_of_long_strings_are_cut_in_a_few_passes() {
        // Regression test for #12 (review): one string per pass, each pass a full
        // serialization, made this quadratic.
        let strings: Vec<Value> = (0..5_000)
            .map(|i| json!(format!("{i:05}{}", "w".repeat(300))))
            .collect();
        let mut rest = object(json!({"error": {"data": {"items": strings}}, "meta": {}}));
        let passes = std::cell::Cell::new(0);
        let estimator = Estimator::default();
        let fitted = fit(&mut rest, 20_000, estimator, |rest| {
            passes.set(passes.get() + 1);
            bytes(rest)
        });
        assert!(fitted.cut_any);
        assert!(passes.get() < 20, "{} passes", passes.get());
        // 5,000 strings kept at 256 characters each cannot fit 20,000: said so, not hidden.
        assert!(fitted.unshrinkable);
    }

    #[test]
    fn deep_error_data_is_walked_without_recursion() {
        let mut deep = json!("z".repeat(10_000));
        for _ in 0..100_000 {
            deep = Value::Array(vec![deep]);
        }
        let mut rest = Map::new();
        let mut error = Map::new();
        // Moved, not passed through `json!`, which would serialize it recursively.
        error.insert("data".to_owned(), deep);
        rest.insert("error".to_owned(), Value::Object(error));
        let found: Vec<usize> = prose(&mut rest).iter().map(|(chars, _)| *chars).collect();
        assert_eq!(found, [10_000]);
        // Dropping the chain recursively would overflow too.
        envelope_core::stage::drop_deep(rest.remove("error").expect("inserted"));
    }
}

//! The sized view: [`Counts`] of the compact JSON a value serializes to, computed without
//! writing it. Iterative, so attacker-controlled depth cannot overflow the stack.

use serde_json::Value;

use crate::tokens::Counts;

/// The counts of `text` as a JSON string literal: quotes and escapes included.
#[inline]
pub(crate) fn string_counts(text: &str) -> Counts {
    let mut counts = Counts::default();
    add_string(&mut counts, text);
    counts
}

/// Adds the counts of `text` as a JSON string literal. In place: sizing runs once per node,
/// and returning a fresh [`Counts`] each time was a measurable share of it.
#[inline]
fn add_string(total: &mut Counts, text: &str) {
    let needs_escape = text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\');
    if needs_escape {
        // Rare: count the escaped form exactly.
        let escaped = Value::String(text.to_owned()).to_string();
        total.add_str(&escaped);
        return;
    }
    total.add_str(text);
    total.punct += 2;
}

/// `a - b` for counts where `b` is part of `a` (saturating, so a seam's word start cannot
/// underflow).
pub(crate) fn sub(a: Counts, b: Counts) -> Counts {
    a.saturating_sub(&b)
}

fn add_number(total: &mut Counts, number: &serde_json::Number) {
    if let Some(n) = number.as_u64() {
        total.digits += u64::from(n.checked_ilog10().unwrap_or(0) + 1);
        total.digit_runs += 1;
    } else if let Some(n) = number.as_i64() {
        // Negative: a minus sign and the digits of its magnitude.
        total.punct += 1;
        total.digits += u64::from(n.unsigned_abs().checked_ilog10().unwrap_or(0) + 1);
        total.digit_runs += 1;
    } else if let Some(n) = number.as_f64() {
        // serde_json writes finite floats with ryu; non-finite ones cannot be in a Value.
        let mut buffer = ryu::Buffer::new();
        total.add_str(buffer.format_finite(n));
    }
}

/// Adds the counts of a scalar, or of the brackets and separators of a container (keys of an
/// object are counted by the caller).
#[inline]
fn add_shallow(total: &mut Counts, value: &Value) {
    match value {
        // `null` and `true` are four letters, `false` five: one word each.
        Value::Null | Value::Bool(true) => {
            total.letters += 4;
            total.word_starts += 1;
        }
        Value::Bool(false) => {
            total.letters += 5;
            total.word_starts += 1;
        }
        Value::Number(number) => add_number(total, number),
        Value::String(text) => add_string(total, text),
        Value::Array(items) => total.punct += 2 + items.len().saturating_sub(1) as u64,
        // Braces, commas, and one colon per member.
        Value::Object(map) => {
            total.punct += 2 + map.len().saturating_sub(1) as u64 + map.len() as u64
        }
    }
}

/// The counts of `value`'s compact JSON serialization.
pub(crate) fn value_counts(value: &Value) -> Counts {
    let mut stack = Vec::new();
    value_counts_until(value, &mut stack, |_| false).unwrap_or_default()
}

/// The counts of `value`'s serialization, or `None` as soon as `over(counts so far)` holds:
/// sizing stops at the budget instead of walking a payload that cannot be kept anyway.
/// `stack` is scratch space, reused across calls to save allocations.
pub(crate) fn value_counts_until<'a>(
    value: &'a Value,
    stack: &mut Vec<&'a Value>,
    over: impl Fn(&Counts) -> bool,
) -> Option<Counts> {
    let mut total = Counts::default();
    stack.clear();
    stack.push(value);
    // Checking the bound costs an estimate; every 32 nodes is often enough to stop early.
    let mut until_check = 32_u32;
    while let Some(node) = stack.pop() {
        add_shallow(&mut total, node);
        match node {
            Value::Array(items) => stack.extend(items.iter()),
            Value::Object(map) => {
                for (key, item) in map {
                    add_string(&mut total, key);
                    stack.push(item);
                }
            }
            _ => {}
        }
        until_check -= 1;
        if until_check == 0 {
            until_check = 32;
            if over(&total) {
                stack.clear();
                return None;
            }
        }
    }
    if over(&total) {
        return None;
    }
    Some(total)
}

/// The counts of `,"key":` or `"key":` — one object member's key part.
pub(crate) fn member_key_counts(key: &str, with_comma: bool) -> Counts {
    let mut counts = string_counts(key);
    counts.punct += 1 + u64::from(with_comma);
    counts
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn value_counts_match_the_serialization() {
        for value in [
            json!(null),
            json!(true),
            json!(-12.5e-7),
            json!(18446744073709551615_u64),
            json!("é \"quoted\"\n\u{1}"),
            json!({"a": [1, 2, {"b": null}], "c": "漢字", "": []}),
            json!([[], {}, [[]], "x"]),
        ] {
            let text = serde_json::to_string(&value).expect("serializes");
            assert_eq!(value_counts(&value), Counts::of(&text), "{text}");
        }
    }

    #[test]
    fn deep_values_are_counted_without_recursion() {
        let mut value = json!(1);
        for _ in 0..100_000 {
            value = Value::Array(vec![value]);
        }
        let counts = std::thread::Builder::new()
            .stack_size(128 * 1024)
            .spawn(move || {
                let counts = value_counts(&value);
                std::mem::forget(value); // Its drop would recurse; the test is about counting.
                counts
            })
            .expect("spawns")
            .join()
            .expect("no overflow");
        assert_eq!(counts.punct, 200_000);
    }
}

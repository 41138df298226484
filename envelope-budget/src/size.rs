//! The sized view: [`Counts`] of the compact JSON a value serializes to, written a few KiB at
//! a time and counted in blocks, never held whole. Iterative, so attacker-controlled depth
//! cannot overflow the stack.

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

/// The counts of `value`'s compact JSON serialization.
pub(crate) fn value_counts(value: &Value) -> Counts {
    value_counts_until(value, &mut Scratch::default(), |_| false).unwrap_or_default()
}

/// Scratch space for [`value_counts_until`], reused across calls to save allocations.
#[derive(Default)]
pub(crate) struct Scratch<'a> {
    frames: Vec<Frame<'a>>,
    bytes: Vec<u8>,
}

/// What is left to write of one container, or a value to write.
enum Frame<'a> {
    Value(&'a Value),
    Array(std::slice::Iter<'a, Value>, bool),
    Object(serde_json::map::Iter<'a>, bool),
}

/// Written bytes are counted, and the bound checked, once this many have gathered.
const FLUSH_BYTES: usize = 4096;

/// The counts of `value`'s serialization, or `None` as soon as `over(counts so far)` holds:
/// sizing stops at the budget instead of going through a payload that cannot be kept anyway.
///
/// The value is written out as compact JSON, iteratively (attacker-controlled depth cannot
/// overflow the stack), a few KiB at a time, and each batch counted in blocks: several times
/// faster than adding up the counts of every key and string one by one. A batch ends only
/// between two tokens, where JSON punctuation separates what comes before from what comes
/// after, so the counts are exactly those of the whole serialization.
pub(crate) fn value_counts_until<'a>(
    value: &'a Value,
    scratch: &mut Scratch<'a>,
    over: impl Fn(&Counts) -> bool,
) -> Option<Counts> {
    let Scratch { frames, bytes } = scratch;
    frames.clear();
    bytes.clear();
    frames.push(Frame::Value(value));
    let mut total = Counts::default();
    while let Some(frame) = frames.pop() {
        match frame {
            Frame::Value(value) => match value {
                Value::Null => bytes.extend_from_slice(b"null"),
                Value::Bool(true) => bytes.extend_from_slice(b"true"),
                Value::Bool(false) => bytes.extend_from_slice(b"false"),
                // As serde_json writes it: the same digits the response will carry.
                Value::Number(number) => write_json(bytes, number),
                Value::String(text) => write_string(bytes, text),
                Value::Array(items) => {
                    bytes.push(b'[');
                    frames.push(Frame::Array(items.iter(), true));
                }
                Value::Object(map) => {
                    bytes.push(b'{');
                    frames.push(Frame::Object(map.iter(), true));
                }
            },
            Frame::Array(mut items, first) => match items.next() {
                Some(item) => {
                    if !first {
                        bytes.push(b',');
                    }
                    frames.push(Frame::Array(items, false));
                    frames.push(Frame::Value(item));
                }
                None => bytes.push(b']'),
            },
            Frame::Object(mut members, first) => match members.next() {
                Some((key, item)) => {
                    if !first {
                        bytes.push(b',');
                    }
                    write_string(bytes, key);
                    bytes.push(b':');
                    frames.push(Frame::Object(members, false));
                    frames.push(Frame::Value(item));
                }
                None => bytes.push(b'}'),
            },
        }
        if bytes.len() >= FLUSH_BYTES {
            total.add_bytes(bytes);
            bytes.clear();
            if over(&total) {
                frames.clear();
                return None;
            }
        }
    }
    total.add_bytes(bytes);
    bytes.clear();
    if over(&total) {
        return None;
    }
    Some(total)
}

/// Writes `text` as a JSON string literal, as serde_json writes it.
fn write_string(bytes: &mut Vec<u8>, text: &str) {
    if text.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        write_json(bytes, text);
    } else {
        bytes.push(b'"');
        bytes.extend_from_slice(text.as_bytes());
        bytes.push(b'"');
    }
}

/// Writes a scalar with serde_json. Writing into a `Vec` cannot fail.
fn write_json(bytes: &mut Vec<u8>, value: &(impl serde::Serialize + ?Sized)) {
    let _ = serde_json::to_writer(bytes, value);
}

/// The counts of `,"key":` or `"key":` — one object member's key part.
pub(crate) fn member_key_counts(key: &str, with_comma: bool) -> Counts {
    let mut counts = string_counts(key);
    counts.punct += 1 + u64::from(with_comma);
    counts
}

/// Counts of everything but `data` of a response, as serialized, and of the `data` member's
/// key and comma when `with_data` (its value is counted apart).
pub(crate) fn rest_counts(rest: &serde_json::Map<String, Value>, with_data: bool) -> Counts {
    // Written out and counted in blocks: for these few hundred bytes, faster than a walk. The
    // response is written out whole later anyway, so this is no deeper a recursion than that.
    let mut bytes = Vec::with_capacity(512);
    // Writing JSON into a `Vec` cannot fail for a map with string keys.
    let _ = serde_json::to_writer(&mut bytes, rest);
    let mut counts = Counts::of_bytes(&bytes);
    if with_data {
        counts += member_key_counts(envelope_core::fields::envelope::DATA, true);
    }
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

//! Edits of compact JSON this crate wrote, in place: removing one member found by its path of
//! keys, so a stamp counted on the way need not cost a second serialization to leave out.
//!
//! Invariant: the text is valid compact JSON (no whitespace between tokens), as `serde_json`
//! writes it; anything else is left unchanged.

/// Removes the member at `path` (object keys from the top) from `json`, with the comma that
/// joined it to a neighbour. Leaves the text unchanged when a key on the path is missing or a
/// value on it is not an object.
pub(crate) fn remove_member(json: &mut String, path: &[&str]) {
    if let Some(range) = member_range(json.as_bytes(), path) {
        json.replace_range(range, "");
    }
}

/// The bytes of the member at `path`, with one joining comma.
fn member_range(bytes: &[u8], path: &[&str]) -> Option<std::ops::Range<usize>> {
    let (last, parents) = path.split_last()?;
    let mut object = 0;
    for key in parents {
        let (_, value) = find_member(bytes, object, key)?;
        object = value.start;
    }
    let (member, _) = find_member(bytes, object, last)?;
    // The comma after it, or else the one before it.
    if bytes.get(member.end) == Some(&b',') {
        Some(member.start..member.end + 1)
    } else if member.start > 0 && bytes.get(member.start - 1) == Some(&b',') {
        Some(member.start - 1..member.end)
    } else {
        Some(member)
    }
}

/// In the object starting at `start`, the member whose key is `key`: its whole range and its
/// value's.
fn find_member(
    bytes: &[u8],
    start: usize,
    key: &str,
) -> Option<(std::ops::Range<usize>, std::ops::Range<usize>)> {
    if bytes.get(start) != Some(&b'{') {
        return None;
    }
    let wanted = serde_json::to_string(key).ok()?;
    let mut at = start + 1;
    while bytes.get(at) == Some(&b'"') {
        let key_end = skip_string(bytes, at)?;
        let value_start = key_end + 1;
        if bytes.get(key_end) != Some(&b':') {
            return None;
        }
        let value_end = skip_value(bytes, value_start)?;
        if &bytes[at..key_end] == wanted.as_bytes() {
            return Some((at..value_end, value_start..value_end));
        }
        at = match bytes.get(value_end) {
            Some(b',') => value_end + 1,
            _ => return None,
        };
    }
    None
}

/// The end of the string starting at `start` (just past its closing quote).
fn skip_string(bytes: &[u8], start: usize) -> Option<usize> {
    let mut at = start + 1;
    loop {
        match bytes.get(at)? {
            b'\\' => at += 2,
            b'"' => return Some(at + 1),
            _ => at += 1,
        }
    }
}

/// The end of the value starting at `start`.
fn skip_value(bytes: &[u8], start: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut at = start;
    loop {
        match bytes.get(at)? {
            b'"' => {
                at = skip_string(bytes, at)?;
                if depth == 0 {
                    return Some(at);
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                if depth == 0 {
                    return Some(at);
                }
                depth -= 1;
                if depth == 0 {
                    return Some(at + 1);
                }
            }
            b',' if depth == 0 => return Some(at),
            _ => {}
        }
        at += 1;
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;

    fn removed(value: &Value, path: &[&str]) -> String {
        let mut text = serde_json::to_string(value).expect("json");
        remove_member(&mut text, path);
        text
    }

    #[test]
    fn a_member_leaves_with_its_comma_wherever_it_is() {
        let value = json!({
            "data": {"meta": {"tokens_estimated": 1}, "text": "\"meta\":{\"tokens_estimated\":2}"},
            "meta": {"a": [1, {"b": "}"}], "tokens_estimated": 123, "z": true}
        });
        let text = removed(&value, &["meta", "tokens_estimated"]);
        let mut expected = value.clone();
        expected["meta"]
            .as_object_mut()
            .expect("object")
            .remove("tokens_estimated");
        assert_eq!(text, serde_json::to_string(&expected).expect("json"));
        for (meta, left) in [
            (json!({"tokens_estimated": 5, "x": 1}), json!({"x": 1})),
            (json!({"x": 1, "tokens_estimated": 5}), json!({"x": 1})),
            (json!({"tokens_estimated": 5}), json!({})),
        ] {
            let text = removed(&json!({"meta": meta}), &["meta", "tokens_estimated"]);
            assert_eq!(
                text,
                serde_json::to_string(&json!({"meta": left})).expect("json")
            );
        }
    }

    #[test]
    fn a_missing_member_changes_nothing() {
        let value = json!({"meta": {"x": 1}, "data": [1, 2]});
        let text = serde_json::to_string(&value).expect("json");
        assert_eq!(removed(&value, &["meta", "tokens_estimated"]), text);
        assert_eq!(removed(&value, &["data", "x"]), text);
    }
}

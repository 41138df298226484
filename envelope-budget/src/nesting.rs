//! How deep a JSON value nests, and how many values it holds: one walk, iterative like every
//! walk here, that goes no further than the question needs.

use serde_json::Value;

/// Whether `value` has a container `limit` or more levels down (the root is level 0), the
/// depth the trimmer cuts at.
pub(crate) fn nested_deeper_than(value: &Value, limit: usize) -> bool {
    walk(value, limit, usize::MAX) == Walked::TooDeep
}

/// Whether `value` holds at most `max_values` values in all (itself included) and has no
/// container `limit` or more levels down; walked no further than that many values.
pub(crate) fn small_and_within(value: &Value, max_values: usize, limit: usize) -> bool {
    walk(value, limit, max_values) == Walked::Within
}

/// Where a walk stopped.
#[derive(Debug, PartialEq, Eq)]
enum Walked {
    Within,
    TooDeep,
    TooMany,
}

fn walk(value: &Value, limit: usize, max_values: usize) -> Walked {
    let is_container = |value: &&Value| value.is_array() || value.is_object();
    if !is_container(&value) {
        return Walked::Within;
    }
    // Scalars are counted where their container is opened, never pushed.
    let mut values = 1_usize;
    let mut stack = vec![(value, 0)];
    while let Some((node, depth)) = stack.pop() {
        if depth >= limit {
            return Walked::TooDeep;
        }
        let next = depth + 1;
        match node {
            Value::Array(items) => {
                values = values.saturating_add(items.len());
                stack.extend(items.iter().filter(is_container).map(|child| (child, next)));
            }
            Value::Object(map) => {
                values = values.saturating_add(map.len());
                stack.extend(map.values().filter(is_container).map(|child| (child, next)));
            }
            _ => {}
        }
        if values > max_values {
            return Walked::TooMany;
        }
    }
    Walked::Within
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn nested(levels: usize) -> Value {
        (0..levels).fold(json!(1), |inner, _| json!([inner]))
    }

    #[test]
    fn depth_counts_containers_and_size_counts_every_value() {
        // `levels` arrays around a scalar: the innermost array is `levels - 1` down.
        assert!(!nested_deeper_than(&nested(3), 3));
        assert!(nested_deeper_than(&nested(4), 3));
        assert!(!nested_deeper_than(&json!("text"), 0));
        assert!(small_and_within(&nested(3), 6, 3));
        assert!(!small_and_within(&nested(4), 100, 3));
        // Four values: the list and its three numbers.
        assert!(small_and_within(&json!([1, 2, 3]), 4, 10));
        assert!(!small_and_within(&json!([1, 2, 3]), 3, 10));
        assert!(!small_and_within(
            &json!({"a": [1, 2], "b": {"c": 3}}),
            5,
            10
        ));
    }
}

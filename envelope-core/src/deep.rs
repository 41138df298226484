//! Dropping JSON values of any depth without recursion.
//!
//! Contract: [`drop_deep`] uses a constant amount of call stack whatever the value's nesting,
//! so an attacker-controlled depth costs heap, never the thread's stack.

use serde_json::Value;

/// Drops `value` without recursing, however deeply it nests.
///
/// A `serde_json::Value` frees its children recursively, so dropping one nested a few hundred
/// thousand levels deep overflows the stack and aborts the process. This function dismantles
/// the value with an explicit `Vec` stack instead: each array or object is emptied before it is
/// dropped, so every drop that actually runs is shallow. Call it on any value whose depth an
/// untrusted caller controls, once you are done with it.
///
/// ```
/// use serde_json::Value;
///
/// // A value far deeper than any stack could drop recursively.
/// let mut value = Value::Null;
/// for _ in 0..200_000 {
///     value = Value::Array(vec![value]);
/// }
/// envelope_core::stage::drop_deep(value);
/// ```
pub fn drop_deep(value: Value) {
    let mut stack = Vec::new();
    push_if_container(&mut stack, value);
    while let Some(mut container) = stack.pop() {
        match &mut container {
            Value::Array(items) => {
                for item in std::mem::take(items) {
                    push_if_container(&mut stack, item);
                }
            }
            Value::Object(map) => {
                for (_, item) in std::mem::take(map) {
                    push_if_container(&mut stack, item);
                }
            }
            _ => {}
        }
        // `container` is now empty, so dropping it here is shallow.
    }
}

/// Queues arrays and objects for dismantling; primitives are dropped at once.
fn push_if_container(stack: &mut Vec<Value>, value: Value) {
    if matches!(value, Value::Array(_) | Value::Object(_)) {
        stack.push(value);
    }
}

#[cfg(test)]
mod tests {
    use serde_json::{Map, Value, json};

    use super::drop_deep;

    /// Builds a value nested `depth` levels deep, alternating arrays and objects, without
    /// recursion.
    fn deep_value(depth: usize) -> Value {
        let mut value = json!("leaf");
        for level in 0..depth {
            value = if level % 2 == 0 {
                Value::Array(vec![value, json!(level)])
            } else {
                let mut map = Map::new();
                map.insert("k".to_owned(), value);
                map.insert("n".to_owned(), json!(level));
                Value::Object(map)
            };
        }
        value
    }

    #[test]
    fn drop_deep_survives_a_million_levels_on_a_small_stack() {
        let value = deep_value(1_000_000);
        std::thread::Builder::new()
            .stack_size(64 * 1024)
            .spawn(move || drop_deep(value))
            .expect("spawning a thread works in tests")
            .join()
            .expect("drop_deep does not panic");
    }

    #[test]
    fn drop_deep_accepts_primitives_and_wide_values() {
        drop_deep(Value::Null);
        drop_deep(json!("text"));
        drop_deep(json!({ "a": [1, 2, { "b": [] }], "c": {} }));
        drop_deep(Value::Array((0..100_000).map(Value::from).collect()));
    }
}

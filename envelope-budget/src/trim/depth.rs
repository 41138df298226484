//! Rung 0: containers nested past the depth limit, cut to a marker string.

use envelope_core::meta_keys as keys;
use serde_json::{Value, json};

use super::*;

/// Rung 0 (last in time): containers nested deeper than [`MAX_DEPTH`] become a marker string.
/// Returns whether anything was cut.
pub(super) fn cut_too_deep(data: &mut Value, job: &mut Job) -> bool {
    let mut cut = 0_u64;
    let mut stack: Vec<(&mut Value, usize)> = vec![(data, 0)];
    while let Some((node, depth)) = stack.pop() {
        let is_container = matches!(node, Value::Array(_) | Value::Object(_));
        if depth >= MAX_DEPTH && is_container {
            let removed = std::mem::replace(
                node,
                Value::String(format!(
                    "{TRUNCATION_SUFFIX} nested deeper than {MAX_DEPTH} levels"
                )),
            );
            job.leftovers.push(removed);
            cut += 1;
            continue;
        }
        match node {
            Value::Array(items) => stack.extend(items.iter_mut().map(|item| (item, depth + 1))),
            Value::Object(map) => stack.extend(map.values_mut().map(|item| (item, depth + 1))),
            _ => {}
        }
    }
    if cut > 0 {
        job.set_marker(
            keys::TRUNCATED_DEPTH.to_owned(),
            json!({ "limit": MAX_DEPTH, "cut": cut }),
        );
    }
    cut > 0
}

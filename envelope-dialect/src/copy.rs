//! Carrying members from one JSON object into another as they are: the renderings and views
//! copy many fields across unchanged, and only the ones present (an absent field means "not
//! applicable", never `null`), whether read from JSON or from a dialect's typed fields.

use serde::Serialize;
use serde_json::{Map, Value};

/// Inserts into `out`, under `to`, the value `lookup` finds for `from`, for each `(from, to)`
/// of `renames` in order; a `from` it does not find leaves `to` untouched.
pub(crate) fn renamed<'k, 'v>(
    out: &mut Map<String, Value>,
    renames: impl IntoIterator<Item = (&'k str, &'k str)>,
    lookup: impl Fn(&str) -> Option<&'v Value>,
) {
    for (from, to) in renames {
        if let Some(value) = lookup(from) {
            out.insert(to.to_owned(), value.clone());
        }
    }
}

/// Inserts into `out` each of `keys` that `lookup` finds, under the same name, in order.
pub(crate) fn present<'v>(
    out: &mut Map<String, Value>,
    keys: &[&str],
    lookup: impl Fn(&str) -> Option<&'v Value>,
) {
    renamed(out, keys.iter().map(|&key| (key, key)), lookup);
}

/// Inserts `value` into `out` under `name`, when there is one (a typed field read back).
pub(crate) fn put(out: &mut Map<String, Value>, name: &str, value: Option<impl Serialize>) {
    if let Some(value) = value.and_then(|value| serde_json::to_value(value).ok()) {
        out.insert(name.to_owned(), value);
    }
}

/// Inserts `list` into `out` under `name`, when it is not empty (an empty list is no field).
pub(crate) fn put_list(out: &mut Map<String, Value>, name: &str, list: &[impl Serialize]) {
    if !list.is_empty() {
        put(out, name, Some(list));
    }
}

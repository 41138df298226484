//! A failed envelope as the contract's `{"ok": false, "error": {category, retryable, message}}`.

use envelope_core::Category;
use envelope_core::fields::error as field;
use serde_json::Value;

use super::wire::{Failure, FailureError};
use crate::typed::Flag;

/// The failure of `wire`: its category, whether a retry helps, and its message; nothing else.
pub(super) fn render(wire: &crate::Wire<'_>) -> Value {
    let category = category(wire);
    let retryable = wire
        .error_field(field::RETRYABLE)
        .and_then(Value::as_bool)
        .unwrap_or_else(|| category.retryable_default());
    let failure = Failure {
        ok: Flag,
        error: FailureError {
            category,
            retryable,
            message: message(wire),
        },
    };
    // A struct of a category, a flag and a string always serializes.
    serde_json::to_value(failure).unwrap_or(Value::Null)
}

/// The error's category; one the contract does not know (or none: a malformed envelope) is
/// `internal`, the contract's "anything else".
fn category(wire: &crate::Wire<'_>) -> Category {
    let name = wire.error_field(field::CATEGORY).and_then(Value::as_str);
    Category::ALL
        .iter()
        .copied()
        .find(|category| Some(category.as_str()) == name)
        .unwrap_or(Category::Internal)
}

/// The error's message; a malformed envelope without one falls back to its code, then to
/// nothing, since the contract requires the field but the envelope has nothing else to say.
fn message(wire: &crate::Wire<'_>) -> String {
    [field::MESSAGE, field::CODE]
        .into_iter()
        .find_map(|name| wire.error_field(name).and_then(Value::as_str))
        .unwrap_or_default()
        .to_owned()
}

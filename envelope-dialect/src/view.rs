//! Each dialect read back as the envelope it carries (see [`view`](crate::view)).

use serde_json::Value;

/// pincher's `{result, _meta}` as an envelope.
pub(crate) fn pincher(answer: &Value) -> Value {
    answer.clone()
}

/// cos's `{ok, data, error}` as an envelope.
pub(crate) fn cos(answer: &Value) -> Value {
    answer.clone()
}

/// TSA's agent envelope as an envelope.
pub(crate) fn tsa(answer: &Value) -> Value {
    answer.clone()
}

/// Frigg's response as an envelope.
pub(crate) fn frigg(answer: &Value) -> Value {
    answer.clone()
}

//! What the paging tests share: a key, a request and the binding it is sealed to.

use serde_json::{Value, json};

use super::{Binding, ContinuationKey};

/// A key with id `id`, its bytes all `id`.
pub(super) fn key(id: u32) -> ContinuationKey {
    ContinuationKey::new(id, [id as u8; 32])
}

/// A search request.
pub(super) fn args() -> Value {
    json!({"query": "needle", "path": "src", "limit": 10})
}

/// The binding of `request` to one tool, session, scope and snapshot.
pub(super) fn binding(request: &Value) -> Binding<'_> {
    Binding::new("search_text", "session-1", request)
        .with_scope("root=/repo")
        .with_snapshot("rev-1")
}

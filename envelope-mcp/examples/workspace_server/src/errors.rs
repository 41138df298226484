//! The errors several tools answer with.

use envelope_core::paging::INVALID_ARGUMENT;
use envelope_core::{ToolError, ToolResult};
use serde_json::json;

/// The longest `query` or `path_glob`, in bytes. A compiled pattern costs memory in proportion
/// to its length; past this one, the caller gets a `validation` error instead.
pub(crate) const MAX_PATTERN_BYTES: usize = 4_096;

/// A `validation` error naming the argument at fault, shaped like the ones argument decoding
/// produces (`data.field`).
pub(crate) fn invalid(field: &str, message: impl Into<String>) -> ToolError {
    ToolError::validation(message)
        .with_code(INVALID_ARGUMENT)
        .with_data(json!({ "field": field }))
}

/// Refuses a pattern argument longer than [`MAX_PATTERN_BYTES`].
pub(crate) fn bounded_pattern(field: &str, pattern: &str) -> ToolResult<()> {
    if pattern.len() > MAX_PATTERN_BYTES {
        return Err(invalid(
            field,
            format!(
                "`{field}` is {} bytes long; at most {MAX_PATTERN_BYTES} are accepted",
                pattern.len()
            ),
        ));
    }
    Ok(())
}

/// The error a long tool stops with when the caller cancelled. Not `transient`: the caller
/// withdrew the call, so retrying it unchanged is not what anyone asked for.
pub(crate) fn cancelled(tool: &str) -> ToolError {
    ToolError::unavailable(format!(
        "`{tool}` was cancelled by the caller before it finished"
    ))
    .with_code("cancelled")
    .with_retryable(false)
}

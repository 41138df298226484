//! The one reader of the wire: the envelope a tool result carries, and its typed decoding.
//! `envelope-check` reads results through it too.

use envelope_core::Envelope;
use rmcp::model::CallToolResult;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::error::{DecodeError, ReadError};

/// How many characters of a text block a [`ReadError`] shows.
const SHOWN_CHARS: usize = 300;

/// The envelope `result` carries: its `structuredContent`, as sent.
///
/// The text mirror is not read: it may be TOON, or cut, and `structuredContent` is the
/// envelope by contract.
///
/// ```
/// use rmcp::model::{CallToolResult, ContentBlock};
///
/// let plain = CallToolResult::success(vec![ContentBlock::text("hello")]);
/// let error = envelope_client::read::structured(&plain).unwrap_err();
/// assert!(error.to_string().contains("no `structuredContent`"));
/// ```
pub fn structured(result: &CallToolResult) -> Result<&Value, ReadError> {
    result
        .structured_content
        .as_ref()
        .ok_or_else(|| ReadError::NoStructuredContent {
            text: result
                .content
                .iter()
                .find_map(|block| block.as_text())
                .map(|text| text.text.chars().take(SHOWN_CHARS).collect()),
        })
}

/// Decodes `value` as an envelope whose `data` is a `T`; the error names the field at fault.
///
/// The envelope's own rules are checked: `ok` with `data` and without `error` or the other way
/// round, the verdict `ERROR` exactly when `ok` is false, a `completeness` that does not
/// contradict itself, at most 8 next actions.
///
/// ```
/// use serde_json::json;
///
/// let wire = json!({"ok": true, "verdict": "INFO", "data": {"hits": "three"},
///                   "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3}});
/// #[derive(Debug, serde::Deserialize)]
/// struct Hits {
///     #[allow(dead_code)]
///     hits: u32,
/// }
/// let error = envelope_client::read::decode::<Hits>(&wire).unwrap_err();
/// assert_eq!(error.field(), "data.hits");
/// ```
pub fn decode<T: DeserializeOwned>(value: &Value) -> Result<Envelope<T>, DecodeError> {
    serde_path_to_error::deserialize(value).map_err(|error| DecodeError {
        path: error.path().to_string(),
        message: error.into_inner().to_string(),
    })
}

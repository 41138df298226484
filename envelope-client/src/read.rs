//! The one reader of the wire: the envelope a tool result carries, and its typed decoding;
//! whether a listed tool speaks the envelope at all, and the [`Answer`] of one that may not.
//! `envelope-check` reads results through it too.

use envelope_core::Envelope;
use envelope_core::fields::envelope as field;
use rmcp::model::{CallToolResult, Tool};
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

/// The envelope `result` carries, as the kit reads it: its `structuredContent`, or, only when
/// that is absent, its first text block when that is the envelope's JSON (an object with `ok`):
/// the text channel mirrors the envelope for clients that read text. A text block that is not
/// an envelope (TOON, prose) is no envelope: [`ReadError::NoStructuredContent`].
///
/// ```
/// use rmcp::model::{CallToolResult, ContentBlock};
///
/// let mirrored = CallToolResult::success(vec![ContentBlock::text(
///     r#"{"ok":true,"verdict":"INFO","data":{},"meta":{}}"#,
/// )]);
/// assert_eq!(envelope_client::read::envelope_value(&mirrored).unwrap()["ok"], true);
/// let prose = CallToolResult::success(vec![ContentBlock::text("hello")]);
/// assert!(envelope_client::read::envelope_value(&prose).is_err());
/// ```
///
/// An envelope whose `ok` contradicts the result's `isError` is
/// [`ReadError::IsErrorDisagrees`]: a server that says both cannot be believed on either.
pub fn envelope_value(result: &CallToolResult) -> Result<Value, ReadError> {
    let value = match structured(result) {
        Ok(value) => value.clone(),
        Err(missing) => result
            .content
            .iter()
            .find_map(|block| block.as_text())
            .and_then(|text| serde_json::from_str::<Value>(&text.text).ok())
            .filter(|value| value.get(field::OK).is_some())
            .ok_or(missing)?,
    };
    let is_error = result.is_error.unwrap_or(false);
    match value.get(field::OK).and_then(Value::as_bool) {
        Some(ok) if ok == is_error => Err(ReadError::IsErrorDisagrees { is_error, ok }),
        _ => Ok(value),
    }
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

/// What an envelope tool's listed output schema requires at its root.
const ENVELOPE_REQUIRES: [&str; 3] = [field::OK, field::VERDICT, field::META];

/// Whether `tool`'s listed output schema is an envelope's: it requires `ok`, `verdict` and
/// `meta` at its root, as every envelope tool's does.
///
/// ```
/// use rmcp::model::Tool;
/// use serde_json::json;
///
/// let schema = |value: serde_json::Value| std::sync::Arc::new(value.as_object().cloned().unwrap_or_default());
/// let plain = Tool::new("echo", "echo", schema(json!({"type": "object"})));
/// assert!(!envelope_client::read::speaks_envelope(&plain));
/// let envelope = plain.clone().with_raw_output_schema(schema(json!(
///     {"type": "object", "required": ["ok", "verdict", "meta"]}
/// )));
/// assert!(envelope_client::read::speaks_envelope(&envelope));
/// ```
pub fn speaks_envelope(tool: &Tool) -> bool {
    tool.output_schema
        .as_ref()
        .and_then(|schema| schema.get("required"))
        .and_then(Value::as_array)
        .is_some_and(|required| {
            ENVELOPE_REQUIRES
                .iter()
                .all(|name| required.iter().any(|listed| listed == name))
        })
}

/// Whether `tool` lists an output schema that is not an envelope's: a plain tool. A tool listed
/// without one is neither this nor [`speaks_envelope`]: its answer tells.
pub fn is_plain(tool: &Tool) -> bool {
    tool.output_schema.is_some() && !speaks_envelope(tool)
}

/// What [`Client::call_any`](crate::Client::call_any) answers: an envelope, or a plain tool's
/// result as it came, marked as no envelope.
#[derive(Debug)]
#[non_exhaustive]
pub enum Answer<T> {
    /// The tool speaks the envelope: its envelope, decoded (boxed: an envelope is far larger
    /// than a plain result).
    Envelope(Box<Envelope<T>>),
    /// A plain tool: its result, unread.
    Plain(CallToolResult),
}

impl<T> Answer<T> {
    /// The envelope, when the tool speaks it.
    pub fn envelope(&self) -> Option<&Envelope<T>> {
        match self {
            Answer::Envelope(envelope) => Some(envelope.as_ref()),
            Answer::Plain(_) => None,
        }
    }

    /// The plain result, when the tool is plain.
    pub fn plain(&self) -> Option<&CallToolResult> {
        match self {
            Answer::Plain(result) => Some(result),
            Answer::Envelope(_) => None,
        }
    }
}

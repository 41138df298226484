//! An upstream's `tools/call` result read as an envelope's parts: `data`, the media attached,
//! and what the raw answer would have cost the model.
//!
//! `data` is the upstream's `structuredContent` when it sends one; else its text, parsed as
//! JSON where the whole of it is a JSON object or array, else the text as it is (several text
//! blocks joined by a newline). Images, audio, embedded resources and resource links become
//! attachments, which the budget stage sends as MCP content blocks and notes in
//! `meta.attachments`.

use envelope_core::{Attachment, ResourceContents};
use rmcp::model::CallToolResult;
use serde_json::Value;

/// What one upstream answer holds.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Answer {
    /// The envelope's `data`.
    pub(crate) data: Value,
    /// The media the upstream sent.
    pub(crate) attachments: Vec<Attachment>,
    /// Whether the upstream said the call failed (`isError`).
    pub(crate) is_error: bool,
    /// The text of the answer, for an error's message.
    pub(crate) text: String,
    /// The answer as the upstream sent it (`content` and `structuredContent`), serialized: the
    /// baseline a model shown the raw answer would have paid for, and what a read-only tool's
    /// continuation is bound to.
    pub(crate) raw: String,
}

impl Answer {
    /// Reads `result`.
    pub(crate) fn read(result: &CallToolResult) -> Answer {
        let mut texts = Vec::new();
        let mut attachments = Vec::new();
        for block in &result.content {
            // Read through the wire form: the block's `type` names what it is in every protocol
            // revision rmcp reads.
            let Ok(block) = serde_json::to_value(block) else {
                continue;
            };
            let field = |name: &str| block.get(name).and_then(Value::as_str);
            match field("type") {
                Some("text") => texts.push(field("text").unwrap_or_default().to_owned()),
                Some("image") => attachments.push(Attachment::image_base64(
                    field("data").unwrap_or_default(),
                    field("mimeType").unwrap_or("application/octet-stream"),
                )),
                Some("audio") => attachments.push(Attachment::audio_base64(
                    field("data").unwrap_or_default(),
                    field("mimeType").unwrap_or("application/octet-stream"),
                )),
                Some("resource_link") => {
                    let mut link = Attachment::link(
                        field("uri").unwrap_or_default(),
                        field("name").unwrap_or_default(),
                    );
                    if let Some(mime) = field("mimeType") {
                        link = link.with_mime_type(mime);
                    }
                    attachments.push(link);
                }
                Some("resource") => {
                    if let Some(resource) = block.get("resource") {
                        attachments.push(embedded(resource));
                    }
                }
                _ => {}
            }
        }
        let text = texts.join("\n");
        let data = match &result.structured_content {
            Some(structured) if !structured.is_null() => structured.clone(),
            _ => parsed(&text).unwrap_or_else(|| {
                if text.is_empty() && !attachments.is_empty() {
                    Value::Null
                } else {
                    Value::String(text.clone())
                }
            }),
        };
        let raw = serde_json::to_string(&serde_json::json!({
            "content": result.content,
            "structuredContent": result.structured_content,
        }))
        .unwrap_or_default();
        Answer {
            data,
            attachments,
            is_error: result.is_error == Some(true),
            text,
            raw,
        }
    }
}

/// `text` as JSON when the whole of it is a JSON object or array.
fn parsed(text: &str) -> Option<Value> {
    let trimmed = text.trim_start();
    if !(trimmed.starts_with('{') || trimmed.starts_with('[')) {
        return None;
    }
    serde_json::from_str::<Value>(text)
        .ok()
        .filter(|value| value.is_object() || value.is_array())
}

/// An embedded resource (`{uri, mimeType, text | blob}`) as an attachment.
fn embedded(resource: &Value) -> Attachment {
    let field = |name: &str| resource.get(name).and_then(Value::as_str);
    let contents = match (field("text"), field("blob")) {
        (Some(text), _) => ResourceContents::Text(text.to_owned()),
        (None, Some(blob)) => ResourceContents::Blob(blob.to_owned()),
        (None, None) => ResourceContents::Text(String::new()),
    };
    Attachment::Resource {
        uri: field("uri").unwrap_or_default().to_owned(),
        mime_type: field("mimeType").map(str::to_owned),
        contents,
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock as Content};
    use serde_json::json;

    use super::*;

    #[test]
    fn data_is_structured_content_else_json_text_else_text() {
        let mut structured = CallToolResult::success(vec![Content::text("{\"a\":1}")]);
        structured.structured_content = Some(json!({"b": 2}));
        assert_eq!(Answer::read(&structured).data, json!({"b": 2}));

        let json_text = CallToolResult::success(vec![Content::text("[1, 2]")]);
        assert_eq!(Answer::read(&json_text).data, json!([1, 2]));

        let prose = CallToolResult::success(vec![Content::text("hello"), Content::text("world")]);
        assert_eq!(Answer::read(&prose).data, json!("hello\nworld"));

        // A number is text that happens to parse: kept as the text.
        let number = CallToolResult::success(vec![Content::text("42")]);
        assert_eq!(Answer::read(&number).data, json!("42"));
    }

    #[test]
    fn media_becomes_attachments() {
        let result = CallToolResult::success(vec![
            Content::image("aGk=", "image/png"),
            Content::text("a picture"),
        ]);
        let answer = Answer::read(&result);
        assert_eq!(answer.data, json!("a picture"));
        assert_eq!(
            answer.attachments,
            [Attachment::image_base64("aGk=", "image/png")]
        );
        let only_media = CallToolResult::success(vec![Content::image("aGk=", "image/png")]);
        assert_eq!(Answer::read(&only_media).data, Value::Null);
    }

    #[test]
    fn is_error_is_read() {
        let failed = CallToolResult::error(vec![Content::text("ENOENT: no such file")]);
        let answer = Answer::read(&failed);
        assert!(answer.is_error);
        assert_eq!(answer.text, "ENOENT: no such file");
    }
}

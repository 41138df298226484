//! Attachments as MCP content blocks: `image`, `audio`, `resource_link` and `resource`, sent after
//! the envelope's text mirror.

use envelope_core::{Attachment, ResourceContents};
use rmcp::model::ContentBlock;
use serde_json::{Value, json};

/// The content block `attachment` is sent as; `None` (logged) if rmcp refuses it, which a
/// well-formed attachment never is.
pub(crate) fn content_block(attachment: Attachment) -> Option<ContentBlock> {
    let block = block_json(attachment);
    match serde_json::from_value(block) {
        Ok(block) => Some(block),
        Err(error) => {
            tracing::error!(%error, "an attachment is not a valid MCP content block");
            None
        }
    }
}

/// The block as the MCP schema spells it.
fn block_json(attachment: Attachment) -> Value {
    match attachment {
        Attachment::Image { data, mime_type } => {
            // wire: MCP's image content
            json!({ "type": "image", "data": data, "mimeType": mime_type })
        }
        Attachment::Audio { data, mime_type } => {
            // wire: MCP's audio content
            json!({ "type": "audio", "data": data, "mimeType": mime_type })
        }
        Attachment::Link(link) => {
            // wire: MCP's resource link
            let mut block = json!({ "type": "resource_link", "uri": link.uri, "name": link.name });
            if let Some(mime_type) = link.mime_type {
                block["mimeType"] = json!(mime_type); // wire: MCP's resource link
            }
            if let Some(size) = link.size {
                block["size"] = json!(size); // wire: MCP's resource link
            }
            if let Some(description) = link.description {
                block["description"] = json!(description); // wire: MCP's resource link
            }
            block
        }
        Attachment::Resource {
            uri,
            mime_type,
            contents,
        } => {
            let mut resource = match contents {
                ResourceContents::Text(text) => json!({ "uri": uri, "text": text }), // wire: MCP's text resource
                ResourceContents::Blob(blob) => json!({ "uri": uri, "blob": blob }), // wire: MCP's blob resource
            };
            if let Some(mime_type) = mime_type {
                resource["mimeType"] = json!(mime_type); // wire: MCP's resource contents
            }
            json!({ "type": "resource", "resource": resource }) // wire: MCP's embedded resource
        }
        other => {
            // `Attachment` is non-exhaustive; a kind added without a block here is a bug.
            tracing::error!(kind = ?other.kind(), "an attachment kind has no content block");
            Value::Null
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_a_content_block_rmcp_reads() {
        let attachments = [
            Attachment::image(&[1, 2, 3], "image/png"),
            Attachment::audio(&[1, 2, 3], "audio/wav"),
            Attachment::link("test://file", "file")
                .with_mime_type("text/plain")
                .with_size(3),
            Attachment::text_resource("test://text", "text/plain", "hello"),
            Attachment::blob_resource("test://blob", "application/octet-stream", &[0, 1]),
        ];
        let kinds: Vec<String> = attachments
            .into_iter()
            .map(|attachment| {
                let block = content_block(attachment).expect("a block");
                let wire = serde_json::to_value(&block).expect("serializes");
                wire["type"].as_str().unwrap_or_default().to_owned()
            })
            .collect();
        assert_eq!(
            kinds,
            ["image", "audio", "resource_link", "resource", "resource"]
        );
    }

    #[test]
    fn an_embedded_resource_keeps_its_uri_type_and_text() {
        let block = block_json(Attachment::text_resource(
            "test://t",
            "text/markdown",
            "# hi",
        ));
        assert_eq!(
            block,
            json!({ "type": "resource", "resource": { "uri": "test://t", "mimeType": "text/markdown", "text": "# hi" } })
        );
    }
}

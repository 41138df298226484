//! Media a tool hands back beside its envelope: an image, audio, a link to a resource, or a
//! resource embedded whole. The envelope stays the answer; what is attached travels as content
//! blocks after its text mirror, and `meta.attachments` says what each one was and whether it was
//! sent.
//!
//! ```
//! use envelope_core::{Attachment, AttachmentKind, Delivery, Reply};
//!
//! let png = [0x89, b'P', b'N', b'G'];
//! let reply = Reply::new(serde_json::json!({"rendered": true}))
//!     .attach(Attachment::image(&png, "image/png"))
//!     .attach(Attachment::link("file:///srv/report.pdf", "report.pdf").with_mime_type("application/pdf"));
//! let attached = reply.attachments();
//! assert_eq!(attached[0].kind(), AttachmentKind::Image);
//! assert_eq!(attached[0].bytes(), Some(4));
//! // What `meta.attachments` will say of it once the budget stage has sent it.
//! let note = serde_json::to_value(attached[0].note(Delivery::Sent))?;
//! assert_eq!(note, serde_json::json!({"kind": "image", "mime_type": "image/png", "bytes": 4, "delivery": "sent"}));
//! # Ok::<(), serde_json::Error>(())
//! ```

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// One piece of media a tool returns beside its envelope, as MCP carries it (a content block of
/// type `image`, `audio`, `resource_link` or `resource`).
///
/// Binary data is held base64-encoded, as it goes on the wire: the constructors taking bytes
/// encode them once.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Attachment {
    /// An image (`type: "image"`).
    Image {
        /// The image, base64-encoded.
        data: String,
        /// Its MIME type (`image/png`, …).
        mime_type: String,
    },
    /// A sound (`type: "audio"`).
    Audio {
        /// The audio, base64-encoded.
        data: String,
        /// Its MIME type (`audio/wav`, …).
        mime_type: String,
    },
    /// A resource the client can read itself (`type: "resource_link"`): a file handed back by
    /// reference.
    Link(ResourceLink),
    /// A resource embedded whole (`type: "resource"`).
    Resource {
        /// The resource's URI.
        uri: String,
        /// Its MIME type, when known.
        mime_type: Option<String>,
        /// What it holds.
        contents: ResourceContents,
    },
}

/// A link to a resource: its URI and name, with what the client may want to know before reading
/// it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    /// The resource's URI.
    pub uri: String,
    /// Its name, for a person or a model to pick it by.
    pub name: String,
    /// Its MIME type, when known.
    pub mime_type: Option<String>,
    /// Its size in bytes, when known.
    pub size: Option<u64>,
    /// What it is, in a sentence.
    pub description: Option<String>,
}

/// What an embedded resource holds: text, or binary data (base64-encoded).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceContents {
    /// Text (`text`).
    Text(String),
    /// Binary data, base64-encoded (`blob`).
    Blob(String),
}

/// `meta.attachments[].kind`: what an attachment is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    /// `image`.
    Image,
    /// `audio`.
    Audio,
    /// `resource_link`: a link the client reads itself.
    ResourceLink,
    /// `resource`: a resource embedded whole.
    Resource,
}

/// `meta.attachments[].delivery`: whether an attachment was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Delivery {
    /// `sent`: the content block is in the response, whole.
    Sent,
    /// `linked`: the response's budget had no room for it, so a `resource_link` to its URI was
    /// sent instead; read the resource to get it.
    Linked,
    /// `dropped`: the response's budget had no room for it and it has no URI to link to; it was
    /// not sent. Call again with a larger budget to get it.
    Dropped,
}

/// What `meta.attachments` says of one attachment: its kind, MIME type and size, its URI when
/// it has one, and whether it was sent. Listed in the order the tool attached them; the sent
/// content blocks follow the text mirror in the same order.
///
/// Wire names: `kind`, `mime_type`, `bytes` (the decoded size of its data or text; a link's
/// declared size), `uri`, `delivery`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct AttachmentNote {
    /// What the attachment is.
    pub kind: AttachmentKind,
    /// Its MIME type, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when known: what the data or text holds once decoded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
    /// The resource it is or links to, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uri: Option<String>,
    /// Whether it was sent.
    pub delivery: Delivery,
}

impl Attachment {
    /// An image of `bytes`, encoded once.
    pub fn image(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Attachment::Image {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// An image already base64-encoded.
    pub fn image_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Attachment::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A sound of `bytes`, encoded once.
    pub fn audio(bytes: &[u8], mime_type: impl Into<String>) -> Self {
        Attachment::Audio {
            data: STANDARD.encode(bytes),
            mime_type: mime_type.into(),
        }
    }

    /// A sound already base64-encoded.
    pub fn audio_base64(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Attachment::Audio {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// A link to the resource at `uri`, named `name`.
    pub fn link(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Attachment::Link(ResourceLink {
            uri: uri.into(),
            name: name.into(),
            mime_type: None,
            size: None,
            description: None,
        })
    }

    /// The text resource at `uri`, embedded whole.
    pub fn text_resource(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        Attachment::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            contents: ResourceContents::Text(text.into()),
        }
    }

    /// The binary resource at `uri` holding `bytes`, embedded whole (encoded once).
    pub fn blob_resource(
        uri: impl Into<String>,
        mime_type: impl Into<String>,
        bytes: &[u8],
    ) -> Self {
        Attachment::Resource {
            uri: uri.into(),
            mime_type: Some(mime_type.into()),
            contents: ResourceContents::Blob(STANDARD.encode(bytes)),
        }
    }

    /// This attachment with its MIME type set (a link's, or an embedded resource's).
    #[must_use]
    pub fn with_mime_type(mut self, mime: impl Into<String>) -> Self {
        match &mut self {
            Attachment::Image { mime_type, .. } | Attachment::Audio { mime_type, .. } => {
                *mime_type = mime.into();
            }
            Attachment::Link(link) => link.mime_type = Some(mime.into()),
            Attachment::Resource { mime_type, .. } => *mime_type = Some(mime.into()),
        }
        self
    }

    /// A link's size in bytes, as the client will see it before reading it; other kinds know
    /// their size from their data.
    #[must_use]
    pub fn with_size(mut self, bytes: u64) -> Self {
        if let Attachment::Link(link) = &mut self {
            link.size = Some(bytes);
        }
        self
    }

    /// A link's one-sentence description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        if let Attachment::Link(link) = &mut self {
            link.description = Some(description.into());
        }
        self
    }

    /// What it is.
    pub fn kind(&self) -> AttachmentKind {
        match self {
            Attachment::Image { .. } => AttachmentKind::Image,
            Attachment::Audio { .. } => AttachmentKind::Audio,
            Attachment::Link(_) => AttachmentKind::ResourceLink,
            Attachment::Resource { .. } => AttachmentKind::Resource,
        }
    }

    /// The resource it is or links to, if any.
    pub fn uri(&self) -> Option<&str> {
        match self {
            Attachment::Link(link) => Some(&link.uri),
            Attachment::Resource { uri, .. } => Some(uri),
            Attachment::Image { .. } | Attachment::Audio { .. } => None,
        }
    }

    /// Its MIME type, when known.
    pub fn mime_type(&self) -> Option<&str> {
        match self {
            Attachment::Image { mime_type, .. } | Attachment::Audio { mime_type, .. } => {
                Some(mime_type)
            }
            Attachment::Link(link) => link.mime_type.as_deref(),
            Attachment::Resource { mime_type, .. } => mime_type.as_deref(),
        }
    }

    /// Its size once decoded, in bytes: a link's declared size.
    pub fn bytes(&self) -> Option<u64> {
        let decoded = |base64: &str| decoded_len(base64) as u64;
        match self {
            Attachment::Image { data, .. } | Attachment::Audio { data, .. } => Some(decoded(data)),
            Attachment::Link(link) => link.size,
            Attachment::Resource { contents, .. } => Some(match contents {
                ResourceContents::Text(text) => text.len() as u64,
                ResourceContents::Blob(blob) => decoded(blob),
            }),
        }
    }

    /// The characters its content block takes on the wire, about: its data or text, and a
    /// little for the block's keys. What a response budget counts it as.
    pub fn wire_chars(&self) -> usize {
        // `{"type":"…","data":"…","mimeType":"…"}` and the like: keys, quotes, braces.
        const FRAME: usize = 48;
        let text = |value: &Option<String>| value.as_deref().map_or(0, str::len);
        FRAME
            + match self {
                Attachment::Image { data, mime_type } | Attachment::Audio { data, mime_type } => {
                    data.len() + mime_type.len()
                }
                Attachment::Link(link) => {
                    link.uri.len()
                        + link.name.len()
                        + text(&link.mime_type)
                        + text(&link.description)
                        + 24
                }
                Attachment::Resource {
                    uri,
                    mime_type,
                    contents,
                } => {
                    uri.len()
                        + text(mime_type)
                        + match contents {
                            // A JSON string escapes quotes, backslashes and control characters.
                            ResourceContents::Text(text) => {
                                text.len() + text.chars().filter(|c| needs_escape(*c)).count()
                            }
                            ResourceContents::Blob(blob) => blob.len(),
                        }
                }
            }
    }

    /// The link sent in place of this attachment when it does not fit, if it has a URI: a
    /// resource's own URI, named by its last path segment.
    pub fn as_link(&self) -> Option<Attachment> {
        match self {
            Attachment::Resource { uri, mime_type, .. } => {
                let name = uri
                    .rsplit(['/', ':'])
                    .find(|segment| !segment.is_empty())
                    .unwrap_or(uri);
                Some(Attachment::Link(ResourceLink {
                    uri: uri.clone(),
                    name: name.to_owned(),
                    mime_type: mime_type.clone(),
                    size: self.bytes(),
                    description: None,
                }))
            }
            Attachment::Link(_) => Some(self.clone()),
            Attachment::Image { .. } | Attachment::Audio { .. } => None,
        }
    }

    /// What `meta.attachments` says of it, delivered as `delivery`.
    pub fn note(&self, delivery: Delivery) -> AttachmentNote {
        AttachmentNote {
            kind: self.kind(),
            mime_type: self.mime_type().map(str::to_owned),
            bytes: self.bytes(),
            uri: self.uri().map(str::to_owned),
            delivery,
        }
    }
}

fn needs_escape(c: char) -> bool {
    matches!(c, '"' | '\\') || c.is_control()
}

/// The decoded length of standard base64 `data`, padding allowed; a malformed string is
/// measured as if it were well formed (the count is for the reader, not a check).
fn decoded_len(data: &str) -> usize {
    let trimmed = data.trim_end_matches('=');
    trimmed.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_the_decoded_bytes() {
        let png = vec![7_u8; 10];
        assert_eq!(Attachment::image(&png, "image/png").bytes(), Some(10));
        assert_eq!(Attachment::audio(&[1, 2, 3], "audio/wav").bytes(), Some(3));
        assert_eq!(
            Attachment::blob_resource("test://b", "application/octet-stream", &[0; 5]).bytes(),
            Some(5)
        );
        assert_eq!(
            Attachment::text_resource("test://t", "text/plain", "héllo").bytes(),
            Some(6)
        );
        assert_eq!(Attachment::link("test://l", "l").bytes(), None);
        assert_eq!(
            Attachment::link("test://l", "l").with_size(9).bytes(),
            Some(9)
        );
    }

    #[test]
    fn a_resource_links_to_its_uri_and_media_have_nothing_to_link() {
        let resource = Attachment::text_resource("file:///srv/logs/build.txt", "text/plain", "ok");
        let Some(Attachment::Link(link)) = resource.as_link() else {
            panic!("a resource has a link");
        };
        assert_eq!(link.uri, "file:///srv/logs/build.txt");
        assert_eq!(link.name, "build.txt");
        assert_eq!(link.size, Some(2));
        assert_eq!(link.mime_type.as_deref(), Some("text/plain"));
        assert!(Attachment::image(&[1], "image/png").as_link().is_none());
    }

    #[test]
    fn the_note_names_the_kind_and_delivery_on_the_wire() {
        let note = Attachment::image(&[1, 2, 3], "image/png").note(Delivery::Dropped);
        assert_eq!(
            serde_json::to_value(&note).ok(),
            Some(serde_json::json!({
                "kind": "image", "mime_type": "image/png", "bytes": 3, "delivery": "dropped"
            }))
        );
    }

    #[test]
    fn wire_chars_grow_with_the_data() {
        let small = Attachment::image(&[0; 3], "image/png").wire_chars();
        let large = Attachment::image(&[0; 3_000], "image/png").wire_chars();
        assert!(large >= small + 3_996, "{small} {large}");
        let quoted = Attachment::text_resource("u", "text/plain", "\"\"").wire_chars();
        let plain = Attachment::text_resource("u", "text/plain", "aa").wire_chars();
        assert_eq!(quoted, plain + 2);
    }
}

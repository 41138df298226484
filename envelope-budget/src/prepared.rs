//! A response ready to send, and its text mirror.

use envelope_core::fields::envelope as field;
use envelope_core::meta_keys as keys;
use envelope_core::stage::{Controls, OutputFormat};
use envelope_core::{Attachment, RequestId};
use serde_json::Value;

use crate::cut::Leftovers;

/// A response ready to send.
#[derive(Debug)]
pub struct Prepared {
    /// Whether the call worked: the envelope's `ok`.
    pub ok: bool,
    /// The call's id: the envelope's `meta.request_id`, which every mode keeps.
    pub request_id: RequestId,
    /// The envelope as MCP's `structuredContent` carries it.
    pub structured: Value,
    /// Its compact JSON: the bytes `tokens_estimated` counts.
    pub json: String,
    /// The estimated tokens of `json` (of the text sent, when `meta` carries no stamp of its
    /// own: an upper bound by the stamp's few tokens). `meta.tokens_estimated` carries it under
    /// `response_mode: full`; the compact modes leave it out, since a model cannot act on it,
    /// and a server still logs it.
    pub tokens_estimated: Option<u64>,
    /// The envelope in TOON, when `output_format: "toon"` asked for it and the encoder could
    /// render it; `None` means the text channel mirrors `json`.
    pub toon: Option<String>,
    /// Parts the trimmer cut, not yet freed: drop them after sending.
    pub leftovers: Leftovers,
    /// The media sent after the text mirror, in order: each the tool's attachment, or a link in
    /// its place (`meta.attachments` says which, and which were dropped).
    pub attachments: Vec<Attachment>,
}

impl Prepared {
    /// What the first text content carries: TOON when asked and possible, else the JSON.
    pub fn text(&self) -> &str {
        self.toon.as_deref().unwrap_or(&self.json)
    }
}

/// What a response says of its call whatever was cut or shaped: read off the typed envelope.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Outcome {
    pub(crate) ok: bool,
    pub(crate) request_id: RequestId,
}

impl Outcome {
    pub(crate) fn of<T>(envelope: &envelope_core::Envelope<T>) -> Self {
        Outcome {
            ok: envelope.is_ok(),
            request_id: *envelope.meta().request_id(),
        }
    }
}

/// The prepared response, with its TOON mirror when the controls ask for one.
pub(crate) fn with_mirror(
    outcome: Outcome,
    structured: Value,
    json: String,
    controls: &Controls,
    leftovers: Leftovers,
) -> Prepared {
    let (mut structured, mut json) = (structured, json);
    let tokens_estimated = structured[field::META][keys::TOKENS_ESTIMATED].as_u64();
    // Counted on the way (the budget needs the count), but sent only in full.
    if !controls.keeps_full_meta()
        && let Some(Value::Object(meta)) = structured.get_mut(field::META)
        // The map's order (sorted: serde_json without `preserve_order`) is unchanged by the
        // removal, so the text stays what it would serialize to; the property tests hold this.
        && meta.remove(keys::TOKENS_ESTIMATED).is_some()
    {
        crate::splice::remove_member(&mut json, &[field::META, keys::TOKENS_ESTIMATED]);
    }
    // Any encoder error (say, nesting too deep) falls back to the JSON mirror.
    let toon = (controls.output_format == OutputFormat::Toon)
        .then(|| crate::toon::encode(&structured).ok())
        .flatten();
    Prepared {
        ok: outcome.ok,
        request_id: outcome.request_id,
        structured,
        json,
        tokens_estimated,
        toon,
        leftovers,
        attachments: Vec::new(),
    }
}

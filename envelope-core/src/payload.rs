//! How a tool's typed payload becomes the JSON the envelope carries.
//!
//! By default that is `serde_json::to_value`. A transport that trims to a budget can install a
//! [`PayloadEncoder`] on the [`crate::ToolContext`] that stops materializing rows of top-level
//! lists once they could no longer be kept, and reports each list's full length so the trimmer
//! still names the cut with the true numbers.

use serde_json::Value;

/// A payload as JSON, with the full lengths of the top-level lists the encoder did not
/// materialize whole.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPayload {
    /// The payload, possibly with top-level lists cut short.
    pub value: Value,
    /// `(list key, full length)` for each list cut short; the key is `data` for a root array.
    pub precut: Vec<(String, usize)>,
}

/// Turns a typed payload into JSON. Implemented by the budget stage; core only calls it.
pub trait PayloadEncoder: Send + Sync {
    /// Encodes `payload`.
    fn encode(
        &self,
        payload: &dyn erased_serde::Serialize,
    ) -> Result<EncodedPayload, serde_json::Error>;
}

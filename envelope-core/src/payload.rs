//! How a tool's typed payload becomes the JSON the envelope carries.
//!
//! By default that is `serde_json::to_value`. A transport that trims to a budget can install a
//! [`PayloadEncoder`] on the [`crate::ToolContext`] that stops materializing rows of top-level
//! lists once they could no longer be kept, and reports each list's full length so the trimmer
//! still names the cut with the true numbers.

use std::any::Any;
use std::fmt;
use std::sync::Arc;

use serde_json::Value;

/// A payload as JSON, with the full lengths of the top-level lists the encoder did not
/// materialize whole.
#[derive(Debug, Clone, PartialEq)]
pub struct EncodedPayload {
    /// The payload, possibly with top-level lists cut short.
    pub value: Value,
    /// `(list key, full length)` for each list cut short; the key is `data` for a root array.
    pub precut: Vec<(String, usize)>,
    /// What the encoder measured on the way, for the stage that trims, so it need not measure
    /// the same rows again.
    pub measure: EncoderMeasure,
}

/// Whatever a [`PayloadEncoder`] measured while encoding, carried through the envelope to the
/// stage that trims. Opaque to core: the encoder and the trimmer agree on the type.
///
/// It caches facts about the payload, not content, so any two compare equal, and it is never
/// serialized.
#[derive(Clone, Default)]
pub struct EncoderMeasure(Option<Arc<dyn Any + Send + Sync>>);

impl EncoderMeasure {
    /// Carries `measure`.
    pub fn new<M: Any + Send + Sync>(measure: M) -> Self {
        EncoderMeasure(Some(Arc::new(measure)))
    }

    /// The measure, when one of type `M` is carried.
    pub fn get<M: Any>(&self) -> Option<&M> {
        self.0.as_deref().and_then(|measure| measure.downcast_ref())
    }
}

impl fmt::Debug for EncoderMeasure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.0 {
            Some(_) => "EncoderMeasure(..)",
            None => "EncoderMeasure(None)",
        })
    }
}

impl PartialEq for EncoderMeasure {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}

/// Turns a typed payload into JSON. Implemented by the budget stage; core only calls it.
pub trait PayloadEncoder: Send + Sync {
    /// Encodes `payload`.
    fn encode(
        &self,
        payload: &dyn erased_serde::Serialize,
    ) -> Result<EncodedPayload, serde_json::Error>;

    /// The response budget the payload is encoded for, in token-normalized characters (about
    /// four per token); `None` when nothing is trimmed.
    fn budget_chars(&self) -> Option<usize> {
        None
    }

    /// What `value` will take of that budget once sent, in the same token-normalized
    /// characters; `None` when nothing is trimmed (or the value cannot be serialized).
    fn size_of(&self, value: &dyn erased_serde::Serialize) -> Option<usize> {
        let _ = value;
        None
    }
}

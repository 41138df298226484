//! [`ExactCounter`]: exact counts with an OpenAI encoding (feature `exact`).

use envelope_core::TokensMethod;

/// Exact token counts with an OpenAI encoding, by `bpe-openai` (feature `exact`).
///
/// The first count with an encoding loads its dictionary, a few tens of milliseconds;
/// later counts, from any thread, reuse it.
///
/// Only a program that names an encoding ([`cl100k`](Self::cl100k), [`o200k`](Self::o200k))
/// carries its dictionary (15 MB for `cl100k_base`, 32 MB for `o200k_base`): the budget stage
/// counts through the counter it is given, so a server built with `exact` that never picks an
/// encoding links neither.
#[derive(Clone, Copy)]
pub struct ExactCounter {
    encoding: Encoding,
    /// The encoding's tokenizer, reached through a pointer set where the encoding is named: a
    /// `match` on `encoding` here would reference both dictionaries from every caller of
    /// [`count`](Self::count), and the linker would keep them in every binary.
    tokenizer: fn() -> &'static bpe_openai::Tokenizer,
}

impl std::fmt::Debug for ExactCounter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExactCounter")
            .field("encoding", &self.encoding)
            .finish()
    }
}

/// Two counters are equal when they count with the same encoding.
impl PartialEq for ExactCounter {
    fn eq(&self, other: &Self) -> bool {
        self.encoding == other.encoding
    }
}

impl Eq for ExactCounter {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Cl100k,
    O200k,
}

impl ExactCounter {
    /// Counts with `cl100k_base` (GPT-4, GPT-3.5).
    pub fn cl100k() -> ExactCounter {
        ExactCounter {
            encoding: Encoding::Cl100k,
            tokenizer: bpe_openai::cl100k_base,
        }
    }

    /// Counts with `o200k_base` (GPT-4o and later).
    pub fn o200k() -> ExactCounter {
        ExactCounter {
            encoding: Encoding::O200k,
            tokenizer: bpe_openai::o200k_base,
        }
    }

    /// The exact number of tokens `text` encodes to.
    pub fn count(&self, text: &str) -> usize {
        (self.tokenizer)().count(text)
    }

    /// The `meta.tokens_method` these counts stamp.
    pub fn method(&self) -> TokensMethod {
        match self.encoding {
            Encoding::Cl100k => TokensMethod::Cl100kBase,
            Encoding::O200k => TokensMethod::O200kBase,
        }
    }
}

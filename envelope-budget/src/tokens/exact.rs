//! [`ExactCounter`]: exact counts with an OpenAI encoding (feature `exact`).

use envelope_core::TokensMethod;

/// Exact token counts with an OpenAI encoding, by `bpe-openai` (feature `exact`).
///
/// The first count with an encoding loads its dictionary, a few tens of milliseconds;
/// later counts, from any thread, reuse it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExactCounter {
    encoding: Encoding,
}

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
        }
    }

    /// Counts with `o200k_base` (GPT-4o and later).
    pub fn o200k() -> ExactCounter {
        ExactCounter {
            encoding: Encoding::O200k,
        }
    }

    /// The exact number of tokens `text` encodes to.
    pub fn count(&self, text: &str) -> usize {
        self.tokenizer().count(text)
    }

    /// The `meta.tokens_method` these counts stamp.
    pub fn method(&self) -> TokensMethod {
        match self.encoding {
            Encoding::Cl100k => TokensMethod::Cl100kBase,
            Encoding::O200k => TokensMethod::O200kBase,
        }
    }

    fn tokenizer(&self) -> &'static bpe_openai::Tokenizer {
        match self.encoding {
            Encoding::Cl100k => bpe_openai::cl100k_base(),
            Encoding::O200k => bpe_openai::o200k_base(),
        }
    }
}

//! Token estimation (DESIGN §9).
//!
//! Text is summarised once into [`Counts`], per-class character counts that add up over
//! concatenation, so the trimmer can size any combination of kept parts by adding numbers
//! instead of re-serializing. Every [`Estimator`] is a function of `Counts` alone.

use std::ops::{Add, AddAssign};

use envelope_core::TokensMethod;

/// Per-class counts of a text. Additive: the counts of `a + b` are the counts of `a` plus the
/// counts of `b` (up to one word start at the seam).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// ASCII letters.
    pub letters: u64,
    /// ASCII digits.
    pub digits: u64,
    /// Spaces and tabs.
    pub spaces: u64,
    /// Line breaks (`\n`, `\r`).
    pub newlines: u64,
    /// Other ASCII characters: punctuation, symbols, controls.
    pub punct: u64,
    /// CJK and Hangul characters (UTF-8 lead bytes `E3`–`ED`).
    pub cjk: u64,
    /// Other non-ASCII characters.
    pub other: u64,
    /// Starts of runs of ASCII letters.
    pub word_starts: u64,
}

/// Byte classes for the counting loop.
const LETTER: u8 = 0;
const DIGIT: u8 = 1;
const SPACE: u8 = 2;
const NEWLINE: u8 = 3;
const PUNCT: u8 = 4;
const CJK: u8 = 5;
const OTHER: u8 = 6;
const CONTINUATION: u8 = 7;

const CLASS: [u8; 256] = {
    let mut table = [PUNCT; 256];
    let mut byte = 0;
    while byte < 256 {
        let b = byte as u8;
        table[byte] = if b.is_ascii_alphabetic() {
            LETTER
        } else if b.is_ascii_digit() {
            DIGIT
        } else if b == b' ' || b == b'\t' {
            SPACE
        } else if b == b'\n' || b == b'\r' {
            NEWLINE
        } else if b < 0x80 {
            PUNCT
        } else if b < 0xC0 {
            CONTINUATION
        } else if b >= 0xE3 && b <= 0xED {
            CJK
        } else {
            OTHER
        };
        byte += 1;
    }
    table
};

impl Counts {
    /// The counts of `text`.
    pub fn of(text: &str) -> Counts {
        let mut counts = Counts::default();
        counts.add_str(text);
        counts
    }

    /// Adds the counts of `text`.
    pub fn add_str(&mut self, text: &str) {
        self.add_bytes(text.as_bytes());
    }

    /// Adds the counts of UTF-8 bytes.
    pub(crate) fn add_bytes(&mut self, bytes: &[u8]) {
        let mut by_class = [0_u64; 8];
        let mut word_starts = 0_u64;
        let mut previous_letter = false;
        for &byte in bytes {
            let class = CLASS[usize::from(byte)];
            by_class[usize::from(class)] += 1;
            let letter = class == LETTER;
            word_starts += u64::from(letter & !previous_letter);
            previous_letter = letter;
        }
        self.letters += by_class[usize::from(LETTER)];
        self.digits += by_class[usize::from(DIGIT)];
        self.spaces += by_class[usize::from(SPACE)];
        self.newlines += by_class[usize::from(NEWLINE)];
        self.punct += by_class[usize::from(PUNCT)];
        self.cjk += by_class[usize::from(CJK)];
        self.other += by_class[usize::from(OTHER)];
        self.word_starts += word_starts;
    }

    /// Characters (Unicode scalar values).
    pub fn chars(&self) -> u64 {
        self.ascii() + self.cjk + self.other
    }

    /// ASCII characters.
    pub fn ascii(&self) -> u64 {
        self.letters + self.digits + self.spaces + self.newlines + self.punct
    }
}

impl Add for Counts {
    type Output = Counts;

    fn add(mut self, other: Counts) -> Counts {
        self += other;
        self
    }
}

impl AddAssign for Counts {
    fn add_assign(&mut self, other: Counts) {
        self.letters += other.letters;
        self.digits += other.digits;
        self.spaces += other.spaces;
        self.newlines += other.newlines;
        self.punct += other.punct;
        self.cjk += other.cjk;
        self.other += other.other;
        self.word_starts += other.word_starts;
    }
}

/// How tokens are estimated from [`Counts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Estimator {
    /// The default: a linear model over the counts, calibrated against exact `cl100k_base`
    /// counts on the corpora in `envelope-budget/corpora/`.
    #[default]
    Calibrated,
    /// DESIGN §9's plain rule: ASCII about 4 characters a token, other characters 1 each.
    ScriptAware,
    /// Characters divided by 4, rounded up.
    CharsDiv4,
}

impl Estimator {
    /// The estimated tokens of text with these counts.
    pub fn tokens(self, counts: &Counts) -> u64 {
        match self {
            Estimator::Calibrated => calibrated(counts),
            Estimator::ScriptAware => counts.ascii().div_ceil(4) + counts.cjk + counts.other,
            Estimator::CharsDiv4 => counts.chars().div_ceil(4),
        }
    }

    /// The estimated tokens of `text`.
    pub fn estimate(self, text: &str) -> u64 {
        self.tokens(&Counts::of(text))
    }

    /// The `meta.tokens_method` this estimator stamps.
    pub fn method(self) -> TokensMethod {
        match self {
            Estimator::Calibrated => TokensMethod::Heuristic,
            Estimator::ScriptAware => TokensMethod::ScriptAware,
            Estimator::CharsDiv4 => TokensMethod::CharsDiv4,
        }
    }

    /// The size the budget is compared with: `max(chars, tokens × 4)`, so non-Latin text trims
    /// at its real token cost, not at a raw character count.
    pub fn normalized_size(self, counts: &Counts) -> u64 {
        counts.chars().max(self.tokens(counts) * 4)
    }
}

/// Weights of the calibrated model, in millitokens per unit of each count.
mod weights {
    pub(super) const LETTERS: u64 = 250;
    pub(super) const DIGITS: u64 = 250;
    pub(super) const SPACES: u64 = 250;
    pub(super) const NEWLINES: u64 = 250;
    pub(super) const PUNCT: u64 = 250;
    pub(super) const CJK: u64 = 1000;
    pub(super) const OTHER: u64 = 1000;
    pub(super) const WORD_STARTS: u64 = 0;
}

fn calibrated(counts: &Counts) -> u64 {
    let millitokens = counts.letters * weights::LETTERS
        + counts.digits * weights::DIGITS
        + counts.spaces * weights::SPACES
        + counts.newlines * weights::NEWLINES
        + counts.punct * weights::PUNCT
        + counts.cjk * weights::CJK
        + counts.other * weights::OTHER
        + counts.word_starts * weights::WORD_STARTS;
    millitokens.div_ceil(1000)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_classify_and_add_up() {
        let counts = Counts::of("Hi 42,\n漢字é🙂");
        assert_eq!(counts.letters, 2);
        assert_eq!(counts.digits, 2);
        assert_eq!(counts.spaces, 1);
        assert_eq!(counts.newlines, 1);
        assert_eq!(counts.punct, 1);
        assert_eq!(counts.cjk, 2);
        assert_eq!(counts.other, 2);
        assert_eq!(counts.word_starts, 1);
        assert_eq!(counts.chars(), "Hi 42,\n漢字é🙂".chars().count() as u64);
        assert_eq!(Counts::of("ab") + Counts::of("12"), Counts::of("ab12"));
    }

    #[test]
    fn script_aware_rule() {
        assert_eq!(Estimator::ScriptAware.estimate("abcdefgh"), 2);
        assert_eq!(Estimator::ScriptAware.estimate("漢字"), 2);
        assert_eq!(Estimator::CharsDiv4.estimate("漢字漢字漢"), 2);
    }

    #[test]
    fn normalized_size_is_at_least_chars() {
        let counts = Counts::of("漢字");
        assert_eq!(Estimator::ScriptAware.normalized_size(&counts), 8);
        let counts = Counts::of("abcd");
        assert_eq!(Estimator::ScriptAware.normalized_size(&counts), 4);
    }
}

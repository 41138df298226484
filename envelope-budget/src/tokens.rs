//! Token estimation.
//!
//! Text is summarised once into [`Counts`], per-class character counts that add up over
//! concatenation, so the trimmer can size any combination of kept parts by adding numbers
//! instead of re-serializing. Every [`Estimator`] is a function of `Counts` alone.
//!
//! Invariant: [`Counts::of`] is one left-to-right pass whose only state is the class of the
//! two previous characters, and `Counts::of(a) + Counts::of(b)` differs from `Counts::of(a + b)`
//! only in the counts that look at the characters before (`word_starts`, `digit_runs`,
//! `space_runs`, `newline_runs`, `escapes`, `case_changes`, `indents`), by at most one each
//! (either way: a seam can start a run, or split a pair), and only at the seam. JSON's quotes,
//! brackets, commas and colons are plain `punct` that no run count sees, so the counts of
//! compact JSON are exactly the sum of those of its strings, numbers and literals plus one
//! `punct` per structural character.
//!
//! With the `exact` feature, `ExactCounter` counts `cl100k_base` and `o200k_base` tokens.

mod counts;
mod estimator;
#[cfg(feature = "exact")]
mod exact;
mod weights;

pub use counts::{COUNT_FIELDS, Counts};
pub use estimator::Estimator;
#[cfg(feature = "exact")]
pub use exact::ExactCounter;

//! The calibrated estimator against the corpora in `envelope-budget/corpora/`.
//!
//! Without features, each corpus's calibrated estimate must stay within 5% of its recorded
//! exact `cl100k_base` count, so plain `cargo test` guards the calibration. With `--features
//! exact`, the recorded counts are checked against the encoder too, and the estimate against
//! the live count.

use std::path::Path;

use envelope_budget::{Counts, Estimator};

/// Each corpus with its exact `cl100k_base` token count, recorded with `--features exact`.
const CORPORA: [(&str, u64); 4] = [
    ("prose_code.txt", 117_085),
    ("pretty.json", 153_391),
    ("records.json", 167_864),
    ("cjk.txt", 181_770),
];

/// The calibration's promise: within 5% of the exact count on every corpus.
const TOLERANCE: f64 = 0.05;

/// The repository keeps every corpus small.
const MAX_CORPUS_BYTES: usize = 1 << 20;

fn corpus(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("corpora")
        .join(name);
    std::fs::read_to_string(&path).expect("the corpora are committed")
}

/// The estimate's error relative to `exact`, as a fraction.
fn error(estimate: u64, exact: u64) -> f64 {
    (estimate as f64 - exact as f64) / exact as f64
}

#[test]
fn calibrated_estimates_stay_within_five_percent_of_the_recorded_counts() {
    for (name, exact) in CORPORA {
        let text = corpus(name);
        assert!(
            text.len() <= MAX_CORPUS_BYTES,
            "{name} is {} bytes",
            text.len()
        );
        let counts = Counts::of(&text);
        let estimate = Estimator::Calibrated.tokens(&counts);
        let script_aware = Estimator::ScriptAware.tokens(&counts);
        println!(
            "{name}: cl100k {exact}, calibrated {estimate} ({:+.2}%), script-aware {script_aware} ({:+.1}%)",
            error(estimate, exact) * 100.0,
            error(script_aware, exact) * 100.0,
        );
        let error = error(estimate, exact);
        assert!(
            error.abs() <= TOLERANCE,
            "{name}: {estimate} vs {exact}, {:+.2}%",
            error * 100.0
        );
    }
}

#[test]
fn calibrated_beats_the_script_aware_rule_on_every_corpus() {
    for (name, exact) in CORPORA {
        let counts = Counts::of(&corpus(name));
        let calibrated = error(Estimator::Calibrated.tokens(&counts), exact).abs();
        let script_aware = error(Estimator::ScriptAware.tokens(&counts), exact).abs();
        assert!(
            calibrated < script_aware,
            "{name}: {calibrated} vs {script_aware}"
        );
    }
}

#[cfg(feature = "exact")]
#[test]
fn recorded_counts_are_exact_and_calibrated_is_within_five_percent() {
    use envelope_budget::ExactCounter;

    let counter = ExactCounter::cl100k();
    for (name, recorded) in CORPORA {
        let text = corpus(name);
        let exact = counter.count(&text) as u64;
        assert_eq!(
            exact, recorded,
            "{name}: update CORPORA after regenerating the corpora"
        );
        let estimate = Estimator::Calibrated.estimate(&text);
        let error = error(estimate, exact);
        assert!(
            error.abs() <= TOLERANCE,
            "{name}: {estimate} vs {exact}, {:+.2}%",
            error * 100.0
        );
    }
}

#[cfg(feature = "exact")]
#[test]
fn exact_counter_counts_known_strings() {
    use envelope_budget::ExactCounter;
    use envelope_core::TokensMethod;

    let cl100k = ExactCounter::cl100k();
    let o200k = ExactCounter::o200k();
    assert_eq!(cl100k.count(""), 0);
    assert_eq!(cl100k.count("hello world"), 2);
    assert_eq!(o200k.count("hello world"), 2);
    // o200k has far more CJK tokens than cl100k.
    let japanese = "日本語の文章では、ひらがな、カタカナ、漢字の三種類の文字が使われます。";
    assert_eq!(cl100k.count(japanese), 36);
    assert_eq!(o200k.count(japanese), 28);
    assert_eq!(cl100k.method(), TokensMethod::Cl100kBase);
    assert_eq!(o200k.method(), TokensMethod::O200kBase);
}

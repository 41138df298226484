//! `cargo run -p xtask --features exact -- count-tokens FILE...`: the exact `cl100k_base` and
//! `o200k_base` token counts of each file, one JSON line per file:
//! `{"file":…,"cl100k_base":N,"o200k_base":M,"chars":C}`.
//!
//! For the tests that weigh what a model is shown (`tests/interop/test_agent_walk.py`): no
//! Python tokenizer works here, as tiktoken downloads its vocabularies, so they count with the
//! encoders `envelope-budget` already ships. A file is counted as the UTF-8 text it holds,
//! whole; one that is not UTF-8 fails the command rather than being counted approximately.

use std::fs;

use envelope_budget::ExactCounter;
use serde::Serialize;

/// One file's line, its fields in this order.
#[derive(Serialize)]
struct Counted<'a> {
    file: &'a str,
    cl100k_base: usize,
    o200k_base: usize,
    chars: usize,
}

/// Prints the counts of every file in `files`, in order; fails at the first that cannot be
/// read as UTF-8 text, after printing the ones before it.
pub(crate) fn count(files: &[&str]) -> Result<(), String> {
    if files.is_empty() {
        return Err("name at least one file: count-tokens FILE...".into());
    }
    let (cl100k, o200k) = (ExactCounter::cl100k(), ExactCounter::o200k());
    for file in files {
        let text = fs::read_to_string(file).map_err(|error| format!("{file}: {error}"))?;
        let line = Counted {
            file,
            cl100k_base: cl100k.count(&text),
            o200k_base: o200k.count(&text),
            chars: text.chars().count(),
        };
        let line = serde_json::to_string(&line).map_err(|error| format!("{file}: {error}"))?;
        println!("{line}");
    }
    Ok(())
}

//! Workspace chores, one module per generated output, all writing through
//! [`codegen::ensure_file_contents`]:
//!
//! - `cargo xtask docs` regenerates everything under `docs/` from the live constants of the
//!   workspace crates;
//! - `cargo xtask corpora` regenerates the calibration corpora of `envelope-budget`;
//! - `cargo run -p xtask --features exact -- cjk-costs` regenerates `envelope-budget`'s table of
//!   CJK token costs from the exact `cl100k_base` encoder.
//!
//! Each takes `--check`, which fails when a committed file differs from what the code would
//! generate, and writes nothing.
//!
//! Invariant: nothing these commands write is edited by hand; this program is its only writer.

#[cfg(feature = "exact")]
mod cjk_costs;
mod codegen;
mod corpora;
mod docs;

use std::process::ExitCode;

use codegen::Mode;

const USAGE: &str = "usage: cargo xtask <docs | corpora | cjk-costs> [--check]";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let Some(mode) = Mode::from_args(rest) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match *command {
        "docs" => docs::generate(mode),
        "corpora" => corpora::generate(mode),
        "cjk-costs" => cjk_costs(mode),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("error: {problem}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(feature = "exact")]
fn cjk_costs(mode: Mode) -> Result<(), String> {
    cjk_costs::generate(mode)
}

#[cfg(not(feature = "exact"))]
fn cjk_costs(_: Mode) -> Result<(), String> {
    Err("the CJK table needs the exact encoder: run \
         `cargo run -p xtask --features exact -- cjk-costs`"
        .into())
}

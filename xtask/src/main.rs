//! Workspace chores. `cargo xtask docs` regenerates everything under `docs/` from the live
//! constants of the workspace crates; `cargo xtask docs --check` fails when a committed file
//! differs from what the code would generate.
//!
//! Invariant: nothing under `docs/` is edited by hand; this program is its only writer.

mod docs;

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let result = match args.as_slice() {
        ["docs"] => docs::generate(docs::Mode::Overwrite),
        ["docs", "--check"] => docs::generate(docs::Mode::Check),
        _ => {
            eprintln!("usage: cargo xtask docs [--check]");
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

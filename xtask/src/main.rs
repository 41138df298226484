//! Workspace chores, one module per generated output, all writing through
//! [`codegen::ensure_file_contents`]:
//!
//! - `cargo xtask docs` regenerates everything under `docs/` from the live constants of the
//!   workspace crates;
//! - `cargo xtask corpora` regenerates the calibration corpora of `envelope-budget`;
//! - `cargo xtask real-text` gathers `envelope-budget`'s real-text corpora (training and
//!   held-out) from this machine's translations, crate sources and packages;
//! - `cargo run -p xtask --features exact -- fit-estimator` fits the calibrated estimator's
//!   weights to exact counts on the training corpora;
//! - `cargo run -p xtask --features exact -- cjk-costs` regenerates `envelope-budget`'s table of
//!   CJK token costs from the exact `cl100k_base` encoder.
//!
//! Each takes `--check`, which fails when a committed file differs from what the code would
//! generate, and writes nothing.
//!
//! Two more commands weigh what a model is shown, in exact tokens: `cargo run -p xtask
//! --features exact -- count-tokens FILE...` prints the counts of each file, for the tests
//! that need them, and `cargo run -p xtask --features exact -- token-costs` is the benchmark of
//! what the contract costs against plain answers, with its targets (`--check` fails when one
//! is missed; `--write` also regenerates the README's table from it).
//!
//! `cargo xtask load-bench` serves the example beside a plain rmcp server and a bare axum
//! handler and loads each with h2load, side by side (`--write` regenerates the README's
//! tables; `--quick` is CI's short form); see `load_bench.rs`.
//!
//! `cargo xtask build-cost` builds `tests/downstream` and the same server on rmcp alone, cold,
//! each as a crate of its own, and compares crates, time and size (`--count-only`, CI's form,
//! counts the crates with `cargo metadata` and builds nothing).
//!
//! `cargo xtask proxy-bench` times a small call made directly, through envelope-proxy and
//! through a bare relay (`cargo xtask relay -- COMMAND`, which copies bytes and nothing else)
//! and through one that reads each message (`relay --read`, which parses it and writes it
//! again), side by side (`--write` regenerates the README's table); see `proxy_bench.rs`.
//!
//! `cargo xtask ci-times COLD WARM` writes `CONTRIBUTING.md`'s table of what each stage of
//! `.ci/run` costs, from the stage times a cold and a warm run kept (`target/ci-stages.tsv`).
//!
//! Invariant: nothing these commands write is edited by hand; this program is its only writer.

mod build_cost;
mod call_path;
mod ci_times;
#[cfg(feature = "exact")]
mod cjk_costs;
mod codegen;
mod corpora;
mod dialects;
mod docs;
#[cfg(feature = "exact")]
mod fit;
mod kits;
mod load_bench;
mod load_gen;
mod proxy_bench;
mod proxy_checks;
mod proxy_docs;
mod real_text;
mod relay;
#[cfg(feature = "exact")]
mod token_costs;
#[cfg(feature = "exact")]
mod tokens;

use std::process::ExitCode;

use codegen::Mode;

const USAGE: &str = "usage: cargo xtask <docs | corpora | real-text | cjk-costs | fit-estimator | proxy-checks> \
     [--check]\n       cargo xtask count-tokens FILE...\n       cargo xtask ci-times COLD.tsv WARM.tsv\n       cargo xtask token-costs [--check | --write]\n       cargo xtask load-bench [--write] [--quick] [--bin-dir DIR] [--seconds N] [--rounds N]\n       cargo xtask build-cost [--count-only | --write] [--check]\n       cargo xtask proxy-bench [--write] [--check] [--calls N]\n       cargo xtask relay [--read] -- COMMAND...";

/// Success, or the problem printed and failure.
fn exit_with(result: Result<(), String>) -> ExitCode {
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(problem) => {
            eprintln!("error: {problem}");
            ExitCode::FAILURE
        }
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some((command, rest)) = args.split_first() else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    // The one command that takes files rather than `--check`.
    if *command == "count-tokens" {
        return exit_with(count_tokens(rest));
    }
    // The one command whose table is made of times measured elsewhere.
    if *command == "ci-times" {
        let [cold, warm] = rest else {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        };
        return exit_with(ci_times::generate(cold.as_ref(), warm.as_ref()));
    }
    // What building a server on envelope costs beside rmcp alone.
    if *command == "build-cost" {
        return exit_with(build_cost::run(rest));
    }
    // The load bench's generator of calls in a session, which it runs pinned.
    if *command == "load-gen" {
        return exit_with(load_gen::run(rest));
    }
    // The proxy bench's floors: a process that copies bytes (or reads each message), and
    // nothing else.
    if *command == "relay" {
        return exit_with(relay::run(rest));
    }
    // What envelope-proxy costs in front of a server nobody here wrote.
    if *command == "proxy-bench" {
        return exit_with(proxy_bench::run(rest));
    }
    // The load bench beside plain rmcp, whose `--write` regenerates the README's tables.
    if *command == "load-bench" {
        return exit_with(load_bench::run(rest));
    }
    // The benchmark, whose `--write` regenerates a README table rather than a generated file.
    if *command == "token-costs" {
        let (mode, write) = match rest {
            [] => (Mode::Overwrite, false),
            ["--check"] => (Mode::Check, false),
            ["--write"] => (Mode::Check, true),
            _ => {
                eprintln!("{USAGE}");
                return ExitCode::from(2);
            }
        };
        return exit_with(token_costs(mode, write));
    }
    let Some(mode) = Mode::from_args(rest) else {
        eprintln!("{USAGE}");
        return ExitCode::from(2);
    };
    let result = match *command {
        "docs" => docs::generate(mode),
        "corpora" => corpora::generate(mode),
        "real-text" => real_text::generate(mode),
        "cjk-costs" => cjk_costs(mode),
        // Runs envelope-check against a server nobody here wrote, directly and through the
        // proxy: CI checks it once the server is installed.
        "proxy-checks" => proxy_checks::generate(mode),
        "fit-estimator" => fit_estimator(mode),
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    exit_with(result)
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

#[cfg(feature = "exact")]
fn fit_estimator(mode: Mode) -> Result<(), String> {
    fit::generate(mode)
}

#[cfg(not(feature = "exact"))]
fn fit_estimator(_: Mode) -> Result<(), String> {
    Err("fitting needs the exact encoders: run \
         `cargo run -p xtask --features exact -- fit-estimator`"
        .into())
}

#[cfg(feature = "exact")]
fn count_tokens(files: &[&str]) -> Result<(), String> {
    tokens::count(files)
}

#[cfg(not(feature = "exact"))]
fn count_tokens(_: &[&str]) -> Result<(), String> {
    Err("counting needs the exact encoders: run \
         `cargo run -p xtask --features exact -- count-tokens FILE...`"
        .into())
}

#[cfg(feature = "exact")]
fn token_costs(mode: Mode, write: bool) -> Result<(), String> {
    token_costs::run(mode, write)
}

#[cfg(not(feature = "exact"))]
fn token_costs(_: Mode, _: bool) -> Result<(), String> {
    Err("the benchmark counts exactly: run \
         `cargo run -p xtask --features exact -- token-costs`"
        .into())
}

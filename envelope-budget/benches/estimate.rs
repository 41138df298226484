//! Throughput of token estimation on the corpora in `envelope-budget/corpora/`.
//!
//! `cargo bench -p envelope-budget --bench estimate` measures the calibrated estimator;
//! with `--features exact` also exact `cl100k_base` and `o200k_base` counts by `bpe-openai`
//! against `tiktoken-rs` on the same text. After criterion's report it prints one summary
//! line per measurement, timed here with the best of several runs, e.g.
//! `calibrated: 2.10 GB/s on records.json` and `exact/tiktoken cl100k: 1.80x on cjk.txt`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput};
use envelope_budget::Estimator;

/// The generated corpora, then the held-out real text of every script and kind.
const CORPORA: [&str; 16] = [
    "prose_code.txt",
    "pretty.json",
    "records.json",
    "cjk.txt",
    "real/heldout/en.txt",
    "real/heldout/de.txt",
    "real/heldout/ru.txt",
    "real/heldout/zh.txt",
    "real/heldout/ja.txt",
    "real/heldout/ko.txt",
    "real/heldout/markdown.txt",
    "real/heldout/rust.txt",
    "real/heldout/python.txt",
    "real/heldout/typescript.txt",
    "real/heldout/json-compact.txt",
    "real/heldout/json-pretty.txt",
];

fn corpora() -> Vec<(&'static str, String)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("corpora");
    CORPORA
        .iter()
        .map(|name| {
            let text = std::fs::read_to_string(dir.join(name)).expect("the corpora are committed");
            (*name, text)
        })
        .collect()
}

/// The best time of `runs` calls of `f`: the least disturbed by whatever else the machine does.
fn best_of(runs: usize, mut f: impl FnMut()) -> Duration {
    (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn gigabytes_per_second(bytes: usize, time: Duration) -> f64 {
    bytes as f64 / time.as_secs_f64() / 1e9
}

fn bench_calibrated(criterion: &mut Criterion, corpora: &[(&str, String)]) {
    let mut group = criterion.benchmark_group("calibrated");
    for (name, text) in corpora {
        group.throughput(Throughput::Bytes(text.len() as u64));
        group.bench_function(*name, |b| {
            b.iter(|| Estimator::Calibrated.estimate(black_box(text)))
        });
    }
    group.finish();
}

fn summarize_calibrated(corpora: &[(&str, String)]) {
    for (name, text) in corpora {
        let time = best_of(200, || {
            black_box(Estimator::Calibrated.estimate(black_box(text)));
        });
        let speed = gigabytes_per_second(text.len(), time);
        println!("calibrated: {speed:.2} GB/s on {name}");
    }
}

#[cfg(feature = "exact")]
mod exact {
    use std::hint::black_box;

    use criterion::{Criterion, Throughput};
    use envelope_budget::ExactCounter;
    use tiktoken_rs::CoreBPE;

    use super::{best_of, gigabytes_per_second};

    fn encodings() -> [(&'static str, ExactCounter, &'static CoreBPE); 2] {
        [
            (
                "cl100k",
                ExactCounter::cl100k(),
                tiktoken_rs::cl100k_base_singleton(),
            ),
            (
                "o200k",
                ExactCounter::o200k(),
                tiktoken_rs::o200k_base_singleton(),
            ),
        ]
    }

    pub(super) fn bench(criterion: &mut Criterion, corpora: &[(&str, String)]) {
        for (encoding, counter, tiktoken) in encodings() {
            let mut group = criterion.benchmark_group(format!("exact {encoding}"));
            group.sample_size(10);
            for (name, text) in corpora {
                group.throughput(Throughput::Bytes(text.len() as u64));
                group.bench_function(format!("bpe-openai/{name}"), |b| {
                    b.iter(|| counter.count(black_box(text)))
                });
                group.bench_function(format!("tiktoken-rs/{name}"), |b| {
                    b.iter(|| tiktoken.count_ordinary(black_box(text)))
                });
            }
            group.finish();
        }
    }

    pub(super) fn summarize(corpora: &[(&str, String)]) {
        let tokenizers = [bpe_openai::cl100k_base(), bpe_openai::o200k_base()];
        for ((encoding, counter, tiktoken), tokenizer) in encodings().into_iter().zip(tokenizers) {
            for (name, text) in corpora {
                let same = tokenizer.encode(text.as_str()) == tiktoken.encode_ordinary(text);
                let ours = best_of(5, || {
                    black_box(counter.count(black_box(text)));
                });
                let theirs = best_of(5, || {
                    black_box(tiktoken.count_ordinary(black_box(text)));
                });
                println!(
                    "exact/tiktoken {encoding}: {:.2}x on {name} ({:.1} vs {:.1} MB/s, {} token ids)",
                    theirs.as_secs_f64() / ours.as_secs_f64(),
                    gigabytes_per_second(text.len(), ours) * 1e3,
                    gigabytes_per_second(text.len(), theirs) * 1e3,
                    if same { "identical" } else { "DIFFERENT" },
                );
            }
        }
    }
}

fn main() {
    let corpora = corpora();
    let mut criterion = Criterion::default()
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3))
        .configure_from_args();
    bench_calibrated(&mut criterion, &corpora);
    #[cfg(feature = "exact")]
    exact::bench(&mut criterion, &corpora);
    criterion.final_summary();

    println!();
    summarize_calibrated(&corpora);
    #[cfg(feature = "exact")]
    exact::summarize(&corpora);
}

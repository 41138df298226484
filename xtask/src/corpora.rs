//! The calibration corpora under `envelope-budget/corpora/`.
//!
//! `cargo xtask corpora` rewrites the four files (`--check` compares them); the output depends
//! only on the fixed seeds below, so running it again changes nothing. The calibrated
//! estimator in `src/tokens.rs` is fitted to these files, and `tests/calibration.rs` checks it
//! against them, so regenerate them only together with a new fit.
//!
//! - `prose_code.txt`: markdown-ish English prose with Rust, Python and shell blocks.
//! - `pretty.json`: `serde_json::to_string_pretty` of nested, realistic records.
//! - `records.json`: one compact JSON array of many small objects with short keys and values.
//! - `cjk.txt`: Chinese and Japanese documents (some Korean) with the ASCII, digits and
//!   punctuation that real CJK documents carry.

use std::collections::HashMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::codegen::{Mode, ensure_file_contents, workspace_root};

/// Upper bound on each corpus, so the repository stays small.
const MAX_BYTES: usize = 1 << 20;

/// What regenerates the corpora.
const COMMAND: &str = "cargo xtask corpora";

/// Writes (or checks) the four corpora.
pub(crate) fn generate(mode: Mode) -> Result<(), String> {
    let dir = workspace_root().join("envelope-budget/corpora");
    let corpora = [
        ("prose_code.txt", prose_code(&mut Rng(1), 520_000)),
        ("pretty.json", pretty_json(&mut Rng(2), 520_000)),
        ("records.json", records_json(&mut Rng(3), 400_000)),
        ("cjk.txt", cjk(&mut Rng(4), 520_000)),
    ];
    let mut stale = Vec::new();
    for (name, text) in corpora {
        if text.len() > MAX_BYTES {
            return Err(format!("{name} is {} bytes, over {MAX_BYTES}", text.len()));
        }
        if let Err(problem) = ensure_file_contents(&dir.join(name), text.as_bytes(), mode, COMMAND)
        {
            stale.push(problem);
        }
    }
    if stale.is_empty() {
        Ok(())
    } else {
        Err(stale.join("\n"))
    }
}

/// SplitMix64: tiny, deterministic, good enough to pick words.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A number in `low..=high`.
    fn range(&mut self, low: u64, high: u64) -> u64 {
        low + self.next() % (high - low + 1)
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T: ?Sized>(&mut self, items: &[&'a T]) -> &'a T {
        items[(self.next() % items.len() as u64) as usize]
    }
}

// ---------------------------------------------------------------------------------------------
// Templates. `@x` or `@x1` is a slot: the letter says what fills it, and the same slot with the
// same digit gets the same value within one template instance. `@@` is a literal `@`.

fn fill(template: &str, rng: &mut Rng) -> String {
    let mut out = String::with_capacity(template.len() + 32);
    let mut seen: HashMap<(char, char), String> = HashMap::new();
    let mut chars = template.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '@' {
            out.push(c);
            continue;
        }
        let Some(kind) = chars.next() else {
            out.push('@');
            break;
        };
        if kind == '@' {
            out.push('@');
            continue;
        }
        let tag = match chars.peek() {
            Some(d) if d.is_ascii_digit() => {
                let d = *d;
                chars.next();
                d
            }
            _ => ' ',
        };
        let value = if tag == ' ' {
            slot(kind, rng)
        } else {
            seen.entry((kind, tag))
                .or_insert_with(|| slot(kind, rng))
                .clone()
        };
        out.push_str(&value);
    }
    out
}

fn slot(kind: char, rng: &mut Rng) -> String {
    match kind {
        // Code identifiers.
        'f' => format!("{}_{}", rng.pick(VERBS), snake(rng, 1, 2)),
        'v' => snake(rng, 1, 2),
        'd' => snake(rng, 1, 1),
        'T' => pascal(rng, 1, 2),
        'c' => camel(rng, 2, 3),
        'C' => rng.pick(CONSTS).to_string(),
        // Numbers.
        'n' => rng.range(2, 64).to_string(),
        'N' => rng.range(100, 99_999).to_string(),
        'p' => format!("{}.{}", rng.range(0, 99), rng.range(0, 99)),
        'V' => format!(
            "{}.{}.{}",
            rng.range(0, 3),
            rng.range(0, 40),
            rng.range(0, 12)
        ),
        'y' => rng.range(1990, 2025).to_string(),
        'm' => rng.range(1, 12).to_string(),
        'D' => rng.range(1, 28).to_string(),
        // English words and phrases.
        'w' => rng.pick(NOUNS).to_string(),
        'a' => rng.pick(ADJECTIVES).to_string(),
        'k' => rng.pick(CRATES).to_string(),
        'P' => path(rng),
        'u' => url(rng),
        'e' => rng.pick(ERRORS).to_string(),
        'q' => rng.pick(SHORT_PHRASES).to_string(),
        'h' => rng.pick(PERSONS).to_string(),
        // Terms that CJK documents write in ASCII.
        't' => rng.pick(TECH_TERMS).to_string(),
        _ => panic!("unknown slot @{kind}"),
    }
}

fn snake(rng: &mut Rng, min: u64, max: u64) -> String {
    let parts = rng.range(min, max);
    (0..parts)
        .map(|_| rng.pick(PARTS))
        .collect::<Vec<_>>()
        .join("_")
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_ascii_uppercase().to_string() + chars.as_str(),
        None => String::new(),
    }
}

fn pascal(rng: &mut Rng, min: u64, max: u64) -> String {
    let parts = rng.range(min, max);
    (0..parts).map(|_| capitalize(rng.pick(PARTS))).collect()
}

fn camel(rng: &mut Rng, min: u64, max: u64) -> String {
    let mut out = rng.pick(PARTS).to_string();
    let parts = rng.range(min, max) - 1;
    for _ in 0..parts {
        out.push_str(&capitalize(rng.pick(PARTS)));
    }
    out
}

fn path(rng: &mut Rng) -> String {
    let ext = rng.pick(&["rs", "py", "toml", "json", "md", "yaml", "txt", "log"]);
    format!(
        "{}/{}/{}.{ext}",
        rng.pick(&["src", "crates", "tests", "docs", "scripts", "config", "lib"]),
        rng.pick(PARTS),
        snake(rng, 1, 2)
    )
}

fn url(rng: &mut Rng) -> String {
    format!(
        "https://{}.{}/{}/{}",
        rng.pick(&["docs", "api", "www", "blog", "status", "cdn"]),
        rng.pick(&["example.com", "example.org", "internal.test", "acme.dev"]),
        rng.pick(PARTS),
        snake(rng, 1, 2).replace('_', "-")
    )
}

const PARTS: &[&str] = &[
    "user", "session", "token", "budget", "cache", "index", "node", "edge", "request", "response",
    "payload", "buffer", "config", "handler", "stream", "reader", "writer", "parser", "schema",
    "value", "key", "entry", "batch", "limit", "offset", "count", "total", "queue", "worker",
    "task", "event", "state", "error", "result", "path", "file", "line", "span", "chunk", "frame",
    "header", "body", "client", "server", "pool", "slot", "row", "column", "table", "query",
    "filter", "score", "weight", "rank", "graph", "tree", "leaf", "root", "child", "parent",
    "scope", "symbol", "module", "crate", "target", "build", "cursor", "page", "window", "retry",
    "timeout", "deadline", "metric", "sample", "label", "tag", "owner", "account", "order", "item",
    "price", "amount", "address", "region", "zone", "shard", "replica", "lease", "lock",
];

const VERBS: &[&str] = &[
    "get",
    "set",
    "load",
    "store",
    "parse",
    "build",
    "find",
    "read",
    "write",
    "open",
    "close",
    "merge",
    "split",
    "trim",
    "count",
    "check",
    "apply",
    "update",
    "remove",
    "insert",
    "resolve",
    "fetch",
    "encode",
    "decode",
    "render",
    "flush",
    "spawn",
    "collect",
    "validate",
    "normalize",
];

const CONSTS: &[&str] = &[
    "MAX_RETRIES",
    "DEFAULT_LIMIT",
    "BUFFER_SIZE",
    "TIMEOUT_MS",
    "PAGE_SIZE",
    "MAX_DEPTH",
    "CHUNK_LEN",
    "SCHEMA_VERSION",
];

const NOUNS: &[&str] = &[
    "request",
    "response",
    "budget",
    "token",
    "payload",
    "index",
    "cache",
    "server",
    "client",
    "thread",
    "process",
    "function",
    "module",
    "crate",
    "field",
    "record",
    "table",
    "column",
    "query",
    "result",
    "error",
    "message",
    "string",
    "number",
    "array",
    "object",
    "key",
    "value",
    "node",
    "edge",
    "graph",
    "file",
    "directory",
    "branch",
    "commit",
    "release",
    "benchmark",
    "test",
    "build",
    "deadline",
    "timeout",
    "limit",
    "estimate",
    "encoder",
    "tokenizer",
    "parser",
    "schema",
    "document",
    "section",
    "paragraph",
    "page",
    "user",
    "account",
    "session",
    "connection",
    "socket",
    "stream",
    "buffer",
    "allocation",
    "lifetime",
    "reference",
    "closure",
    "iterator",
    "trait",
    "generic",
    "macro",
    "attribute",
    "compiler",
    "runtime",
    "scheduler",
    "worker",
    "queue",
    "channel",
    "lock",
    "mutex",
    "transaction",
];

const ADJECTIVES: &[&str] = &[
    "small",
    "large",
    "stable",
    "fast",
    "slow",
    "exact",
    "rough",
    "honest",
    "nested",
    "flat",
    "empty",
    "partial",
    "complete",
    "stale",
    "fresh",
    "shared",
    "private",
    "public",
    "async",
    "blocking",
    "cheap",
    "expensive",
    "optional",
    "required",
    "unknown",
    "invalid",
    "default",
    "explicit",
    "implicit",
    "generic",
    "concrete",
    "hidden",
    "visible",
    "recursive",
    "idle",
];

const CRATES: &[&str] = &[
    "serde",
    "serde_json",
    "tokio",
    "rayon",
    "regex",
    "criterion",
    "proptest",
    "thiserror",
    "anyhow",
    "tracing",
    "clap",
    "hyper",
    "axum",
    "reqwest",
    "bytes",
    "itertools",
    "syn",
];

const ERRORS: &[&str] = &[
    "connection reset by peer",
    "permission denied",
    "no such file or directory",
    "invalid UTF-8 sequence",
    "unexpected end of input",
    "deadline exceeded",
    "too many open files",
    "address already in use",
    "missing field `id`",
    "expected value at line 1 column 1",
    "broken pipe",
    "resource temporarily unavailable",
];

const SHORT_PHRASES: &[&str] = &[
    "at most once",
    "in the worst case",
    "on every call",
    "by design",
    "for now",
    "in practice",
    "as a rule",
    "without a lock",
    "per request",
    "on a cold cache",
    "under load",
    "in one pass",
    "at the seam",
    "before the first write",
    "after a restart",
];

const PERSONS: &[&str] = &[
    "Alice", "Bob", "Carol", "Dave", "Erin", "Frank", "Grace", "Heidi", "Ivan", "Judy", "Mallory",
    "Niaj", "Olivia", "Peggy", "Rupert", "Sybil", "Trent", "Victor", "Walter",
];

const TECH_TERMS: &[&str] = &[
    "Rust",
    "JSON",
    "API",
    "HTTP/2",
    "Kubernetes",
    "Docker",
    "GitHub",
    "Linux",
    "CPU",
    "GPU",
    "SQL",
    "PostgreSQL",
    "Redis",
    "Python",
    "Go",
    "TypeScript",
    "LLM",
    "AI",
    "OpenAI",
    "iPhone",
    "Android",
    "Wi-Fi",
    "USB-C",
    "5G",
    "CI/CD",
    "SaaS",
    "OSS",
    "TCP",
    "UTF-8",
    "WebAssembly",
];

// ---------------------------------------------------------------------------------------------
// Prose with code.

const SENTENCES: &[&str] = &[
    "The @w is computed once and then reused by every caller that asks for it.",
    "When the @w grows past @n entries, the oldest ones are dropped first.",
    "This keeps the hot path free of allocations, which matters more than it seems.",
    "In our benchmarks the @a version was about @n% faster on a cold cache.",
    "You can call `@f()` directly, but most code goes through `@T::new`.",
    "Note that `@v` is only valid until the next call to `@f`.",
    "We measured this on a laptop with @n cores and @n GB of memory.",
    "The numbers below are medians of @N runs, so treat small differences with care.",
    "If the @w is missing, the function returns `None` instead of panicking.",
    "A @a @w is cheap to clone, because it only holds a reference count.",
    "Errors such as \"@e\" are retried @q, and then surfaced to the caller.",
    "The design keeps one invariant: every @w that leaves this module fits its budget.",
    "See @u for the full discussion and the numbers behind it.",
    "Most of the time is spent in `@f`, which walks the @w twice.",
    "That is why we split the work into two passes: one to count, one to write.",
    "Version @V changed the default from @n to @n, which broke a few downstream users.",
    "The configuration lives in `@P`, next to the code that reads it.",
    "@h suggested replacing the @w with a plain vector, and it turned out to be simpler.",
    "There is no magic here; the @w is just a sorted list with a binary search on top.",
    "Because the estimate is additive, we can size any combination of parts without re-serializing.",
    "It is tempting to cache everything, but a stale @w is worse than a slow one.",
    "The trade-off is memory: each @w costs about @N bytes on a @n-bit target.",
    "We chose `@k` for this because it was already in the dependency tree.",
    "The test suite runs in @n seconds on CI, so nobody skips it.",
    "For a @a @w the answer is simple; for a @a one it depends on the caller.",
    "Keep in mind that @w sizes are counted in bytes, not characters.",
    "Unicode makes this harder: a single character can take up to four bytes in UTF-8.",
    "The first version used a regular expression, which was correct but slow.",
    "After profiling, we found that @n% of the time went into hashing keys.",
    "So the fix was small: precompute the hash and store it next to the @w.",
    "This section explains how the @w is built, how it is queried, and what it costs.",
    "If you only read one paragraph, read this one.",
    "In short, the @a path is taken @q, and the @a path only on a miss.",
    "Nothing in this module performs I/O; callers pass in the bytes they already have.",
    "Each `@T` owns its @w, so dropping it releases everything at once.",
    "The API is deliberately small: `@f`, `@f`, and a builder for the rare options.",
    "We considered a lock-free design, but a single `Mutex` was fast enough under load.",
    "On the @N-record data set, memory use went from @n MB to @n MB.",
    "This is not a hard limit; it is a default that each server can override.",
    "The @w field is optional and absent means \"not applicable\", never zero.",
    "Running `cargo test -p @k` reproduces the failure on the current main branch.",
    "A property test checks that trimming twice gives the same result as trimming once.",
    "The old code path is still there behind a flag, but it will be removed in @V.",
    "It took @h a weekend to find the bug: an off-by-one error in the @w loop.",
    "Small inputs are the common case, so we optimize for them first.",
    "The output is stable across platforms, which makes snapshot tests practical.",
    "Whether this is worth it depends on how often the @w changes.",
    "When in doubt, measure; our intuition about the @w was wrong twice.",
    "Timestamps are stored as milliseconds since the Unix epoch, in UTC.",
    "The scheduler wakes up every @n milliseconds and drains the @w queue.",
    "Serialization is deterministic: keys keep their declaration order, and floats round-trip exactly.",
    "Backpressure propagates upstream (eventually), so a slow consumer throttles the producer instead of exhausting memory.",
    "The heuristic overestimates pathological inputs -- long hexadecimal strings, base64 blobs -- by design.",
    "**Important:** the @w must be initialized before the first request arrives; otherwise the handler returns `503`.",
    "Idempotency keys are honoured for 24 hours; afterwards, a replayed request is treated as new.",
    "As of @V, the deprecated `@f` shim logs a warning (once per process) and forwards to `@f`.",
    "Contrary to popular belief, memoization rarely helps here: the inputs are almost never repeated.",
    "The compiler cannot prove the borrow is unique, so we restructure the loop rather than reach for `unsafe`.",
    "Throughput plateaus at roughly @N requests per second, i.e. when the network interface saturates.",
    "Consult the [migration guide](@u) before upgrading across a major version.",
    "Each shard replicates asynchronously; consequently, reads may observe slightly stale data.",
    "Pagination uses opaque cursors rather than offsets, which keeps results consistent under concurrent writes.",
    "Quarterly revenue grew by @n%, driven primarily by enterprise subscriptions in Europe and Asia.",
    "The committee postponed its decision until the environmental assessment is published next spring.",
    "Researchers observed that participants who slept fewer than six hours made significantly more mistakes.",
    "Historically, the bridge connected two thriving neighbourhoods; today, it is mostly used by cyclists.",
    "The recipe calls for @n grams of flour, a pinch of salt, and exactly one tablespoon of olive oil.",
    "Nevertheless, the prototype demonstrated that incremental re-indexing is feasible on commodity hardware.",
    "Unexpectedly, disabling the prefetcher improved tail latency (p99) by almost a third.",
    "Every public function documents its panics, errors, and complexity; reviewers enforce this.",
    "Our telemetry pipeline aggregates metrics per minute, then downsamples them to hourly rollups after a week.",
    "Mutable global state is forbidden; configuration flows explicitly through constructors.",
    "Where possible, prefer composition over inheritance, and immutability over synchronization.",
    "Questions? Open a discussion on the forum, or ask @h directly during office hours.",
    "Licensing: dual MIT/Apache-2.0, unless a file header states otherwise.",
    "The algorithm runs in O(n log n) time and O(n) auxiliary space, which is optimal for comparison sorts.",
    "Beware of Unicode normalization: \"é\" can be one code point or two, and they compare unequal.",
    "Authentication tokens expire after @n minutes; refresh tokens last @n days.",
    "The archive contains approximately @N photographs, manuscripts, and correspondence from the nineteenth century.",
    "Weather permitting, the expedition departs at dawn and reaches the summit by early afternoon.",
];

const BULLETS: &[&str] = &[
    "`@f` returns the @w and never allocates",
    "the @w is capped at @n entries by default",
    "errors map to the `@T` category",
    "see `@P` for the configuration",
    "@a inputs are rejected with a clear message",
    "benchmarks live in `benches/@v.rs`",
    "`@C` defaults to @N",
    "requires `@k` @V or later",
    "works on Linux, macOS and Windows",
    "the @w is sorted by @v, then by id",
];

const RUST_SNIPPETS: &[&str] = &[
    "/// Returns the @w1 for the given @v1, or `None` when it is missing.
pub fn @f(&self, @v1: &@T1) -> Option<&@T2> {
    let @v2 = self.@d1.get(&@v1.id)?;
    if @v2.@d2 > @n {
        return None;
    }
    Some(&@v2.@d3)
}",
    "#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct @T1 {
    /// Stable identifier, unique per @w1.
    pub id: u64,
    pub @d1: String,
    pub @d2: Vec<@T2>,
    #[serde(default, skip_serializing_if = \"Option::is_none\")]
    pub @d3: Option<@T3>,
}",
    "impl @T1 {
    pub fn @f(&mut self, items: &[@T2]) -> Result<usize, @T1Error> {
        let mut @v1 = 0;
        for item in items {
            match item.@d1 {
                Some(ref value) if value.len() > @n => {
                    self.@d2.push(value.clone());
                    @v1 += 1;
                }
                Some(_) => continue,
                None => return Err(@T1Error::Missing(\"@d1\")),
            }
        }
        Ok(@v1)
    }
}",
    "#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn @f_is_stable() {
        let @v1 = @T1::new(@n1);
        assert_eq!(@v1.@d1(), @n1);
        assert!(@v1.is_empty(), \"expected an empty @w\");
    }
}",
    "let @v1: Vec<_> = @v2
    .iter()
    .filter(|x| x.@d1 >= @n)
    .map(|x| (x.id, x.@d2.to_string()))
    .collect();
println!(\"{} @ws above the limit\", @v1.len());",
    "const @C1: usize = @N;

fn @f(bytes: &[u8]) -> u64 {
    let mut @v1 = 0_u64;
    for chunk in bytes.chunks(@C1) {
        @v1 = @v1.wrapping_mul(31).wrapping_add(chunk.len() as u64);
    }
    @v1
}",
    "pub async fn @f(client: &Client, @v1: &str) -> anyhow::Result<@T1> {
    let response = client
        .get(format!(\"@u/{@v1}\"))
        .timeout(Duration::from_millis(@N))
        .send()
        .await?;
    let body: @T1 = response.error_for_status()?.json().await?;
    Ok(body)
}",
    "match @v1 {
    @T1::@T2 { @d1, .. } if @d1 > @n => Ok(@d1),
    @T1::@T3(inner) => inner.@f(),
    other => Err(Error::Unexpected(format!(\"{other:?}\"))),
}",
    "impl fmt::Display for @T1 {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, \"{} ({} @ws)\", self.@d1, self.@d2.len())
    }
}",
    "use std::collections::HashMap;
use std::sync::{Arc, Mutex};

#[derive(Default)]
pub struct @T1 {
    inner: Arc<Mutex<HashMap<String, @T2>>>,
}",
    "fn main() -> Result<(), Box<dyn std::error::Error>> {
    let @v1 = std::env::args().nth(1).unwrap_or_else(|| \"@P\".into());
    let text = std::fs::read_to_string(&@v1)?;
    let @v2 = @f(&text)?;
    eprintln!(\"{}: {} @ws\", @v1, @v2.len());
    Ok(())
}",
    "let @v1 = @T1::builder()
    .@d1(@n)
    .@d2(\"@q\")
    .@d3(true)
    .build()?;",
];

const PYTHON_SNIPPETS: &[&str] = &[
    "def @f(@v1, @v2=None):
    \"\"\"Return the @w for @v1, or None if it is missing.\"\"\"
    if @v2 is None:
        @v2 = {}
    for key, value in @v1.items():
        if value > @n:
            @v2[key] = value
    return @v2",
    "class @T1:
    def __init__(self, @d1, @d2=@n):
        self.@d1 = @d1
        self.@d2 = @d2
        self._cache = {}

    def __repr__(self):
        return f\"@T1(@d1={self.@d1!r}, @d2={self.@d2})\"",
    "import json
from pathlib import Path

with Path(\"@P\").open() as fh:
    data = json.load(fh)
rows = [row for row in data[\"@d1\"] if row.get(\"@d2\", 0) >= @n]
print(f\"{len(rows)} of {len(data['@d1'])} rows kept\")",
    "@v1 = sorted(@v2, key=lambda item: (item.@d1, -item.@d2))[:@n]
total = sum(item.@d2 for item in @v1)
assert total >= 0, \"@w totals must not be negative\"",
    "async def @f(session, url, retries=@n):
    for attempt in range(retries):
        try:
            async with session.get(url, timeout=@n) as resp:
                resp.raise_for_status()
                return await resp.json()
        except TimeoutError:
            await asyncio.sleep(2 ** attempt)
    raise RuntimeError(\"@e\")",
    "def test_@f():
    @v1 = @T1(@n1)
    assert @v1.@d1 == @n1
    with pytest.raises(ValueError, match=\"@d2\"):
        @v1.@f(None)",
    "@@dataclass(frozen=True)
class @T1:
    @d1: str
    @d2: int = @n
    @d3: list[str] = field(default_factory=list)",
];

const SHELL_SNIPPETS: &[&str] = &[
    "$ cargo build --release -p @k
$ ./target/release/@v --input @P --limit @n",
    "$ cargo test -p @k -- --nocapture @f
running @n tests
test result: ok. @n passed; 0 failed; 0 ignored",
    "$ python -m pip install @k==@V
$ python scripts/@v.py --out @P",
    "$ git log --oneline -n @n
$ git diff --stat HEAD~@n",
];

const TITLES: &[&str] = &[
    "How the @w works",
    "Measuring the @w",
    "Design notes: @a @ws",
    "Why we dropped the @w",
    "Release notes for @V",
    "A tour of `@k`",
    "Trimming @ws to a budget",
    "Frequently asked questions",
    "Migrating from @V",
    "Performance of the @w path",
];

fn paragraph(rng: &mut Rng) -> String {
    let sentences = rng.range(2, 6);
    (0..sentences)
        .map(|_| fill(rng.pick(SENTENCES), rng))
        .collect::<Vec<_>>()
        .join(" ")
}

fn prose_code(rng: &mut Rng, target: usize) -> String {
    let mut out = String::new();
    while out.len() < target {
        let _ = writeln!(
            out,
            "# {}\n\n{}\n",
            fill(rng.pick(TITLES), rng),
            paragraph(rng)
        );
        let sections = rng.range(2, 5);
        for _ in 0..sections {
            let _ = writeln!(out, "## {}\n", fill(rng.pick(TITLES), rng));
            for _ in 0..rng.range(1, 3) {
                let _ = writeln!(out, "{}\n", paragraph(rng));
            }
            match rng.range(0, 10) {
                0..=3 => {
                    let _ = writeln!(
                        out,
                        "```rust\n{}\n```\n",
                        fill(rng.pick(RUST_SNIPPETS), rng)
                    );
                }
                4..=5 => {
                    let code = fill(rng.pick(PYTHON_SNIPPETS), rng);
                    let _ = writeln!(out, "```python\n{code}\n```\n");
                }
                6 => {
                    let _ = writeln!(out, "```sh\n{}\n```\n", fill(rng.pick(SHELL_SNIPPETS), rng));
                }
                7 => {
                    for _ in 0..rng.range(2, 5) {
                        let _ = writeln!(out, "- {}", fill(rng.pick(BULLETS), rng));
                    }
                    out.push('\n');
                }
                8 => {
                    let _ = writeln!(out, "| case | median | p99 |\n|---|---:|---:|");
                    for _ in 0..rng.range(2, 5) {
                        let _ = writeln!(
                            out,
                            "| `{}` | {} µs | {} µs |",
                            fill("@f", rng),
                            rng.range(1, 900),
                            rng.range(900, 9000)
                        );
                    }
                    out.push('\n');
                }
                9 => {
                    for step in 1..=rng.range(2, 4) {
                        let _ = writeln!(out, "{step}. {}", fill(rng.pick(SENTENCES), rng));
                    }
                    out.push('\n');
                }
                _ => {
                    let _ = writeln!(out, "> {}\n", paragraph(rng));
                }
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Pretty JSON: nested records as an API would return them.

#[derive(Serialize)]
struct Page {
    api_version: &'static str,
    generated_at: String,
    request_id: String,
    items: Vec<Item>,
}

#[derive(Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
enum Item {
    Issue(Issue),
    Order(Order),
    Service(Service),
}

#[derive(Serialize)]
struct Person {
    id: u64,
    login: String,
    display_name: String,
    email: String,
    avatar_url: String,
    site_admin: bool,
}

#[derive(Serialize)]
struct Label {
    name: String,
    color: String,
    default: bool,
}

#[derive(Serialize)]
struct Comment {
    id: u64,
    author: String,
    created_at: String,
    body: String,
    reactions: Reactions,
}

#[derive(Serialize)]
struct Reactions {
    total_count: u64,
    #[serde(rename = "+1")]
    plus_one: u64,
    heart: u64,
}

#[derive(Serialize)]
struct Issue {
    number: u64,
    title: String,
    state: &'static str,
    locked: bool,
    user: Person,
    labels: Vec<Label>,
    assignees: Vec<String>,
    milestone: Option<String>,
    comments: Vec<Comment>,
    created_at: String,
    updated_at: String,
    closed_at: Option<String>,
    html_url: String,
}

#[derive(Serialize)]
struct Address {
    street: String,
    city: &'static str,
    postal_code: String,
    country: &'static str,
}

#[derive(Serialize)]
struct LineItem {
    sku: String,
    title: String,
    quantity: u64,
    unit_price: f64,
    discount: Option<f64>,
}

#[derive(Serialize)]
struct Order {
    order_id: String,
    customer: Person,
    status: &'static str,
    currency: &'static str,
    total: f64,
    shipping_address: Address,
    line_items: Vec<LineItem>,
    notes: Option<String>,
    placed_at: String,
}

#[derive(Serialize)]
struct Endpoint {
    method: &'static str,
    path: String,
    p50_ms: f64,
    p99_ms: f64,
    error_rate: f64,
    requests_per_minute: u64,
}

#[derive(Serialize)]
struct Service {
    name: String,
    version: String,
    region: &'static str,
    healthy: bool,
    replicas: u64,
    tags: Vec<String>,
    endpoints: Vec<Endpoint>,
    last_incident: Option<String>,
    config: ServiceConfig,
}

#[derive(Serialize)]
struct ServiceConfig {
    timeout_ms: u64,
    max_connections: u64,
    retry_policy: &'static str,
    feature_flags: Vec<String>,
}

fn timestamp(rng: &mut Rng) -> String {
    format!(
        "{}-{:02}-{:02}T{:02}:{:02}:{:02}Z",
        rng.range(2019, 2025),
        rng.range(1, 12),
        rng.range(1, 28),
        rng.range(0, 23),
        rng.range(0, 59),
        rng.range(0, 59)
    )
}

fn hex(rng: &mut Rng, len: usize) -> String {
    let mut out = String::with_capacity(len);
    while out.len() < len {
        let _ = write!(out, "{:016x}", rng.next());
    }
    out.truncate(len);
    out
}

fn uuid(rng: &mut Rng) -> String {
    let h = hex(rng, 32);
    format!(
        "{}-{}-{}-{}-{}",
        &h[..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..]
    )
}

fn person(rng: &mut Rng) -> Person {
    let first = rng.pick(PERSONS);
    let last = rng.pick(&[
        "Smith", "Garcia", "Chen", "Müller", "Okafor", "Tanaka", "Novak", "Silva",
    ]);
    let login = format!("{}{}", first.to_lowercase(), rng.range(1, 999));
    Person {
        id: rng.range(1000, 9_999_999),
        avatar_url: format!(
            "https://avatars.example.com/u/{}?v=4",
            rng.range(1000, 9_999_999)
        ),
        email: format!(
            "{}.{}@example.com",
            first.to_lowercase(),
            last.to_lowercase()
        ),
        display_name: format!("{first} {last}"),
        login,
        site_admin: rng.chance(5),
    }
}

fn price(rng: &mut Rng) -> f64 {
    rng.range(99, 99_999) as f64 / 100.0
}

fn issue(rng: &mut Rng) -> Issue {
    let closed = rng.chance(40);
    let labels = (0..rng.range(0, 3))
        .map(|_| Label {
            name: rng
                .pick(&[
                    "bug",
                    "enhancement",
                    "good first issue",
                    "performance",
                    "docs",
                    "wontfix",
                ])
                .to_string(),
            color: hex(rng, 6),
            default: rng.chance(30),
        })
        .collect();
    let comments = (0..rng.range(0, 3))
        .map(|_| Comment {
            id: rng.range(100_000, 999_999_999),
            author: fill("@h", rng).to_lowercase(),
            created_at: timestamp(rng),
            body: paragraph(rng),
            reactions: Reactions {
                total_count: rng.range(0, 12),
                plus_one: rng.range(0, 8),
                heart: rng.range(0, 3),
            },
        })
        .collect();
    let number = rng.range(1, 4000);
    Issue {
        number,
        title: fill(
            rng.pick(&[
                "@w is @a after restart",
                "Panic in `@f` on empty @w",
                "Support @a @ws in `@T`",
                "Docs: explain how the @w is trimmed",
                "Slow @w path on large inputs (@N records)",
            ]),
            rng,
        ),
        state: if closed { "closed" } else { "open" },
        locked: rng.chance(3),
        user: person(rng),
        labels,
        assignees: (0..rng.range(0, 2))
            .map(|_| fill("@h", rng).to_lowercase())
            .collect(),
        milestone: rng.chance(50).then(|| fill("v@V", rng)),
        comments,
        created_at: timestamp(rng),
        updated_at: timestamp(rng),
        closed_at: closed.then(|| timestamp(rng)),
        html_url: format!(
            "https://github.example.com/acme/{}/issues/{number}",
            fill("@v", rng)
        ),
    }
}

fn order(rng: &mut Rng) -> Order {
    let line_items: Vec<LineItem> = (0..rng.range(1, 4))
        .map(|_| LineItem {
            sku: format!("SKU-{}-{}", hex(rng, 4).to_uppercase(), rng.range(10, 99)),
            title: fill(
                rng.pick(&[
                    "@a @w (pack of @n)",
                    "Wireless keyboard, @a",
                    "USB-C cable @n cm",
                    "Notebook, @n pages",
                    "Coffee beans @N g",
                ]),
                rng,
            ),
            quantity: rng.range(1, 5),
            unit_price: price(rng),
            discount: rng.chance(25).then(|| rng.range(5, 30) as f64 / 100.0),
        })
        .collect();
    let total = line_items
        .iter()
        .map(|l| l.unit_price * l.quantity as f64)
        .sum::<f64>();
    Order {
        order_id: format!("ord_{}", hex(rng, 12)),
        customer: person(rng),
        status: rng.pick(&["pending", "paid", "shipped", "delivered", "refunded"]),
        currency: rng.pick(&["USD", "EUR", "GBP", "JPY"]),
        total: (total * 100.0).round() / 100.0,
        shipping_address: Address {
            street: format!(
                "{} {} Street",
                rng.range(1, 400),
                capitalize(rng.pick(PARTS))
            ),
            city: rng.pick(&[
                "Berlin", "Lisbon", "Osaka", "Toronto", "Austin", "Lagos", "Lyon",
            ]),
            postal_code: rng.range(10_000, 99_999).to_string(),
            country: rng.pick(&["DE", "PT", "JP", "CA", "US", "NG", "FR"]),
        },
        line_items,
        notes: rng.chance(30).then(|| fill(rng.pick(SENTENCES), rng)),
        placed_at: timestamp(rng),
    }
}

fn service(rng: &mut Rng) -> Service {
    Service {
        name: fill("@v-@v", rng).replace('_', "-"),
        version: fill("@V", rng),
        region: rng.pick(&["us-east-1", "eu-west-1", "ap-northeast-1", "eu-central-1"]),
        healthy: rng.chance(85),
        replicas: rng.range(1, 12),
        tags: (0..rng.range(1, 4)).map(|_| fill("@d", rng)).collect(),
        endpoints: (0..rng.range(1, 4))
            .map(|_| Endpoint {
                method: rng.pick(&["GET", "POST", "PUT", "DELETE"]),
                path: fill("/v@n/@ds/{id}/@d", rng),
                p50_ms: rng.range(1, 9000) as f64 / 100.0,
                p99_ms: rng.range(1000, 90_000) as f64 / 100.0,
                error_rate: rng.range(0, 500) as f64 / 10_000.0,
                requests_per_minute: rng.range(1, 50_000),
            })
            .collect(),
        last_incident: rng.chance(20).then(|| fill("@e", rng)),
        config: ServiceConfig {
            timeout_ms: rng.range(1, 60) * 500,
            max_connections: rng.range(8, 1024),
            retry_policy: rng.pick(&["none", "fixed", "exponential_backoff"]),
            feature_flags: (0..rng.range(0, 3))
                .map(|_| fill("enable_@v", rng))
                .collect(),
        },
    }
}

fn pretty_json(rng: &mut Rng, target: usize) -> String {
    let mut pages = Vec::new();
    let mut size = 0;
    while size < target {
        let items = (0..rng.range(3, 8))
            .map(|_| match rng.range(0, 2) {
                0 => Item::Issue(issue(rng)),
                1 => Item::Order(order(rng)),
                _ => Item::Service(service(rng)),
            })
            .collect();
        let page = Page {
            api_version: "2024-06-01",
            generated_at: timestamp(rng),
            request_id: uuid(rng),
            items,
        };
        size += serde_json::to_string_pretty(&page).map_or(0, |s| s.len());
        pages.push(page);
    }
    let mut text = serde_json::to_string_pretty(&pages).expect("plain structs serialize");
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------------------------
// Compact records with short keys and short values.

#[derive(Serialize)]
#[serde(untagged)]
enum Record {
    Metric {
        id: u64,
        k: String,
        v: f64,
        ts: u64,
        ok: bool,
    },
    Point {
        i: u64,
        x: i64,
        y: i64,
        c: String,
    },
    Row {
        id: u64,
        nm: String,
        st: &'static str,
        q: u64,
        p: f64,
        tg: Vec<String>,
    },
    Edge {
        s: u64,
        t: u64,
        w: u64,
        ty: &'static str,
        d: Option<u64>,
    },
    Log {
        t: u64,
        lv: &'static str,
        m: String,
        src: String,
    },
}

fn short_code(rng: &mut Rng) -> String {
    let len = rng.range(2, 5) as usize;
    let alphabet = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..len)
        .map(|i| {
            let pool = if i == 0 {
                &alphabet[..26]
            } else {
                &alphabet[..]
            };
            char::from(pool[(rng.next() % pool.len() as u64) as usize])
        })
        .collect()
}

fn record(rng: &mut Rng) -> Record {
    match rng.range(0, 4) {
        0 => Record::Metric {
            id: rng.range(1, 99_999),
            k: rng
                .pick(&["cpu", "mem", "rps", "p99", "err", "qps", "io", "gc"])
                .to_string(),
            v: rng.range(0, 100_000) as f64 / 100.0,
            ts: 1_700_000_000 + rng.range(0, 40_000_000),
            ok: rng.chance(90),
        },
        1 => Record::Point {
            i: rng.range(0, 9_999),
            x: rng.range(0, 2000) as i64 - 1000,
            y: rng.range(0, 2000) as i64 - 1000,
            c: rng
                .pick(&["r", "g", "b", "k", "red", "blue", "#f80", "#0af"])
                .to_string(),
        },
        2 => Record::Row {
            id: rng.range(1, 999_999),
            nm: if rng.chance(50) {
                short_code(rng)
            } else {
                fill("@d", rng)
            },
            st: rng.pick(&["ok", "new", "hold", "done", "err"]),
            q: rng.range(0, 500),
            p: price(rng),
            tg: (0..rng.range(0, 3)).map(|_| short_code(rng)).collect(),
        },
        3 => Record::Edge {
            s: rng.range(1, 50_000),
            t: rng.range(1, 50_000),
            w: rng.range(1, 9),
            ty: rng.pick(&["calls", "uses", "imports", "defines", "reads"]),
            d: rng.chance(40).then(|| rng.range(1, 6)),
        },
        _ => Record::Log {
            t: 1_700_000_000_000 + rng.range(0, 40_000_000_000),
            lv: rng.pick(&["I", "W", "E", "D"]),
            m: fill(
                rng.pick(&["@d @v", "retry @n", "ok", "@e", "gc @nms", "@v"]),
                rng,
            ),
            src: fill("@d.@v", rng),
        },
    }
}

fn records_json(rng: &mut Rng, target: usize) -> String {
    let mut records = Vec::new();
    let mut size = 2;
    while size < target {
        let record = record(rng);
        size += serde_json::to_string(&record).map_or(0, |s| s.len() + 1);
        records.push(record);
    }
    let mut text = serde_json::to_string(&records).expect("plain structs serialize");
    text.push('\n');
    text
}

// ---------------------------------------------------------------------------------------------
// CJK documents. The sentences are ordinary written Chinese, Japanese and Korean; slots add the
// Latin terms, numbers and dates that such documents are full of.

const ZH_SENTENCES: &[&str] = &[
    "这个问题在上周的版本中已经修复，但部分用户仍然反馈同样的错误。",
    "我们建议在升级之前先备份数据库，以免出现不可恢复的损失。",
    "根据官方文档，@t 的默认超时时间是 @n 秒。",
    "在实际项目中，性能瓶颈往往不在算法本身，而在于数据的读写方式。",
    "如果你还没有安装 @t，可以先参考下面的步骤进行配置。",
    "截至@y年@m月，该项目在 GitHub 上已经获得了超过 @N 个星标。",
    "团队决定把核心模块改写为 @t，以提高运行效率和内存安全性。",
    "这篇文章主要介绍三个方面：背景、设计思路以及实际测试结果。",
    "需要注意的是，这个接口返回的数据是按时间倒序排列的。",
    "经过多次测试，我们发现缓存命中率提高了大约 @n%。",
    "今天天气很好，我们去公园散步，顺便拍了很多照片。",
    "他从小就喜欢读书，尤其是历史和地理方面的书籍。",
    "这家餐厅的菜味道不错，价格也比较合理，周末常常需要排队。",
    "会议将于@y年@m月@D日下午两点在三楼会议室举行。",
    "请大家在本周五之前提交报告，逾期将不再受理。",
    "随着人工智能技术的发展，越来越多的企业开始尝试将 @t 应用于日常业务。",
    "专家指出，提高教育质量的关键在于培养学生独立思考的能力。",
    "城市交通拥堵问题日益严重，政府正在研究新的解决方案。",
    "这本小说讲述了一个普通家庭在时代变迁中的悲欢离合。",
    "为了保护环境，我们应该尽量减少一次性塑料制品的使用。",
    "数据显示，去年全国的快递业务量增长了 @n.@n%。",
    "在开始编写代码之前，最好先明确需求，并与相关同事充分沟通。",
    "该函数接收两个参数：第一个是文件路径，第二个是编码格式。",
    "如果返回值为空，说明没有找到匹配的记录，而不是发生了错误。",
    "日志中出现“连接被拒绝”的提示，通常意味着服务没有正常启动。",
    "我们使用 @t 作为消息队列，每秒可以处理大约 @N 条消息。",
    "新版本对界面进行了全面调整，操作起来更加简洁直观。",
    "春节期间，许多人会回到家乡与亲人团聚，共度佳节。",
    "中国的茶文化历史悠久，不同地区有着各自独特的饮茶习惯。",
    "长城是世界上最著名的古代建筑之一，每年吸引大量游客前来参观。",
    "孩子们在操场上踢足球，笑声传遍了整个校园。",
    "医生提醒，长时间使用电子产品容易导致视力下降和颈椎疼痛。",
    "这款手机配备了 @n 英寸的屏幕和 @N 毫安时的电池。",
    "由于网络不稳定，视频会议中断了好几次。",
    "请确认输入的邮箱地址是否正确，然后重新发送验证码。",
    "本次更新修复了若干已知问题，并提升了整体稳定性。",
    "为了方便阅读，下表列出了各个版本之间的主要差异。",
    "在高并发场景下，锁的粒度对系统吞吐量有很大影响。",
    "图书馆的开放时间是每天上午八点到晚上十点，节假日另行通知。",
    "经济学家认为，消费市场的回暖还需要一段时间。",
    "他毕业后进入一家互联网公司，从事后端开发工作已经 @n 年了。",
    "这座古镇保留了大量明清时期的建筑，充满了江南水乡的韵味。",
    "如何在有限的预算内完成项目，是每个管理者都要面对的问题。",
    "测试环境与生产环境的配置不同，因此结果可能存在差异。",
    "我们计划在下个季度推出移动端应用，并同步支持 @t。",
    "这个错误通常是由于权限不足造成的，请使用管理员账户重试。",
    "运动不仅能增强体质，还能帮助人们缓解压力、改善睡眠。",
    "研究人员在实验中收集了 @N 份样本，并进行了统计分析。",
    "网站访问量在活动期间达到了峰值，服务器一度出现响应缓慢的情况。",
    "秋天的北京天高气爽，是一年中最适合旅游的季节。",
];

const JA_SENTENCES: &[&str] = &[
    "この問題は次のバージョンで修正される予定です。",
    "詳しい手順については、公式ドキュメントを参照してください。",
    "@tを使うと、設定ファイルを書かずにすぐに始められます。",
    "昨日は雨が降っていたので、一日中家で本を読んでいました。",
    "東京駅から新幹線に乗って、約二時間半で京都に着きます。",
    "このライブラリは@y年に公開され、現在も活発に開発が続いています。",
    "エラーメッセージに「権限がありません」と表示された場合は、管理者に連絡してください。",
    "テストを実行する前に、依存関係をすべてインストールしておく必要があります。",
    "私たちのチームでは、毎朝十分ほどの短いミーティングを行っています。",
    "新しい機能を追加するときは、まず小さなプロトタイプを作ってみましょう。",
    "この関数は入力が空の場合、例外を投げずに空のリストを返します。",
    "キャッシュを有効にしたところ、応答時間が約 @n% 短くなりました。",
    "日本の四季はそれぞれ美しく、特に春の桜と秋の紅葉が有名です。",
    "週末は友達と一緒に近くの山へハイキングに行く予定です。",
    "お問い合わせの際は、注文番号と氏名を明記してください。",
    "会議は@m月@D日の午後三時から、オンラインで開催されます。",
    "このアプリは @t にも対応しており、スマートフォンから簡単に操作できます。",
    "データベースへの接続が切れた場合、自動的に再接続を試みます。",
    "日本語の文章では、ひらがな、カタカナ、漢字の三種類の文字が使われます。",
    "彼は大学で経済学を学んだあと、地元の銀行に就職しました。",
    "駅前に新しいカフェがオープンして、毎日たくさんの人が訪れています。",
    "ログを確認したところ、タイムアウトが原因であることがわかりました。",
    "設定を変更したあとは、サービスを再起動する必要があります。",
    "このプロジェクトはオープンソースで、誰でも自由に貢献できます。",
    "子どもの頃、夏休みになると祖母の家で過ごすのが楽しみでした。",
    "最近はリモートワークが広がり、働き方が大きく変わってきました。",
    "ご不明な点がございましたら、お気軽にお問い合わせください。",
    "このグラフは、過去@n年間の売上の推移を示しています。",
    "メモリ使用量が増え続ける場合は、リークの可能性を疑ってください。",
    "料理を作るのは好きですが、後片付けはあまり得意ではありません。",
    "富士山の頂上から見た日の出は、一生忘れられない光景でした。",
    "ユーザーからのフィードバックをもとに、画面のレイアウトを改善しました。",
    "このコマンドを実行すると、現在のディレクトリにファイルが生成されます。",
    "電車が遅れたため、約束の時間に少し遅れてしまいました。",
    "@t のバージョンが古い場合、一部の機能が正しく動作しないことがあります。",
    "私は毎朝コーヒーを一杯飲んでから仕事を始めます。",
    "図書館で借りた本の返却期限は、来週の月曜日です。",
    "パフォーマンスを測定するために、@N 件のリクエストを送信しました。",
    "この記事では、初心者にもわかりやすく基本的な使い方を説明します。",
    "台風の影響で、多くの便が欠航となりました。",
];

const KO_SENTENCES: &[&str] = &[
    "이 문제는 다음 버전에서 수정될 예정입니다.",
    "자세한 내용은 공식 문서를 참고해 주세요.",
    "오늘은 날씨가 좋아서 친구들과 공원에 산책을 갔습니다.",
    "설정을 변경한 후에는 서비스를 다시 시작해야 합니다.",
    "@t를 사용하면 개발 속도를 크게 높일 수 있습니다.",
    "회의는 @m월 @D일 오후 세 시에 온라인으로 진행됩니다.",
    "서울의 가을은 하늘이 맑고 바람이 시원해서 여행하기 좋습니다.",
    "테스트 결과 응답 시간이 약 @n% 줄어들었습니다.",
    "궁금한 점이 있으시면 언제든지 문의해 주시기 바랍니다.",
    "이 함수는 입력이 비어 있으면 빈 목록을 반환합니다.",
    "주말에는 가족과 함께 맛있는 음식을 먹으며 시간을 보냈습니다.",
    "데이터베이스 연결이 끊어지면 자동으로 다시 연결을 시도합니다.",
];

const ZH_HEADINGS: &[&str] = &[
    "第@n章 概述",
    "安装与配置",
    "常见问题",
    "性能测试结果",
    "使用说明",
    "更新日志（@V）",
    "背景介绍",
    "注意事项",
    "参考资料",
    "总结",
];

const JA_HEADINGS: &[&str] = &[
    "はじめに",
    "インストール方法",
    "よくある質問",
    "第@n章 基本的な使い方",
    "注意事項",
    "変更履歴（v@V）",
    "まとめ",
    "参考文献",
    "動作環境",
];

const KO_HEADINGS: &[&str] = &["소개", "설치 방법", "자주 묻는 질문", "변경 사항 (v@V)"];

fn cjk_paragraph(rng: &mut Rng, sentences: &[&str], separator: &str) -> String {
    let count = rng.range(2, 6);
    let mut picked: Vec<&str> = Vec::new();
    while picked.len() < count as usize {
        let sentence = rng.pick(sentences);
        if picked.last() != Some(&sentence) {
            picked.push(sentence);
        }
    }
    picked
        .iter()
        .map(|s| fill(s, rng))
        .collect::<Vec<_>>()
        .join(separator)
}

fn cjk(rng: &mut Rng, target: usize) -> String {
    let mut out = String::new();
    while out.len() < target {
        // Chinese and Japanese end sentences with `。` and run them on; Korean puts a space.
        let (sentences, headings, bullet, separator) = match rng.range(0, 19) {
            0..=10 => (ZH_SENTENCES, ZH_HEADINGS, "- ", ""),
            11..=17 => (JA_SENTENCES, JA_HEADINGS, "・", ""),
            _ => (KO_SENTENCES, KO_HEADINGS, "- ", " "),
        };
        let _ = writeln!(out, "## {}\n", fill(rng.pick(headings), rng));
        for _ in 0..rng.range(1, 4) {
            let _ = writeln!(out, "{}\n", cjk_paragraph(rng, sentences, separator));
        }
        match rng.range(0, 5) {
            0 => {
                for _ in 0..rng.range(2, 4) {
                    let _ = writeln!(out, "{bullet}{}", fill(rng.pick(sentences), rng));
                }
                out.push('\n');
            }
            1 => {
                let _ = writeln!(
                    out,
                    "{}\n\n```\n$ cargo run --release -- --input {}\n```\n",
                    fill(rng.pick(sentences), rng),
                    fill("@P", rng)
                );
            }
            2 => {
                let _ = writeln!(
                    out,
                    "（{}：{}，{}）\n",
                    fill("@y-@m-@D", rng),
                    fill("@t", rng),
                    fill("@u", rng)
                );
            }
            _ => {}
        }
    }
    out
}

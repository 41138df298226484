//! The `workspace_server` example's tools, served by the same server the example builds, over a
//! small tree made for each test. Every capability tag the example stamps is proven here.

mod common;

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use envelope_budget::Estimator;
use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_core::{Capability, RequestId, Tool, ToolContext};
use envelope_mcp::EnvelopeServer;
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestParamsMeta};
use serde_json::{Value, json};

use common::raw_http::{
    header, http_exchange, initialize, initialized, open_session, post, serve_on_loopback,
    sse_result,
};
use common::rmcp_client::connect_in_memory;

/// The paging key of these tests: fixed, so a second server can share it.
fn test_key() -> ContinuationKey {
    ContinuationKey::new(1, [7; 32])
}

/// A directory tree under the system's temp dir, removed when dropped.
struct Tree {
    root: PathBuf,
}

impl Tree {
    /// The fixture every test uses: a tiny Rust crate, a Python package, a TypeScript pair, and
    /// everything a walk must skip.
    fn new(name: &str) -> Tree {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let unique = format!(
            "envelope-workspace-server-{}-{name}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        );
        let root = std::env::temp_dir().join(unique);
        let _ = std::fs::remove_dir_all(&root);
        let tree = Tree { root };
        tree.write("README.md", "# Demo\nneedle here\n");
        tree.write(
            "notes/many.txt",
            "needle needle\nneedle needle\nneedle needle\n",
        );
        tree.write(
            "src/lib.rs",
            "mod a;\npub mod b;\nmod missing;\nuse crate::b::Thing;\n// needle in a comment\n",
        );
        tree.write(
            "src/a.rs",
            "mod inner;\nuse crate::b::{Thing, helper};\nfn needle() {}\n",
        );
        tree.write("src/a/inner.rs", "use crate::a;\n");
        tree.write("src/b/mod.rs", "pub struct Thing;\npub fn helper() {}\n");
        tree.write(
            "app/main.py",
            "import os\nimport util\nfrom pkg import mod\n",
        );
        tree.write("app/util.py", "X = 1\n");
        tree.write("app/pkg/__init__.py", "");
        tree.write("app/pkg/mod.py", "from . import helpers\n");
        tree.write("web/index.ts", "import { x } from './lib/x';\n");
        tree.write("web/lib/x.ts", "export const x = 1;\n");
        tree.write("long.txt", &"0123456789".repeat(6_000));
        // Everything below is skipped by walks.
        tree.write_bytes("notes/data.bin", b"needle \xff\xfe binary");
        tree.write(".hidden/secret.txt", "needle\n");
        // What `.gitignore` files leave out is never walked; `!` lets a path back in.
        tree.write(".gitignore", "target/\nnode_modules/\n*.log\n");
        tree.write("notes/.gitignore", "drafts/\n!keep.log\n");
        tree.write("notes/drafts/plan.txt", "needle\n");
        tree.write("notes/build.log", "needle\n");
        tree.write("notes/keep.log", "kept\n");
        tree.write("target/debug/out.txt", "needle\n");
        tree.write("node_modules/pkg/index.js", "needle\n");
        tree.write("big.txt", &"needle\n".repeat(2 * 1024 * 1024 / 7 + 1));
        tree
    }

    fn write(&self, rel: &str, contents: &str) {
        self.write_bytes(rel, contents.as_bytes());
    }

    fn write_bytes(&self, rel: &str, contents: &[u8]) {
        let path = self.root.join(rel);
        let dir = path.parent().expect("fixture paths have a parent");
        std::fs::create_dir_all(dir).expect("the temp dir is writable");
        std::fs::write(path, contents).expect("the temp dir is writable");
    }

    fn server(&self) -> EnvelopeServer {
        self.server_with(Continuations::new(test_key()))
    }

    fn server_with(&self, continuations: Continuations) -> EnvelopeServer {
        workspace_server::server(
            workspace_server::Workspace::open(&self.root).expect("the fixture is a directory"),
            continuations,
            &[],
        )
    }

    /// The root as the server sees it: symlinks resolved.
    fn canonical_root(&self) -> PathBuf {
        self.root.canonicalize().expect("the fixture exists")
    }
}

impl Drop for Tree {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

/// The text files a walk must find, sorted.
const TEXT_FILES: [&str; 14] = [
    "README.md",
    "app/main.py",
    "app/pkg/__init__.py",
    "app/pkg/mod.py",
    "app/util.py",
    "long.txt",
    "notes/keep.log",
    "notes/many.txt",
    "src/a.rs",
    "src/a/inner.rs",
    "src/b/mod.rs",
    "src/lib.rs",
    "web/index.ts",
    "web/lib/x.ts",
];

async fn call(server: &EnvelopeServer, tool: &str, arguments: Value) -> Value {
    server
        .call(tool, arguments)
        .await
        .expect("a tool of this server")
        .structured
}

fn error_of(envelope: &Value) -> (&str, &Value) {
    assert_eq!(envelope["ok"], false, "{envelope:#}");
    assert_eq!(envelope["verdict"], "ERROR", "{envelope:#}");
    let category = envelope["error"]["category"]
        .as_str()
        .expect("an error has a category");
    assert!(envelope["error"]["retryable"].is_boolean(), "{envelope:#}");
    (category, &envelope["error"]["data"]["field"])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_counts_every_match_and_pages_honestly() {
    let tree = Tree::new("search-page");
    let server = tree.server();
    let envelope = call(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 4}),
    )
    .await;
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    assert_eq!(envelope["verdict"], "INFO");
    let occurrences = envelope["data"]["occurrences"]
        .as_array()
        .expect("occurrences");
    let found: Vec<(&str, u64, u64)> = occurrences
        .iter()
        .map(|o| {
            (
                o["path"].as_str().expect("path"),
                o["line"].as_u64().expect("line"),
                o["column"].as_u64().expect("column"),
            )
        })
        .collect();
    // Sorted by path; skipped places (binary, hidden, target, node_modules, too large) absent.
    assert_eq!(
        found,
        [
            ("README.md", 2, 1),
            ("notes/many.txt", 1, 1),
            ("notes/many.txt", 1, 8),
            ("notes/many.txt", 2, 1)
        ]
    );
    assert_eq!(occurrences[0]["text"], "needle here");
    let completeness = &envelope["completeness"];
    assert_eq!(completeness["unit"], "occurrence");
    assert_eq!(completeness["returned"], 4);
    assert_eq!(completeness["total"], 9);
    assert_eq!(completeness["truncated"], true);
    assert_eq!(completeness["complete"], false);
    assert_eq!(completeness["truncation_reasons"], json!(["page_limit"]));
    let next_step = envelope["next_step"]
        .as_str()
        .expect("a truncated page says what next");
    assert!(
        next_step.starts_with("showing 4 of 9 occurrences"),
        "{next_step}"
    );

    let all = call(&server, "search_text", json!({"query": "needle"})).await;
    assert_eq!(all["completeness"]["complete"], true);
    assert_eq!(all["completeness"]["returned"], 9);
    assert!(all.get("next_step").is_none(), "{all:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_filters_by_glob_and_reads_regexes() {
    let tree = Tree::new("search-glob");
    let server = tree.server();
    let rust = call(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "*.rs"}),
    )
    .await;
    let paths: Vec<&str> = rust["data"]["occurrences"]
        .as_array()
        .expect("occurrences")
        .iter()
        .map(|o| o["path"].as_str().expect("path"))
        .collect();
    assert_eq!(paths, ["src/a.rs", "src/lib.rs"]);

    let regex = call(
        &server,
        "search_text",
        json!({"query": r"fn \w+\(\)", "regex": true}),
    )
    .await;
    assert_eq!(regex["completeness"]["total"], 2, "{regex:#}");
    assert_eq!(regex["data"]["occurrences"][0]["path"], "src/a.rs");
    assert_eq!(regex["data"]["occurrences"][0]["column"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_literal_that_looks_like_a_regex_offers_the_regex_retry() {
    let tree = Tree::new("search-regexish");
    let server = tree.server();
    let arguments = json!({"query": "need.*here", "path_glob": "*.md"});
    let envelope = call(&server, "search_text", arguments).await;
    assert_eq!(envelope["ok"], true);
    assert_eq!(envelope["verdict"], "NOT_FOUND");
    assert_eq!(envelope["empty_reason"], "query_looks_like_regex");
    assert!(envelope["diagnosis"].is_string());
    assert_eq!(envelope["completeness"]["total"], 0);
    let actions = envelope["next_actions"].as_array().expect("next actions");
    assert_eq!(actions.len(), 1, "{envelope:#}");
    assert_eq!(actions[0]["role"], "retry");
    assert_eq!(actions[0]["tool"], "search_text");
    assert_eq!(
        actions[0]["arguments"],
        json!({"query": "need.*here", "path_glob": "*.md", "regex": true})
    );

    // The action is a working call: run it as the agent would.
    let retried = call(&server, "search_text", actions[0]["arguments"].clone()).await;
    assert_eq!(retried["verdict"], "INFO");
    assert_eq!(retried["completeness"]["total"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn empty_searches_say_why() {
    let tree = Tree::new("search-empty");
    let server = tree.server();
    let filtered = call(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "*.go"}),
    )
    .await;
    assert_eq!(filtered["verdict"], "NOT_FOUND");
    assert_eq!(filtered["empty_reason"], "filters_excluded_all");
    assert_eq!(filtered["next_actions"][0]["role"], "broaden_scope");
    assert_eq!(
        filtered["next_actions"][0]["arguments"],
        json!({"query": "needle"})
    );

    let nothing = call(&server, "search_text", json!({"query": "haystack"})).await;
    assert_eq!(nothing["verdict"], "NOT_FOUND");
    assert_eq!(nothing["empty_reason"], "no_match");
    assert!(nothing["diagnosis"].is_string());
    assert!(nothing.get("next_actions").is_none(), "{nothing:#}");

    // Metacharacters that do not make a valid pattern are no reason to suggest regex mode.
    let unbalanced = call(&server, "search_text", json!({"query": "haystack("})).await;
    assert_eq!(unbalanced["empty_reason"], "no_match");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_search_arguments_are_validation_errors_naming_the_field() {
    let tree = Tree::new("search-invalid");
    let server = tree.server();
    let bad_regex = call(
        &server,
        "search_text",
        json!({"query": "(unclosed", "regex": true}),
    )
    .await;
    assert_eq!(error_of(&bad_regex), ("validation", &json!("query")));
    assert_eq!(bad_regex["error"]["retryable"], false);

    let zero = call(&server, "search_text", json!({"query": "x", "limit": 0})).await;
    assert_eq!(error_of(&zero), ("validation", &json!("limit")));

    let bad_glob = call(
        &server,
        "search_text",
        json!({"query": "x", "path_glob": "src/[a"}),
    )
    .await;
    assert_eq!(error_of(&bad_glob), ("validation", &json!("path_glob")));

    let wrong_type = call(&server, "search_text", json!({"query": 5})).await;
    assert_eq!(error_of(&wrong_type), ("validation", &json!("query")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn search_work_is_bounded_by_what_can_be_sent() {
    // Regression test for #12: a match-everything search built every row before the budget
    // trimmed the answer (264 MB to send 30 KB), and a long query or glob cost memory in
    // proportion to its length.
    let tree = Tree::new("search-bounds");
    let server = tree.server();
    let too_many = call(
        &server,
        "search_text",
        json!({"query": "x", "limit": 1_001}),
    )
    .await;
    assert_eq!(error_of(&too_many), ("validation", &json!("limit")));
    let list_too_many = call(&server, "list_files", json!({"limit": 1_001})).await;
    assert_eq!(error_of(&list_too_many), ("validation", &json!("limit")));
    let long_query = call(&server, "search_text", json!({"query": "q".repeat(4_097)})).await;
    assert_eq!(error_of(&long_query), ("validation", &json!("query")));
    let long_glob = call(
        &server,
        "search_text",
        json!({"query": "x", "path_glob": "*".repeat(4_097)}),
    )
    .await;
    assert_eq!(error_of(&long_glob), ("validation", &json!("path_glob")));
    // Short, but compiling to more than the regex size limit allows.
    let huge_regex = call(
        &server,
        "search_text",
        json!({"query": r"\w{1000}\w{1000}\w{1000}", "regex": true}),
    )
    .await;
    assert_eq!(error_of(&huge_regex), ("validation", &json!("query")));

    // 600 long lines, each with a match: a page of 1,000 ends where the budget fills, before
    // the trimmer would have to cut (and drop the continuation), and the pages add up.
    let line = format!("needle {}", "y".repeat(380));
    tree.write("wide/lines.txt", &format!("{line}\n").repeat(600));
    let first = call(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "wide/*", "limit": 1_000}),
    )
    .await;
    let completeness = &first["completeness"];
    assert_eq!(
        completeness["truncation_reasons"],
        json!(["budget_limit"]),
        "{completeness}"
    );
    assert_eq!(completeness["total"], 600);
    let returned = completeness["returned"].as_u64().expect("a count");
    assert!((10..600).contains(&returned), "{completeness}");
    assert_eq!(first["meta"]["truncated"], false, "{:#}", first["meta"]);
    let step = first["next_step"].as_str().expect("a next step");
    assert!(!step.contains("raise `limit`"), "{step}");
    let (rows, last, pages) = page_through(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "wide/*", "limit": 1_000}),
        "occurrences",
    )
    .await;
    let lines: Vec<u64> = rows.iter().filter_map(|row| row["line"].as_u64()).collect();
    assert_eq!(
        lines,
        (1..=600).collect::<Vec<_>>(),
        "every row once, in order"
    );
    assert!(pages > 1);
    assert_eq!(last["completeness"]["complete"], true, "{last:#}");

    // Punctuation and escapes weigh more than a byte each: rows are sized as the budget
    // stage sizes them, so the page still ends before the trimmer would cut (and drop the
    // continuation).
    let dense = format!("needle {}", r#"{"k":[1,2],"v":"\u00e9"},"#.repeat(14));
    tree.write("dense/lines.txt", &format!("{dense}\n").repeat(300));
    let first = call(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "dense/*", "limit": 1_000}),
    )
    .await;
    assert_eq!(first["meta"]["truncated"], false, "{:#}", first["meta"]);
    assert!(
        first["completeness"]["continuation"].is_string(),
        "{:#}",
        first["completeness"]
    );
    let (rows, _, _) = page_through(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "dense/*", "limit": 1_000}),
        "occurrences",
    )
    .await;
    assert_eq!(rows.len(), 300, "every row, across pages");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn matches_on_long_lines_have_true_columns_and_bounded_excerpts() {
    let tree = Tree::new("search-long-line");
    let server = tree.server();
    // Multi-byte characters before the match: the column counts characters, not bytes.
    let line = format!("{}needle{}", "é".repeat(1_000), "x".repeat(1_000));
    let repeated = "ab".repeat(200_000);
    tree.write("wide/long.txt", &format!("{line}\n{repeated}\n"));
    let found = call(
        &server,
        "search_text",
        json!({"query": "needle", "path_glob": "wide/*"}),
    )
    .await;
    let row = &found["data"]["occurrences"][0];
    assert_eq!(row["column"], 1_001, "{row}");
    let text = row["text"].as_str().expect("an excerpt");
    assert_eq!(
        text.chars().count(),
        400 + 2,
        "a window and two ellipses: {text}"
    );
    assert!(text.starts_with('…') && text.ends_with('…'), "{text}");
    assert_eq!(text.chars().skip(1).take_while(|c| *c == 'é').count(), 100);

    // 200,000 matches on one line: counted exactly, with the columns of a later page true.
    let page = call(
        &server,
        "search_text",
        json!({"query": "ab", "path_glob": "wide/*", "limit": 5}),
    )
    .await;
    assert_eq!(page["completeness"]["total"], 200_000);
    let columns: Vec<u64> = page["data"]["occurrences"]
        .as_array()
        .expect("rows")
        .iter()
        .filter_map(|row| row["column"].as_u64())
        .collect();
    assert_eq!(columns, [1, 3, 5, 7, 9]);
    let token = page["completeness"]["continuation"]
        .as_str()
        .expect("a token");
    let next = call(
        &server,
        "search_text",
        json!({"query": "ab", "path_glob": "wide/*", "limit": 5, "continuation": token}),
    )
    .await;
    assert_eq!(next["data"]["occurrences"][0]["column"], 11, "{next:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_file_returns_lines_and_refuses_escapes() {
    let tree = Tree::new("read");
    let server = tree.server();
    let whole = call(&server, "read_file", json!({"path": "src/a.rs"})).await;
    assert_eq!(whole["ok"], true, "{whole:#}");
    assert_eq!(
        whole["data"],
        json!({
            "path": "src/a.rs", "start_line": 1, "end_line": 3, "total_lines": 3,
            "content": "mod inner;\nuse crate::b::{Thing, helper};\nfn needle() {}\n"
        })
    );
    let range = call(
        &server,
        "read_file",
        json!({"path": "./src/../src/a.rs", "start_line": 2, "end_line": 9}),
    )
    .await;
    assert_eq!(range["data"]["path"], "src/a.rs");
    assert_eq!(range["data"]["start_line"], 2);
    assert_eq!(range["data"]["end_line"], 3);
    assert_eq!(
        range["data"]["content"],
        "use crate::b::{Thing, helper};\nfn needle() {}\n"
    );
    let inside = tree.canonical_root().join("README.md");
    let absolute = call(
        &server,
        "read_file",
        json!({"path": inside.to_str().expect("UTF-8 temp dir")}),
    )
    .await;
    assert_eq!(absolute["data"]["path"], "README.md");

    let missing = call(&server, "read_file", json!({"path": "src/missing.rs"})).await;
    assert_eq!(error_of(&missing).0, "not_found");

    for outside in ["../etc/passwd", "src/../../etc/passwd", "/etc/passwd"] {
        let refused = call(&server, "read_file", json!({"path": outside})).await;
        assert_eq!(error_of(&refused).0, "permission", "{outside}");
        assert_eq!(refused["error"]["retryable"], false);
    }

    let past_end = call(
        &server,
        "read_file",
        json!({"path": "src/a.rs", "start_line": 4}),
    )
    .await;
    assert_eq!(error_of(&past_end), ("validation", &json!("start_line")));
    let backwards = call(
        &server,
        "read_file",
        json!({"path": "src/a.rs", "start_line": 3, "end_line": 2}),
    )
    .await;
    assert_eq!(error_of(&backwards), ("validation", &json!("end_line")));
    let binary = call(&server, "read_file", json!({"path": "notes/data.bin"})).await;
    assert_eq!(binary["error"]["code"], "binary_file");
    let big = call(&server, "read_file", json!({"path": "big.txt"})).await;
    assert_eq!(big["error"]["code"], "file_too_large");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlinks_out_of_the_root_are_refused_and_never_walked() {
    let tree = Tree::new("symlink");
    let outside = Tree::new("symlink-target");
    outside.write("secret.txt", "needle outside\n");
    std::os::unix::fs::symlink(
        outside.root.join("secret.txt"),
        tree.root.join("escape.txt"),
    )
    .expect("symlinks work in the temp dir");
    std::os::unix::fs::symlink(&outside.root, tree.root.join("escape_dir"))
        .expect("symlinks work in the temp dir");
    let server = tree.server();
    for path in ["escape.txt", "escape_dir/secret.txt"] {
        let refused = call(&server, "read_file", json!({"path": path})).await;
        assert_eq!(error_of(&refused).0, "permission", "{path}");
    }
    let listed = call(&server, "list_files", json!({})).await;
    assert_eq!(listed["data"]["files"], json!(TEXT_FILES));
    let searched = call(&server, "search_text", json!({"query": "outside"})).await;
    assert_eq!(searched["completeness"]["total"], 0);
}

/// How long the swap race runs: bounded, so CI stays fast; tens of thousands of swaps.
const SWAP_RACE: Duration = Duration::from_secs(3);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_directory_swapped_for_a_symlink_mid_walk_never_leads_outside() {
    // Regression test for #12: swapping a directory for a symlink to the outside while
    // `search_text` walked let 4 of 717 calls read outside the root (55,514 swaps).
    let tree = Tree::new("swap-race");
    let outside = Tree::new("swap-race-outside");
    outside.write("leak.txt", "OUTSIDE_SECRET\n");
    outside.write("only-outside.txt", "OUTSIDE_SECRET\n");
    tree.write("swap/leak.txt", "inside\n");
    let server = tree.server();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, root, target) = (Arc::clone(&stop), tree.root.clone(), outside.root.clone());
        std::thread::spawn(move || {
            let (swap, parked) = (root.join("swap"), root.join(".swap-parked"));
            let mut swaps = 0u64;
            while !stop.load(Ordering::Relaxed) {
                std::fs::rename(&swap, &parked).expect("parks the directory");
                std::os::unix::fs::symlink(&target, &swap).expect("links to the outside");
                std::fs::remove_file(&swap).expect("unlinks");
                std::fs::rename(&parked, &swap).expect("restores the directory");
                swaps += 1;
            }
            swaps
        })
    };

    let started = std::time::Instant::now();
    let mut calls = 0;
    while started.elapsed() < SWAP_RACE {
        let searched = call(&server, "search_text", json!({"query": "OUTSIDE_SECRET"})).await;
        assert_eq!(searched["completeness"]["returned"], 0, "{searched:#}");
        let listed = call(&server, "list_files", json!({"limit": 1_000})).await;
        let files = listed["data"]["files"].as_array().expect("a listing");
        assert!(
            !files.contains(&json!("swap/only-outside.txt")),
            "{listed:#}"
        );
        let read = call(
            &server,
            "read_file",
            json!({"path": "swap/only-outside.txt"}),
        )
        .await;
        assert_eq!(read["ok"], false, "{read:#}");
        let read = call(&server, "read_file", json!({"path": "swap/leak.txt"})).await;
        if read["ok"] == true {
            assert_eq!(read["data"]["content"], "inside\n", "{read:#}");
        }
        calls += 4;
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().expect("the swapper ends");
    assert!(
        swaps > 100 && calls > 40,
        "too little raced: {swaps} swaps, {calls} calls"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn special_files_loops_and_long_names_name_the_real_cause() {
    // Regression test for #12: a FIFO blocked `read_file` forever; a symlink loop and a name
    // too long for the file system answered `internal`.
    let tree = Tree::new("special");
    let fifo = tree.root.join("pipe");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let answer = tokio::time::timeout(
        Duration::from_secs(10),
        call(&tree.server(), "read_file", json!({"path": "pipe"})),
    )
    .await
    .expect("a FIFO is refused, not read");
    assert_eq!(error_of(&answer), ("validation", &json!("path")));
    assert_eq!(answer["error"]["code"], "not_a_file");

    #[cfg(unix)]
    {
        std::os::unix::fs::symlink("loop_b", tree.root.join("loop_a")).expect("symlink");
        std::os::unix::fs::symlink("loop_a", tree.root.join("loop_b")).expect("symlink");
        let looped = call(&tree.server(), "read_file", json!({"path": "loop_a"})).await;
        assert_eq!(error_of(&looped), ("not_found", &json!("path")));
    }

    let long = "x".repeat(5_000);
    let named = call(&tree.server(), "read_file", json!({"path": long})).await;
    assert_eq!(error_of(&named), ("validation", &json!("path")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_use_tree_nested_thousands_deep_does_not_overflow_the_stack() {
    // Regression test for #12: a 40 KB file nesting `use crate::{a::{…}}` 8,000 levels deep
    // overflowed the stack in `graph_export` and took the process down.
    let tree = Tree::new("deep-use");
    let depth = 8_000;
    let nested = format!(
        "use crate::{}b{};\n",
        "{a::".repeat(depth),
        "}".repeat(depth)
    );
    tree.write("src/deep.rs", &nested);
    let envelope = tokio::time::timeout(
        Duration::from_secs(60),
        call(&tree.server(), "graph_export", json!({})),
    )
    .await
    .expect("answers in time");
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    // The rest of the graph is still there.
    assert!(
        edges(&envelope)
            .iter()
            .any(|(source, _, _)| source == "src/lib.rs")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_content_is_trimmed_by_the_budget_stage() {
    let tree = Tree::new("read-long");
    let server = tree.server();
    let envelope = call(&server, "read_file", json!({"path": "long.txt"})).await;
    assert_eq!(envelope["ok"], true);
    let content = envelope["data"]["content"].as_str().expect("content");
    assert!(content.len() < 60_000, "{}", content.len());
    assert!(content.ends_with("…[truncated]"));
    assert_eq!(envelope["meta"]["truncated"], true);
    assert_eq!(
        envelope["meta"]["truncated_string_fields"],
        json!(["/content"])
    );
    let prepared = server
        .call("read_file", json!({"path": "long.txt"}))
        .await
        .expect("a tool of this server");
    assert!(prepared.json.len() <= 32_000, "{}", prepared.json.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_files_lists_text_files_sorted_with_completeness() {
    let tree = Tree::new("list");
    let server = tree.server();
    let all = call(&server, "list_files", json!({})).await;
    assert_eq!(all["data"]["files"], json!(TEXT_FILES));
    assert_eq!(all["completeness"]["unit"], "file");
    assert_eq!(all["completeness"]["complete"], true);
    assert_eq!(all["completeness"]["total"], 14);

    let page = call(&server, "list_files", json!({"limit": 3})).await;
    assert_eq!(page["data"]["files"], json!(TEXT_FILES[..3]));
    assert_eq!(page["completeness"]["returned"], 3);
    assert_eq!(page["completeness"]["total"], 14);
    assert_eq!(page["completeness"]["truncated"], true);
    assert!(
        page["next_step"]
            .as_str()
            .expect("next step")
            .starts_with("showing 3 of 14 files")
    );

    let src = call(&server, "list_files", json!({"glob": "src/*.rs"})).await;
    assert_eq!(src["data"]["files"], json!(["src/a.rs", "src/lib.rs"]));
    let rust = call(&server, "list_files", json!({"glob": "*.rs"})).await;
    assert_eq!(rust["completeness"]["total"], 4);

    let none = call(&server, "list_files", json!({"glob": "*.go"})).await;
    assert_eq!(none["verdict"], "NOT_FOUND");
    assert_eq!(none["empty_reason"], "filters_excluded_all");
    let zero = call(&server, "list_files", json!({"limit": 0})).await;
    assert_eq!(error_of(&zero), ("validation", &json!("limit")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workspace_stats_counts_by_extension_and_reports_progress() {
    let tree = Tree::new("stats");
    let (client, handler) = connect_in_memory(tree.server()).await;
    let mut params = CallToolRequestParams::new("workspace_stats").with_arguments(
        json!({"response_mode": "full"})
            .as_object()
            .cloned()
            .unwrap_or_default(),
    );
    params.set_progress_token(ProgressToken(NumberOrString::Number(1)));
    let result = client.call_tool(params).await.expect("answers");
    let envelope = result.structured_content.expect("structured");
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    assert_eq!(envelope["meta"]["complexity_tier"], "standard");
    let data = &envelope["data"];
    assert_eq!(data["files"], 14);
    assert_eq!(
        data["by_extension"]["rs"],
        json!({"files": 4, "bytes": 183})
    );
    assert_eq!(data["by_extension"]["py"]["files"], 4);
    assert_eq!(
        data["skipped"],
        json!({"too_large": 1, "binary": 1, "unreadable": 0})
    );

    // 14 text files and one binary were walked: progress counts to 15.
    let mut progress = handler.wait_for_progress(2).await;
    progress.sort_by(|a, b| a.0.total_cmp(&b.0));
    assert_eq!(progress, [(0.0, Some(15.0)), (15.0, Some(15.0))]);
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cancelled_walk_stops_with_a_non_transient_error() {
    let tree = Tree::new("stats-cancel");
    let workspace =
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory");
    let ctx = ToolContext::new()
        .with_state(Arc::new(workspace))
        .with_cancellation(Arc::new(AtomicBool::new(true)));
    let envelope = serde_json::to_value(
        workspace_server::tools::workspace_stats {}
            .call(json!({}), ctx)
            .await
            .envelope,
    )
    .expect("serializes");
    let (category, _) = error_of(&envelope);
    assert_ne!(category, "transient");
    assert_eq!(envelope["error"]["code"], "cancelled");
    assert_eq!(envelope["error"]["retryable"], false);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_workspace_the_tools_are_unavailable() {
    // The one standard answer for state a server was not configured with, naming what is
    // missing; the example writes no helper of its own for it.
    let envelope = serde_json::to_value(
        workspace_server::tools::list_files {}
            .call(json!({}), ToolContext::new())
            .await
            .envelope,
    )
    .expect("serializes");
    assert_eq!(error_of(&envelope).0, "unavailable");
    assert_eq!(envelope["error"]["code"], envelope_core::NOT_CONFIGURED);
    assert_eq!(envelope["error"]["retryable"], false);
    let message = envelope["error"]["message"].as_str().expect("a message");
    assert!(message.contains("Workspace"), "{message}");
}

fn edges(envelope: &Value) -> Vec<(String, String, String)> {
    envelope["data"]["edges"]
        .as_array()
        .expect("edges")
        .iter()
        .map(|edge| {
            let field = |key: &str| edge[key].as_str().expect("string fields").to_owned();
            (field("source"), field("target"), field("kind"))
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn graph_export_resolves_rust_python_and_typescript_references() {
    let tree = Tree::new("graph");
    let server = tree.server();
    let envelope = call(&server, "graph_export", json!({"response_mode": "full"})).await;
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    assert_eq!(envelope["meta"]["complexity_tier"], "heavy");
    let nodes: Vec<&str> = envelope["data"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|node| {
            assert_eq!(node["kind"], "file");
            node["id"].as_str().expect("id")
        })
        .collect();
    assert_eq!(
        nodes,
        [
            "app/main.py",
            "app/pkg/__init__.py",
            "app/pkg/mod.py",
            "app/util.py",
            "src/a.rs",
            "src/a/inner.rs",
            "src/b/mod.rs",
            "src/lib.rs",
            "web/index.ts",
            "web/lib/x.ts",
        ]
    );
    assert_eq!(envelope["data"]["nodes"][4]["language"], "rust");
    let expected: Vec<(String, String, String)> = [
        ("app/main.py", "app/pkg/mod.py", "import"),
        ("app/main.py", "app/util.py", "import"),
        // `from . import helpers`: not a module, so a name from the package itself.
        ("app/pkg/mod.py", "app/pkg/__init__.py", "import"),
        ("src/a.rs", "src/a/inner.rs", "mod"),
        ("src/a.rs", "src/b/mod.rs", "use"),
        ("src/a/inner.rs", "src/a.rs", "use"),
        ("src/lib.rs", "src/a.rs", "mod"),
        ("src/lib.rs", "src/b/mod.rs", "mod"),
        ("src/lib.rs", "src/b/mod.rs", "use"),
        ("web/index.ts", "web/lib/x.ts", "import"),
    ]
    .into_iter()
    .map(|(s, t, k)| (s.to_owned(), t.to_owned(), k.to_owned()))
    .collect();
    // `mod missing;` and `import os` resolve to no file: no edges.
    assert_eq!(edges(&envelope), expected);
    assert_eq!(envelope["completeness"]["complete"], true);
    assert_eq!(envelope["completeness"]["total"], 10);

    // The two best connected files, and only the edge between them.
    let top = call(&server, "graph_export", json!({"max_nodes": 2})).await;
    let kept: Vec<&str> = top["data"]["nodes"]
        .as_array()
        .expect("nodes")
        .iter()
        .map(|node| node["id"].as_str().expect("id"))
        .collect();
    assert_eq!(kept, ["src/a.rs", "src/b/mod.rs"]);
    assert_eq!(
        edges(&top),
        [(
            "src/a.rs".to_owned(),
            "src/b/mod.rs".to_owned(),
            "use".to_owned()
        )]
    );
    assert_eq!(top["completeness"]["returned"], 2);
    assert_eq!(top["completeness"]["total"], 10);
    assert_eq!(
        top["completeness"]["truncation_reasons"],
        json!(["top_k_limit"])
    );
    let zero = call(&server, "graph_export", json!({"max_nodes": 0})).await;
    assert_eq!(error_of(&zero), ("validation", &json!("max_nodes")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_declares_tiers_and_read_only_idempotent_tools() {
    let tree = Tree::new("listing");
    let server = tree.server();
    let listed: Vec<(&str, Value)> = server
        .tools()
        .iter()
        .map(|tool| {
            let annotations = tool.annotations.as_ref().expect("annotated");
            assert_eq!(annotations.read_only_hint, Some(true), "{}", tool.name);
            assert_eq!(annotations.idempotent_hint, Some(true), "{}", tool.name);
            // Read-only: a destructive hint would mean nothing, so none is listed.
            assert_eq!(annotations.destructive_hint, None, "{}", tool.name);
            // The workspace is a closed world, and the example says so.
            assert_eq!(annotations.open_world_hint, Some(false), "{}", tool.name);
            assert!(tool.title.is_some(), "{}", tool.name);
            // Only the tools that page advertise `continuation`.
            let pages = matches!(tool.name.as_ref(), "search_text" | "list_files");
            let properties = tool.input_schema.get("properties").expect("properties");
            assert_eq!(
                properties.get("continuation").is_some(),
                pages,
                "{}",
                tool.name
            );
            assert!(tool.output_schema.is_some(), "{}", tool.name);
            let meta = tool.meta.as_ref().expect("meta");
            (
                tool.name.as_ref(),
                meta.get("rs.envelope/tier").cloned().expect("tier"),
            )
        })
        .collect();
    assert_eq!(
        listed,
        [
            ("change_impact", json!("standard")),
            ("graph_export", json!("heavy")),
            ("list_files", json!("lite")),
            ("read_file", json!("lite")),
            ("search_text", json!("lite")),
            ("workspace_stats", json!("standard")),
        ]
    );
    let tools = server.tools();
    let search = tools
        .iter()
        .find(|tool| tool.name == "search_text")
        .expect("listed");
    let properties = search.input_schema["properties"]
        .as_object()
        .expect("properties");
    for key in ["query", "regex", "path_glob", "limit", "output_format"] {
        assert!(properties.contains_key(key), "{key}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_answer_carries_the_stamped_meta() {
    let tree = Tree::new("meta");
    let server = tree.server();
    let prepared = server
        .call(
            "search_text",
            json!({"query": "needle", "response_mode": "full"}),
        )
        .await
        .expect("a tool of this server");
    let meta = &prepared.structured["meta"];
    assert!(
        RequestId::parse(meta["request_id"].as_str().expect("request id")).is_ok(),
        "{meta:#}"
    );
    assert_eq!(meta["tool"], "search_text");
    assert_eq!(meta["complexity_tier"], "lite");
    assert_eq!(meta["idempotent"], true);
    assert_eq!(meta["truncated"], false);
    // `tokens_estimated` counts the bytes sent, itself included.
    assert_eq!(
        meta["tokens_estimated"],
        Estimator::default().estimate(&prepared.json)
    );
    assert_eq!(meta["capabilities"], json!(server.capabilities()));
    assert!(!server.capabilities().contains(&Capability::STREAMABLE_HTTP));

    // Errors use the one shape, with the verdict alphabet's ERROR.
    let failed = call(&server, "read_file", json!({"path": "nope"})).await;
    assert_eq!(failed["verdict"], "ERROR");
    assert!(failed["meta"]["request_id"].is_string());
    assert!(failed["error"]["message"].is_string());

    let toon = server
        .call("list_files", json!({"limit": 2, "output_format": "toon"}))
        .await
        .expect("a tool of this server");
    let text = toon.toon.as_deref().expect("rendered as TOON");
    assert!(text.contains("ok: true"), "{text}");
    assert_eq!(toon.text(), text);
}

/// Every capability tag the server advertises is a promise an agent gates on: each is probed
/// here by the behaviour it names, and a tag without a probe fails the test.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_advertised_capability_is_probed() {
    let tree = Tree::new("capabilities");
    let server = tree.server();
    let advertised = server.capabilities().to_vec();
    // Everything the example supports: it trims to a budget and seals paging tokens; it is
    // not on HTTP here.
    assert_eq!(
        advertised,
        [
            Capability::STANDARDIZED_ERROR_ENVELOPE,
            Capability::CANONICAL_VERDICTS,
            Capability::REQUEST_IDS,
            Capability::COMPLEXITY_TIER,
            Capability::IDEMPOTENCY_DECLARED,
            Capability::TOKENS_ESTIMATED,
            Capability::BUDGET_TRIMMING,
            Capability::COMPLETENESS,
            Capability::NEXT_ACTIONS,
            Capability::CONTINUATIONS,
            Capability::TOON_OUTPUT,
            Capability::PROGRESS,
        ]
    );

    // Where an agent looks first: the `initialize` result, then every result's `_meta`.
    let (client, handler) = connect_in_memory(server.clone()).await;
    let info = client.peer_info().expect("initialized");
    let key = "rs.envelope/capabilities";
    assert_eq!(
        info.meta.as_ref().and_then(|meta| meta.get(key)),
        Some(&json!(advertised))
    );
    let mut params = CallToolRequestParams::new("workspace_stats");
    params.set_progress_token(ProgressToken(NumberOrString::Number(7)));
    let result = client.call_tool(params).await.expect("answers");
    assert_eq!(
        result.meta.as_ref().and_then(|meta| meta.get(key)),
        Some(&json!(advertised))
    );

    let listing = server.tools();
    for tag in &advertised {
        match tag.as_str() {
            "standardized_error_envelope" => {
                let failed = call(&server, "read_file", json!({"path": "nope"})).await;
                assert_eq!(failed["ok"], false);
                let error = &failed["error"];
                assert!(
                    serde_json::from_value::<envelope_core::Category>(error["category"].clone())
                        .is_ok(),
                    "{error}"
                );
                assert!(error["message"].is_string() && error["retryable"].is_boolean());
            }
            "canonical_verdicts" => {
                for (tool, arguments) in [
                    ("list_files", json!({})),
                    ("search_text", json!({"query": "absent-everywhere"})),
                    ("read_file", json!({"path": "nope"})),
                ] {
                    let verdict = call(&server, tool, arguments).await["verdict"].clone();
                    assert!(
                        serde_json::from_value::<envelope_core::Verdict>(verdict.clone()).is_ok(),
                        "{tool}: {verdict}"
                    );
                }
            }
            "request_ids" => {
                let envelope = call(&server, "list_files", json!({})).await;
                let id = envelope["meta"]["request_id"].as_str().expect("an id");
                assert!(RequestId::parse(id).is_ok(), "{id}");
            }
            "complexity_tier" | "idempotency_declared" => {
                for tool in listing {
                    // In full, `meta` carries the tier the listing declares.
                    let arguments = match tool.name.as_ref() {
                        "read_file" => json!({"path": "README.md", "response_mode": "full"}),
                        "search_text" => json!({"query": "needle", "response_mode": "full"}),
                        _ => json!({"response_mode": "full"}),
                    };
                    let envelope = call(&server, &tool.name, arguments).await;
                    let meta = tool.meta.as_ref().expect("listed meta");
                    assert_eq!(
                        Some(&envelope["meta"]["complexity_tier"]),
                        meta.get("rs.envelope/tier")
                    );
                    let declared = tool
                        .annotations
                        .as_ref()
                        .and_then(|hints| hints.idempotent_hint);
                    assert_eq!(
                        envelope["meta"]["idempotent"],
                        json!(declared.unwrap_or(false))
                    );
                }
            }
            "tokens_estimated" => {
                // Stamped under `response_mode: full`, of the bytes sent, itself included.
                let prepared = server
                    .call(
                        "search_text",
                        json!({"query": "needle", "response_mode": "full"}),
                    )
                    .await
                    .expect("a tool of this server");
                assert_eq!(
                    prepared.structured["meta"]["tokens_estimated"],
                    Estimator::default().estimate(&prepared.json)
                );
            }
            "budget_trimming" => {
                let envelope = call(&server, "read_file", json!({"path": "long.txt"})).await;
                assert_eq!(envelope["meta"]["truncated"], true);
                assert_eq!(
                    envelope["meta"]["truncated_string_fields"],
                    json!(["/content"])
                );
            }
            "completeness" => {
                let envelope = call(&server, "list_files", json!({"limit": 2})).await;
                let completeness: envelope_core::Completeness =
                    serde_json::from_value(envelope["completeness"].clone())
                        .expect("a completeness that keeps its invariants");
                assert_eq!(completeness.returned(), 2);
                assert_eq!(completeness.total(), Some(TEXT_FILES.len()));
            }
            "next_actions" => {
                let arguments = json!({"query": "need.*here", "path_glob": "*.md"});
                let envelope = call(&server, "search_text", arguments).await;
                let actions = envelope["next_actions"].as_array().expect("actions");
                assert!(!actions.is_empty());
                for action in actions {
                    let tool = action["tool"].as_str().expect("a tool");
                    assert!(listing.iter().any(|listed| listed.name == tool), "{action}");
                    let followed = call(&server, tool, action["arguments"].clone()).await;
                    assert_eq!(followed["ok"], true, "{followed:#}");
                }
            }
            "continuations" => {
                let token = first_token(&server).await;
                let page = next_page(&server, &token).await;
                assert_eq!(page["ok"], true, "{page:#}");
                assert_eq!(page["completeness"]["returned"], 2);
            }
            "toon_output" => {
                let prepared = server
                    .call("list_files", json!({"output_format": "toon"}))
                    .await
                    .expect("a tool of this server");
                let text = prepared.toon.as_deref().expect("rendered as TOON");
                assert!(serde_json::from_str::<Value>(text).is_err(), "{text}");
                assert!(text.contains("ok: true"), "{text}");
            }
            "progress" => {
                // The `workspace_stats` call above carried a progress token.
                assert!(!handler.wait_for_progress(1).await.is_empty());
            }
            other => panic!("`{other}` is advertised, but no probe here proves it"),
        }
    }
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_serves_the_tools_and_echoes_the_request_id() {
    let tree = Tree::new("http");
    let addr = serve_on_loopback(tree.server()).await;

    let (session, body) = initialize(addr).await;
    assert!(body.contains("workspace_server"), "{body}");
    // Served over HTTP, the server advertises that too, before any call.
    let capabilities = &sse_result(&body)["_meta"]["rs.envelope/capabilities"];
    assert!(
        capabilities
            .as_array()
            .is_some_and(|tags| tags.contains(&json!("streamable_http"))),
        "{body}"
    );
    initialized(addr, &session).await;

    let request_id = RequestId::new();
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {"limit": 1, "response_mode": "full"}}
    });
    let extra = format!("x-request-id: {request_id}\r\n");
    let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert_eq!(header(&head, "x-request-id"), Some(request_id.as_str()));
    let envelope = sse_result(&body)["structuredContent"].clone();
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    assert_eq!(envelope["data"]["files"], json!(["README.md"]));
    assert_eq!(envelope["meta"]["request_id"], request_id.as_str());
    assert!(
        envelope["meta"]["capabilities"]
            .as_array()
            .expect("capabilities")
            .contains(&json!("streamable_http"))
    );

    // A gateway's UUID is no ULID, but it is kept for log correlation: echoed, and stamped
    // beside the envelope's own ULID.
    let uuid = "6f1c2a8e-3b7d-4c55-9e0a-1d2f3a4b5c6d";
    let extra = format!("x-request-id: {uuid}\r\n");
    let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert_eq!(header(&head, "x-request-id"), Some(uuid));
    let result = sse_result(&body);
    let meta = &result["structuredContent"]["meta"];
    assert_eq!(meta["client_request_id"], uuid);
    let own = meta["request_id"].as_str().expect("a request id");
    assert!(RequestId::parse(own).is_ok(), "{meta}");
    assert_eq!(result["_meta"]["rs.envelope/client_request_id"], uuid);
    assert_eq!(result["_meta"]["rs.envelope/request_id"], own);

    // What is unsafe to log is replaced by a fresh ULID, which is echoed.
    for unsafe_id in ["tab\tinside", &"x".repeat(129)] {
        let extra = format!("x-request-id: {unsafe_id}\r\n");
        let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
            body.contains("structuredContent")
        })
        .await;
        let result = sse_result(&body);
        let meta = &result["structuredContent"]["meta"];
        assert!(meta.get("client_request_id").is_none(), "{meta}");
        assert_eq!(header(&head, "x-request-id"), meta["request_id"].as_str());
    }
}

// ---------------------------------------------------------------------------------------------
// Paging with sealed continuations
// ---------------------------------------------------------------------------------------------

/// Follows `completeness.continuation` from `first` until the last page; every page's rows
/// under `rows`, in order, and the last page's envelope.
async fn page_through(
    server: &EnvelopeServer,
    tool: &str,
    first: Value,
    rows: &str,
) -> (Vec<Value>, Value, usize) {
    let mut arguments = first;
    let mut all = Vec::new();
    let mut pages = 0;
    loop {
        let envelope = call(server, tool, arguments.clone()).await;
        assert_eq!(envelope["ok"], true, "{envelope:#}");
        pages += 1;
        all.extend(
            envelope["data"][rows]
                .as_array()
                .expect("a page of rows")
                .iter()
                .cloned(),
        );
        let Some(token) = envelope["completeness"]["continuation"].as_str() else {
            return (all, envelope, pages);
        };
        // The next-page action is the same call, taking `completeness.continuation`: the
        // token appears once in the answer.
        let action = &envelope["next_actions"][0];
        assert_eq!(action["id"], "next-page", "{envelope:#}");
        assert_eq!(action["tool"], tool);
        assert_eq!(action["continuation_arg"], "continuation", "{envelope:#}");
        assert_eq!(
            envelope.to_string().matches(token).count(),
            1,
            "{envelope:#}"
        );
        arguments = action["arguments"].clone();
        arguments["continuation"] = json!(token);
        assert!(pages < 100, "paging does not end");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_search_text_yields_exactly_the_rows_of_one_unlimited_call() {
    let tree = Tree::new("page-search");
    let server = tree.server();
    let unlimited = call(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 1_000}),
    )
    .await;
    let expected: Vec<Value> = unlimited["data"]["occurrences"]
        .as_array()
        .expect("rows")
        .to_vec();
    let expected = &expected;
    assert_eq!(expected.len(), 9);

    let (paged, last, pages) = page_through(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 2}),
        "occurrences",
    )
    .await;
    assert_eq!(
        &paged, expected,
        "same rows, same order, no gaps, no duplicates"
    );
    assert_eq!(pages, 5);
    assert_eq!(last["completeness"]["complete"], true, "{last:#}");
    assert_eq!(last["completeness"]["returned"], 1);
    assert!(last.get("next_actions").is_none(), "{last:#}");

    // A page size changed midway is honoured (AIP-158).
    let first = call(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 2}),
    )
    .await;
    let token = first["completeness"]["continuation"]
        .as_str()
        .expect("a token");
    let wider = call(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 5, "continuation": token}),
    )
    .await;
    let rows: Vec<Value> = wider["data"]["occurrences"]
        .as_array()
        .expect("rows")
        .to_vec();
    assert_eq!(rows.as_slice(), &expected[2..7]);
    // On a continued page, `total` still counts every row and `offset` says where the page
    // starts; so does the next step, and the first page's summary and advice are not
    // repeated.
    assert_eq!(wider["completeness"]["total"], 9);
    assert_eq!(wider["completeness"]["offset"], 2);
    let step = wider["next_step"].as_str().expect("a next step");
    assert_eq!(step, "showing 3–7 of 9 occurrences — follow `next-page`");
    assert!(wider.get("summary_line").is_none(), "{wider:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_list_files_yields_exactly_the_rows_of_one_unlimited_call() {
    let tree = Tree::new("page-list");
    let server = tree.server();
    let unlimited = call(&server, "list_files", json!({"limit": 1_000})).await;
    let expected = unlimited["data"]["files"].as_array().expect("rows");
    let (paged, last, _) = page_through(&server, "list_files", json!({"limit": 3}), "files").await;
    assert_eq!(&paged, expected);
    assert_eq!(last["completeness"]["complete"], true, "{last:#}");
}

/// The first page's token of a two-per-page `needle` search.
async fn first_token(server: &EnvelopeServer) -> String {
    let first = call(
        server,
        "search_text",
        json!({"query": "needle", "limit": 2}),
    )
    .await;
    first["completeness"]["continuation"]
        .as_str()
        .expect("a token")
        .to_owned()
}

/// The page after `token` of the two-per-page `needle` search.
async fn next_page(server: &EnvelopeServer, token: &str) -> Value {
    call(
        server,
        "search_text",
        json!({"query": "needle", "limit": 2, "continuation": token}),
    )
    .await
}

fn error_code(envelope: &Value) -> &str {
    let (category, _) = error_of(envelope);
    assert_eq!(category, "validation", "{envelope:#}");
    assert_eq!(envelope["error"]["retryable"], false, "{envelope:#}");
    envelope["error"]["code"].as_str().expect("a code")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replayed_tokens_are_scope_mismatches() {
    let tree = Tree::new("page-replay");
    let server = tree.server();
    let token = first_token(&server).await;

    let other_query = call(
        &server,
        "search_text",
        json!({"query": "Thing", "limit": 2, "continuation": token}),
    )
    .await;
    assert_eq!(error_code(&other_query), "CONTINUATION_SCOPE_MISMATCH");

    let other_tool = call(
        &server,
        "list_files",
        json!({"limit": 2, "continuation": token}),
    )
    .await;
    assert_eq!(error_code(&other_tool), "CONTINUATION_SCOPE_MISMATCH");

    // Another client: the same call, by principal `b` with a token minted for principal `a`.
    // Sessions do not matter: a new one (after a restart, on a replica) continues the page.
    let by = |principal: &str, session: &str, arguments: Value| {
        let ctx = ToolContext::new()
            .with_state(Arc::new(
                workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory"),
            ))
            .with_state(Arc::new(Continuations::new(test_key())))
            .with_session(session)
            .with_principal(principal);
        async move {
            serde_json::to_value(
                workspace_server::tools::search_text {}
                    .call(arguments, ctx)
                    .await
                    .envelope,
            )
            .expect("serializes")
        }
    };
    let minted = by("a", "s1", json!({"query": "needle", "limit": 2})).await;
    let token = minted["completeness"]["continuation"]
        .as_str()
        .expect("a token")
        .to_owned();
    let next = json!({"query": "needle", "limit": 2, "continuation": token});
    let same = by("a", "s2", next.clone()).await;
    assert_eq!(same["ok"], true, "{same:#}");
    let other = by("b", "s1", next).await;
    assert_eq!(error_code(&other), "CONTINUATION_SCOPE_MISMATCH");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_edit_that_keeps_size_and_time_is_not_seen_by_the_snapshot() {
    // The snapshot's documented limit (#12): it reads sizes and modification times, not
    // contents. FIXME: if the snapshot ever hashes contents, this continuation goes stale.
    let tree = Tree::new("page-same-size");
    let server = tree.server();
    let token = first_token(&server).await;
    let path = tree.root.join("notes/many.txt");
    let modified = std::fs::metadata(&path)
        .and_then(|metadata| metadata.modified())
        .expect("a modification time");
    let text = std::fs::read_to_string(&path).expect("readable");
    std::fs::write(&path, text.replace("needle", "NEEDLE")).expect("writable");
    std::fs::File::options()
        .write(true)
        .open(&path)
        .and_then(|file| file.set_modified(modified))
        .expect("the time is set back");
    let next = next_page(&server, &token).await;
    assert_eq!(next["ok"], true, "{next:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_changed_file_or_an_expired_token_is_stale() {
    let tree = Tree::new("page-stale");
    let server = tree.server();
    let token = first_token(&server).await;
    // A file in scope changes: its size and modification time move the snapshot.
    tree.write("notes/many.txt", "needle\n");
    let stale = next_page(&server, &token).await;
    assert_eq!(error_code(&stale), "STALE_CONTINUATION");
    assert!(stale["error"]["hint"].is_string(), "{stale:#}");

    // Expiry, on an injected clock.
    let now = Arc::new(Mutex::new(std::time::SystemTime::now()));
    let clock = Arc::clone(&now);
    let server = tree.server_with(
        Continuations::new(test_key())
            .with_ttl(Duration::from_secs(60))
            .with_clock(move || *clock.lock().expect("no poisoning")),
    );
    let token = first_token(&server).await;
    let next = json!({"query": "needle", "limit": 2, "continuation": token});
    assert_eq!(call(&server, "search_text", next.clone()).await["ok"], true);
    *now.lock().expect("no poisoning") += Duration::from_secs(61);
    let expired = call(&server, "search_text", next).await;
    assert_eq!(error_code(&expired), "STALE_CONTINUATION");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tokens_work_across_servers_sharing_the_key_and_nowhere_else() {
    let tree = Tree::new("page-shared");
    let token = first_token(&tree.server()).await;
    // A second server with the same key: a restart, or another replica.
    let again = next_page(&tree.server(), &token).await;
    assert_eq!(again["ok"], true, "{again:#}");
    let elsewhere = tree.server_with(Continuations::new(ContinuationKey::new(1, [9; 32])));
    let refused = next_page(&elsewhere, &token).await;
    assert_eq!(error_code(&refused), "INVALID_CONTINUATION");
    // Tampered text is refused as such.
    let mut tampered = token.clone().into_bytes();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == b'A' { b'B' } else { b'A' };
    let tampered = String::from_utf8(tampered).expect("ASCII");
    let refused = call(
        &tree.server(),
        "search_text",
        json!({"query": "needle", "limit": 2, "continuation": tampered}),
    )
    .await;
    assert_eq!(error_code(&refused), "INVALID_CONTINUATION");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_suggested_action_names_a_served_tool_with_valid_arguments() {
    let tree = Tree::new("actions");
    let server = tree.server();
    // Each tool's input schema and its validator. The schemas allow unknown keys (a tool only
    // warns about them), so suggested arguments are also checked against the declared ones.
    let inputs: std::collections::BTreeMap<String, (Value, jsonschema::Validator)> = server
        .tools()
        .iter()
        .map(|tool| {
            let schema = Value::Object((*tool.input_schema).clone());
            let validator = jsonschema::validator_for(&schema).expect("a valid schema");
            (tool.name.to_string(), (schema, validator))
        })
        .collect();
    let calls = [
        ("search_text", json!({"query": "needle", "limit": 2})),
        ("search_text", json!({"query": "need+le"})),
        (
            "search_text",
            json!({"query": "needle", "path_glob": "*.nothing"}),
        ),
        ("search_text", json!({"query": "absent-word"})),
        ("list_files", json!({"limit": 2})),
        ("list_files", json!({"glob": "*.nothing"})),
        ("read_file", json!({"path": "README.md"})),
        ("read_file", json!({"path": "missing.md"})),
        ("workspace_stats", json!({})),
        ("graph_export", json!({"max_nodes": 2})),
    ];
    let mut seen = 0;
    for (tool, arguments) in calls {
        let envelope = call(&server, tool, arguments).await;
        for action in envelope["next_actions"].as_array().into_iter().flatten() {
            let target = action["tool"].as_str().expect("a tool name");
            let (schema, input) = inputs
                .get(target)
                .unwrap_or_else(|| panic!("{tool} suggests `{target}`, which is not served"));
            assert!(
                input.is_valid(&action["arguments"]),
                "{tool} suggests {action:#}, which fails `{target}`'s input schema"
            );
            let declared = schema["properties"]
                .as_object()
                .expect("declared properties");
            for key in action["arguments"].as_object().expect("an object").keys() {
                assert!(
                    declared.contains_key(key),
                    "{tool} suggests `{key}`, which `{target}` does not declare"
                );
            }
            seen += 1;
        }
    }
    assert!(seen >= 4, "only {seen} actions were suggested");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refuses_oversized_requests_and_sessions_past_the_cap() {
    // Regression test for #12: request size and session count were bounded only by the client.
    let tree = Tree::new("http-limits");
    let workspace =
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory");
    let server = EnvelopeServer::new(
        envelope_core::toolset![workspace_server::tools::list_files],
        envelope_mcp::EnvelopeConfig::new("limits", "1")
            .with_state(Arc::new(workspace))
            .with_continuations(Continuations::new(test_key()))
            .with_max_request_bytes(2_048)
            .with_max_sessions(1)
            .with_call_timeout(Some(Duration::from_millis(100)))
            .with_session_idle_timeout(Duration::from_millis(500)),
    );
    let addr = serve_on_loopback(server).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "0"}
        }
    });

    // Too large, with a declared length and streamed in chunks: 413 either way.
    let mut big = initialize.clone();
    big["params"]["clientInfo"]["name"] = json!("x".repeat(4_000));
    let (head, _) = http_exchange(addr, post(addr, None, "", &big), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let body = big.to_string();
    let chunked = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
         {:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let (head, _) = http_exchange(addr, chunked, |_| true).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");

    // The first session opens; a second is refused while it lives; the first still works.
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let session = header(&head, "mcp-session-id")
        .expect("a session")
        .to_owned();
    let (head, _) = http_exchange(addr, post(addr, None, "", &initialize), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert_eq!(header(&head, "retry-after"), Some("30"));
    // What opens no session is not refused for the cap.
    let outside = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = http_exchange(addr, post(addr, None, "", &outside), |_| true).await;
    assert!(!head.starts_with("HTTP/1.1 503"), "{head}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = http_exchange(addr, post(addr, Some(&session), "", &initialized), |_| {
        false
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}}
    });
    let (head, body) = http_exchange(addr, post(addr, Some(&session), "", &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let envelope = &sse_result(&body)["structuredContent"];
    assert_eq!(envelope["ok"], true, "{envelope}");
    // Idle past its timeout (never shorter than the call timeout plus a second), the session
    // is closed and its slot freed: a new one opens, and the old one is gone (`404`, so its
    // client opens another).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let (head, _) = http_exchange(addr, post(addr, Some(&session), "", &call), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_body_that_is_no_message_gets_a_json_rpc_answer() {
    // Regression test for #12: rmcp answered these with a plain-text `415`.
    let tree = Tree::new("http-bodies");
    let addr = serve_on_loopback(tree.server()).await;
    let session = open_session(addr).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: [(&[u8], i64, Value); 7] = [
        (b"not json", envelope_mcp::PARSE_ERROR, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/li"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"x":NaN}"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"x":1e400}"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"x\":\"\xff\"}",
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (deep.as_bytes(), envelope_mcp::PARSE_ERROR, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":42}"#,
            envelope_mcp::INVALID_REQUEST,
            json!(7),
        ),
    ];
    for (body, code, id) in cases {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        let (head, answer) = http_exchange(addr, request, |body| body.contains('}')).await;
        assert!(head.starts_with("HTTP/1.1 400"), "{head}");
        let answer: Value = serde_json::from_str(&answer).expect("a JSON-RPC answer");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_size_above_rmcps_own_limit_is_honoured_over_http() {
    // Regression test for #12 (review): rmcp's own 4 MiB body limit answered first.
    let tree = Tree::new("http-large");
    let workspace =
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory");
    let server = EnvelopeServer::new(
        envelope_core::toolset![workspace_server::tools::list_files],
        envelope_mcp::EnvelopeConfig::new("large", "1")
            .with_state(Arc::new(workspace))
            .with_max_request_bytes(8 << 20),
    );
    let addr = serve_on_loopback(server).await;
    let mut initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "large-test", "version": "0"}
        }
    });
    initialize["params"]["clientInfo"]["title"] = json!("t".repeat(5 << 20));
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hits_target_ref_reads_around_it_until_the_file_changes() {
    let tree = Tree::new("target-ref");
    let server = tree.server();
    let search = json!({"query": "fn needle", "path_glob": "src/**"});
    let found = call(&server, "search_text", search.clone()).await;
    let hit = &found["data"]["occurrences"][0];
    assert_eq!(hit["path"], "src/a.rs", "{found:#}");
    // One ref for the page's hits; the hits themselves carry only their location.
    assert!(hit.get("target_ref").is_none(), "{found:#}");
    let target_ref = found["data"]["target_ref"]
        .as_str()
        .expect("a page with hits carries a ref");
    let at = |extra: Value| {
        let mut read = json!({"target_ref": target_ref, "path": hit["path"], "line": hit["line"]});
        if let (Some(read), Value::Object(extra)) = (read.as_object_mut(), extra) {
            read.extend(extra);
        }
        read
    };

    // Read by ref: the lines around the hit, from the hit's file.
    let read = at(json!({"context_lines": 1}));
    let around = call(&server, "read_file", read.clone()).await;
    assert_eq!(around["ok"], true, "{around:#}");
    assert_eq!(around["data"]["path"], "src/a.rs");
    assert_eq!(around["data"]["start_line"], 2);
    assert_eq!(around["data"]["end_line"], 3);
    assert!(
        around["data"]["content"]
            .as_str()
            .is_some_and(|text| text.contains("fn needle")),
        "{around:#}"
    );
    // Another server holding the key resolves it too: nothing is stored.
    let replica = tree.server();
    let elsewhere = call(&replica, "read_file", read.clone()).await;
    assert_eq!(elsewhere["data"], around["data"]);

    // A ref with a range, a ref without the hit's line, a tampered ref, and a ref of another
    // scope are refused by code.
    let both = at(json!({"start_line": 1}));
    let conflicting = call(&server, "read_file", both).await;
    assert_eq!(conflicting["error"]["code"], "CONFLICTING_TARGET_INPUT");
    let no_line = json!({"target_ref": target_ref, "path": "src/a.rs"});
    let no_line = call(&server, "read_file", no_line).await;
    assert_eq!(no_line["error"]["category"], "validation", "{no_line:#}");
    assert_eq!(no_line["error"]["data"]["field"], "line", "{no_line:#}");
    let mut bent = target_ref.to_owned();
    let middle = bent.len() / 2;
    let swap = if &bent[middle..=middle] == "A" {
        "B"
    } else {
        "A"
    };
    bent.replace_range(middle..=middle, swap);
    let mut tampered = read.clone();
    tampered["target_ref"] = json!(bent);
    let tampered = call(&server, "read_file", tampered).await;
    assert_eq!(
        tampered["error"]["code"], "INVALID_TARGET_REF",
        "{tampered:#}"
    );
    let other_tree = Tree::new("target-ref-other");
    let other = call(&other_tree.server(), "read_file", read.clone()).await;
    assert_eq!(other["error"]["code"], "TARGET_SCOPE_MISMATCH", "{other:#}");
    // A file the page has no hit in is not one the ref covers.
    let uncovered = at(json!({"path": "README.md"}));
    let uncovered = call(&server, "read_file", uncovered).await;
    assert_eq!(
        uncovered["error"]["code"], "STALE_TARGET_SNAPSHOT",
        "{uncovered:#}"
    );

    // The file changes: the ref is stale, and the answer offers the search again.
    std::thread::sleep(Duration::from_millis(20));
    tree.write("src/a.rs", "mod inner;\n\n// moved down\nfn needle() {}\n");
    let stale = call(&server, "read_file", read).await;
    assert_eq!(stale["error"]["code"], "STALE_TARGET_SNAPSHOT", "{stale:#}");
    let recover = &stale["next_actions"][0];
    assert_eq!(recover["tool"], "search_text", "{stale:#}");
    assert_eq!(recover["arguments"], search);

    // Following it gives a fresh ref to where the hit is now.
    let again = call(&server, "search_text", recover["arguments"].clone()).await;
    let fresh = &again["data"]["occurrences"][0];
    assert_eq!(fresh["line"], 4);
    let fresh_ref = again["data"]["target_ref"].clone();
    let reread = json!({"target_ref": fresh_ref, "path": fresh["path"], "line": fresh["line"], "context_lines": 0});
    let now = call(&server, "read_file", reread.clone()).await;
    assert_eq!(now["data"]["start_line"], 4, "{now:#}");
    assert_eq!(now["data"]["content"], "fn needle() {}\n");

    // A ref whose file is gone is not found.
    std::fs::remove_file(tree.root.join("src/a.rs")).expect("removable");
    let gone = call(&server, "read_file", reread).await;
    assert_eq!(gone["error"]["code"], "TARGET_NOT_FOUND", "{gone:#}");
    assert_eq!(gone["error"]["category"], "not_found");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_past_the_budget_ends_on_a_whole_line_and_offers_the_rest() {
    // Regression test for #14: the budget cut `content` a third of the way in while `end_line`
    // still named the last line, and nothing offered the rest.
    let tree = Tree::new("read-on");
    let text: String = (1..=3_000)
        .map(|n| format!("line {n:05} of a long file, with some words on it\n"))
        .collect();
    tree.write("long_lines.txt", &text);
    let server = tree.server();
    let first = call(&server, "read_file", json!({"path": "long_lines.txt"})).await;
    assert_eq!(first["ok"], true, "{first:#}");
    let data = &first["data"];
    let end = data["end_line"].as_u64().expect("an end line") as usize;
    assert!(end > 1 && end < 3_000, "{end}");
    let content = data["content"].as_str().expect("content");
    // The content is exactly the lines it says, whole, and nothing cut it further.
    assert_eq!(content.lines().count(), end);
    assert!(content.ends_with(&format!(
        "line {end:05} of a long file, with some words on it\n"
    )));
    assert!(
        first["meta"].get("truncated_string_fields").is_none(),
        "{first:#}"
    );
    // Regression test for #26: the cut is typed, so an agent branching on typed fields knows
    // it does not have the whole file: lines 1 to `end` of 3,000, ended by the budget.
    let completeness = &first["completeness"];
    assert_eq!(completeness["unit"], "line", "{first:#}");
    assert_eq!(completeness["returned"], end);
    assert_eq!(completeness["total"], 3_000);
    assert_eq!(completeness["complete"], false);
    assert_eq!(completeness["truncated"], true);
    assert_eq!(completeness["truncation_reasons"], json!(["budget_limit"]));
    // The rest is one action away, and following the actions reads the file whole.
    let mut read = content.to_owned();
    let mut next = first["next_actions"][0].clone();
    for _ in 0..100 {
        assert_eq!(next["id"], "read-on", "{next:#}");
        let page = call(&server, "read_file", next["arguments"].clone()).await;
        assert_eq!(page["ok"], true, "{page:#}");
        // A continued read says where it starts; the last one carries no completeness.
        if let Some(offset) = page["completeness"]["offset"].as_u64() {
            assert_eq!(
                offset,
                page["data"]["start_line"].as_u64().expect("start") - 1
            );
        }
        read.push_str(page["data"]["content"].as_str().expect("content"));
        match page["next_actions"]
            .as_array()
            .and_then(|actions| actions.first())
        {
            Some(action) => next = action.clone(),
            None => break,
        }
    }
    assert_eq!(read, text);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_example_shows_the_gate_strict_arguments_and_savings_on_the_wire() {
    let tree = Tree::new("whole-contract");
    // A module switched off answers `module_disabled`; the other tools still serve.
    let gated = workspace_server::server(
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory"),
        Continuations::new(test_key()),
        &["graph".to_owned()],
    );
    let graph = call(&gated, "graph_export", json!({})).await;
    assert_eq!(graph["error"]["category"], "module_disabled", "{graph:#}");
    let listed = call(&gated, "list_files", json!({})).await;
    assert_eq!(listed["ok"], true, "{listed:#}");

    // `list_files` takes no argument it does not know.
    let server = tree.server();
    let typo = call(&server, "list_files", json!({"globb": "*.rs"})).await;
    assert_eq!(typo["error"]["category"], "validation", "{typo:#}");
    let lenient = call(
        &server,
        "search_text",
        json!({"query": "needle", "globb": 1}),
    )
    .await;
    assert_eq!(lenient["ok"], true, "{lenient:#}");

    // `search_text` declares what a recursive grep would have cost; full meta shows savings.
    let full = json!({"query": "needle", "response_mode": "full"});
    let found = call(&server, "search_text", full).await;
    let meta = &found["meta"];
    assert_eq!(meta["baseline_method"], "grep_recursive", "{meta:#}");
    assert!(meta["tokens_saved"].is_i64(), "{meta:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_impact_grades_risk_from_the_import_graph() {
    let tree = Tree::new("impact");
    let server = tree.server();
    let impact = |path: &'static str| {
        let server = &server;
        async move { call(server, "change_impact", json!({ "path": path })).await }
    };
    // Nothing imports the crate root.
    let root = impact("src/lib.rs").await;
    assert_eq!(root["verdict"], "SAFE", "{root:#}");
    assert_eq!(root["data"]["transitive"], 0);
    // `src/b/mod.rs` is imported by `lib.rs` and `a.rs`, and `a/inner.rs` reaches it via `a`.
    let b = impact("src/b/mod.rs").await;
    assert_eq!(b["verdict"], "CAUTION", "{b:#}");
    assert_eq!(b["data"]["direct"], json!(["src/a.rs", "src/lib.rs"]));
    assert_eq!(b["data"]["transitive"], 3);
    // A hub many files import needs review, then blocks.
    for n in 0..5 {
        tree.write(&format!("app/user{n}.py"), "import util\n");
    }
    let hub = impact("app/util.py").await;
    assert_eq!(hub["verdict"], "REVIEW", "{hub:#}");
    for n in 5..12 {
        tree.write(&format!("app/user{n}.py"), "import util\n");
    }
    let hub = impact("app/util.py").await;
    assert_eq!(hub["verdict"], "UNSAFE", "{hub:#}");
    assert!(hub["data"]["transitive"].as_u64() >= Some(12), "{hub:#}");
    // Not a source file of the workspace.
    let readme = impact("README.md").await;
    assert_eq!(readme["error"]["category"], "not_found", "{readme:#}");
}

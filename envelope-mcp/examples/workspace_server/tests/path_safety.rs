//! Nothing outside the served root is read or listed: symlinks out of it, a directory swapped for
//! a symlink mid-walk, and special files, loops and overlong names, each named by its real cause.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use serde_json::json;

use common::calls::{call, error_of};
use common::tree::{TEXT_FILES, Tree};

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

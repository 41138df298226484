//! `read_file`: whole lines by path or around a search hit's `target_ref`, trimmed to the budget
//! on a whole line with the rest one action away.

mod common;

use std::time::Duration;

use serde_json::{Value, json};

use common::calls::{call, error_of};
use common::tree::Tree;

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
    // A file the page has no hit in is not one the ref covers: said as such (nothing
    // changed, so no search is offered again), whether the file exists or not.
    for path in ["README.md", "src/never.rs"] {
        let uncovered = call(&server, "read_file", at(json!({"path": path}))).await;
        assert_eq!(
            uncovered["error"]["code"], "TARGET_NOT_IN_REF",
            "{uncovered:#}"
        );
        assert_eq!(uncovered["error"]["category"], "validation");
        assert!(uncovered.get("next_actions").is_none(), "{uncovered:#}");
    }

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
    // "run the search again", as its hint says, is offered as the call to make.
    let again = &gone["next_actions"][0];
    assert_eq!(again["tool"], "search_text", "{gone:#}");
    assert_eq!(again["arguments"], search);
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
async fn the_refs_of_two_pages_joined_reach_the_rows_of_both() {
    let tree = Tree::new("joined-ref");
    tree.write("src/one.rs", "fn joined_needle() {}\n");
    tree.write("src/two.rs", "\nfn joined_needle() {}\n");
    let server = tree.server();
    let first = call(
        &server,
        "search_text",
        json!({"query": "joined_needle", "limit": 1}),
    )
    .await;
    let next = first["next_actions"]
        .as_array()
        .and_then(|actions| actions.iter().find(|a| a["id"] == "next-page"))
        .unwrap_or_else(|| panic!("a first page of one offers the next: {first:#}"));
    let second = call(&server, "search_text", next["arguments"].clone()).await;
    let rows = |page: &Value| page["data"]["occurrences"][0].clone();
    let refs = |page: &Value| {
        page["data"]["target_ref"]
            .as_str()
            .expect("a ref")
            .to_owned()
    };
    let (row_one, row_two) = (rows(&first), rows(&second));
    assert_ne!(row_one["path"], row_two["path"], "{first:#} {second:#}");
    let read = |target_ref: &str, row: &Value| json!({"target_ref": target_ref, "path": row["path"], "line": row["line"], "context_lines": 0});

    // The first page's ref does not hold the second page's row: said as such, not as a change.
    let wrong = call(&server, "read_file", read(&refs(&first), &row_two)).await;
    assert_eq!(wrong["error"]["code"], "TARGET_NOT_IN_REF", "{wrong:#}");

    // Joined, the two pages' refs are one ref to both rows, copied as given.
    let joined = format!("{}.{}", refs(&first), refs(&second));
    for row in [&row_one, &row_two] {
        let answer = call(&server, "read_file", read(&joined, row)).await;
        assert_eq!(answer["ok"], true, "{answer:#}");
        assert_eq!(answer["data"]["path"], row["path"]);
        assert_eq!(answer["data"]["content"], "fn joined_needle() {}\n");
    }
}

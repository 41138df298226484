//! `search_text`: every match counted, filtered by glob or read as a regex, empty answers that
//! say why, arguments refused by field, and work bounded by what can be sent.

mod common;

use serde_json::{Value, json};

use common::calls::{call, error_of};
use common::pages::{page_through, token_of};
use common::tree::Tree;

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
    assert!(token_of(&first).is_some(), "{:#}", first["completeness"]);
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
    let token = token_of(&page).expect("a token");
    let next = call(
        &server,
        "search_text",
        json!({"query": "ab", "path_glob": "wide/*", "limit": 5, "continuation": token}),
    )
    .await;
    assert_eq!(next["data"]["occurrences"][0]["column"], 11, "{next:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_compact_form_shows_long_lines_in_part_and_says_so() {
    // Regression test for #36: compact forms shorten rows only as a declared cut.
    let tree = Tree::new("search-compact");
    let server = tree.server();
    let long = format!("{}needle{}", "a".repeat(70), "b".repeat(70));
    tree.write(
        "compact/long.txt",
        &format!("{long}\nshort needle\n{long}\n"),
    );
    let asked = json!({"query": "needle", "path_glob": "compact/*", "limit": 2});
    for form in [
        json!({"compact_only": true}),
        json!({"output_format": "toon"}),
    ] {
        let mut arguments = asked.clone();
        if let (Some(arguments), Value::Object(form)) = (arguments.as_object_mut(), form.clone()) {
            arguments.extend(form);
        }
        let page = call(&server, "search_text", arguments).await;
        assert_eq!(
            page["completeness"]["shortened"],
            json!(["text"]),
            "{form}: {page:#}"
        );
        let rows = page["data"]["occurrences"].as_array().expect("rows");
        assert_eq!(rows.len(), 2, "every row is here");
        let cut = rows[0]["text"].as_str().expect("text");
        assert!(
            cut.contains("needle") && cut.starts_with('…') && cut.ends_with('…'),
            "{cut}"
        );
        assert_eq!(cut.chars().count(), 48 + 2, "{cut}");
        assert_eq!(rows[1]["text"], "short needle", "a short line stays whole");
        // The page whole is one action away, called exactly as given: the same call without
        // the compact form.
        let whole = page["next_actions"]
            .as_array()
            .and_then(|actions| actions.iter().find(|action| action["id"] == "full-rows"))
            .expect("a full-rows action");
        assert_eq!(whole["arguments"], asked, "{form}");
        let full = call(&server, "search_text", whole["arguments"].clone()).await;
        assert!(full["completeness"].get("shortened").is_none(), "{full:#}");
        assert_eq!(full["data"]["occurrences"][0]["text"], long.as_str());
        assert_eq!(full["data"]["occurrences"][1], rows[1]);
    }
    // The default answer cuts nothing and offers no such action.
    let page = call(&server, "search_text", asked).await;
    assert!(page["completeness"].get("shortened").is_none(), "{page:#}");
    let ids: Vec<&Value> = page["next_actions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|action| &action["id"])
        .collect();
    assert_eq!(ids, [&json!("next-page")], "{page:#}");
}

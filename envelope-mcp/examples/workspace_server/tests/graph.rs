//! The import graph: `graph_export` resolving Rust, Python and TypeScript references, and
//! `change_impact` grading risk from it.

mod common;

use std::time::Duration;

use serde_json::{Value, json};

use common::calls::{call, error_of};
use common::tree::Tree;

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

//! `list_files` and `workspace_stats`, the tools that walk the tree: what a walk finds and counts,
//! the progress it reports, how a cancelled walk stops, and that without a workspace there is
//! nothing to walk.

mod common;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use envelope_core::{Tool, ToolContext};
use rmcp::model::{CallToolRequestParams, NumberOrString, ProgressToken, RequestParamsMeta};
use serde_json::json;

use common::calls::{call, error_of};
use common::rmcp_client::connect_in_memory;
use common::tree::{TEXT_FILES, Tree};

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

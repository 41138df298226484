//! The client against the example server, as an agent would use it: `search_text` paged to
//! the end matches one unlimited call, and a read through a stale target ref re-resolves by
//! the search the server offers.

use std::time::Duration;

use envelope_client::{Client, PageLimits, PagesEnd};
use rmcp::ServiceExt as _;
use serde_json::{Value, json};

#[path = "../../envelope-mcp/examples/workspace_server/tests/common/tree.rs"]
#[allow(dead_code)]
mod tree;

use tree::Tree;

async fn connect(tree: &Tree) -> Client {
    let server = tree.server();
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let service = ().serve(client_io).await.expect("connects");
    Client::new(service).await.expect("lists the tools")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paging_search_text_to_the_end_matches_one_big_page() {
    let tree = Tree::new("client-pages");
    let client = connect(&tree).await;
    assert!(client.is_idempotent("search_text"));
    let whole = client
        .call::<Value>("search_text", json!({"query": "needle", "limit": 1_000}))
        .await
        .expect("answers");
    let expected = whole.data().expect("ok")["occurrences"]
        .as_array()
        .expect("rows")
        .clone();
    assert!(expected.len() > 4, "{expected:?}");
    let total = whole.completeness().and_then(|c| c.total());

    let mut pages = client.pages::<Value>(
        "search_text",
        json!({"query": "needle", "limit": 2}),
        PageLimits::to_the_end(),
    );
    let mut paged = Vec::new();
    while let Some(page) = pages.next().await {
        let page = page.expect("a page");
        assert!(page.is_ok(), "{page:?}");
        paged.extend(
            page.data().expect("ok")["occurrences"]
                .as_array()
                .expect("rows")
                .clone(),
        );
    }
    assert_eq!(pages.end(), Some(PagesEnd::Last));
    assert_eq!(paged, expected);
    assert_eq!(pages.total(), total);
    assert_eq!(pages.rows(), expected.len());
    assert_eq!(pages.pages(), expected.len().div_ceil(2));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_through_a_stale_ref_runs_the_search_again() {
    let tree = Tree::new("client-read");
    let client = connect(&tree).await;
    let search = json!({"query": "fn needle"});
    let found = client
        .call_once::<Value>("search_text", search)
        .await
        .expect("answers");
    let data = found.data().expect("ok");
    let hit = &data["occurrences"][0];
    assert_eq!(hit["path"], "src/a.rs", "{data:#}");
    let read = json!({
        "target_ref": data["target_ref"], "path": hit["path"], "line": hit["line"],
        "context_lines": 0,
    });
    let fresh = client
        .read::<Value>("read_file", read.clone())
        .await
        .expect("reads");
    assert_eq!(fresh.data().expect("ok")["content"], "fn needle() {}\n");

    // The file changes after the search: the ref is stale. The hit stays where it was.
    std::thread::sleep(Duration::from_millis(20));
    tree.write(
        "src/a.rs",
        "mod inner;\nuse crate::b::{Thing, helper};\nfn needle() {}\n// changed\n",
    );
    let stale = client
        .call_once::<Value>("read_file", read.clone())
        .await
        .expect("reads");
    assert_eq!(
        stale.error().and_then(|error| error.code()),
        Some("STALE_TARGET_SNAPSHOT")
    );
    let reread = client
        .read::<Value>("read_file", read.clone())
        .await
        .expect("re-resolved by the search again");
    assert!(reread.is_ok(), "{reread:?}");
    assert_eq!(reread.data().expect("ok")["content"], "fn needle() {}\n");

    // The hit moves two lines down: the stale ref is re-resolved and the read follows the hit
    // to where the fresh search has it, by the arguments the read and the rows share.
    std::thread::sleep(Duration::from_millis(20));
    tree.write(
        "src/a.rs",
        "mod inner;\nuse crate::b::{Thing, helper};\n\n// moved\nfn needle() {}\n",
    );
    let moved = client
        .read::<Value>("read_file", read)
        .await
        .expect("re-resolved and relocated");
    let moved = moved.data().expect("ok");
    assert_eq!(moved["start_line"], 5, "{moved:#}");
    assert_eq!(moved["content"], "fn needle() {}\n");
}

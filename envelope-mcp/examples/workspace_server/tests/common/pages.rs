//! Following sealed continuations page by page, as an agent would.

use envelope_mcp::EnvelopeServer;
use serde_json::{Value, json};

use super::calls::call;

/// Follows the `next-page` action from `first`, calling it exactly as given, until the last
/// page; every page's rows under `rows`, in order, and the last page's envelope.
pub(crate) async fn page_through(
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
        let Some(token) = token_of(&envelope) else {
            return (all, envelope, pages);
        };
        // The next-page action is the same call with the token in its arguments: the token
        // appears once in the answer, where a model copies it, and nowhere else.
        let action = &envelope["next_actions"][0];
        assert_eq!(action["id"], "next-page", "{envelope:#}");
        assert_eq!(action["tool"], tool);
        assert!(
            envelope["completeness"].get("continuation").is_none(),
            "{envelope:#}"
        );
        assert_eq!(
            envelope.to_string().matches(token).count(),
            1,
            "{envelope:#}"
        );
        arguments = action["arguments"].clone();
        assert!(pages < 100, "paging does not end");
    }
}

/// The token of an answer's `next-page` action: its `continuation` argument.
pub(crate) fn token_of(envelope: &Value) -> Option<&str> {
    envelope["next_actions"]
        .as_array()?
        .iter()
        .find(|action| action["id"] == "next-page")?["arguments"]["continuation"]
        .as_str()
}

/// The first page's token of a two-per-page `needle` search.
pub(crate) async fn first_token(server: &EnvelopeServer) -> String {
    let first = call(
        server,
        "search_text",
        json!({"query": "needle", "limit": 2}),
    )
    .await;
    token_of(&first).expect("a token").to_owned()
}

/// The page after `token` of the two-per-page `needle` search.
pub(crate) async fn next_page(server: &EnvelopeServer, token: &str) -> Value {
    call(
        server,
        "search_text",
        json!({"query": "needle", "limit": 2, "continuation": token}),
    )
    .await
}

//! The notes server over newline-delimited JSON-RPC on an in-memory pipe, driven the way an MCP
//! client drives it.

mod common;

use common::LineClient;
use envelope_core::serde_json::json;
use envelope_mcp::tokio;

#[tokio::test(crate = "envelope_mcp::tokio")]
async fn the_downstream_server_answers_and_pages() {
    let notes: Vec<String> = (1..=5).map(|n| format!("note {n}")).collect();
    let server = envelope_downstream::server(notes.clone(), [9; 32]);
    let (client, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(server.serve_lines(server_read, server_write));
    let mut client = LineClient::new(client);
    let info = client.initialize().await;
    assert_eq!(info["serverInfo"]["name"], "notes");

    let counted = client.call("count_notes", json!({})).await;
    assert_eq!(
        counted["structuredContent"]["data"]["notes"], 5,
        "{counted}"
    );

    // Two per page: three pages, every note once, in order, each page true to the contract:
    // `total` counts every note on every page, `offset` is where the page starts, and the
    // next-page action, called exactly as given, is the next page.
    let mut seen = Vec::new();
    let mut arguments = json!({"limit": 2});
    for page_number in 0..3 {
        let page = client.call("list_notes", arguments.clone()).await;
        let envelope = &page["structuredContent"];
        assert_eq!(envelope["ok"], true, "{envelope}");
        let completeness = &envelope["completeness"];
        assert_eq!(completeness["total"], notes.len(), "{envelope}");
        let offset = completeness["offset"].as_u64().unwrap_or(0);
        assert_eq!(offset, seen.len() as u64, "{envelope}");
        let rows = envelope["data"]["notes"].as_array().expect("notes");
        assert_eq!(completeness["returned"], rows.len(), "{envelope}");
        for note in rows {
            seen.push(note.as_str().expect("text").to_owned());
        }
        // The next page is the `next-page` action, called exactly as given.
        let Some(next) = envelope.get("next_actions").map(|actions| &actions[0]) else {
            assert_eq!(page_number, 2, "only the last page ends: {envelope}");
            assert_eq!(completeness["complete"], true, "{envelope}");
            break;
        };
        assert_eq!(completeness["complete"], false, "{envelope}");
        assert!(completeness.get("continuation").is_none(), "{envelope}");
        assert_eq!(next["id"], "next-page", "{envelope}");
        assert!(next["arguments"]["continuation"].is_string(), "{envelope}");
        arguments = next["arguments"].clone();
    }
    assert_eq!(seen, notes);
    serving.abort();
}

//! The notes server over newline-delimited JSON-RPC on an in-memory pipe, driven the way an MCP
//! client drives it.

use envelope_core::serde_json::{Value, json};
use envelope_mcp::tokio;
use envelope_mcp::tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

#[tokio::test(crate = "envelope_mcp::tokio")]
async fn the_downstream_server_answers_and_pages() {
    let notes: Vec<String> = (1..=5).map(|n| format!("note {n}")).collect();
    let server = envelope_downstream::server(notes.clone(), [9; 32]);
    let (client, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(server.serve_lines(server_read, server_write));
    let (client_read, mut client_write) = tokio::io::split(client);
    let mut answers = BufReader::new(client_read).lines();
    let mut next_id = 0;
    let mut request = async |method: &str, params: Value| -> Value {
        next_id += 1;
        let line = json!({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params});
        client_write
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("written");
        if method == "initialize" {
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            client_write
                .write_all(format!("{initialized}\n").as_bytes())
                .await
                .expect("written");
        }
        let answer = answers
            .next_line()
            .await
            .expect("reads")
            .expect("an answer");
        let answer: Value = envelope_core::serde_json::from_str(&answer).expect("JSON");
        assert_eq!(answer["id"], next_id, "{answer}");
        answer["result"].clone()
    };

    let info = request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {},
               "clientInfo": {"name": "downstream", "version": "0"}}),
    )
    .await;
    assert_eq!(info["serverInfo"]["name"], "notes");

    let counted = request(
        "tools/call",
        json!({"name": "count_notes", "arguments": {}}),
    )
    .await;
    assert_eq!(
        counted["structuredContent"]["data"]["notes"], 5,
        "{counted}"
    );

    // Two per page: three pages, every note once, in order, each page true to the contract:
    // `total` counts every note on every page, `offset` is where the page starts, and the
    // next-page action takes `completeness.continuation`.
    let mut seen = Vec::new();
    let mut arguments = json!({"limit": 2});
    for page_number in 0..3 {
        let page = request(
            "tools/call",
            json!({"name": "list_notes", "arguments": arguments}),
        )
        .await;
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
        let Some(token) = completeness["continuation"].as_str() else {
            assert_eq!(page_number, 2, "only the last page ends: {envelope}");
            assert_eq!(completeness["complete"], true, "{envelope}");
            assert!(envelope.get("next_actions").is_none(), "{envelope}");
            break;
        };
        assert_eq!(completeness["complete"], false, "{envelope}");
        let next = &envelope["next_actions"][0];
        assert_eq!(next["id"], "next-page", "{envelope}");
        assert_eq!(next["continuation_arg"], "continuation", "{envelope}");
        let mut follow = next["arguments"].clone();
        follow["continuation"] = json!(token);
        arguments = follow;
    }
    assert_eq!(seen, notes);
    serving.abort();
}

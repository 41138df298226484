//! envelope tools beside an rmcp server's own, both ways round, driven as an MCP client drives
//! them: each tool answers as it always did.

mod common;

use common::LineClient;
use envelope_core::serde_json::{Value, json};
use envelope_downstream::compose::{Host, with_prompts};
use envelope_mcp::rmcp::ServiceExt;
use envelope_mcp::tokio;

fn notes() -> Vec<String> {
    (1..=3).map(|n| format!("note {n}")).collect()
}

fn names(listing: &Value) -> Vec<&str> {
    listing["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|tool| tool["name"].as_str())
        .collect()
}

#[tokio::test(crate = "envelope_mcp::tokio")]
async fn an_envelope_server_hands_prompts_to_the_rmcp_handler_it_composes() {
    let server = with_prompts(notes(), [3; 32]);
    let (client, server_io) = tokio::io::duplex(1 << 16);
    let (read, write) = tokio::io::split(server_io);
    let serving = tokio::spawn(server.serve_lines(read, write));
    let mut client = LineClient::new(client);

    let info = client.initialize().await;
    let capabilities = &info["capabilities"];
    // The handler's prompts, merged with the toolset's tools and logging.
    assert!(capabilities["prompts"].is_object(), "{info}");
    assert!(capabilities["tools"].is_object(), "{info}");
    assert!(capabilities["logging"].is_object(), "{info}");

    let prompts = client.request("prompts/list", json!({})).await;
    assert_eq!(prompts["prompts"][0]["name"], "summarize", "{prompts}");
    let prompt = client
        .request(
            "prompts/get",
            json!({"name": "summarize", "arguments": {"topic": "paging"}}),
        )
        .await;
    assert_eq!(
        prompt["messages"][0]["content"]["text"], "Summarize the notes about paging.",
        "{prompt}"
    );

    // The tools still answer with their envelope.
    let counted = client.call("count_notes", json!({})).await;
    assert_eq!(
        counted["structuredContent"]["data"]["notes"], 3,
        "{counted}"
    );
    assert_eq!(counted["isError"], false, "{counted}");

    // What neither serves is still refused, by rmcp's own answer.
    let resources = client.request("resources/list", json!({})).await;
    assert_eq!(resources["error"]["code"], -32601, "{resources}");
    serving.abort();
}

#[tokio::test(crate = "envelope_mcp::tokio")]
async fn a_tool_router_mounts_the_toolset_beside_its_own_tools() {
    let envelope = envelope_downstream::server(notes(), [4; 32]);
    let host = Host::new(&envelope);
    let (client, server_io) = tokio::io::duplex(1 << 16);
    let serving = tokio::spawn(async move {
        let running = host
            .serve(tokio::io::split(server_io))
            .await
            .map_err(|error| error.to_string())?;
        running
            .waiting()
            .await
            .map(drop)
            .map_err(|error| error.to_string())
    });
    let mut client = LineClient::new(client);
    client.initialize().await;

    let listing = client.request("tools/list", json!({})).await;
    assert_eq!(
        names(&listing),
        ["count_notes", "list_notes", "ping"],
        "{listing}"
    );
    // The envelope tools are listed as their own server lists them, output schema and all.
    let listed = &listing["tools"][0];
    assert_eq!(
        listed["inputSchema"],
        json!(envelope.tools()[0].input_schema.as_ref())
    );

    let pong = client.call("ping", json!({})).await;
    assert_eq!(pong["content"][0]["text"], "pong", "{pong}");

    let page = client.call("list_notes", json!({"limit": 2})).await;
    let envelope = &page["structuredContent"];
    assert_eq!(envelope["ok"], true, "{page}");
    assert_eq!(
        envelope["data"]["notes"],
        json!(["note 1", "note 2"]),
        "{page}"
    );
    assert_eq!(envelope["completeness"]["total"], 3, "{page}");
    assert!(envelope["meta"]["request_id"].is_string(), "{page}");
    // The text mirror is the envelope, as from an envelope server.
    let mirror: Value =
        envelope_core::serde_json::from_str(page["content"][0]["text"].as_str().expect("text"))
            .expect("the mirror is JSON");
    assert_eq!(&mirror, envelope);
    serving.abort();
}

//! Media beside the envelope, over MCP to rmcp's own client: the envelope stays
//! `structuredContent` and the first text block, the media follow as image, audio,
//! resource-link and embedded-resource blocks, `meta.attachments` says what each was, and a
//! response over its budget links or drops media, saying so, instead of sending them whole.

mod common;

use common::rmcp_client::connect_in_memory;
use envelope_core::{Attachment, Reply, ToolResult, tool, toolset};
use envelope_mcp::{BudgetPolicy, EnvelopeConfig, EnvelopeServer};
use rmcp::model::CallToolRequestParams;
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RenderArgs {
    /// How many bytes the screenshot has.
    bytes: usize,
}

/// Renders a page: a screenshot, its sound, the log embedded and the report linked.
#[tool(tier = lite, read_only)]
async fn render(args: RenderArgs) -> ToolResult<Reply<Value>> {
    Ok(Reply::new(json!({ "rendered": true }))
        .attach(Attachment::image(&vec![7; args.bytes], "image/png"))
        .attach(Attachment::audio(&[1, 2, 3, 4], "audio/wav"))
        .attach(Attachment::text_resource(
            "file:///srv/logs/render.log",
            "text/plain",
            "x".repeat(args.bytes),
        ))
        .attach(
            Attachment::link("file:///srv/report.pdf", "report.pdf")
                .with_mime_type("application/pdf")
                .with_size(52_000),
        ))
}

fn server(budget: Option<usize>) -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![render],
        EnvelopeConfig::new("media", "0.0.0")
            .with_budget(BudgetPolicy::default().with_agent_chars(budget)),
    )
}

/// The result as the client got it: every block, as JSON.
async fn render_with(budget: Option<usize>, bytes: usize) -> Value {
    let (client, _) = connect_in_memory(server(budget)).await;
    let mut request = CallToolRequestParams::new("render");
    request.arguments = json!({ "bytes": bytes }).as_object().cloned();
    let result = client.call_tool(request).await.expect("a result");
    serde_json::to_value(result).expect("serializes")
}

fn block_types(result: &Value) -> Vec<&str> {
    result["content"]
        .as_array()
        .expect("content")
        .iter()
        .filter_map(|block| block["type"].as_str())
        .collect()
}

fn deliveries(envelope: &Value) -> Vec<(&str, &str)> {
    envelope["meta"]["attachments"]
        .as_array()
        .expect("attachments noted")
        .iter()
        .map(|note| {
            (
                note["kind"].as_str().unwrap_or_default(),
                note["delivery"].as_str().unwrap_or_default(),
            )
        })
        .collect()
}

#[tokio::test]
async fn media_follow_the_text_mirror_each_noted_in_meta() {
    let result = render_with(None, 100).await;
    assert_eq!(
        block_types(&result),
        ["text", "image", "audio", "resource", "resource_link"],
        "{result}"
    );
    let envelope = &result["structuredContent"];
    // The text mirror is the envelope, notes and all.
    let mirror: Value =
        serde_json::from_str(result["content"][0]["text"].as_str().expect("text")).expect("JSON");
    assert_eq!(&mirror, envelope);
    assert_eq!(
        deliveries(envelope),
        [
            ("image", "sent"),
            ("audio", "sent"),
            ("resource", "sent"),
            ("resource_link", "sent")
        ]
    );
    let notes = &envelope["meta"]["attachments"];
    assert_eq!(
        notes[0],
        json!({ "kind": "image", "mime_type": "image/png", "bytes": 100, "delivery": "sent" })
    );
    assert_eq!(notes[2]["uri"], "file:///srv/logs/render.log");
    assert_eq!(notes[3]["bytes"], 52_000);
    let image = &result["content"][1];
    assert_eq!(image["mimeType"], "image/png");
    assert_eq!(
        image["data"].as_str().map(str::len),
        Some(136),
        "100 bytes in base64"
    );
    assert_eq!(
        result["content"][3]["resource"]["text"]
            .as_str()
            .map(str::len),
        Some(100)
    );
}

#[tokio::test]
async fn over_budget_a_resource_is_linked_and_an_image_dropped() {
    let budget = 4_000;
    let result = render_with(Some(budget), 20_000).await;
    let envelope = &result["structuredContent"];
    assert_eq!(envelope["ok"], true, "{result}");
    assert_eq!(
        deliveries(envelope),
        [
            ("image", "dropped"),
            ("audio", "sent"),
            ("resource", "linked"),
            ("resource_link", "sent")
        ],
        "{envelope}"
    );
    // The dropped image is not sent; the log goes as a link to itself, with its size.
    assert_eq!(
        block_types(&result),
        ["text", "audio", "resource_link", "resource_link"]
    );
    let linked = &result["content"][2];
    assert_eq!(linked["uri"], "file:///srv/logs/render.log");
    assert_eq!(linked["size"], 20_000);
    // The note keeps what the agent would fetch: its kind, type and size.
    assert_eq!(envelope["meta"]["attachments"][0]["bytes"], 20_000);
    // The whole response stays near its budget: the envelope and the media sent together.
    let sent: usize = result["content"]
        .as_array()
        .expect("content")
        .iter()
        .map(|block| serde_json::to_string(block).map_or(0, |json| json.len()))
        .sum();
    assert!(
        sent <= budget,
        "{sent} characters sent for a budget of {budget}"
    );
}

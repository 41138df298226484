//! The suite's fixture tools, written as envelope tools: each answers an envelope (its JSON text
//! mirror is `content[0]`, the envelope itself `structuredContent`), and the media a check looks
//! for travel as attachments, the content blocks after the mirror. The suite finds what it
//! checks with `content.find(...)`, so the leading mirror is no obstacle.
//!
//! What the tools ask of the client (logging, progress, sampling, elicitation) goes through the
//! [`ToolContext`]'s client channel, as any envelope tool's would.

use std::borrow::Cow;
use std::time::Duration;

use envelope_core::{
    Attachment, Elicited, LogLevel, Reply, SamplingRequest, ToolContext, ToolError, ToolResult,
    Toolset, tool, toolset,
};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::fixtures::{PNG_BASE64, WAV_BASE64};

/// Every fixture tool, in one toolset (MCP lists them sorted by name).
pub(crate) fn toolset() -> Toolset {
    toolset![
        test_simple_text,
        test_image_content,
        test_audio_content,
        test_embedded_resource,
        test_multiple_content_types,
        test_tool_with_logging,
        test_tool_with_progress,
        test_error_handling,
        test_sampling,
        test_elicitation,
        test_elicitation_sep1034_defaults,
        test_elicitation_sep1330_enums,
        test_reconnection,
        json_schema_2020_12_tool,
        test_logging_tool,
        test_custom_header,
        crate::paged::envelope_count,
    ]
}

/// What a fixture tool says: one line of text.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Said {
    /// The line.
    text: String,
}

impl Said {
    fn new(text: impl Into<String>) -> Self {
        Said { text: text.into() }
    }
}

/// Answers a line of text.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_simple_text() -> ToolResult<Said> {
    Ok(Said::new("This is a simple text response for testing."))
}

/// Answers an image: a 1×1 PNG, attached as an `image` content block.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_image_content() -> ToolResult<Reply<Said>> {
    Ok(Reply::new(Said::new("An image is attached."))
        .attach(Attachment::image_base64(PNG_BASE64, "image/png")))
}

/// Answers a sound: an empty WAV file, attached as an `audio` content block.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_audio_content() -> ToolResult<Reply<Said>> {
    Ok(Reply::new(Said::new("A sound is attached."))
        .attach(Attachment::audio_base64(WAV_BASE64, "audio/wav")))
}

/// Answers a text resource, embedded whole as a `resource` content block.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_embedded_resource() -> ToolResult<Reply<Said>> {
    Ok(
        Reply::new(Said::new("A resource is embedded.")).attach(Attachment::text_resource(
            "test://embedded-resource",
            "text/plain",
            "This is an embedded resource content.",
        )),
    )
}

/// Answers text, an image and an embedded JSON resource together.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_multiple_content_types() -> ToolResult<Reply<Said>> {
    Ok(Reply::new(Said::new("Multiple content types test:"))
        .attach(Attachment::image_base64(PNG_BASE64, "image/png"))
        .attach(Attachment::text_resource(
            "test://mixed-content-resource",
            "application/json",
            r#"{"test":"data","value":123}"#,
        )))
}

/// Logs three messages at `info` while it runs, then answers.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_tool_with_logging(ctx: &ToolContext) -> ToolResult<Said> {
    // Spaced out, as a tool doing work would log: the client counts the messages it receives.
    for message in [
        "Tool execution started",
        "Tool processing data",
        "Tool execution completed",
    ] {
        ctx.log(LogLevel::Info, message);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Said::new("Logging test completed."))
}

/// Reports progress at 0, 50 and 100 of 100, then answers.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_tool_with_progress(ctx: &ToolContext) -> ToolResult<Said> {
    for progress in [0.0, 50.0, 100.0] {
        ctx.report_progress(progress, Some(100.0), Some("working"));
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok(Said::new("Progress test completed."))
}

/// Always fails: its answer is an error envelope (`isError: true`).
#[tool(tier = lite, read_only)]
pub(crate) async fn test_error_handling() -> ToolResult<Said> {
    Err(
        ToolError::internal("This tool intentionally returns an error for testing")
            .with_code("intentional_error"),
    )
}

/// The arguments of `test_sampling`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SamplingArgs {
    /// What to ask the client's model.
    prompt: String,
}

/// What the client's model answered.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct ModelAnswer {
    /// The answer's text, when it was text.
    text: Option<String>,
    /// The model that answered.
    model: String,
}

/// Asks the client's model `prompt` (`sampling/createMessage`) and answers what it said.
#[tool(tier = lite)]
pub(crate) async fn test_sampling(
    ctx: &ToolContext,
    args: SamplingArgs,
) -> ToolResult<ModelAnswer> {
    let sampled = ctx.sample(SamplingRequest::user(args.prompt, 100)).await?;
    Ok(ModelAnswer {
        text: sampled.text,
        model: sampled.model,
    })
}

/// The arguments of `test_elicitation`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct ElicitationArgs {
    /// What to ask the user.
    message: String,
}

/// What the user did with an elicitation.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct UserAnswer {
    /// `accept`, `decline` or `cancel`.
    action: String,
    /// The content the user accepted, as the client sent it.
    content: Option<Value>,
}

impl From<Elicited<Value>> for UserAnswer {
    fn from(elicited: Elicited<Value>) -> Self {
        let (action, content) = match elicited {
            Elicited::Accepted(content) => ("accept", Some(content)),
            Elicited::Declined => ("decline", None),
            Elicited::Cancelled => ("cancel", None),
        };
        UserAnswer {
            action: action.to_owned(),
            content,
        }
    }
}

/// Asks the user `message` for a username and an email (`elicitation/create`), and answers
/// what they did.
#[tool(tier = lite)]
pub(crate) async fn test_elicitation(
    ctx: &ToolContext,
    args: ElicitationArgs,
) -> ToolResult<UserAnswer> {
    let schema = json!({
        "type": "object",
        "properties": {
            "username": { "type": "string", "description": "User's response" },
            "email": { "type": "string", "description": "User's email address" }
        },
        "required": ["username", "email"]
    });
    Ok(ctx.elicit_with_schema(args.message, schema).await?.into())
}

/// Asks the user for a form whose every field has a default (SEP-1034): a string, an integer,
/// a number, an enum and a boolean.
#[tool(tier = lite)]
pub(crate) async fn test_elicitation_sep1034_defaults(ctx: &ToolContext) -> ToolResult<UserAnswer> {
    let schema = json!({
        "type": "object",
        "properties": {
            "name": { "type": "string", "description": "User name", "default": "John Doe" },
            "age": { "type": "integer", "description": "User age", "default": 30 },
            "score": { "type": "number", "description": "User score", "default": 95.5 },
            "status": {
                "type": "string",
                "description": "User status",
                "enum": ["active", "inactive", "pending"],
                "default": "active"
            },
            "verified": { "type": "boolean", "description": "Verification status", "default": true }
        },
        "required": []
    });
    let message = "Please review and update the form fields with defaults";
    Ok(ctx.elicit_with_schema(message, schema).await?.into())
}

/// Asks the user to pick from the five enum shapes of SEP-1330: single and multiple choice,
/// untitled and titled, and the legacy `enumNames`.
#[tool(tier = lite)]
pub(crate) async fn test_elicitation_sep1330_enums(ctx: &ToolContext) -> ToolResult<UserAnswer> {
    let titled = |label: &str| {
        json!([
            { "const": "value1", "title": format!("First {label}") },
            { "const": "value2", "title": format!("Second {label}") },
            { "const": "value3", "title": format!("Third {label}") }
        ])
    };
    let schema = json!({
        "type": "object",
        "properties": {
            "untitledSingle": {
                "type": "string",
                "description": "Select one option",
                "enum": ["option1", "option2", "option3"]
            },
            "titledSingle": {
                "type": "string",
                "description": "Select one option with titles",
                "oneOf": titled("Option")
            },
            "legacyEnum": {
                "type": "string",
                "description": "Select one option (legacy)",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"]
            },
            "untitledMulti": {
                "type": "array",
                "description": "Select multiple options",
                "minItems": 1,
                "maxItems": 3,
                "items": { "type": "string", "enum": ["option1", "option2", "option3"] }
            },
            "titledMulti": {
                "type": "array",
                "description": "Select multiple options with titles",
                "minItems": 1,
                "maxItems": 3,
                "items": { "anyOf": titled("Choice") }
            }
        },
        "required": []
    });
    let message = "Please select options from the enum fields";
    Ok(ctx.elicit_with_schema(message, schema).await?.into())
}

/// Takes a moment, then answers: the call the suite makes while it tests resuming an event
/// stream.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_reconnection() -> ToolResult<Said> {
    tokio::time::sleep(Duration::from_millis(100)).await;
    Ok(Said::new("Reconnection test completed"))
}

/// A contact, as `json_schema_2020_12_tool` takes it. Its schema is the suite's, written by
/// hand: what the check reads is that every JSON Schema 2020-12 keyword survives the listing.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Contact {
    /// The contact's name.
    name: Option<String>,
    /// Where they live.
    address: Option<Address>,
    /// `phone` or `email`.
    contact_method: Option<String>,
    /// Their phone number.
    phone: Option<String>,
    /// Their email address.
    email: Option<String>,
}

/// A postal address.
#[derive(Debug, Deserialize)]
pub(crate) struct Address {
    /// The street.
    #[allow(dead_code)] // in the schema, not in the answer
    street: Option<String>,
    /// The city.
    city: Option<String>,
}

impl JsonSchema for Contact {
    fn schema_name() -> Cow<'static, str> {
        "Contact".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        // As the suite has it, `$schema` included: `#[tool]` writes none (MCP reads a schema
        // without one as draft 2020-12), and the suite checks that the listing keeps it.
        schemars::json_schema!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "$defs": {
                "address": {
                    "$anchor": "addressDef",
                    "type": "object",
                    "properties": {
                        "street": { "type": "string" },
                        "city": { "type": "string" }
                    }
                }
            },
            "properties": {
                "name": { "type": "string" },
                "address": { "$ref": "#/$defs/address" },
                "contactMethod": { "type": "string", "enum": ["phone", "email"] },
                "phone": { "type": "string" },
                "email": { "type": "string" }
            },
            "allOf": [{ "anyOf": [{ "required": ["phone"] }, { "required": ["email"] }] }],
            "if": {
                "properties": { "contactMethod": { "const": "phone" } },
                "required": ["contactMethod"]
            },
            "then": { "required": ["phone"] },
            "else": { "required": ["email"] },
            "additionalProperties": false
        })
    }
}

/// Who was recorded.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Recorded {
    /// The contact's name, when given.
    name: Option<String>,
    /// How to reach them: `phone` or `email`.
    reach_by: String,
    /// The city they live in, when given.
    city: Option<String>,
}

/// Records a contact, reachable by phone or email: its input schema uses JSON Schema 2020-12's
/// `$defs`, `$anchor`, `allOf`/`anyOf`, `if`/`then`/`else` and `additionalProperties`.
#[tool(tier = lite)]
pub(crate) async fn json_schema_2020_12_tool(args: Contact) -> ToolResult<Recorded> {
    let reach_by = match (args.contact_method.as_deref(), &args.phone, &args.email) {
        (Some(method), _, _) => method.to_owned(),
        (None, Some(_), _) => "phone".to_owned(),
        (None, None, _) => "email".to_owned(),
    };
    Ok(Recorded {
        name: args.name,
        reach_by,
        city: args.address.and_then(|address| address.city),
    })
}

/// Logs one message at `info`, then answers. On MCP 2026-07-28 a server logs only when the
/// request asks for a level (`_meta`'s `logLevel`); the suite calls it without one.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_logging_tool(ctx: &ToolContext) -> ToolResult<Said> {
    ctx.log(LogLevel::Info, "test_logging_tool ran");
    Ok(Said::new("Logging tool completed."))
}

/// The arguments of `test_custom_header`: `value` is mirrored in the `Mcp-Param-Value` header
/// (SEP-2243's `x-mcp-header`), which the transport checks against it.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct HeaderArgs {
    /// Any text; the client sends it in the `Mcp-Param-Value` header too.
    #[schemars(extend("x-mcp-header" = "Value"))]
    value: String,
}

/// Says back `value`, which the client also sent as a header.
#[tool(tier = lite, read_only)]
pub(crate) async fn test_custom_header(args: HeaderArgs) -> ToolResult<Said> {
    Ok(Said::new(args.value))
}

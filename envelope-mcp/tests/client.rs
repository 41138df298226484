//! A tool asking its client, through `ToolContext`: input from the user (elicitation), a
//! completion (sampling), the client's roots and log messages, over MCP to rmcp's own client, as any client would
//! answer. Each outcome is read off the envelope the tool answers with.
//!
//! rmcp marks sampling and logging deprecated for the revisions after 2025-11-25, which these
//! tests do not speak.
#![allow(deprecated)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use envelope_core::{Elicited, LogLevel, SamplingRequest, ToolContext, ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, CreateMessageRequestParams,
    CreateMessageResult, ElicitRequestParams, ElicitResult, ElicitationAction, Implementation,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, Root, SamplingMessage,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Delete the files?
    confirm: bool,
}

/// Asks before deleting, and says what the user did.
#[tool(tier = lite)]
async fn confirm_delete(ctx: &ToolContext) -> ToolResult<Value> {
    Ok(match ctx.elicit::<Confirm>("Delete 3 files?").await? {
        Elicited::Accepted(Confirm { confirm }) => {
            json!({ "outcome": "accepted", "confirm": confirm })
        }
        Elicited::Declined => json!({ "outcome": "declined" }),
        Elicited::Cancelled => json!({ "outcome": "cancelled" }),
    })
}

/// Asks the client's model.
#[tool(tier = lite, read_only)]
async fn ask_model(ctx: &ToolContext) -> ToolResult<Value> {
    let sampled = ctx
        .sample(SamplingRequest::user("Name a colour", 20))
        .await?;
    Ok(json!({ "text": sampled.text, "model": sampled.model }))
}

/// Lists the client's roots.
#[tool(tier = lite, read_only)]
async fn workspace(ctx: &ToolContext) -> ToolResult<Value> {
    let roots = ctx.roots().await?;
    Ok(json!(
        roots
            .iter()
            .map(|root| json!({ "uri": root.uri, "name": root.name }))
            .collect::<Vec<_>>()
    ))
}

/// Logs at three levels.
#[tool(tier = lite, read_only)]
async fn chatty(ctx: &ToolContext) -> ToolResult<&'static str> {
    ctx.log(LogLevel::Debug, json!({ "step": "debug" }));
    ctx.log(LogLevel::Info, json!({ "step": "info" }));
    ctx.log(LogLevel::Error, json!({ "step": "error" }));
    Ok("logged")
}

fn server() -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![confirm_delete, ask_model, workspace, chatty],
        EnvelopeConfig::new("asking", "0.0.0"),
    )
}

/// How the client answers an elicitation.
#[derive(Clone)]
enum Answer {
    Accept(Value),
    Decline,
    Cancel,
}

/// A log message as the client got it: its level, logger and data.
type Logged = (LoggingLevel, Option<String>, Value);

/// rmcp's client, declaring elicitation and sampling or not, answering as told and keeping
/// the log messages it receives.
#[derive(Clone)]
struct Asking {
    offers: bool,
    answer: Answer,
    logs: Arc<Mutex<Vec<Logged>>>,
}

impl Asking {
    fn new(offers: bool, answer: Answer) -> Self {
        Asking {
            offers,
            answer,
            logs: Arc::default(),
        }
    }
}

impl rmcp::ClientHandler for Asking {
    fn get_info(&self) -> ClientConfig {
        let mut capabilities = ClientCapabilities::default();
        if self.offers {
            capabilities =
                serde_json::from_value(json!({ "elicitation": {}, "sampling": {}, "roots": {} }))
                    .expect("capabilities");
        }
        ClientConfig::new(capabilities, Implementation::new("asking-client", "0"))
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        let ElicitRequestParams::FormElicitationParams {
            requested_schema, ..
        } = request
        else {
            return Err(ErrorData::invalid_params("a form was expected", None));
        };
        // The tool's type, as the user's form shows it.
        let schema = serde_json::to_value(&requested_schema).expect("schema");
        assert_eq!(
            schema["properties"]["confirm"]["type"], "boolean",
            "{schema}"
        );
        Ok(match &self.answer {
            Answer::Accept(content) => {
                ElicitResult::new(ElicitationAction::Accept).with_content(content.clone())
            }
            Answer::Decline => ElicitResult::new(ElicitationAction::Decline),
            Answer::Cancel => ElicitResult::new(ElicitationAction::Cancel),
        })
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        assert_eq!(params.max_tokens, 20);
        Ok(CreateMessageResult::new(
            SamplingMessage::assistant_text("teal"),
            "test-model".to_owned(),
        ))
    }

    async fn list_roots(
        &self,
        _: RequestContext<RoleClient>,
    ) -> Result<ListRootsResult, ErrorData> {
        Ok(ListRootsResult::new(vec![
            Root::new("file:///srv/project").with_name("project"),
            Root::new("file:///tmp/scratch"),
        ]))
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _: NotificationContext<RoleClient>,
    ) {
        self.logs
            .lock()
            .expect("no poisoning")
            .push((params.level, params.logger, params.data));
    }
}

async fn connect(client: Asking) -> RunningService<RoleClient, Asking> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    let server = server();
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    client.serve(client_io).await.expect("client connects")
}

/// The envelope a call answers with.
async fn call(client: &RunningService<RoleClient, Asking>, tool: &'static str) -> Value {
    let result = client
        .call_tool(CallToolRequestParams::new(tool))
        .await
        .expect("a result");
    result.structured_content.expect("an envelope")
}

#[tokio::test]
async fn each_answer_of_the_user_is_its_own_outcome() {
    let cases = [
        (
            Answer::Accept(json!({ "confirm": true })),
            json!({ "outcome": "accepted", "confirm": true }),
        ),
        (Answer::Decline, json!({ "outcome": "declined" })),
        (Answer::Cancel, json!({ "outcome": "cancelled" })),
    ];
    for (answer, expected) in cases {
        let client = connect(Asking::new(true, answer)).await;
        let envelope = call(&client, "confirm_delete").await;
        assert_eq!(envelope["ok"], true, "{envelope}");
        assert_eq!(envelope["data"], expected, "{envelope}");
        client.cancel().await.expect("closes");
    }
}

#[tokio::test]
async fn a_client_without_elicitation_answers_unavailable() {
    let client = connect(Asking::new(false, Answer::Decline)).await;
    let envelope = call(&client, "confirm_delete").await;
    assert_eq!(envelope["ok"], false, "{envelope}");
    let error = &envelope["error"];
    assert_eq!(error["category"], "unavailable", "{envelope}");
    assert_eq!(
        error["code"],
        envelope_core::ELICITATION_UNAVAILABLE,
        "{envelope}"
    );
    assert_eq!(error["retryable"], false, "{envelope}");

    let sampled = call(&client, "ask_model").await;
    assert_eq!(
        sampled["error"]["code"],
        envelope_core::SAMPLING_UNAVAILABLE,
        "{sampled}"
    );

    let roots = call(&client, "workspace").await;
    assert_eq!(
        roots["error"]["code"],
        envelope_core::ROOTS_UNAVAILABLE,
        "{roots}"
    );
}

#[tokio::test]
async fn a_tool_reads_the_clients_roots() {
    let client = connect(Asking::new(true, Answer::Decline)).await;
    let envelope = call(&client, "workspace").await;
    assert_eq!(
        envelope["data"],
        json!([
            { "uri": "file:///srv/project", "name": "project" },
            { "uri": "file:///tmp/scratch", "name": null },
        ]),
        "{envelope}"
    );
}

#[tokio::test]
async fn content_that_does_not_fit_the_type_is_a_validation_error() {
    let client = connect(Asking::new(
        true,
        Answer::Accept(json!({ "confirm": "yes" })),
    ))
    .await;
    let envelope = call(&client, "confirm_delete").await;
    assert_eq!(envelope["error"]["category"], "validation", "{envelope}");
    assert_eq!(
        envelope["error"]["code"],
        envelope_core::CLIENT_RESPONSE_INVALID,
        "{envelope}"
    );
}

#[tokio::test]
async fn a_tool_samples_the_clients_model() {
    let client = connect(Asking::new(true, Answer::Decline)).await;
    let envelope = call(&client, "ask_model").await;
    assert_eq!(
        envelope["data"],
        json!({ "text": "teal", "model": "test-model" }),
        "{envelope}"
    );
}

/// The log messages seen once there are `count`, or after 2 s.
async fn logs_seen(client: &Asking, count: usize) -> Vec<Logged> {
    for _ in 0..200 {
        if client.logs.lock().expect("no poisoning").len() >= count {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Any message past `count` would have arrived by now too.
    tokio::time::sleep(Duration::from_millis(50)).await;
    client.logs.lock().expect("no poisoning").clone()
}

#[tokio::test]
async fn logs_reach_the_client_at_the_level_it_set() {
    let asking = Asking::new(true, Answer::Decline);
    let client = connect(asking.clone()).await;
    // Until the client sets a level, `info` and above.
    call(&client, "chatty").await;
    let seen = logs_seen(&asking, 2).await;
    let levels: Vec<LoggingLevel> = seen.iter().map(|(level, ..)| *level).collect();
    assert_eq!(
        levels,
        [LoggingLevel::Info, LoggingLevel::Error],
        "{seen:?}"
    );
    assert_eq!(
        seen[0].1.as_deref(),
        Some("chatty"),
        "the logger is the tool"
    );
    assert_eq!(seen[0].2, json!({ "step": "info" }));

    asking.logs.lock().expect("no poisoning").clear();
    client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Error))
        .await
        .expect("level set");
    call(&client, "chatty").await;
    let seen = logs_seen(&asking, 1).await;
    let levels: Vec<LoggingLevel> = seen.iter().map(|(level, ..)| *level).collect();
    assert_eq!(levels, [LoggingLevel::Error], "{seen:?}");
}

#[tokio::test]
async fn without_a_client_a_tool_is_told_so() {
    // A call from the command line has no client to ask.
    let prepared = server()
        .call("confirm_delete", json!({}))
        .await
        .expect("served");
    assert_eq!(
        prepared.structured["error"]["code"],
        envelope_core::ELICITATION_UNAVAILABLE
    );
    let logged = server().call("chatty", json!({})).await.expect("served");
    assert_eq!(
        logged.structured["data"], "logged",
        "logging without a client is a no-op"
    );
}

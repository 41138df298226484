//! A tool's requests of its client, over MCP: `elicitation/create`, `sampling/createMessage`
//! and `notifications/message`, through rmcp's peer of the session; and the logging level the
//! client set for the session (`logging/setLevel`).
//!
//! rmcp marks sampling and logging deprecated by SEP-2577, for the protocol revisions after
//! 2025-11-25; the revisions this server speaks still have them, so their types are used here.
#![allow(deprecated)]

use std::sync::{Arc, RwLock};

use envelope_core::{
    BoxFuture, ClientChannel, ClientError, ClientFeature, Elicited, LogLevel, Sampled,
    SamplingRequest, SamplingRole,
};
use rmcp::RoleServer;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequestParams, ElicitResult,
    ElicitationAction, LoggingLevel, LoggingMessageNotificationParam,
};
use rmcp::service::Peer;
use serde_json::{Value, json};

use super::forward::{Forwarder, Outgoing};

/// The least severe log message a session's client wants before it says: `info`.
pub const DEFAULT_LOG_LEVEL: LogLevel = LogLevel::Info;

/// What one session keeps between its requests: the logging level its client set.
#[derive(Debug)]
pub(crate) struct Session {
    log_level: RwLock<LogLevel>,
}

impl Default for Session {
    fn default() -> Self {
        Session {
            log_level: RwLock::new(DEFAULT_LOG_LEVEL),
        }
    }
}

impl Session {
    pub(crate) fn set_log_level(&self, level: LogLevel) {
        if let Ok(mut set) = self.log_level.write() {
            *set = level;
        }
    }

    fn wants(&self, level: LogLevel) -> bool {
        self.log_level.read().map_or(true, |least| level >= *least)
    }
}

/// rmcp's level as envelope's.
pub(crate) fn log_level_of(level: LoggingLevel) -> LogLevel {
    match level {
        LoggingLevel::Debug => LogLevel::Debug,
        LoggingLevel::Info => LogLevel::Info,
        LoggingLevel::Notice => LogLevel::Notice,
        LoggingLevel::Warning => LogLevel::Warning,
        LoggingLevel::Error => LogLevel::Error,
        LoggingLevel::Critical => LogLevel::Critical,
        LoggingLevel::Alert => LogLevel::Alert,
        LoggingLevel::Emergency => LogLevel::Emergency,
    }
}

fn logging_level(level: LogLevel) -> LoggingLevel {
    match level {
        LogLevel::Debug => LoggingLevel::Debug,
        LogLevel::Info => LoggingLevel::Info,
        LogLevel::Notice => LoggingLevel::Notice,
        LogLevel::Warning => LoggingLevel::Warning,
        LogLevel::Error => LoggingLevel::Error,
        LogLevel::Critical => LoggingLevel::Critical,
        LogLevel::Alert => LoggingLevel::Alert,
        LogLevel::Emergency => LoggingLevel::Emergency,
    }
}

/// The least severe log message a call's client wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Wanted {
    /// The request's own level (`_meta`'s `io.modelcontextprotocol/logLevel`, the 2026
    /// revision's per-request level).
    AtLeast(LogLevel),
    /// The level the session's client set, `info` until it sets one.
    Session,
    /// None: a request of the 2026 revision (which has no session level) that asked for none.
    Nothing,
}

impl Wanted {
    /// What a request wants, from the level it names and whether it belongs to a session.
    pub(crate) fn of(requested: Option<LogLevel>, in_session: bool) -> Self {
        match requested {
            Some(level) => Wanted::AtLeast(level),
            None if in_session => Wanted::Session,
            None => Wanted::Nothing,
        }
    }
}

/// The client of one call, as its tool sees it.
pub(crate) struct PeerClient {
    peer: Peer<RoleServer>,
    session: Arc<Session>,
    wanted: Wanted,
    forward: Arc<Forwarder>,
    /// What the client declared it can answer: at `initialize`, or on the request itself.
    capabilities: ClientCapabilities,
}

impl PeerClient {
    pub(crate) fn new(
        peer: Peer<RoleServer>,
        session: Arc<Session>,
        wanted: Wanted,
        forward: Arc<Forwarder>,
        capabilities: ClientCapabilities,
    ) -> Self {
        PeerClient {
            peer,
            session,
            wanted,
            forward,
            capabilities,
        }
    }

    fn wants(&self, level: LogLevel) -> bool {
        match self.wanted {
            Wanted::AtLeast(least) => level >= least,
            Wanted::Session => self.session.wants(level),
            Wanted::Nothing => false,
        }
    }
}

/// `Ok` when the client declared `feature` in `capabilities`; the typed refusal when not.
pub(crate) fn offered(
    capabilities: &ClientCapabilities,
    feature: ClientFeature,
) -> Result<(), ClientError> {
    let declared = match feature {
        ClientFeature::Elicitation => capabilities.elicitation.is_some(),
        ClientFeature::Sampling => capabilities.sampling.is_some(),
    };
    declared
        .then_some(())
        .ok_or(ClientError::Unavailable(feature))
}

/// `elicitation/create`'s parameters: a form asking `message`, for content matching `schema`.
pub(crate) fn elicitation_params(message: String, schema: &Value) -> Value {
    // wire: MCP's form elicitation request
    json!({ "mode": "form", "message": message, "requestedSchema": schema })
}

impl ClientChannel for PeerClient {
    fn elicit(
        &self,
        message: String,
        schema: Value,
    ) -> BoxFuture<'_, Result<Elicited<Value>, ClientError>> {
        Box::pin(async move {
            offered(&self.capabilities, ClientFeature::Elicitation)?;
            // rmcp checks the schema is MCP's flat form as it decodes it.
            let params: ElicitRequestParams =
                serde_json::from_value(elicitation_params(message, &schema))
                    .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
            let answer = self
                .peer
                .create_elicitation(params)
                .await
                .map_err(|error| ClientError::Failed(error.to_string()))?;
            let answer = serde_json::to_value(&answer)
                .map_err(|error| ClientError::InvalidResponse(error.to_string()))?;
            elicitation_answer(&answer, &schema)
        })
    }

    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<Sampled, ClientError>> {
        Box::pin(async move {
            offered(&self.capabilities, ClientFeature::Sampling)?;
            let params: CreateMessageRequestParams =
                serde_json::from_value(sampling_params(&request))
                    .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
            let answer = self
                .peer
                .create_message(params)
                .await
                .map_err(|error| ClientError::Failed(error.to_string()))?;
            let answer = serde_json::to_value(&answer)
                .map_err(|error| ClientError::InvalidResponse(error.to_string()))?;
            Ok(sampled(&answer))
        })
    }

    fn log(&self, level: LogLevel, logger: &str, data: Value) {
        if !self.wants(level) {
            return;
        }
        let mut params = LoggingMessageNotificationParam::new(logging_level(level), data);
        params.logger = Some(logger.to_owned());
        // In order with the call's progress, before its result, without holding the tool up.
        self.forward.send(Outgoing::Log(params));
    }
}

/// What the user did, read off `elicitation/create`'s result; accepted content is checked
/// against the `schema` asked with, so a tool never reads an answer that does not fit it.
pub(crate) fn elicitation_answer(
    answer: &Value,
    schema: &Value,
) -> Result<Elicited<Value>, ClientError> {
    let answer: ElicitResult = serde_json::from_value(answer.clone())
        .map_err(|error| ClientError::InvalidResponse(error.to_string()))?;
    Ok(match answer.action {
        ElicitationAction::Accept => {
            let content = answer.content.unwrap_or_else(|| json!({}));
            let validator = jsonschema::validator_for(schema)
                .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
            if let Some(error) = validator.iter_errors(&content).next() {
                return Err(ClientError::InvalidResponse(format!(
                    "{error} (at `{}`)",
                    error.instance_path()
                )));
            }
            Elicited::Accepted(content)
        }
        ElicitationAction::Decline => Elicited::Declined,
        ElicitationAction::Cancel => Elicited::Cancelled,
        other => {
            return Err(ClientError::InvalidResponse(format!(
                "an elicitation action this server does not know: {other:?}"
            )));
        }
    })
}

/// `sampling/createMessage`'s parameters for `request`.
pub(crate) fn sampling_params(request: &SamplingRequest) -> Value {
    let role = |role: SamplingRole| match role {
        SamplingRole::User => "user",
        SamplingRole::Assistant => "assistant",
    };
    let messages: Vec<Value> = request
        .messages
        .iter()
        // wire: MCP's sampling message
        .map(|message| json!({ "role": role(message.role), "content": { "type": "text", "text": message.text } }))
        .collect();
    // wire: MCP's sampling request
    let mut params = json!({ "messages": messages, "maxTokens": request.max_tokens });
    if let Some(prompt) = &request.system_prompt {
        params["systemPrompt"] = json!(prompt); // wire: MCP's sampling request
    }
    if let Some(temperature) = request.temperature {
        params["temperature"] = json!(temperature); // wire: MCP's sampling request
    }
    if let Some(model) = &request.model_hint {
        // wire: MCP's model preferences
        params["modelPreferences"] = json!({ "hints": [{ "name": model }] });
    }
    params
}

/// The model's answer, read off `sampling/createMessage`'s result.
pub(crate) fn sampled(answer: &Value) -> Sampled {
    // MCP's result has the message's `role` and `content` beside `model` (rmcp's type nests
    // them under `message`, and may serialize either way).
    let message = answer.get("message").unwrap_or(answer); // wire: MCP's sampling result
    // One content block, or a list of them: the first text block is the answer.
    let content = &message["content"]; // wire: MCP's sampling message
    let blocks: Vec<&Value> = match content {
        Value::Array(blocks) => blocks.iter().collect(),
        block => vec![block],
    };
    let text = blocks
        .iter()
        .find(|block| block["type"] == "text") // wire: MCP's content block
        .and_then(|block| block["text"].as_str()) // wire: MCP's text content
        .map(str::to_owned);
    Sampled {
        role: if message["role"] == "user" {
            SamplingRole::User
        } else {
            SamplingRole::Assistant
        }, // wire: MCP's role
        text,
        model: answer["model"].as_str().unwrap_or_default().to_owned(), // wire: MCP's sampling result
        stop_reason: answer["stopReason"].as_str().map(str::to_owned), // wire: MCP's sampling result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_sends_what_its_client_asked_for() {
        let session = Session::default();
        assert!(session.wants(LogLevel::Info));
        assert!(!session.wants(LogLevel::Debug));
        session.set_log_level(LogLevel::Error);
        assert!(!session.wants(LogLevel::Warning));
        assert!(session.wants(LogLevel::Critical));
    }

    #[test]
    fn a_request_level_overrides_the_session_and_none_outside_one_is_silence() {
        assert_eq!(
            Wanted::of(Some(LogLevel::Debug), true),
            Wanted::AtLeast(LogLevel::Debug)
        );
        assert_eq!(
            Wanted::of(Some(LogLevel::Error), false),
            Wanted::AtLeast(LogLevel::Error)
        );
        assert_eq!(Wanted::of(None, true), Wanted::Session);
        assert_eq!(Wanted::of(None, false), Wanted::Nothing);
    }

    #[test]
    fn accepted_content_must_fit_the_schema_asked_with() {
        let schema = json!({
            "type": "object",
            "properties": { "email": { "type": "string" } },
            "required": ["email"]
        });
        let fits = json!({ "action": "accept", "content": { "email": "a@b.c" } });
        assert_eq!(
            elicitation_answer(&fits, &schema),
            Ok(Elicited::Accepted(json!({ "email": "a@b.c" })))
        );
        let missing = json!({ "action": "accept", "content": {} });
        assert!(matches!(
            elicitation_answer(&missing, &schema),
            Err(ClientError::InvalidResponse(_))
        ));
        let wrong = json!({ "action": "accept", "content": { "email": 5 } });
        assert!(matches!(
            elicitation_answer(&wrong, &schema),
            Err(ClientError::InvalidResponse(_))
        ));
        let declined = json!({ "action": "decline" });
        assert_eq!(
            elicitation_answer(&declined, &schema),
            Ok(Elicited::Declined)
        );
    }

    #[test]
    fn the_sampling_request_is_mcps() {
        let request = SamplingRequest::user("Say hi", 50)
            .with_system_prompt("Be brief")
            .with_model_hint("claude");
        let params = sampling_params(&request);
        assert_eq!(params["maxTokens"], 50);
        assert_eq!(params["messages"][0]["content"]["text"], "Say hi");
        assert_eq!(params["modelPreferences"]["hints"][0]["name"], "claude");
        let decoded: Result<CreateMessageRequestParams, _> = serde_json::from_value(params);
        assert!(decoded.is_ok(), "{decoded:?}");
    }

    #[test]
    fn the_answer_is_its_first_text_block() {
        let answer = json!({
            "model": "m", "stopReason": "endTurn", "role": "assistant",
            "content": [{ "type": "image", "data": "", "mimeType": "image/png" }, { "type": "text", "text": "hi" }]
        });
        let sampled = sampled(&answer);
        assert_eq!(sampled.text.as_deref(), Some("hi"));
        assert_eq!(sampled.model, "m");
        assert_eq!(sampled.stop_reason.as_deref(), Some("endTurn"));
        assert_eq!(sampled.role, SamplingRole::Assistant);
    }
}

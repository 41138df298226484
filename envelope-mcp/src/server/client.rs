//! A tool's requests of its client, over MCP: `elicitation/create`, `sampling/createMessage`,
//! `roots/list` and `notifications/message`, through rmcp's peer of the session; and the logging level the
//! client set for the session (`logging/setLevel`).
//!
//! rmcp marks sampling and logging deprecated by SEP-2577, for the protocol revisions after
//! 2025-11-25; the revisions this server speaks still have them, so their types are used here.
#![allow(deprecated)]

use std::sync::{Arc, RwLock};

use envelope_core::{
    BoxFuture, ClientError, ClientFeature, Elicited, LogLevel, Root, Sampled, SamplingRequest,
    SamplingRole,
};
use rmcp::RoleServer;
use rmcp::ServiceError;
use rmcp::model::{
    ClientCapabilities, ClientResult, CreateMessageRequestParams, ElicitRequest,
    ElicitRequestParams, ElicitResult, ElicitationAction, ListRootsResult, LoggingLevel,
    LoggingMessageNotificationParam, ServerRequest,
};
use rmcp::service::Peer;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use super::forward::{Forwarder, Outgoing};
use crate::schema_check::SchemaCheck;

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

    /// The level the client set, [`DEFAULT_LOG_LEVEL`] until it sets one.
    fn least(&self) -> LogLevel {
        self.log_level
            .read()
            .map_or(LogLevel::Debug, |least| *least)
    }
}

/// An MCP log level (rmcp's `LoggingLevel`) as envelope's [`LogLevel`]: the same eight
/// RFC 5424 levels, in the same order.
pub fn log_level_of(level: LoggingLevel) -> LogLevel {
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

/// envelope's [`LogLevel`] as an MCP log level (rmcp's `LoggingLevel`): the inverse of
/// [`log_level_of`].
pub fn logging_level_of(level: LogLevel) -> LoggingLevel {
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
        self.least_wanted().is_some_and(|least| level >= least)
    }

    /// The least severe level the call's client wants; `None` for none.
    pub(crate) fn least_wanted(&self) -> Option<LogLevel> {
        match self.wanted {
            Wanted::AtLeast(least) => Some(least),
            Wanted::Session => Some(self.session.least()),
            Wanted::Nothing => None,
        }
    }
}

/// What `capabilities` declare of `feature`, as MCP writes it; `None` when not declared.
pub(crate) fn declared(capabilities: &ClientCapabilities, feature: ClientFeature) -> Option<Value> {
    let declared = match feature {
        ClientFeature::Elicitation => serde_json::to_value(capabilities.elicitation.as_ref()?),
        ClientFeature::Sampling => serde_json::to_value(capabilities.sampling.as_ref()?),
        ClientFeature::Roots => serde_json::to_value(capabilities.roots.as_ref()?),
    };
    // A capability always serializes; one that did not is taken as declared bare.
    Some(declared.unwrap_or_else(|_| Value::Object(serde_json::Map::new())))
}

/// `Ok` when the client declared `feature` in `capabilities`; the typed refusal when not. Read
/// through [`declared`], so the two never disagree (an ask is a round trip to the client: the
/// capability written out on the way costs nothing beside it).
pub(crate) fn offered(
    capabilities: &ClientCapabilities,
    feature: ClientFeature,
) -> Result<(), ClientError> {
    declared(capabilities, feature)
        .map(drop)
        .ok_or(ClientError::Unavailable(feature))
}

/// `Ok` when the client declared the elicitation mode `params` ask in (`form` when they name
/// none, MCP's default); the typed refusal when not. An `elicitation` capability naming no mode
/// declares forms, as MCP reads one written before modes.
fn elicitation_mode_offered(
    capabilities: &ClientCapabilities,
    params: &Value,
) -> Result<(), ClientError> {
    // wire: MCP's elicitation modes, in the request's `mode` and as sub-capabilities
    const MODES: [&str; 2] = ["form", "url"];
    let asked = params.get("mode").and_then(Value::as_str).unwrap_or("form");
    let declared = declared(capabilities, ClientFeature::Elicitation).unwrap_or_default();
    let named = |mode: &str| declared.get(mode).is_some_and(|sub| !sub.is_null());
    let offers = if MODES.iter().any(|mode| named(mode)) {
        named(asked)
    } else {
        asked == "form"
    };
    offers
        .then_some(())
        .ok_or(ClientError::Unavailable(ClientFeature::Elicitation))
}

/// `elicitation/create`'s parameters: a form asking `message`, for content matching `schema`.
pub(crate) fn elicitation_params(message: String, schema: &Value) -> Value {
    // wire: MCP's form elicitation request
    json!({ "mode": "form", "message": message, "requestedSchema": schema })
}

/// The MCP method that carries a request for `feature`.
pub(crate) fn method(feature: ClientFeature) -> &'static str {
    match feature {
        ClientFeature::Elicitation => "elicitation/create", // wire: MCP's elicitation request
        ClientFeature::Sampling => "sampling/createMessage", // wire: MCP's sampling request
        ClientFeature::Roots => "roots/list",               // wire: MCP's roots request
    }
}

/// How a call's requests reach its client and its answers come back: a request of rmcp's peer
/// of the session ([`PeerClient`]), or an ask of the call's round on MCP 2026-07-28
/// ([`Round`](super::rounds::Round)). What is asked and how the answer is read is the same for
/// both, in [`elicit`] and [`sample`].
pub(crate) trait Asks: Sync {
    /// What the client declared it can answer.
    fn capabilities(&self) -> &ClientCapabilities;

    /// The client's answer to the request for `feature` with MCP's `params`, as MCP's result.
    fn ask(
        &self,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>>;

    /// Where the call's log messages go.
    fn logs(&self) -> &PeerClient;

    /// This client asking under `key`, where asks are named (a round's); `None` where not.
    fn keyed(&self, key: &str) -> Option<Arc<dyn envelope_core::ClientChannel>> {
        let _ = key;
        None
    }
}

/// One elicitation, however it travels: refused unless the client offers it, then the form
/// asked and the user's answer read against `schema`.
pub(crate) async fn elicit(
    client: &impl Asks,
    message: String,
    schema: Value,
) -> Result<Elicited<Value>, ClientError> {
    let params = elicitation_params(message, &schema);
    let answer = relay(client, ClientFeature::Elicitation, params).await?;
    elicitation_answer(&answer, &schema)
}

/// One sampling, however it travels: refused unless the client offers it, then the model's
/// answer read off the result.
pub(crate) async fn sample(
    client: &impl Asks,
    request: SamplingRequest,
) -> Result<Sampled, ClientError> {
    let answer = relay(client, ClientFeature::Sampling, sampling_params(&request)).await?;
    Ok(sampled(&answer))
}

/// The client's roots, however the request travels: refused unless the client declared
/// `roots`, then read off `roots/list`'s result.
pub(crate) async fn roots(client: &impl Asks) -> Result<Vec<Root>, ClientError> {
    let answer = relay(client, ClientFeature::Roots, json!({})).await?;
    let listed: ListRootsResult = serde_json::from_value(answer)
        .map_err(|error| ClientError::InvalidResponse(error.to_string()))?;
    Ok(listed
        .roots
        .into_iter()
        .map(|root| Root::new(root.uri, root.name))
        .collect())
}

/// The request of `feature` with MCP's `params`, however it travels: refused unless the client
/// offers it, then its result as the client gave it. Another server's request relayed as it is
/// ([`ClientChannel::relay`](envelope_core::ClientChannel::relay)), and the one way
/// [`elicit`], [`sample`] and [`roots`] ask.
pub(crate) async fn relay(
    client: &impl Asks,
    feature: ClientFeature,
    params: Value,
) -> Result<Value, ClientError> {
    offered(client.capabilities(), feature)?;
    if feature == ClientFeature::Elicitation {
        elicitation_mode_offered(client.capabilities(), &params)?;
    }
    client.ask(feature, params).await
}

/// Implements `ClientChannel` for a type that [`Asks`]: its one implementation, through
/// [`elicit`], [`sample`], [`roots`] and [`Asks::logs`]. A macro because the orphan rule forbids a blanket
/// `impl<T: Asks> ClientChannel for T` of envelope-core's trait.
macro_rules! client_channel_of_asks {
    ($client:ty) => {
        impl envelope_core::ClientChannel for $client {
            fn elicit(
                &self,
                message: String,
                schema: serde_json::Value,
            ) -> envelope_core::BoxFuture<
                '_,
                Result<envelope_core::Elicited<serde_json::Value>, envelope_core::ClientError>,
            > {
                Box::pin($crate::server::client::elicit(self, message, schema))
            }

            fn sample(
                &self,
                request: envelope_core::SamplingRequest,
            ) -> envelope_core::BoxFuture<
                '_,
                Result<envelope_core::Sampled, envelope_core::ClientError>,
            > {
                Box::pin($crate::server::client::sample(self, request))
            }

            fn offers(&self, feature: envelope_core::ClientFeature) -> bool {
                $crate::server::client::offered(
                    $crate::server::client::Asks::capabilities(self),
                    feature,
                )
                .is_ok()
            }

            fn declared(&self, feature: envelope_core::ClientFeature) -> Option<serde_json::Value> {
                $crate::server::client::declared(
                    $crate::server::client::Asks::capabilities(self),
                    feature,
                )
            }

            fn roots(
                &self,
            ) -> envelope_core::BoxFuture<
                '_,
                Result<Vec<envelope_core::Root>, envelope_core::ClientError>,
            > {
                Box::pin($crate::server::client::roots(self))
            }

            fn log(&self, level: envelope_core::LogLevel, logger: &str, data: serde_json::Value) {
                $crate::server::client::Asks::logs(self).log_message(level, logger, data);
            }

            fn log_level(&self) -> Option<envelope_core::LogLevel> {
                $crate::server::client::Asks::logs(self).least_wanted()
            }

            fn keyed(&self, key: &str) -> Option<std::sync::Arc<dyn envelope_core::ClientChannel>> {
                $crate::server::client::Asks::keyed(self, key)
            }

            fn relay(
                &self,
                feature: envelope_core::ClientFeature,
                params: serde_json::Value,
            ) -> envelope_core::BoxFuture<'_, Result<serde_json::Value, envelope_core::ClientError>>
            {
                Box::pin($crate::server::client::relay(self, feature, params))
            }
        }
    };
}
pub(crate) use client_channel_of_asks;

client_channel_of_asks!(PeerClient);

impl Asks for PeerClient {
    fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    fn ask(
        &self,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>> {
        match feature {
            ClientFeature::Elicitation => {
                Box::pin(exchange(params, |params: ElicitRequestParams| {
                    create_elicitation(&self.peer, params)
                }))
            }
            ClientFeature::Sampling => {
                Box::pin(exchange(params, |params: CreateMessageRequestParams| {
                    self.peer.create_message(params)
                }))
            }
            ClientFeature::Roots => Box::pin(exchange(params, |_: Value| self.peer.list_roots())),
        }
    }

    fn logs(&self) -> &PeerClient {
        self
    }
}

impl PeerClient {
    /// Sends a log message from `logger`, if the call's client wants `level`.
    pub(crate) fn log_message(&self, level: LogLevel, logger: &str, data: Value) {
        if !self.wants(level) {
            return;
        }
        let mut params = LoggingMessageNotificationParam::new(logging_level_of(level), data);
        params.logger = Some(logger.to_owned());
        // In order with the call's progress, before its result, without holding the tool up.
        self.forward.send(Outgoing::Log(params));
    }
}

/// One request of rmcp's peer: `params` decoded as rmcp's type `P` for it, sent by `send`, and
/// the typed result back as MCP's JSON.
async fn exchange<P, R, F>(params: Value, send: impl FnOnce(P) -> F) -> Result<Value, ClientError>
where
    P: DeserializeOwned,
    R: Serialize,
    F: Future<Output = Result<R, ServiceError>>,
{
    // rmcp checks an elicitation's schema is MCP's flat form as it decodes it.
    let params: P = serde_json::from_value(params)
        .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
    let answer = send(params)
        .await
        .map_err(|error| ClientError::Failed(error.to_string()))?;
    serde_json::to_value(&answer).map_err(|error| ClientError::InvalidResponse(error.to_string()))
}

/// `elicitation/create` sent to the client, as rmcp's `Peer::create_elicitation` sends it:
/// that method comes with rmcp's `elicitation` feature, which also brings `url` and its
/// Unicode tables (some thirty crates) for URL-mode elicitation, which envelope does not ask.
async fn create_elicitation(
    peer: &Peer<RoleServer>,
    params: ElicitRequestParams,
) -> Result<ElicitResult, ServiceError> {
    match peer
        .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
        .await?
    {
        ClientResult::ElicitResult(result) => Ok(result),
        _ => Err(ServiceError::UnexpectedResponse),
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
            let form = SchemaCheck::new(schema)
                .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
            if let Err(violation) = form.check(&content) {
                return Err(ClientError::InvalidResponse(format!(
                    "{violation} (at `{}`)",
                    violation.at
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
    fn a_capability_is_told_as_the_client_declared_it() {
        let capabilities: ClientCapabilities = serde_json::from_value(serde_json::json!({
            "elicitation": {"form": {}, "url": {}},
            "roots": {"listChanged": true},
        }))
        .expect("capabilities");
        assert_eq!(
            declared(&capabilities, ClientFeature::Elicitation),
            Some(serde_json::json!({"form": {}, "url": {}}))
        );
        assert_eq!(
            declared(&capabilities, ClientFeature::Roots),
            Some(serde_json::json!({"listChanged": true}))
        );
        assert_eq!(declared(&capabilities, ClientFeature::Sampling), None);
    }

    #[test]
    fn an_elicitation_is_asked_only_in_a_mode_the_client_declared() {
        let capabilities = |declared: Value| -> ClientCapabilities {
            serde_json::from_value(serde_json::json!({ "elicitation": declared }))
                .expect("capabilities")
        };
        let form = serde_json::json!({"mode": "form", "message": "m", "requestedSchema": {}});
        let url = serde_json::json!({"mode": "url", "message": "m", "url": "https://x", "elicitationId": "e"});
        let unnamed = serde_json::json!({"message": "m", "requestedSchema": {}});
        let both = capabilities(serde_json::json!({"form": {}, "url": {}}));
        let forms = capabilities(serde_json::json!({"form": {}}));
        let before_modes = capabilities(serde_json::json!({}));
        let urls = capabilities(serde_json::json!({"url": {}}));
        for params in [&form, &url, &unnamed] {
            assert_eq!(elicitation_mode_offered(&both, params), Ok(()), "{params}");
        }
        let refused = Err(ClientError::Unavailable(ClientFeature::Elicitation));
        for declared in [&forms, &before_modes] {
            assert_eq!(elicitation_mode_offered(declared, &form), Ok(()));
            assert_eq!(elicitation_mode_offered(declared, &unnamed), Ok(()));
            assert_eq!(elicitation_mode_offered(declared, &url), refused);
        }
        assert_eq!(elicitation_mode_offered(&urls, &url), Ok(()));
        assert_eq!(elicitation_mode_offered(&urls, &form), refused);
    }

    #[test]
    fn a_session_sends_what_its_client_asked_for() {
        let session = Session::default();
        let wants = |level| level >= session.least();
        assert!(wants(LogLevel::Info));
        assert!(!wants(LogLevel::Debug));
        session.set_log_level(LogLevel::Error);
        assert!(!wants(LogLevel::Warning));
        assert!(wants(LogLevel::Critical));
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

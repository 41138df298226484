//! What a tool may ask of the client while it runs: input from the user (elicitation), a
//! completion from the client's model (sampling), the client's roots (the directories or files
//! it works in), and log messages at the level the client set.
//!
//! The transport implements [`ClientChannel`] (MCP's `elicitation/create`,
//! `sampling/createMessage`, `roots/list` and `notifications/message`); a tool asks through
//! its [`ToolContext`](crate::ToolContext): [`elicit`](crate::ToolContext::elicit),
//! [`sample`](crate::ToolContext::sample), [`roots`](crate::ToolContext::roots),
//! [`log`](crate::ToolContext::log). Without a client that offers it, asking answers
//! [`ClientError::Unavailable`], which `?` turns into an `unavailable` error with code
//! [`ELICITATION_UNAVAILABLE`], [`SAMPLING_UNAVAILABLE`] or [`ROOTS_UNAVAILABLE`].

use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::future::BoxFuture;
use crate::tool_error::ToolError;

/// The `code` of the error a tool answers when it asked the user for input and the client
/// cannot ask (it did not declare `elicitation`, or no client is connected): `unavailable`,
/// not retryable.
pub const ELICITATION_UNAVAILABLE: &str = crate::fields::code::ELICITATION_UNAVAILABLE;
/// The `code` of the error a tool answers when it asked for sampling and the client does not
/// offer it: `unavailable`, not retryable.
pub const SAMPLING_UNAVAILABLE: &str = crate::fields::code::SAMPLING_UNAVAILABLE;
/// The `code` of the error a tool answers when it asked for the client's roots and the client
/// does not tell them (it did not declare `roots`): `unavailable`, not retryable.
pub const ROOTS_UNAVAILABLE: &str = crate::fields::code::ROOTS_UNAVAILABLE;
/// The `code` of the error a tool answers when the client's answer did not match what was
/// asked (content that fails the requested schema, say): `validation`, not retryable.
pub const CLIENT_RESPONSE_INVALID: &str = crate::fields::code::CLIENT_RESPONSE_INVALID;
/// The `code` of the error a tool answers when its request to the client failed (the client
/// errored, timed out or went away): `transient`, retryable.
pub const CLIENT_REQUEST_FAILED: &str = crate::fields::code::CLIENT_REQUEST_FAILED;

/// What the user did with an elicitation: each a distinct outcome, none an error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Elicited<T> {
    /// The user answered, with content that matches the requested schema.
    Accepted(T),
    /// The user said no.
    Declined,
    /// The user dismissed the request without choosing.
    Cancelled,
}

impl<T> Elicited<T> {
    /// The answer, when the user accepted.
    pub fn accepted(self) -> Option<T> {
        match self {
            Elicited::Accepted(value) => Some(value),
            Elicited::Declined | Elicited::Cancelled => None,
        }
    }

    /// The outcome with its answer mapped by `f`.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Elicited<U> {
        match self {
            Elicited::Accepted(value) => Elicited::Accepted(f(value)),
            Elicited::Declined => Elicited::Declined,
            Elicited::Cancelled => Elicited::Cancelled,
        }
    }
}

/// What a tool can ask of its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClientFeature {
    /// Input from the user (`elicitation`).
    Elicitation,
    /// A completion from the client's model (`sampling`).
    Sampling,
    /// The client's roots (`roots`).
    Roots,
}

impl ClientFeature {
    /// The error code a call fails with when its client does not offer this feature
    /// ([`ELICITATION_UNAVAILABLE`], [`SAMPLING_UNAVAILABLE`], [`ROOTS_UNAVAILABLE`]).
    pub fn unavailable_code(self) -> &'static str {
        match self {
            ClientFeature::Elicitation => ELICITATION_UNAVAILABLE,
            ClientFeature::Sampling => SAMPLING_UNAVAILABLE,
            ClientFeature::Roots => ROOTS_UNAVAILABLE,
        }
    }

    /// The feature whose absence the error code `code` says; `None` for any other code.
    pub fn of_unavailable_code(code: &str) -> Option<ClientFeature> {
        [
            ClientFeature::Elicitation,
            ClientFeature::Sampling,
            ClientFeature::Roots,
        ]
        .into_iter()
        .find(|feature| feature.unavailable_code() == code)
    }
}

impl fmt::Display for ClientFeature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ClientFeature::Elicitation => "elicitation",
            ClientFeature::Sampling => "sampling",
            ClientFeature::Roots => "roots",
        })
    }
}

/// Why a request to the client got no usable answer.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The client does not offer it: it did not declare the capability, or no client is
    /// connected (a call from the command line).
    #[error("the client does not offer {0}")]
    Unavailable(ClientFeature),
    /// What the tool asked cannot be asked: an elicitation schema that is not a flat object of
    /// primitive fields, say. The tool's mistake, not the client's.
    #[error("cannot ask the client: {0}")]
    InvalidRequest(String),
    /// The client answered with something other than what was asked.
    #[error("the client's answer does not match the request: {0}")]
    InvalidResponse(String),
    /// The request failed on the way: the client errored, timed out or went away.
    #[error("the request to the client failed: {0}")]
    Failed(String),
}

impl From<ClientError> for ToolError {
    /// `unavailable` ([`ELICITATION_UNAVAILABLE`], [`SAMPLING_UNAVAILABLE`],
    /// [`ROOTS_UNAVAILABLE`]) when the client
    /// does not offer it, not retryable; `validation` ([`CLIENT_RESPONSE_INVALID`]) for an
    /// answer that does not fit; `transient` ([`CLIENT_REQUEST_FAILED`]) when the request
    /// failed; `internal` for a request that could not be asked.
    fn from(error: ClientError) -> Self {
        let message = error.to_string();
        match error {
            ClientError::Unavailable(feature) => ToolError::unavailable(message)
                .with_code(feature.unavailable_code())
                .with_retryable(false),
            ClientError::InvalidRequest(_) => ToolError::internal(message),
            ClientError::InvalidResponse(_) => {
                ToolError::validation(message).with_code(CLIENT_RESPONSE_INVALID)
            }
            ClientError::Failed(_) => {
                ToolError::transient(message).with_code(CLIENT_REQUEST_FAILED)
            }
        }
    }
}

/// The severity of a log message, RFC 5424's as MCP names them; the client sets the least it
/// wants (`logging/setLevel`), and messages below it are not sent.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

/// Who speaks in a sampling message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SamplingRole {
    /// The user.
    User,
    /// The model.
    Assistant,
}

/// One message of a sampling conversation: text, from the user or the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SamplingMessage {
    /// Who speaks.
    pub role: SamplingRole,
    /// What they say.
    pub text: String,
}

/// A completion a tool asks of the client's model: the conversation so far and the most tokens
/// to answer with; the client picks the model (and may ask its user first).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SamplingRequest {
    /// The conversation, oldest first.
    pub messages: Vec<SamplingMessage>,
    /// The most tokens the answer may take.
    pub max_tokens: u32,
    /// A system prompt the client may use.
    pub system_prompt: Option<String>,
    /// The sampling temperature, if the tool cares.
    pub temperature: Option<f32>,
    /// A model name the client may prefer (a hint, not a requirement).
    pub model_hint: Option<String>,
}

impl SamplingRequest {
    /// A one-message conversation: the user says `text`; the answer takes at most `max_tokens`.
    pub fn user(text: impl Into<String>, max_tokens: u32) -> Self {
        SamplingRequest {
            messages: vec![SamplingMessage {
                role: SamplingRole::User,
                text: text.into(),
            }],
            max_tokens,
            system_prompt: None,
            temperature: None,
            model_hint: None,
        }
    }

    /// With a system prompt.
    #[must_use]
    pub fn with_system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// With a sampling temperature.
    #[must_use]
    pub fn with_temperature(mut self, temperature: f32) -> Self {
        self.temperature = Some(temperature);
        self
    }

    /// With a model the client may prefer.
    #[must_use]
    pub fn with_model_hint(mut self, model: impl Into<String>) -> Self {
        self.model_hint = Some(model.into());
        self
    }
}

/// The client model's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sampled {
    /// Who answered (the model, as a rule).
    pub role: SamplingRole,
    /// The answer's text; `None` when the model answered with something else (an image).
    pub text: Option<String>,
    /// The model that answered.
    pub model: String,
    /// Why it stopped, as the client says (`endTurn`, `maxTokens`, …).
    pub stop_reason: Option<String>,
}

/// One of the client's roots: a directory or file it works in, as MCP's `roots/list` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Root {
    /// Its URI (`file://` as a rule).
    pub uri: String,
    /// The name the client gives it, if any.
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri`, named `name` if given.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Root {
        Root {
            uri: uri.into(),
            name,
        }
    }
}

/// The requests a tool can make of its client; the transport implements it.
pub trait ClientChannel: Send + Sync {
    /// Asks the user `message`, for content matching `schema` (a flat JSON Schema object of
    /// primitive fields); accepted content that does not match it is
    /// [`ClientError::InvalidResponse`], so a tool never reads an answer that does not fit.
    fn elicit(
        &self,
        message: String,
        schema: Value,
    ) -> BoxFuture<'_, Result<Elicited<Value>, ClientError>>;

    /// Asks the client's model for a completion.
    fn sample(&self, request: SamplingRequest) -> BoxFuture<'_, Result<Sampled, ClientError>>;

    /// Whether the client declared `feature`: what a request for it would not be refused
    /// for. By default, a channel offers nothing.
    fn offers(&self, feature: ClientFeature) -> bool {
        let _ = feature;
        false
    }

    /// What the client declared of `feature`, as it declared it: MCP's capability object,
    /// sub-capabilities included (`{"form": {}, "url": {}}` for an elicitation in either
    /// mode, `{"tools": {}}` for a sampling that may use tools); `None` when it did not
    /// declare `feature`. By default, a channel that says nothing of it, however it answers
    /// [`offers`](Self::offers).
    fn declared(&self, feature: ClientFeature) -> Option<Value> {
        let _ = feature;
        None
    }

    /// Asks the client for its roots. By default, a channel that cannot ask for them answers
    /// [`ClientError::Unavailable`].
    fn roots(&self) -> BoxFuture<'_, Result<Vec<Root>, ClientError>> {
        Box::pin(std::future::ready(Err(ClientError::Unavailable(
            ClientFeature::Roots,
        ))))
    }

    /// Sends a log message from `logger` (the tool's name), if the client wants `level`.
    fn log(&self, level: LogLevel, logger: &str, data: Value);

    /// The least severe level the client wants log messages at; `None` when it wants none
    /// (by default: a channel that says nothing of it).
    fn log_level(&self) -> Option<LogLevel> {
        None
    }

    /// Sends the client a request of its own protocol as another server wrote it, and returns
    /// the client's result unread: `feature` says which request (an elicitation, a sampling,
    /// the roots), `params` are its parameters as the protocol writes them (MCP's
    /// `elicitation/create`, `sampling/createMessage`, `roots/list`), with whatever content
    /// they carry. Refused as [`ClientError::Unavailable`] unless the client declared
    /// `feature`, as the typed requests are. By default, a channel that cannot relay.
    fn relay(
        &self,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>> {
        let _ = params;
        Box::pin(std::future::ready(Err(ClientError::Unavailable(feature))))
    }

    /// This channel asking under `key`, where asks are named (MCP 2026-07-28's rounds name
    /// each entry of an `InputRequiredResult`); `None`, the default, for a channel whose asks
    /// are not named, which then asks as it does. See [`ToolContext::asking_as`](crate::ToolContext::asking_as).
    fn keyed(&self, key: &str) -> Option<std::sync::Arc<dyn ClientChannel>> {
        let _ = key;
        None
    }
}

/// The elicitation schema of `T`: subschemas inlined, without `$schema`, as MCP's flat form
/// asks.
pub(crate) fn elicitation_schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with(|settings| {
            settings.inline_subschemas = true;
            settings.meta_schema = None;
        })
        .into_generator();
    generator.into_root_schema_for::<T>().to_value()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Category;

    #[derive(JsonSchema, Deserialize)]
    #[allow(dead_code)]
    struct Confirm {
        /// Delete the files?
        confirm: bool,
        /// Why.
        reason: Option<String>,
    }

    #[test]
    fn each_feature_is_its_unavailable_code_and_back() {
        for feature in [
            ClientFeature::Elicitation,
            ClientFeature::Sampling,
            ClientFeature::Roots,
        ] {
            let code = feature.unavailable_code();
            assert_eq!(ClientFeature::of_unavailable_code(code), Some(feature));
            let error = ToolError::from(ClientError::Unavailable(feature));
            assert_eq!(error.code(), Some(code));
        }
        assert_eq!(ClientFeature::of_unavailable_code("not_found"), None);
    }

    #[test]
    fn the_schema_is_a_flat_object_without_a_meta_schema() {
        let schema = elicitation_schema::<Confirm>();
        assert_eq!(schema["type"], "object");
        assert_eq!(schema["properties"]["confirm"]["type"], "boolean");
        assert!(schema.get("$schema").is_none());
        assert_eq!(schema["required"], serde_json::json!(["confirm"]));
    }

    #[test]
    fn each_failure_is_a_typed_tool_error() {
        let unavailable = ToolError::from(ClientError::Unavailable(ClientFeature::Elicitation));
        assert_eq!(unavailable.category(), Category::Unavailable);
        assert_eq!(unavailable.code(), Some(ELICITATION_UNAVAILABLE));
        assert!(!unavailable.retryable());
        let sampling = ToolError::from(ClientError::Unavailable(ClientFeature::Sampling));
        assert_eq!(sampling.code(), Some(SAMPLING_UNAVAILABLE));
        let failed = ToolError::from(ClientError::Failed("timed out".into()));
        assert_eq!(failed.category(), Category::Transient);
        assert!(failed.retryable());
        let invalid = ToolError::from(ClientError::InvalidResponse("age: not a number".into()));
        assert_eq!(invalid.category(), Category::Validation);
        assert_eq!(invalid.code(), Some(CLIENT_RESPONSE_INVALID));
    }

    #[test]
    fn log_levels_order_by_severity() {
        assert!(LogLevel::Debug < LogLevel::Info);
        assert!(LogLevel::Error < LogLevel::Emergency);
        assert_eq!(
            serde_json::to_value(LogLevel::Warning).ok(),
            Some("warning".into())
        );
    }
}

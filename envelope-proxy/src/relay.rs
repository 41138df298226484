//! What the upstream asks of the client while a call runs — a completion from its model
//! (`sampling/createMessage`), an answer from its user (`elicitation/create`), a log message —
//! relayed to the client whose call is in flight.
//!
//! The upstream's requests name no call: over stdio nothing ties a request to the call that
//! caused it. So they are relayed only while exactly one call is in flight, to that call's
//! client; with none or several, the request is refused with a JSON-RPC error that says why,
//! never guessed at (that would show one caller's prompt to another). A client that cannot
//! answer (it declared no sampling, or no elicitation) is refused the same way, with the
//! reason the proxy's own client channel gives. A log message with no single call to go to
//! goes to the proxy's own log.
#![allow(deprecated)] // sampling, roots and logging, which rmcp marks deprecated (SEP-2577)

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::watch;

use envelope_core::{ClientError, ClientFeature, Elicited, ToolContext};
use rmcp::ErrorData;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams,
    ElicitResult, ElicitationAction, ElicitationCapability, FormElicitationCapability,
    ListRootsResult, LoggingMessageNotificationParam, RootsCapabilities, SamplingCapability,
};

use crate::config::Revision;

/// The calls in flight, whose clients the upstream's requests may reach.
#[derive(Clone, Default)]
pub(crate) struct InFlight(Arc<Mutex<Calls>>);

#[derive(Default)]
struct Calls {
    next: u64,
    running: HashMap<u64, Running>,
}

/// One call in flight: its context, and what tells when it ends.
struct Running {
    ctx: ToolContext,
    ended: watch::Receiver<()>,
}

/// A call in flight, for as long as this lives.
pub(crate) struct Entered {
    calls: Arc<Mutex<Calls>>,
    id: u64,
    /// Dropped with the call: whatever waits on its client for the upstream stops waiting.
    _alive: watch::Sender<()>,
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls.running.remove(&self.id);
    }
}

impl InFlight {
    /// The call of `ctx` is in flight until the guard drops.
    pub(crate) fn enter(&self, ctx: &ToolContext) -> Entered {
        let mut calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let id = calls.next;
        calls.next += 1;
        let (alive, ended) = watch::channel(());
        calls.running.insert(
            id,
            Running {
                ctx: ctx.clone(),
                ended,
            },
        );
        Entered {
            calls: Arc::clone(&self.0),
            id,
            _alive: alive,
        }
    }

    /// The one call in flight, or the refusal saying why there is none to relay `what` to.
    fn only(&self, what: &str) -> Result<ToolContext, ErrorData> {
        self.only_until_ended(what).map(|(ctx, _)| ctx)
    }

    /// The one call in flight and what tells when it ends, or the refusal saying why there is
    /// none to relay `what` to.
    fn only_until_ended(
        &self,
        what: &str,
    ) -> Result<(ToolContext, watch::Receiver<()>), ErrorData> {
        let calls = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let mut running = calls.running.values();
        match (running.next(), calls.running.len()) {
            (Some(call), 1) => Ok((call.ctx.clone(), call.ended.clone())),
            (_, 0) => Err(ErrorData::invalid_request(
                format!(
                    "the proxy relays {what} only during a call of a tool, and none is running"
                ),
                None,
            )),
            (_, many) => Err(ErrorData::invalid_request(
                format!(
                    "the proxy relays {what} only while one call is running, to its client; \
                     {many} are running and the request names none of them"
                ),
                None,
            )),
        }
    }

    /// Relays the upstream's `sampling/createMessage` to the client of the call in flight, as
    /// it is.
    pub(crate) async fn sample(
        &self,
        params: CreateMessageRequestParams,
    ) -> Result<CreateMessageResult, ErrorData> {
        let (ctx, ended) = self.only_until_ended("sampling")?;
        until_the_call_ends(ended, sample_with(&ctx, params)).await
    }

    /// Relays the upstream's `elicitation/create` (a form, or a URL to a client that declared
    /// URL elicitation) to the client of the call in flight; the user's answer goes back as
    /// they gave it.
    pub(crate) async fn elicit(
        &self,
        params: ElicitRequestParams,
    ) -> Result<ElicitResult, ErrorData> {
        let (ctx, ended) = self.only_until_ended("elicitation")?;
        until_the_call_ends(ended, elicit_with(&ctx, params)).await
    }

    /// Relays the upstream's log message to the client of the call in flight, which sends it
    /// if the client asked for that level; else to the proxy's own log.
    pub(crate) fn log(&self, params: LoggingMessageNotificationParam) {
        let level = envelope_mcp::log_level_of(params.level);
        match self.only("log messages") {
            Ok(ctx) => ctx.log(level, params.data),
            Err(_) => tracing::info!(
                upstream_level = ?level,
                logger = params.logger.as_deref().unwrap_or_default(),
                data = %params.data,
                "the upstream logged, with no one call to relay it to"
            ),
        }
    }
}

/// The client's answer to what the upstream asked during a call, or, when the call ends first,
/// the error that says so: the upstream's request is answered either way. (A client on
/// 2026-07-28 is asked across rounds: the call answers `InputRequiredResult` and ends, and the
/// upstream, asked again on the next round, gets the answer then.)
async fn until_the_call_ends<T>(
    mut ended: watch::Receiver<()>,
    answered: impl std::future::Future<Output = Result<T, Unrelayed>>,
) -> Result<T, ErrorData> {
    tokio::select! {
        answered = answered => answered.map_err(ErrorData::from),
        _ = ended.changed() => Err(ErrorData::internal_error(
            "the call that caused this request ended before its client answered",
            None,
        )),
    }
}

/// Why what the upstream asked was not relayed: the client's own answer (it cannot ask, it
/// declined to answer, its answer does not fit), or a request the proxy could not write out
/// for the client.
#[derive(Debug)]
pub(crate) enum Unrelayed {
    Client(ClientError),
    Refused(ErrorData),
}

impl From<Unrelayed> for ErrorData {
    fn from(unrelayed: Unrelayed) -> ErrorData {
        match unrelayed {
            Unrelayed::Client(error) => client_refused(error),
            Unrelayed::Refused(error) => error,
        }
    }
}

/// Asks `ctx`'s client's model what the upstream's `sampling/createMessage` asks, as it asks
/// it (text, images, audio, a system prompt, model preferences): the request is relayed whole,
/// and the client's result, once it reads as a sampling result, goes back as it came.
pub(crate) async fn sample_with(
    ctx: &ToolContext,
    params: CreateMessageRequestParams,
) -> Result<CreateMessageResult, Unrelayed> {
    relay_whole(ctx, ClientFeature::Sampling, &params).await
}

/// Relays the upstream's request for `feature` with `params` to `ctx`'s client as it is, and
/// reads the client's result back as the upstream's type of it.
async fn relay_whole<Answer: serde::de::DeserializeOwned>(
    ctx: &ToolContext,
    feature: ClientFeature,
    params: &impl serde::Serialize,
) -> Result<Answer, Unrelayed> {
    let params = serde_json::to_value(params)
        .map_err(|error| Unrelayed::Refused(ErrorData::invalid_params(error.to_string(), None)))?;
    let answer = ctx
        .relay(feature, params)
        .await
        .map_err(Unrelayed::Client)?;
    serde_json::from_value(answer).map_err(|error| {
        Unrelayed::Client(ClientError::InvalidResponse(format!(
            "the client's {feature} result does not read as one: {error}"
        )))
    })
}

/// The roots `ctx`'s client tells, as it tells them: its result relayed whole (the result's
/// `_meta` and each root's kept), once it reads as a roots list.
pub(crate) async fn roots_with(ctx: &ToolContext) -> Result<ListRootsResult, Unrelayed> {
    relay_whole(ctx, ClientFeature::Roots, &serde_json::Map::new()).await
}

/// Asks `ctx`'s client's user what the upstream's `elicitation/create` asks; the answer as
/// they gave it. A form is asked and its answer read against its schema; a URL (the user
/// sent to a page) is relayed whole, which the client's channel sends only to a client that
/// declared URL elicitation.
pub(crate) async fn elicit_with(
    ctx: &ToolContext,
    params: ElicitRequestParams,
) -> Result<ElicitResult, Unrelayed> {
    let (message, requested_schema) = match params {
        ElicitRequestParams::FormElicitationParams {
            message,
            requested_schema,
            ..
        } => (message, requested_schema),
        // A URL is relayed whole; the client's channel refuses it to a client of forms only.
        url => return relay_whole(ctx, ClientFeature::Elicitation, &url).await,
    };
    let schema = serde_json::to_value(&requested_schema)
        .map_err(|error| Unrelayed::Refused(ErrorData::invalid_params(error.to_string(), None)))?;
    let answer = ctx
        .elicit_with_schema(message, schema)
        .await
        .map_err(Unrelayed::Client)?;
    Ok(match answer {
        Elicited::Accepted(content) => {
            let mut result = ElicitResult::new(ElicitationAction::Accept);
            result.content = Some(content);
            result
        }
        Elicited::Declined => ElicitResult::new(ElicitationAction::Decline),
        Elicited::Cancelled => ElicitResult::new(ElicitationAction::Cancel),
    })
}

/// What the proxy declares to the upstream: sampling and form elicitation (and, on 2026-07-28,
/// roots), which it relays to its own client (refused where that client cannot answer).
pub(crate) fn capabilities(revision: Revision) -> ClientCapabilities {
    let mut capabilities = ClientCapabilities::default();
    capabilities.sampling = Some(SamplingCapability::default());
    capabilities.elicitation =
        Some(ElicitationCapability::new().with_form(FormElicitationCapability::new()));
    // On 2026-07-28 the roots are asked for within a call (`InputRequiredResult`), and go to
    // that call's client. On the revisions before, a server may ask for them at any time (the
    // filesystem server asks as it starts, to set its directories), when no call names a
    // client to ask: not declared there.
    if revision == Revision::Discover {
        capabilities.roots = Some(RootsCapabilities::default());
    }
    capabilities
}

/// What the client of the call `ctx` declared, of what the proxy relays: the capabilities a
/// call made for it on 2026-07-28 carries upstream (each request says its client's), so the
/// upstream asks that client only what it can answer, and refuses a call that needs more.
///
/// Each as the client declared it, sub-capabilities included (form and URL elicitation, a
/// sampling that may use tools), since each request is relayed as the upstream wrote it; but
/// for `roots.listChanged`, a notification the proxy does not pass upstream.
pub(crate) fn callers_capabilities(ctx: &ToolContext) -> ClientCapabilities {
    /// The declared capability, read as rmcp's type; one that does not read as it (a client's
    /// extension of it rmcp rejects) is taken as declared bare.
    fn read<T: serde::de::DeserializeOwned + Default>(
        ctx: &ToolContext,
        feature: ClientFeature,
    ) -> Option<T> {
        let declared = ctx.declared(feature)?;
        Some(serde_json::from_value(declared).unwrap_or_default())
    }
    let mut capabilities = ClientCapabilities::default();
    capabilities.sampling = read::<SamplingCapability>(ctx, ClientFeature::Sampling);
    capabilities.elicitation = read::<ElicitationCapability>(ctx, ClientFeature::Elicitation);
    capabilities.roots = read::<RootsCapabilities>(ctx, ClientFeature::Roots).map(|mut roots| {
        roots.list_changed = None;
        roots
    });
    capabilities
}

/// The client's refusal, as the JSON-RPC error the upstream reads: what the proxy's client
/// channel said, whose message names the reason (a client without the capability, a failed
/// request, an answer that did not fit the schema).
fn client_refused(error: ClientError) -> ErrorData {
    let message = error.to_string();
    match error {
        ClientError::InvalidResponse(_) | ClientError::Failed(_) => {
            ErrorData::internal_error(message, None)
        }
        _ => ErrorData::invalid_request(message, None),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use envelope_core::{BoxFuture, ClientChannel, Sampled, SamplingRequest};
    use serde_json::{Value, json};

    use super::*;

    /// A client that declared `capabilities` (MCP's object) and answers every relayed request
    /// with `answer`, keeping what it was sent.
    pub(crate) struct Declaring {
        capabilities: Value,
        answer: Value,
        pub(crate) relayed: Mutex<Vec<Value>>,
    }

    impl ClientChannel for Declaring {
        fn elicit(
            &self,
            _message: String,
            _schema: Value,
        ) -> BoxFuture<'_, Result<Elicited<Value>, ClientError>> {
            Box::pin(async { Ok(Elicited::Accepted(json!({}))) })
        }

        fn sample(&self, _request: SamplingRequest) -> BoxFuture<'_, Result<Sampled, ClientError>> {
            Box::pin(async { Err(ClientError::Unavailable(ClientFeature::Sampling)) })
        }

        fn log(&self, _level: envelope_core::LogLevel, _logger: &str, _data: Value) {}

        fn declared(&self, feature: ClientFeature) -> Option<Value> {
            self.capabilities.get(feature.to_string()).cloned()
        }

        fn offers(&self, feature: ClientFeature) -> bool {
            self.declared(feature).is_some()
        }

        fn relay(
            &self,
            _feature: ClientFeature,
            params: Value,
        ) -> BoxFuture<'_, Result<Value, ClientError>> {
            self.relayed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .push(params);
            let answer = self.answer.clone();
            Box::pin(async { Ok(answer) })
        }
    }

    /// A client that declared `capabilities` and accepts whatever it is asked.
    fn client(capabilities: Value) -> (Arc<Declaring>, ToolContext) {
        client_answering(capabilities, json!({"action": "accept"}))
    }

    /// A client that declared `capabilities` and answers whatever it is asked with `answer`.
    pub(crate) fn client_answering(
        capabilities: Value,
        answer: Value,
    ) -> (Arc<Declaring>, ToolContext) {
        let channel = Arc::new(Declaring {
            capabilities,
            answer,
            relayed: Mutex::default(),
        });
        let ctx = ToolContext::new().with_client(Arc::clone(&channel) as Arc<dyn ClientChannel>);
        (channel, ctx)
    }

    #[test]
    fn the_upstream_is_told_what_the_client_declared_down_to_its_sub_capabilities() {
        let (_, ctx) = client(json!({
            "elicitation": {"form": {}, "url": {}},
            "sampling": {"tools": {}},
            "roots": {"listChanged": true},
        }));
        let told = serde_json::to_value(callers_capabilities(&ctx)).expect("serializes");
        assert_eq!(told["elicitation"], json!({"form": {}, "url": {}}));
        assert_eq!(told["sampling"], json!({"tools": {}}));
        // The proxy passes no roots list change upstream: not promised for it.
        assert_eq!(told["roots"], json!({}));

        let (_, forms_only) = client(json!({"elicitation": {"form": {}}}));
        let told = serde_json::to_value(callers_capabilities(&forms_only)).expect("serializes");
        assert_eq!(told["elicitation"], json!({"form": {}}));
        assert!(
            told.get("sampling").is_none() && told.get("roots").is_none(),
            "{told}"
        );
    }

    #[tokio::test]
    async fn a_url_elicitation_is_relayed_whole() {
        let params: ElicitRequestParams = serde_json::from_value(json!({
            "mode": "url",
            "message": "Sign in to go on",
            "url": "https://example.com/sign-in",
            "elicitationId": "e-1",
        }))
        .expect("a URL elicitation");
        // Whether the client declared URLs is its channel's to check (envelope-mcp refuses a
        // client of forms only); the proxy hands the request over as the upstream wrote it.
        let (channel, urls) = client(json!({"elicitation": {"form": {}, "url": {}}}));
        let answered = elicit_with(&urls, params).await.expect("relayed");
        assert_eq!(answered.action, ElicitationAction::Accept);
        let relayed = channel.relayed.lock().expect("not poisoned").clone();
        assert_eq!(relayed.len(), 1);
        assert_eq!(relayed[0]["mode"], "url", "{relayed:?}");
        assert_eq!(relayed[0]["url"], "https://example.com/sign-in");
        assert_eq!(relayed[0]["elicitationId"], "e-1");
    }
}

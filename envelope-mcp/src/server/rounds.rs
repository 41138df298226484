//! A tool asking its client on MCP 2026-07-28, which has no server-to-client requests: the call
//! answers an `InputRequiredResult` naming what to ask, and the client calls again with the
//! answers (`inputResponses`) and the opaque `requestState` (SEP-2322).
//!
//! The tool runs again from the start on each round: every ask it made before is answered from
//! what the client sent, in the order it asks (the `n`th elicitation is `elicit-n`, the `n`th
//! sampling `sample-n`, the `n`th request for the roots `roots-n`, or the key the tool asked
//! under, [`ToolContext::asking_as`](envelope_core::ToolContext::asking_as), suffixed `-2`,
//! `-3`, … when an earlier ask of the run took it); the first ask without an answer ends the round. The answers of the
//! rounds before travel in the `requestState`, sealed by rmcp's codec and bound to the tool and
//! its arguments, so a state altered, or taken to another call, is refused.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use envelope_core::{BoxFuture, ClientError, ClientFeature};
use rmcp::model::{
    ClientCapabilities, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    RequestStateCodec, SealOptions,
};
use serde_json::{Value, json};
use tokio::sync::Notify;

use super::client::{Asks, PeerClient, method};

/// What a round starts from: the answers so far, and what the client can answer.
pub(crate) struct Round {
    /// This round, for the keyed channels it hands out.
    me: Weak<Round>,
    answers: InputResponses,
    asked: Mutex<InputRequests>,
    /// The keys this run of the tool asked under so far, each once.
    keys: Mutex<BTreeSet<String>>,
    elicitations: AtomicUsize,
    samplings: AtomicUsize,
    roots: AtomicUsize,
    needs_input: Notify,
    capabilities: ClientCapabilities,
    /// Log messages go out as in any call.
    logs: PeerClient,
}

/// Why a round cannot start.
#[derive(Debug, thiserror::Error)]
pub(crate) enum RoundError {
    /// The `requestState` is not one this server sealed for this call.
    #[error("requestState failed integrity verification")]
    Tampered,
}

/// What a call's `requestState` is bound to: the tool, the caller (its principal's binding,
/// empty without authentication: another principal cannot replay answers given to this one)
/// and the arguments, canonical. No part holds a raw newline (a tool name cannot, the others
/// are JSON).
fn binding(call: &RoundOf<'_>) -> Vec<u8> {
    let canonical = envelope_core::stage::canonical_json(&Value::Object(call.arguments.clone()));
    format!("{}\n{}\n{canonical}", call.tool, call.caller).into_bytes()
}

/// The call a round belongs to, as its state is bound to it.
pub(crate) struct RoundOf<'a> {
    pub(crate) tool: &'a str,
    /// The caller's principal binding; empty without authentication.
    pub(crate) caller: &'a str,
    pub(crate) arguments: &'a serde_json::Map<String, Value>,
}

impl Round {
    /// The round of a call of `tool` with `arguments`: the answers the sealed `state` carries,
    /// and the client's `responses` to the last round's asks.
    pub(crate) fn open(
        codec: &RequestStateCodec,
        call: &RoundOf<'_>,
        state: Option<&str>,
        responses: Option<InputResponses>,
        capabilities: ClientCapabilities,
        logs: PeerClient,
    ) -> Result<Arc<Round>, RoundError> {
        let bound = binding(call);
        let mut answers: InputResponses = match state {
            Some(sealed) => codec
                .open_json_with(sealed, &bound)
                .map_err(|_| RoundError::Tampered)?,
            None => BTreeMap::new(),
        };
        answers.extend(responses.unwrap_or_default());
        Ok(Arc::new_cyclic(|me| Round {
            me: me.clone(),
            answers,
            asked: Mutex::default(),
            keys: Mutex::default(),
            elicitations: AtomicUsize::new(0),
            samplings: AtomicUsize::new(0),
            roots: AtomicUsize::new(0),
            needs_input: Notify::new(),
            capabilities,
            logs,
        }))
    }

    /// `wanted` as a key of this run: itself, or suffixed `-2`, `-3`, … when taken. The
    /// tool asks in the same order every run, so each ask gets the same key every run.
    fn unique_key(&self, wanted: String) -> String {
        let mut keys = self
            .keys
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut key = wanted.clone();
        let mut n = 1;
        while keys.contains(&key) {
            n += 1;
            key = format!("{wanted}-{n}");
        }
        keys.insert(key.clone());
        key
    }

    /// The client's answer to `request` under `key` (or the next of its kind): the one given
    /// in a round before, or, when there is none, a future that never resolves once the ask
    /// is recorded for this round's `input_required`.
    fn ask_as(
        &self,
        key: Option<&str>,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>> {
        let wanted = match key {
            Some(key) => key.to_owned(),
            None => {
                // The `n`th unnamed ask of a kind is its kind and `n`, in the order asked.
                let (kind, count) = match feature {
                    ClientFeature::Elicitation => ("elicit", &self.elicitations),
                    ClientFeature::Sampling => ("sample", &self.samplings),
                    ClientFeature::Roots => ("roots", &self.roots),
                };
                let n = count.fetch_add(1, Ordering::Relaxed) + 1;
                format!("{kind}-{n}")
            }
        };
        let key = self.unique_key(wanted);
        Box::pin(async move {
            if let Some(answer) = self.answers.get(&key) {
                return Ok(answer.clone());
            }
            // wire: MCP's JSON-RPC request, the shape of an `inputRequests` entry
            let request: InputRequest =
                serde_json::from_value(json!({ "method": method(feature), "params": params }))
                    .map_err(|error| ClientError::InvalidRequest(error.to_string()))?;
            self.asked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(key, request);
            // The call answers `input_required` now; the tool's run is dropped with this future.
            self.needs_input.notify_one();
            std::future::pending().await
        })
    }

    /// Resolves once the tool has asked something this round has no answer for.
    pub(crate) async fn input_needed(&self) {
        self.needs_input.notified().await;
    }

    /// The round's answer: what to ask the client, and the sealed state to call again with.
    pub(crate) fn input_required(
        &self,
        codec: &RequestStateCodec,
        call: &RoundOf<'_>,
    ) -> InputRequiredResult {
        let asked = std::mem::take(
            &mut *self
                .asked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
        );
        let bound = binding(call);
        let state = codec
            .seal_json_with(&self.answers, &SealOptions::new().associated_data(&bound))
            .ok();
        InputRequiredResult::new(Some(asked), state)
    }
}

super::client::client_channel_of_asks!(Round);

impl Asks for Round {
    fn capabilities(&self) -> &ClientCapabilities {
        &self.capabilities
    }

    fn ask(
        &self,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>> {
        self.ask_as(None, feature, params)
    }

    fn logs(&self) -> &PeerClient {
        &self.logs
    }

    fn keyed(&self, key: &str) -> Option<Arc<dyn envelope_core::ClientChannel>> {
        let round = self.me.upgrade()?;
        Some(Arc::new(Keyed {
            round,
            key: key.to_owned(),
        }))
    }
}

/// A round asking under a key the tool chose ([`ToolContext::asking_as`](envelope_core::ToolContext::asking_as)).
struct Keyed {
    round: Arc<Round>,
    key: String,
}

super::client::client_channel_of_asks!(Keyed);

impl Asks for Keyed {
    fn capabilities(&self) -> &ClientCapabilities {
        &self.round.capabilities
    }

    fn ask(
        &self,
        feature: ClientFeature,
        params: Value,
    ) -> BoxFuture<'_, Result<Value, ClientError>> {
        self.round.ask_as(Some(&self.key), feature, params)
    }

    fn logs(&self) -> &PeerClient {
        &self.round.logs
    }

    fn keyed(&self, key: &str) -> Option<Arc<dyn envelope_core::ClientChannel>> {
        self.round.keyed(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn codec() -> RequestStateCodec {
        RequestStateCodec::try_new([7_u8; 32].to_vec()).expect("a key long enough")
    }

    fn arguments() -> serde_json::Map<String, Value> {
        json!({ "files": 3 })
            .as_object()
            .cloned()
            .unwrap_or_default()
    }

    #[test]
    fn a_state_opens_only_for_the_call_it_was_sealed_for() {
        let codec = codec();
        let answers: InputResponses =
            BTreeMap::from([("elicit-1".to_owned(), json!({ "action": "accept" }))]);
        let bound = binding(&RoundOf {
            tool: "delete",
            caller: "",
            arguments: &arguments(),
        });
        let sealed = codec
            .seal_json_with(&answers, &SealOptions::new().associated_data(&bound))
            .expect("seals");
        let open = |tool: &str, arguments: &serde_json::Map<String, Value>, state: &str| {
            codec
                .open_json_with::<InputResponses>(
                    state,
                    &binding(&RoundOf {
                        tool,
                        caller: "",
                        arguments,
                    }),
                )
                .ok()
        };
        assert_eq!(open("delete", &arguments(), &sealed), Some(answers));
        let by_another = codec
            .open_json_with::<InputResponses>(
                &sealed,
                &binding(&RoundOf {
                    tool: "delete",
                    caller: r#"["i","s"]"#,
                    arguments: &arguments(),
                }),
            )
            .ok();
        assert_eq!(by_another, None, "another caller");
        assert_eq!(open("rename", &arguments(), &sealed), None, "another tool");
        let other = json!({ "files": 4 })
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(open("delete", &other, &sealed), None, "other arguments");
        let mut tampered = sealed.clone();
        tampered.insert(3, 'x');
        assert_eq!(open("delete", &arguments(), &tampered), None, "altered");
    }
}

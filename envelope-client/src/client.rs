//! The client: the server's listing, typed calls, retries, next actions followed by id, and
//! target refs read with one re-resolve.

use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

use envelope_core::paging::{STALE_TARGET_SNAPSHOT, TARGET_REF_FIELD};
use envelope_core::{Envelope, NextAction, Role, ToolError};
use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{Peer, RunningService, Service};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};
use tokio::time::Instant;

use crate::error::ClientError;
use crate::read::{Answer, decode, envelope_value, is_plain, speaks_envelope};
use crate::retry::{RetryDecision, RetryPolicy};

/// The error codes of a target ref that was genuine but has gone stale: what
/// [`Client::read`] re-resolves once.
pub const STALE_REF_CODES: [&str; 1] = [STALE_TARGET_SNAPSHOT];

/// A client of one MCP server that answers in envelopes.
///
/// Built over rmcp's client ([`Client::new`] keeps the running service alive; [`Client::from_peer`]
/// borrows a peer whose service the caller keeps), it lists the server's tools once, and calls
/// only what the listing names: a call to any other tool is refused before anything is sent.
/// [`Client::refresh`] lists again (after a `tools/list_changed`, say).
pub struct Client {
    peer: Peer<RoleClient>,
    tools: BTreeMap<String, Arc<Tool>>,
    policy: RetryPolicy,
    /// The running service, kept alive as long as the client is.
    _service: Option<Box<dyn Any + Send + Sync>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("tools", &self.tools.keys().collect::<Vec<_>>())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl Client {
    /// A client of the server `service` is connected to, which it keeps running; lists the
    /// server's tools (every page).
    pub async fn new<S>(service: RunningService<RoleClient, S>) -> Result<Client, ClientError>
    where
        S: Service<RoleClient>,
        RunningService<RoleClient, S>: Send + Sync + 'static,
    {
        let mut client = Client::from_peer(service.peer().clone()).await?;
        client._service = Some(Box::new(service));
        Ok(client)
    }

    /// A client over `peer`, whose running service the caller keeps alive; lists the server's
    /// tools (every page).
    pub async fn from_peer(peer: Peer<RoleClient>) -> Result<Client, ClientError> {
        let mut client = Client {
            peer,
            tools: BTreeMap::new(),
            policy: RetryPolicy::default(),
            _service: None,
        };
        client.refresh().await?;
        Ok(client)
    }

    /// Lists the server's tools again: what may be called from now on.
    pub async fn refresh(&mut self) -> Result<(), ClientError> {
        let listed = self
            .peer
            .list_all_tools()
            .await
            .map_err(|source| ClientError::Service {
                tool: "tools/list".to_owned(),
                source: Box::new(source),
            })?;
        self.tools = listed
            .into_iter()
            .map(|tool| (tool.name.to_string(), Arc::new(tool)))
            .collect();
        Ok(())
    }

    /// The same client, retrying by `policy` (the default is [`RetryPolicy::default`]).
    #[must_use]
    pub fn with_policy(mut self, policy: RetryPolicy) -> Self {
        self.policy = policy;
        self
    }

    /// How [`Client::call`] retries.
    pub fn policy(&self) -> &RetryPolicy {
        &self.policy
    }

    /// rmcp's peer, for what this client does not wrap.
    pub fn peer(&self) -> &Peer<RoleClient> {
        &self.peer
    }

    /// The tools the server listed, by name.
    pub fn tools(&self) -> impl Iterator<Item = &Tool> {
        self.tools.values().map(AsRef::as_ref)
    }

    /// The listed tool `name`.
    pub fn tool(&self, name: &str) -> Option<&Tool> {
        self.tools.get(name).map(AsRef::as_ref)
    }

    /// Whether the listing says `name` may run twice: annotated `idempotentHint: true` or
    /// `readOnlyHint: true`. A tool listed without annotations may not.
    pub fn is_idempotent(&self, name: &str) -> bool {
        self.tool(name)
            .and_then(|tool| tool.annotations.as_ref())
            .is_some_and(|hints| {
                hints.idempotent_hint == Some(true) || hints.read_only_hint == Some(true)
            })
    }

    /// Calls `tool` with `arguments` (a JSON object, or `null` for none), decodes its envelope,
    /// and calls it again while the envelope's error asks for it and the [`RetryPolicy`] allows
    /// it (see there; [`RetryPolicy::never`] turns retries off). Returns the first envelope that
    /// is not retried, whether it is ok or not: an `ok: false` envelope is returned as read (a
    /// tool's failure is data), its [`error`](Envelope::error) saying what failed and whether a
    /// retry could help; when the policy's attempts are spent, the last failure is returned
    /// so. Stops with [`ClientError::RetryAfterPastDeadline`] or
    /// [`ClientError::DeadlineExceeded`] when a wait would end past the deadline. A tool the
    /// listing does not name is refused before anything is sent.
    pub async fn call<T: DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Envelope<T>, ClientError> {
        let arguments = object(tool, arguments)?;
        let raw = self.call_raw_retrying(tool, &arguments).await?;
        decoded(tool, &raw)
    }

    /// Calls `tool` once, whatever its answer says, and decodes its envelope: [`Client::call`]
    /// without the retries.
    pub async fn call_once<T: DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Envelope<T>, ClientError> {
        let arguments = object(tool, arguments)?;
        let raw = self.call_raw(tool, &arguments).await?;
        decoded(tool, &raw)
    }

    /// Calls the next action `action_id` of `envelope` exactly as given: its tool with its
    /// arguments. Refused before anything is sent when the envelope offers no such action,
    /// when its tool is not listed, or when its arguments fail the tool's listed input schema.
    pub async fn follow<T: DeserializeOwned, U>(
        &self,
        envelope: &Envelope<U>,
        action_id: &str,
    ) -> Result<Envelope<T>, ClientError> {
        let action = envelope
            .next_actions()
            .iter()
            .find(|action| action.id == action_id)
            .ok_or_else(|| ClientError::NoSuchAction {
                id: action_id.to_owned(),
            })?;
        let raw = self.run_action(action).await?;
        decoded(&action.tool, &raw)
    }

    /// Reads through a target ref: calls `tool` with `arguments`, which carry the ref under
    /// `target_ref`. When the answer says the ref went stale (an error code of
    /// [`STALE_REF_CODES`]), the ref is re-resolved once, by the recovery the envelope names:
    /// its first next action of role `resolve_target`, else `retry`, is followed. If that
    /// action calls `tool` itself, its answer is the read. Otherwise the fresh ref is taken from
    /// its answer (`data.target_ref`, or a next action's `target_ref` argument), the hit moved
    /// to where the fresh rows have it (the read's arguments the rows carry too, whatever the
    /// tool names them: the rows agreeing on all of them but one integer, a line say, are the
    /// same hit, and that integer becomes the nearest, the later on a tie), and the read made
    /// again. Stale again, or no recovery to follow: [`ClientError::StaleRef`]. The Python
    /// kit's `read` and `relocate_hit` do the same.
    pub async fn read<T: DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Envelope<T>, ClientError> {
        let mut arguments = object(tool, arguments)?;
        let raw = self.call_raw_retrying(tool, &arguments).await?;
        let first: Envelope<Value> = decoded(tool, &raw)?;
        let Some((code, error)) = stale(&first) else {
            return decoded(tool, &raw);
        };
        let give_up = |why: &str, last: &ToolError| ClientError::StaleRef {
            tool: tool.to_owned(),
            code: code.clone(),
            why: why.to_owned(),
            last: Box::new(last.clone()),
        };
        let recovery = [Role::ResolveTarget, Role::Retry]
            .into_iter()
            .find_map(|role| {
                first
                    .next_actions()
                    .iter()
                    .find(|action| action.role == role)
            });
        let Some(recovery) = recovery else {
            return Err(give_up("the envelope names no recovery", &error));
        };
        let recovered_raw = self.run_action(recovery).await?;
        if recovery.tool == tool {
            // The recovery reads the target another way: its answer is the read.
            return decoded(tool, &recovered_raw);
        }
        let recovered: Envelope<Value> = decoded(&recovery.tool, &recovered_raw)?;
        if let Some(failed) = recovered.error() {
            return Err(give_up("the recovery failed", failed));
        }
        let Some(fresh) = fresh_ref(&recovered) else {
            return Err(give_up("the recovery answered no fresh ref", &error));
        };
        arguments.insert(TARGET_REF_FIELD.to_owned(), Value::String(fresh));
        relocate(&mut arguments, &recovered);
        let raw = self.call_raw_retrying(tool, &arguments).await?;
        let again: Envelope<Value> = decoded(tool, &raw)?;
        if let Some((_, error)) = stale(&again) {
            return Err(give_up(
                "it was stale again after re-resolving once",
                &error,
            ));
        }
        decoded(tool, &raw)
    }

    /// Calls `action` as given, once its tool is listed and its arguments pass the tool's
    /// input schema ([`check_action`]); the structured result.
    pub(crate) async fn run_action(&self, action: &NextAction) -> Result<Value, ClientError> {
        check_action(self.tool(&action.tool), action)?;
        self.call_raw_retrying(&action.tool, &action.arguments)
            .await
    }

    /// The listed tool `name`, or the refusal to call it.
    fn listed(&self, name: &str) -> Result<&Tool, ClientError> {
        self.tool(name).ok_or_else(|| ClientError::NotListed {
            tool: name.to_owned(),
        })
    }

    /// One `tools/call` of a listed tool: its result as it came.
    async fn call_result(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<CallToolResult, ClientError> {
        let listed = self.listed(tool)?;
        let params =
            CallToolRequestParams::new(listed.name.clone()).with_arguments(arguments.clone());
        self.peer
            .call_tool(params)
            .await
            .map_err(|source| ClientError::Service {
                tool: tool.to_owned(),
                source: Box::new(source),
            })
    }

    /// One `tools/call` of a listed tool; its structured content.
    pub(crate) async fn call_raw(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Value, ClientError> {
        let result = self.call_result(tool, arguments).await?;
        envelope_value(&result).map_err(|source| ClientError::Read {
            tool: tool.to_owned(),
            source,
        })
    }

    /// Calls the plain tool `tool` (one whose listing is no envelope's:
    /// [`read::speaks_envelope`](crate::read::speaks_envelope)) once with `arguments`, within
    /// the policy's deadline, and returns its result as it came: nothing in it says whether a
    /// retry could help, so none is made. A tool that speaks the envelope is refused
    /// ([`ClientError::EnvelopeTool`]) before anything is sent: [`Client::call`] reads it.
    pub async fn call_plain(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<CallToolResult, ClientError> {
        if speaks_envelope(self.listed(tool)?) {
            return Err(ClientError::EnvelopeTool {
                tool: tool.to_owned(),
            });
        }
        let arguments = object(tool, arguments)?;
        let deadline = self.policy.deadline;
        tokio::time::timeout(deadline, self.call_result(tool, &arguments))
            .await
            .map_err(|_| ClientError::DeadlineExceeded {
                tool: tool.to_owned(),
                deadline,
                attempts: 1,
                last: None,
            })?
    }

    /// What a caller of a server mixing plain and envelope tools calls: a tool that speaks the
    /// envelope as by [`Client::call`], a plain one as by [`Client::call_plain`]; a
    /// tool listed without an output schema is told by its first answer (an envelope is one that
    /// has `ok`, read and retried as an envelope is; anything else is plain). An answer that
    /// claims to be an envelope but is not the envelope asked for is still
    /// [`ClientError::Decode`], naming the field.
    pub async fn call_any<T: DeserializeOwned>(
        &self,
        tool: &str,
        arguments: Value,
    ) -> Result<Answer<T>, ClientError> {
        let listed = self.listed(tool)?;
        if is_plain(listed) {
            return self.call_plain(tool, arguments).await.map(Answer::Plain);
        }
        if speaks_envelope(listed) {
            return self
                .call(tool, arguments)
                .await
                .map(|envelope| Answer::Envelope(Box::new(envelope)));
        }
        let arguments = object(tool, arguments)?;
        let result = self.call_result(tool, &arguments).await?;
        let Some(first) = envelope_value(&result)
            .ok()
            .filter(|content| content.get(envelope_core::fields::envelope::OK).is_some())
        else {
            return Ok(Answer::Plain(result));
        };
        let raw = self.retry_from(tool, &arguments, Some(first)).await?;
        decoded(tool, &raw).map(|envelope| Answer::Envelope(Box::new(envelope)))
    }

    /// [`Client::call_raw`] under the retry policy.
    pub(crate) async fn call_raw_retrying(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
    ) -> Result<Value, ClientError> {
        self.retry_from(tool, arguments, None).await
    }

    /// The retry loop of [`Client::call_raw_retrying`], its first answer `first` when that call
    /// was made already.
    async fn retry_from(
        &self,
        tool: &str,
        arguments: &Map<String, Value>,
        mut first: Option<Value>,
    ) -> Result<Value, ClientError> {
        self.listed(tool)?;
        let policy = &self.policy;
        let idempotent = self.is_idempotent(tool);
        let deadline = Instant::now() + policy.deadline;
        let past_deadline =
            |attempts: u32, last: Option<&ToolError>| ClientError::DeadlineExceeded {
                tool: tool.to_owned(),
                deadline: policy.deadline,
                attempts,
                last: last.map(|error| Box::new(error.clone())),
            };
        let mut attempts = 0;
        let mut last: Option<ToolError> = None;
        loop {
            attempts += 1;
            let raw = match first.take() {
                Some(raw) => raw,
                None => tokio::time::timeout_at(deadline, self.call_raw(tool, arguments))
                    .await
                    .map_err(|_| past_deadline(attempts, last.as_ref()))??,
            };
            let envelope: Envelope<serde::de::IgnoredAny> = decoded(tool, &raw)?;
            let Some(error) = envelope.error() else {
                return Ok(raw);
            };
            let remaining = deadline.saturating_duration_since(Instant::now());
            let wait = match policy.decide(error, idempotent, attempts, remaining) {
                RetryDecision::Retry(wait) => wait,
                // Not retried, attempts spent included: the failure is the answer.
                RetryDecision::Return(_) => return Ok(raw),
                RetryDecision::RetryAfterPastDeadline(asked) => {
                    return Err(ClientError::RetryAfterPastDeadline {
                        tool: tool.to_owned(),
                        retry_after: asked,
                        remaining,
                        last: Box::new(error.clone()),
                    });
                }
                RetryDecision::PastDeadline => return Err(past_deadline(attempts, Some(error))),
            };
            last = Some(error.clone());
            tokio::time::sleep(wait).await;
        }
    }
}

/// Whether `action` may be sent as given to `listed`, the tool it names as the server lists it
/// (`None` when the listing does not name it): [`ClientError::NotListed`] for a tool not
/// listed, [`ClientError::ActionArguments`] for arguments that fail its listed input schema
/// (the detail names where). What [`Client::follow`] and paging check before sending anything;
/// the kits' shared cases (`clients/cases/follow.json`) hold both kits to it.
pub fn check_action(listed: Option<&Tool>, action: &NextAction) -> Result<(), ClientError> {
    let tool = listed.ok_or_else(|| ClientError::NotListed {
        tool: action.tool.clone(),
    })?;
    let refuse = |detail: String| ClientError::ActionArguments {
        action: action.id.clone(),
        tool: action.tool.clone(),
        detail,
    };
    let schema = Value::Object((*tool.input_schema).clone());
    let validator = jsonschema::validator_for(&schema)
        .map_err(|error| refuse(format!("the input schema does not compile: {error}")))?;
    let arguments = Value::Object(action.arguments.clone());
    match validator.iter_errors(&arguments).next() {
        Some(error) => Err(refuse(format!("{}: {error}", error.instance_path()))),
        None => Ok(()),
    }
}

/// `arguments` as the object a call sends; `null` is none.
fn object(tool: &str, arguments: Value) -> Result<Map<String, Value>, ClientError> {
    match arguments {
        Value::Object(object) => Ok(object),
        Value::Null => Ok(Map::new()),
        _ => Err(ClientError::ArgumentsNotObject {
            tool: tool.to_owned(),
        }),
    }
}

/// `raw` decoded as `tool`'s envelope around a `T`.
pub(crate) fn decoded<T: DeserializeOwned>(
    tool: &str,
    raw: &Value,
) -> Result<Envelope<T>, ClientError> {
    decode(raw).map_err(|source| ClientError::Decode {
        tool: tool.to_owned(),
        source,
    })
}

/// The stale-ref code of `envelope`'s error, and the error, if it says the ref went stale.
fn stale(envelope: &Envelope<Value>) -> Option<(String, ToolError)> {
    let error = envelope.error()?;
    let code = error.code()?;
    STALE_REF_CODES
        .contains(&code)
        .then(|| (code.to_owned(), error.clone()))
}

/// Moves the hit `arguments` read to where `recovered`'s rows have it: see [`Client::read`].
fn relocate(arguments: &mut Map<String, Value>, recovered: &Envelope<Value>) {
    let rows = page_rows(recovered);
    let location: Vec<String> = arguments
        .keys()
        .filter(|key| *key != TARGET_REF_FIELD)
        .filter(|key| rows.iter().any(|row| row.contains_key(key.as_str())))
        .cloned()
        .collect();
    let integer = |value: &Value| value.as_i64().filter(|_| value.is_i64() || value.is_u64());
    let (moving, fixed): (Vec<&String>, Vec<&String>) = location
        .iter()
        .partition(|key| arguments.get(key.as_str()).and_then(integer).is_some());
    let ([key], false) = (moving.as_slice(), fixed.is_empty()) else {
        // No single coordinate to move, or nothing that says which hit is the same one.
        return;
    };
    let Some(at) = arguments.get(key.as_str()).and_then(integer) else {
        return;
    };
    let mut places: Vec<i64> = rows
        .iter()
        .filter(|row| {
            fixed
                .iter()
                .all(|name| row.get(name.as_str()) == arguments.get(name.as_str()))
        })
        .filter_map(|row| row.get(key.as_str()).and_then(integer))
        .collect();
    places.sort_unstable();
    places.dedup();
    if places.is_empty() || places.contains(&at) {
        return;
    }
    if let Some(nearest) = places
        .iter()
        .min_by_key(|place| ((**place - at).abs(), -**place))
    {
        arguments.insert(key.to_string(), Value::from(*nearest));
    }
}

/// The rows of a page: its payload when that is an array, else the list of `data` whose
/// length is `completeness.returned` (the list the completeness describes).
fn page_rows(page: &Envelope<Value>) -> Vec<&Map<String, Value>> {
    fn objects(rows: &[Value]) -> Vec<&Map<String, Value>> {
        rows.iter().filter_map(Value::as_object).collect()
    }
    match page.data() {
        Some(Value::Array(rows)) => objects(rows),
        Some(Value::Object(members)) => {
            let Some(returned) = page
                .completeness()
                .map(|completeness| completeness.returned())
            else {
                return Vec::new();
            };
            members
                .values()
                .find_map(|value| value.as_array().filter(|rows| rows.len() == returned))
                .map(|rows| objects(rows))
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The fresh target ref a recovery answered: its `data.target_ref`, else the `target_ref`
/// argument of one of its next actions.
fn fresh_ref(recovered: &Envelope<Value>) -> Option<String> {
    let text = |value: Option<&Value>| value.and_then(Value::as_str).map(str::to_owned);
    text(recovered.data().and_then(|data| data.get(TARGET_REF_FIELD))).or_else(|| {
        recovered
            .next_actions()
            .iter()
            .find_map(|action| text(action.arguments.get(TARGET_REF_FIELD)))
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A hit is moved by the arguments the read and the fresh rows share, whatever the tool
    /// calls them: here `file` and `row`, not the example server's `path` and `line`.
    #[test]
    fn relocation_names_no_argument_of_its_own() {
        let recovered: Envelope<Value> = serde_json::from_value(json!({
            "ok": true, "verdict": "INFO",
            "data": {"hits": [{"file": "a.txt", "row": 9}, {"file": "b.txt", "row": 4},
                              {"file": "a.txt", "row": 30}]},
            "completeness": {"unit": "item", "returned": 3, "total": 3, "complete": true,
                             "truncated": false},
            "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3},
        }))
        .expect("an envelope");
        let mut arguments = json!({"target_ref": "fresh", "file": "a.txt", "row": 7, "context": 2})
            .as_object()
            .cloned()
            .unwrap_or_default();
        relocate(&mut arguments, &recovered);
        assert_eq!(arguments["row"], 9);
        assert_eq!(arguments["context"], 2);
        let mut kept = json!({"target_ref": "fresh", "file": "b.txt", "row": 4})
            .as_object()
            .cloned()
            .unwrap_or_default();
        relocate(&mut kept, &recovered);
        assert_eq!(kept["row"], 4);
    }
}

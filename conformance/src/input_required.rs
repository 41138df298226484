//! The fixtures that answer in protocol terms the suite defines for itself, served by the rmcp
//! handler rather than the toolset (the envelope server lists them after its own tools and hands
//! their calls on):
//!
//! - SEP-2322's multi-round tool calls (MCP 2026-07-28): the first answer is an
//!   `InputRequiredResult` naming what the client must ask its user, its model or its roots,
//!   and the retry carries the answers (`inputResponses`) and the opaque `requestState`;
//! - `test_missing_capability`, whose answer is the JSON-RPC error `-32021` (a client capability
//!   missing), not a tool result;
//! - the prompt `test_input_required_result_prompt`, SEP-2322 on `prompts/get`.
//!
//! An envelope tool can ask on 2026-07-28 too: its `ToolContext::elicit` and `sample` go across
//! rounds there (the call answers an `InputRequiredResult` keyed `elicit-1`, `sample-1`, …, with
//! a `requestState` envelope-mcp seals and binds to the tool and its arguments). These fixtures
//! stay here all the same, because the suite names its own input keys (`user_name`,
//! `capital_question`, `client_roots`, `step1`, …), asks for roots and for several inputs in one
//! round, and checks `requestState` behaviours (a state echoed as is, a tampered state refused,
//! one state per round) that an author-facing API rightly does not expose. An envelope tool
//! answers `-32021` on 2026-07-28 only once it asked its client in vain (a call that failed
//! `sampling_unavailable` for a capability the client did not declare); the fixture refuses
//! before anything is asked, so it is the handler's to answer too.

use std::sync::Arc;

use serde_json::{Map, Value, json};

use crate::rmcp;
use rmcp::ErrorData;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientCapabilities, ContentBlock,
    GetPromptRequestParams, GetPromptResponse, GetPromptResult, InputRequests, InputRequiredResult,
    InputResponses, JsonObject, Prompt, PromptMessage, RequestMetaObject, RequestStateCodec, Role,
    SealOptions, Tool,
};

/// The prompt that asks for input before it answers.
pub(crate) const PROMPT: &str = "test_input_required_result_prompt";

/// The key the fixtures' `requestState` is sealed with. It is fixed, and written here for anyone
/// to read, so it protects nothing: these states carry no data worth forging (a round number, a
/// word), and a fixed key keeps the fixture deterministic, as rmcp's own conformance server
/// does. The seal still proves what the suite checks, that an altered state is refused. A real
/// server keeps its key secret: envelope-mcp draws one at start-up, or takes one configured.
const FIXTURE_KEY: &[u8; 32] = b"envelope-conformance-fixture-key";

// `new_unchecked` below is then as safe as `try_new`: the key is long enough for the codec.
const _: () = assert!(FIXTURE_KEY.len() >= RequestStateCodec::MIN_KEY_LENGTH);

/// Seals the `requestState` a multi-round call hands the client with rmcp's codec (HMAC-SHA256
/// under [`FIXTURE_KEY`]), bound to the tool it was sealed for, so that the state a client echoes
/// is acted on only if this server sealed it for that tool.
#[derive(Clone)]
pub(crate) struct Seal {
    codec: RequestStateCodec,
}

impl Default for Seal {
    fn default() -> Self {
        Seal {
            codec: RequestStateCodec::new_unchecked(FIXTURE_KEY.to_vec()),
        }
    }
}

impl Seal {
    /// `state`, sealed for a call of `tool`.
    fn seal(&self, tool: &str, state: &str) -> String {
        self.codec.seal_with(
            state.as_bytes(),
            &SealOptions::new().associated_data(tool.as_bytes()),
        )
    }

    /// The state `sealed` holds, if this server sealed it for a call of `tool`; `None` if it
    /// was altered, or sealed for another tool (or by another key).
    fn open(&self, tool: &str, sealed: &str) -> Option<String> {
        let state = self.codec.open_with(sealed, tool.as_bytes()).ok()?;
        String::from_utf8(state).ok()
    }
}

/// The answer to a retry whose `requestState` was not this server's.
fn tampered() -> ErrorData {
    ErrorData::invalid_params("requestState failed integrity verification", None)
}

/// The tools served here, each with a description and an object schema.
pub(crate) fn tools() -> Vec<Tool> {
    let no_arguments = || {
        let mut schema = JsonObject::new();
        schema.insert("type".into(), json!("object"));
        schema.insert("properties".into(), json!({}));
        Arc::new(schema)
    };
    [
        ("test_missing_capability", "Requires the client's sampling capability: without it, answers the JSON-RPC error -32021"),
        ("test_streaming_elicitation", "Asks for a value the SEP-2322 way (an InputRequiredResult), never by a request on the response stream"),
        ("test_input_required_result_elicitation", "Asks the user's name (SEP-2322), then greets them"),
        ("test_input_required_result_sampling", "Asks the client's model a question (SEP-2322), then says its answer"),
        ("test_input_required_result_list_roots", "Asks the client's roots (SEP-2322), then lists them"),
        ("test_input_required_result_request_state", "Asks for a confirmation, with a sealed requestState to echo (SEP-2322)"),
        ("test_input_required_result_tampered_state", "As test_input_required_result_request_state: a requestState not its own is refused"),
        ("test_input_required_result_multiple_inputs", "Asks for an elicitation, a sampling and the roots at once (SEP-2322)"),
        ("test_input_required_result_multi_round", "Asks in two rounds, each with its own requestState (SEP-2322)"),
        ("test_input_required_result_capabilities", "Asks only for what the client declared it can answer (SEP-2322)"),
    ]
    .into_iter()
    .map(|(name, description)| Tool::new(name, description, no_arguments()))
    .collect()
}

/// The prompt served here.
pub(crate) fn prompt() -> Prompt {
    Prompt::new(
        PROMPT,
        Some("A prompt that asks for its context first (SEP-2322's InputRequiredResult)"),
        None,
    )
}

/// An input request, as the wire has it (`method` and `params`).
type Asked = (&'static str, Value);

fn elicitation(message: &str, properties: Value, required: &[&str]) -> Value {
    // wire: an `elicitation/create` request of MCP's form mode
    json!({
        "method": "elicitation/create",
        "params": {
            "mode": "form",
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties, "required": required }
        }
    })
}

fn sampling(prompt: &str) -> Value {
    // wire: a `sampling/createMessage` request
    json!({
        "method": "sampling/createMessage",
        "params": {
            "messages": [{ "role": "user", "content": { "type": "text", "text": prompt } }],
            "maxTokens": 100
        }
    })
}

fn list_roots() -> Value {
    json!({ "method": "roots/list", "params": {} }) // wire: a `roots/list` request
}

/// An elicitation of one string, the form's only field `field`.
fn ask_text(message: &str, field: &str) -> Value {
    elicitation(message, json!({ field: { "type": "string" } }), &[field])
}

fn ask_name() -> Value {
    ask_text("What is your name?", "name")
}

/// An `InputRequiredResult` asking for `asked`, with `state` if any.
fn input_required(
    asked: Vec<Asked>,
    state: Option<String>,
) -> Result<InputRequiredResult, ErrorData> {
    let requests: Map<String, Value> = asked
        .into_iter()
        .map(|(key, request)| (key.to_owned(), request))
        .collect();
    let requests: InputRequests = serde_json::from_value(Value::Object(requests))
        .map_err(|error| ErrorData::internal_error(format!("an input request: {error}"), None))?;
    Ok(InputRequiredResult::new(Some(requests), state))
}

/// The client's answer to the input request `key`, when it sent one that is an object (a bare
/// value counts as no answer: the input is asked again).
fn answer<'a>(responses: Option<&'a InputResponses>, key: &str) -> Option<&'a Map<String, Value>> {
    responses?.get(key)?.as_object()
}

/// The string `field` of an answer's `content`, when the client sent one.
fn content_text<'a>(answer: &'a Map<String, Value>, field: &str) -> Option<&'a str> {
    answer.get("content")?.get(field)?.as_str()
}

fn text(line: impl Into<String>) -> CallToolResponse {
    CallToolResult::success(vec![ContentBlock::text(line)]).into()
}

/// `test_missing_capability`: the error `-32021` unless the client declared sampling.
#[allow(deprecated)] // sampling is deprecated by SEP-2577; this fixture is about declaring it
fn missing_capability(meta: &RequestMetaObject) -> Result<CallToolResponse, ErrorData> {
    if meta
        .client_capabilities()
        .unwrap_or_default()
        .sampling
        .is_none()
    {
        return Err(ErrorData::missing_required_client_capability(
            ClientCapabilities::builder().enable_sampling().build(),
        ));
    }
    Ok(text("The client declared sampling."))
}

/// The call of `request`, if it names a tool served here; `meta` is the request's `_meta`.
pub(crate) fn call(
    seal: &Seal,
    request: &CallToolRequestParams,
    meta: &RequestMetaObject,
) -> Option<Result<CallToolResponse, ErrorData>> {
    let tool = &*request.name;
    let responses = request.input_responses.as_ref();
    let state = request.request_state.as_deref();
    Some(match tool {
        "test_missing_capability" => missing_capability(meta),
        "test_streaming_elicitation" => streaming_elicitation(),
        "test_input_required_result_elicitation" => greeting(responses),
        "test_input_required_result_sampling" => model_answer(responses),
        "test_input_required_result_list_roots" => client_roots(responses),
        "test_input_required_result_request_state"
        | "test_input_required_result_tampered_state" => confirmation(seal, tool, state),
        "test_input_required_result_multiple_inputs" => {
            multiple_inputs(seal, tool, responses, state)
        }
        "test_input_required_result_multi_round" => multi_round(seal, tool, state),
        "test_input_required_result_capabilities" => declared_capabilities(responses, meta),
        _ => return None,
    })
}

/// The answer asking for `asked`, with `state` if any: an `InputRequiredResult` as a call's
/// response.
fn ask(asked: Vec<Asked>, state: Option<String>) -> Result<CallToolResponse, ErrorData> {
    input_required(asked, state).map(CallToolResponse::from)
}

/// `test_streaming_elicitation`: a value asked the SEP-2322 way, in the answer.
fn streaming_elicitation() -> Result<CallToolResponse, ErrorData> {
    ask(
        vec![(
            "streaming_elicitation",
            ask_text("Provide a value", "value"),
        )],
        None,
    )
}

/// `test_input_required_result_elicitation`: the user's name asked, then greeted.
fn greeting(responses: Option<&InputResponses>) -> Result<CallToolResponse, ErrorData> {
    match answer(responses, "user_name") {
        Some(answer) => {
            let name = content_text(answer, "name").unwrap_or("friend");
            Ok(text(format!("Hello, {name}!")))
        }
        None => ask(vec![("user_name", ask_name())], None),
    }
}

/// `test_input_required_result_sampling`: the client's model asked a question, then its answer
/// said.
fn model_answer(responses: Option<&InputResponses>) -> Result<CallToolResponse, ErrorData> {
    match answer(responses, "capital_question") {
        Some(answer) => {
            let said = content_text(answer, "text").unwrap_or("(no text)");
            Ok(text(format!("The model said: {said}")))
        }
        None => ask(
            vec![(
                "capital_question",
                sampling("What is the capital of France?"),
            )],
            None,
        ),
    }
}

/// `test_input_required_result_list_roots`: the client's roots asked, then listed.
fn client_roots(responses: Option<&InputResponses>) -> Result<CallToolResponse, ErrorData> {
    match answer(responses, "client_roots") {
        Some(answer) => {
            let roots: Vec<&str> = answer
                .get("roots")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|root| root.get("uri").and_then(Value::as_str))
                .collect();
            Ok(text(format!("The client's roots: [{}]", roots.join(", "))))
        }
        None => ask(vec![("client_roots", list_roots())], None),
    }
}

/// `test_input_required_result_request_state` and `…_tampered_state`: a confirmation asked
/// with a sealed `requestState`, and the retry acted on only if that state comes back intact.
fn confirmation(
    seal: &Seal,
    tool: &str,
    state: Option<&str>,
) -> Result<CallToolResponse, ErrorData> {
    match state {
        None => ask(
            vec![(
                "confirm",
                elicitation(
                    "Please confirm",
                    json!({ "ok": { "type": "boolean" } }),
                    &["ok"],
                ),
            )],
            Some(seal.seal(tool, "confirm")),
        ),
        // The echoed state is the client's input: acted on only once its seal holds.
        Some(sealed) => match seal.open(tool, sealed) {
            Some(_) => Ok(text("Confirmed: the state was this server's.")),
            None => Err(tampered()),
        },
    }
}

/// `test_input_required_result_multiple_inputs`: an elicitation, a sampling and the roots asked
/// in one round, until all three come back with this server's state.
fn multiple_inputs(
    seal: &Seal,
    tool: &str,
    responses: Option<&InputResponses>,
    state: Option<&str>,
) -> Result<CallToolResponse, ErrorData> {
    if let Some(sealed) = state
        && seal.open(tool, sealed).is_none()
    {
        return Err(tampered());
    }
    let all = ["user_name", "greeting", "client_roots"]
        .iter()
        .all(|key| answer(responses, key).is_some());
    if all && state.is_some() {
        Ok(text("All three inputs received."))
    } else {
        ask(
            vec![
                ("user_name", ask_name()),
                ("greeting", sampling("Generate a greeting")),
                ("client_roots", list_roots()),
            ],
            Some(seal.seal(tool, "gather")),
        )
    }
}

/// `test_input_required_result_multi_round`: two rounds, each with its own sealed round number.
fn multi_round(
    seal: &Seal,
    tool: &str,
    state: Option<&str>,
) -> Result<CallToolResponse, ErrorData> {
    let round = match state.map(|sealed| seal.open(tool, sealed)) {
        None => "0".to_owned(),
        Some(Some(round)) => round,
        Some(None) => return Err(tampered()),
    };
    match round.as_str() {
        "0" => ask(
            vec![("step1", ask_text("Step 1: What is your name?", "name"))],
            Some(seal.seal(tool, "1")),
        ),
        "1" => ask(
            vec![(
                "step2",
                ask_text("Step 2: What is your favorite color?", "color"),
            )],
            Some(seal.seal(tool, "2")),
        ),
        _ => Ok(text("Both rounds done.")),
    }
}

/// `test_input_required_result_capabilities`: only what the client declared it can answer is
/// asked, once.
fn declared_capabilities(
    responses: Option<&InputResponses>,
    meta: &RequestMetaObject,
) -> Result<CallToolResponse, ErrorData> {
    if responses.is_some() {
        return Ok(text("Done with what the client could answer."));
    }
    // Only what the client declared it can answer is asked.
    let capabilities = meta.client_capabilities().unwrap_or_default();
    let mut wanted = Vec::new();
    if capabilities.elicitation.is_some() {
        wanted.push(("user_name", ask_name()));
    }
    if capabilities.sampling.is_some() {
        wanted.push(("greeting", sampling("Generate a greeting")));
    }
    if capabilities.roots.is_some() {
        wanted.push(("client_roots", list_roots()));
    }
    if wanted.is_empty() {
        Ok(text("The client declared nothing to ask with."))
    } else {
        ask(wanted, None)
    }
}

/// `prompts/get` of [`PROMPT`]: its context asked first, then the prompt built from it.
pub(crate) fn get_prompt(request: &GetPromptRequestParams) -> Result<GetPromptResponse, ErrorData> {
    match answer(request.input_responses.as_ref(), "user_context") {
        Some(answer) => {
            let context = content_text(answer, "context").unwrap_or("(no context)");
            Ok(GetPromptResult::new(vec![PromptMessage::new_text(
                Role::User,
                format!("Prompt with elicited context: {context}"),
            )])
            .into())
        }
        None => input_required(
            vec![(
                "user_context",
                ask_text("What context should the prompt use?", "context"),
            )],
            None,
        )
        .map(GetPromptResponse::from),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sealed_state_opens_only_unaltered_and_for_its_tool() {
        let seal = Seal::default();
        let tool = "test_input_required_result_multi_round";
        let sealed = seal.seal(tool, "1");
        assert_eq!(seal.open(tool, &sealed).as_deref(), Some("1"));
        assert_eq!(seal.open(tool, &format!("{sealed}-TAMPERED")), None);
        assert_eq!(
            seal.open(tool, "confirm"),
            None,
            "not a sealed state at all"
        );
        assert_eq!(
            seal.open("test_input_required_result_request_state", &sealed),
            None,
            "sealed for another tool"
        );
        let other = Seal {
            codec: RequestStateCodec::new_unchecked([7_u8; 32].to_vec()),
        };
        assert_eq!(other.open(tool, &sealed), None, "another key");
    }

    #[test]
    fn a_tampered_retry_is_a_json_rpc_error() {
        let seal = Seal::default();
        let tool = "test_input_required_result_tampered_state";
        let first = CallToolRequestParams::new(tool);
        let meta = RequestMetaObject::default();
        let Some(Ok(CallToolResponse::InputRequired(asked))) = call(&seal, &first, &meta) else {
            panic!("the first call asks for input");
        };
        let state = asked.request_state.expect("a sealed state");
        let retry = |state: String| call(&seal, &first.clone().with_request_state(state), &meta);
        assert!(matches!(retry(state.clone()), Some(Ok(_))));
        let tampered = retry(format!("{state}-TAMPERED"));
        assert!(matches!(tampered, Some(Err(error)) if error.message.contains("integrity")));
    }

    #[test]
    fn every_input_request_is_one_rmcp_reads() {
        let asked = vec![
            ("user_name", ask_name()),
            ("greeting", sampling("hi")),
            ("client_roots", list_roots()),
        ];
        assert!(input_required(asked, None).is_ok());
    }
}

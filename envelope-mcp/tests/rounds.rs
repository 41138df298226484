//! A tool asking its client on MCP 2026-07-28, over streamable HTTP as a 2026 client sends it
//! (no `initialize`, no session; each request names its revision, client and capabilities in
//! `_meta`): the call answers an `InputRequiredResult`, the client calls again with the answers
//! and the `requestState`, and the tool's envelope comes back. Earlier answers travel sealed in
//! the state; an altered state is refused.

mod common;

use common::raw_http::{http_exchange, post, serve_on_loopback};
use envelope_core::{Elicited, LogLevel, ToolContext, ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Name {
    /// Your name.
    name: String,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Confirm {
    /// Go on?
    ok: bool,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct GreetArgs {
    /// How to greet.
    greeting: String,
}

/// Asks a name, then a confirmation, then greets.
#[tool(tier = lite)]
async fn greet(ctx: &ToolContext, args: GreetArgs) -> ToolResult<Value> {
    ctx.log(LogLevel::Info, json!({ "asking": "name" }));
    let Elicited::Accepted(Name { name }) = ctx.elicit::<Name>("What is your name?").await? else {
        return Ok(json!({ "greeted": false }));
    };
    let confirmed = ctx.elicit::<Confirm>(format!("Greet {name}?")).await?;
    Ok(match confirmed {
        Elicited::Accepted(Confirm { ok: true }) => {
            json!({ "greeted": true, "text": format!("{}, {name}!", args.greeting) })
        }
        _ => json!({ "greeted": false }),
    })
}

/// Asks under a name of its own, twice: a name, then whether to go on.
#[tool(tier = lite)]
async fn greet_named(ctx: &ToolContext) -> ToolResult<Value> {
    let asking = ctx.asking_as("who");
    let Elicited::Accepted(Name { name }) = asking.elicit::<Name>("What is your name?").await?
    else {
        return Ok(json!({ "greeted": false }));
    };
    let confirmed = asking.elicit::<Confirm>(format!("Greet {name}?")).await?;
    Ok(json!({ "greeted": matches!(confirmed, Elicited::Accepted(Confirm { ok: true })) }))
}

fn server() -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![greet, greet_named],
        EnvelopeConfig::new("rounds", "0.0.0").with_round_key([5; 32]),
    )
}

/// One 2026 `tools/call` of `greet`: the JSON-RPC answer.
async fn call(
    addr: std::net::SocketAddr,
    capabilities: Value,
    input_responses: Option<Value>,
    request_state: Option<&str>,
) -> Value {
    call_tool(addr, "greet", capabilities, input_responses, request_state).await
}

/// One 2026 `tools/call` of `tool`: the JSON-RPC answer.
async fn call_tool(
    addr: std::net::SocketAddr,
    tool: &str,
    capabilities: Value,
    input_responses: Option<Value>,
    request_state: Option<&str>,
) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": { "greeting": "Hello" },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "rounds-test", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": capabilities,
        },
    });
    if let Some(responses) = input_responses {
        params["inputResponses"] = responses;
    }
    if let Some(state) = request_state {
        params["requestState"] = json!(state);
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let extra = format!(
        "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: {tool}\r\nconnection: close\r\n"
    );
    let (head, body) = http_exchange(addr, post(addr, None, &extra, &body), |body| {
        body.contains("\"id\":1")
    })
    .await;
    let message = body
        .lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str::<Value>(data.trim()).ok())
        .find(|message| message.get("id").is_some())
        .or_else(|| serde_json::from_str(&body).ok());
    message.unwrap_or_else(|| panic!("an answer: {head}\n{body}"))
}

fn accept(content: Value) -> Value {
    json!({ "action": "accept", "content": content })
}

#[tokio::test]
async fn a_tool_asks_across_rounds_and_answers_its_envelope() {
    let addr = serve_on_loopback(server()).await;
    let asks = json!({ "elicitation": {} });

    let first = call(addr, asks.clone(), None, None).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let request = &result["inputRequests"]["elicit-1"];
    assert_eq!(request["method"], "elicitation/create", "{first}");
    assert_eq!(request["params"]["message"], "What is your name?");
    assert_eq!(
        request["params"]["requestedSchema"]["properties"]["name"]["type"],
        "string"
    );
    let state = result["requestState"]
        .as_str()
        .expect("a sealed state")
        .to_owned();

    // The second round: the name answered, the confirmation asked.
    let responses = json!({ "elicit-1": accept(json!({ "name": "Ada" })) });
    let second = call(addr, asks.clone(), Some(responses), Some(&state)).await;
    let result = &second["result"];
    assert_eq!(result["resultType"], "input_required", "{second}");
    assert_eq!(
        result["inputRequests"]["elicit-2"]["params"]["message"], "Greet Ada?",
        "{second}"
    );
    assert!(
        result["inputRequests"].get("elicit-1").is_none(),
        "answered once: {second}"
    );
    let state = result["requestState"]
        .as_str()
        .expect("a new state")
        .to_owned();

    // The last: only the last round's answer is sent; the name comes from the state.
    let responses = json!({ "elicit-2": accept(json!({ "ok": true })) });
    let last = call(addr, asks, Some(responses), Some(&state)).await;
    let envelope = &last["result"]["structuredContent"];
    assert_eq!(envelope["ok"], true, "{last}");
    assert_eq!(
        envelope["data"],
        json!({ "greeted": true, "text": "Hello, Ada!" }),
        "{last}"
    );
}

#[tokio::test]
async fn an_altered_or_borrowed_state_is_refused() {
    let addr = serve_on_loopback(server()).await;
    let asks = json!({ "elicitation": {} });
    let first = call(addr, asks.clone(), None, None).await;
    let state = first["result"]["requestState"]
        .as_str()
        .expect("state")
        .to_owned();
    let responses = json!({ "elicit-1": accept(json!({ "name": "Ada" })) });

    let tampered = format!("{state}x");
    let refused = call(addr, asks.clone(), Some(responses.clone()), Some(&tampered)).await;
    assert_eq!(refused["error"]["code"], -32602, "{refused}");

    // A state sealed by another server (another key) is refused too.
    let other = EnvelopeServer::new(
        toolset![greet],
        EnvelopeConfig::new("rounds", "0.0.0").with_round_key([6; 32]),
    );
    let other = serve_on_loopback(other).await;
    let borrowed = call(other, asks, Some(responses), Some(&state)).await;
    assert_eq!(borrowed["error"]["code"], -32602, "{borrowed}");
}

#[tokio::test]
async fn a_client_that_did_not_declare_elicitation_is_told_the_capability_it_lacks() {
    // On 2026-07-28 a capability the client did not declare is its error, as the protocol
    // spells it (SEP-2575): JSON-RPC -32021 naming it, not a tool result.
    let addr = serve_on_loopback(server()).await;
    let answer = call(addr, json!({}), None, None).await;
    assert_eq!(answer["error"]["code"], -32021, "{answer}");
    assert_eq!(
        answer["error"]["data"]["requiredCapabilities"],
        json!({ "elicitation": {} }),
        "{answer}"
    );
    assert!(answer.get("result").is_none(), "{answer}");
}

/// The keys an `InputRequiredResult` asks under, and its state.
fn asked(answer: &Value) -> (Vec<String>, String) {
    let result = &answer["result"];
    let keys = result["inputRequests"]
        .as_object()
        .map(|asks| asks.keys().cloned().collect())
        .unwrap_or_default();
    let state = result["requestState"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    (keys, state)
}

#[tokio::test]
async fn a_tool_asks_under_keys_of_its_own_each_once() {
    let addr = serve_on_loopback(server()).await;
    let asks = json!({ "elicitation": {} });
    let first = call_tool(addr, "greet_named", asks.clone(), None, None).await;
    let (keys, state) = asked(&first);
    assert_eq!(keys, ["who"], "{first}");

    // The same key asked again in the run is made unique, the same way every run.
    let responses = json!({ "who": accept(json!({ "name": "Ada" })) });
    let second = call_tool(
        addr,
        "greet_named",
        asks.clone(),
        Some(responses),
        Some(&state),
    )
    .await;
    let (keys, state) = asked(&second);
    assert_eq!(keys, ["who-2"], "{second}");

    let responses = json!({ "who-2": accept(json!({ "ok": true })) });
    let last = call_tool(addr, "greet_named", asks, Some(responses), Some(&state)).await;
    assert_eq!(
        last["result"]["structuredContent"]["data"],
        json!({ "greeted": true }),
        "{last}"
    );
}

//! A client on MCP 2026-07-28 through the proxy, in front of an upstream on an earlier
//! revision that asks its client for a completion while a call runs. The 2026 client cannot be
//! asked mid-call: the call answers `InputRequiredResult`, the upstream's request is answered
//! (with an error) as the call ends rather than left waiting, and on the next round the
//! upstream, asked again, gets the client's answer.

mod common;

use common::raw_http;

use std::net::SocketAddr;

use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::{EnvelopeConfig, HttpConfig};
use envelope_proxy::Proxy;
use serde_json::{Value, json};

/// The proxy in front of the fixture, over streamable HTTP (stateless, JSON answers).
async fn serve() -> (Proxy, SocketAddr) {
    let serving = EnvelopeConfig::new("proxy-rounds", "1.0.0")
        .with_continuations(Continuations::new(ContinuationKey::new(1, [3; 32])))
        .with_round_key([4; 32]);
    let proxy = common::fronting_the_fixture(serving).await;
    let http = HttpConfig::default()
        .with_stateless(true)
        .with_json_response(true);
    let addr = raw_http::serve_on_loopback_with(proxy.server().clone(), http).await;
    (proxy, addr)
}

/// A 2026 `tools/call` of `tool` with `params` added (`inputResponses`, `requestState`), from a
/// client that declared sampling: the JSON-RPC answer.
async fn call(addr: SocketAddr, tool: &str, arguments: Value, extra: Value) -> Value {
    let mut params = json!({
        "name": tool,
        "arguments": arguments,
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "rounds-test", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": { "sampling": {} },
        },
    });
    if let (Some(params), Value::Object(extra)) = (params.as_object_mut(), extra) {
        params.extend(extra);
    }
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params });
    let headers = format!(
        "mcp-protocol-version: 2026-07-28\r\nmcp-method: tools/call\r\nmcp-name: {tool}\r\n\
         connection: close\r\n"
    );
    let request = raw_http::post(addr, None, &headers, &body);
    let (_, body) = raw_http::http_exchange(addr, request, |_| false).await;
    serde_json::from_str(&body).unwrap_or_else(|_| panic!("JSON: {body}"))
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstreams_request_of_a_2026_client_is_asked_across_rounds() {
    let (_proxy, addr) = serve().await;
    let asks = json!({ "what": "sample" });
    let first = call(addr, "ask", asks.clone(), json!({})).await;
    let result = &first["result"];
    assert_eq!(result["resultType"], "input_required", "{first}");
    let asked = &result["inputRequests"]["sample-1"];
    assert_eq!(asked["method"], "sampling/createMessage", "{first}");
    assert_eq!(
        asked["params"]["messages"][0]["content"]["text"], "Say hi.",
        "{first}"
    );
    let state = result["requestState"].as_str().expect("a state").to_owned();

    // The answer, on the next round: the upstream asks again, and is answered this time.
    let answered = json!({
        "role": "assistant",
        "content": { "type": "text", "text": "hi" },
        "model": "round-model",
    });
    let last = call(
        addr,
        "ask",
        asks,
        json!({ "inputResponses": { "sample-1": answered }, "requestState": state }),
    )
    .await;
    let envelope = &last["result"]["structuredContent"];
    assert_eq!(envelope["ok"], true, "{last}");
    assert_eq!(envelope["data"]["model"], "round-model", "{last}");
    assert_eq!(envelope["data"]["content"]["text"], "hi", "{last}");

    // The upstream's first request was answered as its call ended, not left waiting.
    let told = call(addr, "remembers", json!({}), json!({})).await;
    let answered = &told["result"]["structuredContent"]["data"]["answered"];
    assert_eq!(
        answered,
        &json!([
            "the call that caused this request ended before its client answered",
            "result"
        ]),
        "{told}"
    );
}

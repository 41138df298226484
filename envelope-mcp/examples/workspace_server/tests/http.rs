//! The example over streamable HTTP: its tools and the request id echoed, request size and
//! session count bounded by the server, and a JSON-RPC answer to every body that is no message.

mod common;

use std::sync::Arc;
use std::time::Duration;

use envelope_core::RequestId;
use envelope_core::paging::Continuations;
use envelope_mcp::EnvelopeServer;
use serde_json::{Value, json};

use common::raw_http::{
    header, http_exchange, initialize, initialized, open_session, post, serve_on_loopback,
    sse_result,
};
use common::tree::{Tree, test_key};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamable_http_serves_the_tools_and_echoes_the_request_id() {
    let tree = Tree::new("http");
    let addr = serve_on_loopback(tree.server()).await;

    let (session, body) = initialize(addr).await;
    assert!(body.contains("workspace_server"), "{body}");
    // Served over HTTP, the server advertises that too, before any call.
    let capabilities = &sse_result(&body)["_meta"]["rs.envelope/capabilities"];
    assert!(
        capabilities
            .as_array()
            .is_some_and(|tags| tags.contains(&json!("streamable_http"))),
        "{body}"
    );
    initialized(addr, &session).await;

    let request_id = RequestId::new();
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {"limit": 1, "response_mode": "full"}}
    });
    let extra = format!("x-request-id: {request_id}\r\n");
    let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert_eq!(header(&head, "x-request-id"), Some(request_id.as_str()));
    let envelope = sse_result(&body)["structuredContent"].clone();
    assert_eq!(envelope["ok"], true, "{envelope:#}");
    assert_eq!(envelope["data"]["files"], json!(["README.md"]));
    assert_eq!(envelope["meta"]["request_id"], request_id.as_str());
    assert!(
        envelope["meta"]["capabilities"]
            .as_array()
            .expect("capabilities")
            .contains(&json!("streamable_http"))
    );

    // A gateway's UUID is no ULID, but it is kept for log correlation: echoed, and stamped
    // beside the envelope's own ULID.
    let uuid = "6f1c2a8e-3b7d-4c55-9e0a-1d2f3a4b5c6d";
    let extra = format!("x-request-id: {uuid}\r\n");
    let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert_eq!(header(&head, "x-request-id"), Some(uuid));
    let result = sse_result(&body);
    let meta = &result["structuredContent"]["meta"];
    assert_eq!(meta["client_request_id"], uuid);
    let own = meta["request_id"].as_str().expect("a request id");
    assert!(RequestId::parse(own).is_ok(), "{meta}");
    assert_eq!(result["_meta"]["rs.envelope/client_request_id"], uuid);
    assert_eq!(result["_meta"]["rs.envelope/request_id"], own);

    // What is unsafe to log is replaced by a fresh ULID, which is echoed.
    for unsafe_id in ["tab\tinside", &"x".repeat(129)] {
        let extra = format!("x-request-id: {unsafe_id}\r\n");
        let (head, body) = http_exchange(addr, post(addr, Some(&session), &extra, &call), |body| {
            body.contains("structuredContent")
        })
        .await;
        let result = sse_result(&body);
        let meta = &result["structuredContent"]["meta"];
        assert!(meta.get("client_request_id").is_none(), "{meta}");
        assert_eq!(header(&head, "x-request-id"), meta["request_id"].as_str());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_refuses_oversized_requests_and_sessions_past_the_cap() {
    // Regression test for #12: request size and session count were bounded only by the client.
    let tree = Tree::new("http-limits");
    let workspace =
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory");
    let server = EnvelopeServer::new(
        envelope_core::toolset![workspace_server::tools::list_files],
        envelope_mcp::EnvelopeConfig::new("limits", "1")
            .with_state(Arc::new(workspace))
            .with_continuations(Continuations::new(test_key()))
            .with_max_request_bytes(2_048)
            .with_max_sessions(1)
            .with_call_timeout(Some(Duration::from_millis(100)))
            .with_session_idle_timeout(Duration::from_millis(500)),
    );
    let addr = serve_on_loopback(server).await;
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "limits-test", "version": "0"}
        }
    });

    // Too large, with a declared length and streamed in chunks: 413 either way.
    let mut big = initialize.clone();
    big["params"]["clientInfo"]["name"] = json!("x".repeat(4_000));
    let (head, _) = http_exchange(addr, post(addr, None, "", &big), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    let body = big.to_string();
    let chunked = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n\
         {:x}\r\n{body}\r\n0\r\n\r\n",
        body.len()
    );
    let (head, _) = http_exchange(addr, chunked, |_| true).await;
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");

    // The first session opens; a second is refused while it lives; the first still works.
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let session = header(&head, "mcp-session-id")
        .expect("a session")
        .to_owned();
    let (head, _) = http_exchange(addr, post(addr, None, "", &initialize), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert_eq!(header(&head, "retry-after"), Some("30"));
    // What opens no session is not refused for the cap.
    let outside = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = http_exchange(addr, post(addr, None, "", &outside), |_| true).await;
    assert!(!head.starts_with("HTTP/1.1 503"), "{head}");
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let (head, _) = http_exchange(addr, post(addr, Some(&session), "", &initialized), |_| {
        false
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 202"), "{head}");
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "list_files", "arguments": {}}
    });
    let (head, body) = http_exchange(addr, post(addr, Some(&session), "", &call), |body| {
        body.contains("structuredContent")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let envelope = &sse_result(&body)["structuredContent"];
    assert_eq!(envelope["ok"], true, "{envelope}");
    // Idle past its timeout (never shorter than the call timeout plus a second), the session
    // is closed and its slot freed: a new one opens, and the old one is gone (`404`, so its
    // client opens another).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
    let (head, _) = http_exchange(addr, post(addr, Some(&session), "", &call), |_| true).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_http_body_that_is_no_message_gets_a_json_rpc_answer() {
    // Regression test for #12: rmcp answered these with a plain-text `415`.
    let tree = Tree::new("http-bodies");
    let addr = serve_on_loopback(tree.server()).await;
    let session = open_session(addr).await;
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let cases: [(&[u8], i64, Value); 7] = [
        (b"not json", envelope_mcp::PARSE_ERROR, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":2,"method":"tools/li"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":3,"x":NaN}"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            br#"{"jsonrpc":"2.0","id":4,"x":1e400}"#,
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (
            b"{\"jsonrpc\":\"2.0\",\"id\":5,\"x\":\"\xff\"}",
            envelope_mcp::PARSE_ERROR,
            Value::Null,
        ),
        (deep.as_bytes(), envelope_mcp::PARSE_ERROR, Value::Null),
        (
            br#"{"jsonrpc":"2.0","id":7,"method":42}"#,
            envelope_mcp::INVALID_REQUEST,
            json!(7),
        ),
    ];
    for (body, code, id) in cases {
        let mut request = format!(
            "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
             accept: application/json, text/event-stream\r\nmcp-session-id: {session}\r\n\
             content-length: {}\r\n\r\n",
            body.len()
        )
        .into_bytes();
        request.extend_from_slice(body);
        let (head, answer) = http_exchange(addr, request, |body| body.contains('}')).await;
        assert!(head.starts_with("HTTP/1.1 400"), "{head}");
        let answer: Value = serde_json::from_str(&answer).expect("a JSON-RPC answer");
        assert_eq!(answer["error"]["code"], code, "{answer}");
        assert_eq!(answer["id"], id, "{answer}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_size_above_rmcps_own_limit_is_honoured_over_http() {
    // Regression test for #12 (review): rmcp's own 4 MiB body limit answered first.
    let tree = Tree::new("http-large");
    let workspace =
        workspace_server::Workspace::open(&tree.root).expect("the fixture is a directory");
    let server = EnvelopeServer::new(
        envelope_core::toolset![workspace_server::tools::list_files],
        envelope_mcp::EnvelopeConfig::new("large", "1")
            .with_state(Arc::new(workspace))
            .with_max_request_bytes(8 << 20),
    );
    let addr = serve_on_loopback(server).await;
    let mut initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "large-test", "version": "0"}
        }
    });
    initialize["params"]["clientInfo"]["title"] = json!("t".repeat(5 << 20));
    let (head, body) = http_exchange(addr, post(addr, None, "", &initialize), |body| {
        body.contains("\"result\"")
    })
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}\n{body}");
}

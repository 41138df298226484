//! Calling a tool of the server and reading its envelope.

use envelope_mcp::EnvelopeServer;
use serde_json::Value;

pub(crate) async fn call(server: &EnvelopeServer, tool: &str, arguments: Value) -> Value {
    server
        .call(tool, arguments)
        .await
        .expect("a tool of this server")
        .structured
}

pub(crate) fn error_of(envelope: &Value) -> (&str, &Value) {
    assert_eq!(envelope["ok"], false, "{envelope:#}");
    assert_eq!(envelope["verdict"], "ERROR", "{envelope:#}");
    let category = envelope["error"]["category"]
        .as_str()
        .expect("an error has a category");
    assert!(envelope["error"]["retryable"].is_boolean(), "{envelope:#}");
    (category, &envelope["error"]["data"]["field"])
}

//! JSON-RPC's own error codes, which every transport answers with, and what a transport reads of
//! a message's text before rmcp parses it: the lowest module, named by the transports and the
//! server and never naming them.

use serde::Deserialize as _;

/// JSON-RPC's "parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;

/// JSON-RPC's "invalid request": not a message, or too large to read.
pub const INVALID_REQUEST: i64 = -32600;

/// A request extension: the per-call control a `tools/call`'s text named twice in its
/// arguments, which the parsed arguments no longer show. The transport that read the text sets
/// it; the server refuses the call before its tool runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct ControlGivenTwice(pub(crate) &'static str);

impl ControlGivenTwice {
    /// What the text `bytes` of `request` names twice, if it is a `tools/call` that does.
    pub(crate) fn of(
        request: &rmcp::model::ClientRequest,
        bytes: &[u8],
    ) -> Option<ControlGivenTwice> {
        matches!(request, rmcp::model::ClientRequest::CallToolRequest(_))
            .then(|| envelope_core::first_control_twice_in_params(bytes))
            .flatten()
            .map(ControlGivenTwice)
    }
}

/// The members of a message that say what kind it is, read without building anything else.
#[derive(serde::Deserialize)]
struct Shape<'a> {
    #[serde(borrow)]
    method: Option<std::borrow::Cow<'a, str>>,
    id: Option<rmcp::model::RequestId>,
    jsonrpc: Option<rmcp::model::JsonRpcVersion2_0>,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    error: bool,
}

/// Whether a member is there at all, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(member: D) -> Result<bool, D::Error> {
    serde::de::IgnoredAny::deserialize(member).map(|_| true)
}

/// `line` read as a `tools/call` request, straight to its type; `None` for any other message
/// (or a malformed one), which rmcp's own reading then takes, and answers as it does.
///
/// A call is the message a server reads most, and rmcp reads any request by trying each of
/// the twenty-odd kinds in turn, building an error for every kind it is not. Here the shape is
/// read first, as rmcp checks it (a method and an id, no `result` or `error`), and a
/// `tools/call` goes to `CallToolRequest` at once: the same value rmcp arrives at, at a third of
/// the cost.
pub(crate) fn read_call(line: &[u8]) -> Option<rmcp::service::RxJsonRpcMessage<rmcp::RoleServer>> {
    use rmcp::model::{CallToolRequest, ClientRequest, JsonRpcMessage, JsonRpcRequest};
    let shape: Shape<'_> = serde_json::from_slice(line).ok()?;
    if shape.method.as_deref() != Some("tools/call") || shape.result || shape.error {
        return None;
    }
    let (Some(id), Some(jsonrpc)) = (shape.id, shape.jsonrpc) else {
        return None;
    };
    let request: CallToolRequest = serde_json::from_slice(line).ok()?;
    Some(JsonRpcMessage::Request(JsonRpcRequest {
        jsonrpc,
        id,
        request: ClientRequest::CallToolRequest(request),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What rmcp's own reading makes of `line`, as JSON.
    fn as_rmcp_reads(line: &str) -> serde_json::Value {
        let message: rmcp::service::RxJsonRpcMessage<rmcp::RoleServer> =
            serde_json::from_str(line).expect("reads");
        serde_json::to_value(message).expect("writes")
    }

    #[test]
    fn a_call_reads_straight_as_rmcp_reads_it() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"message":"hi"}}}"#,
            r#"{"params":{"arguments":{"a":[1,{"b":null}]},"name":"x","_meta":{"progressToken":"t"}},"method":"tools/call","id":"s-1","jsonrpc":"2.0"}"#,
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"x","task":{"ttl":5}}}"#,
        ] {
            let read = read_call(line.as_bytes()).expect("a call is read straight");
            assert_eq!(
                serde_json::to_value(read).expect("writes"),
                as_rmcp_reads(line),
                "{line}"
            );
        }
    }

    #[test]
    fn what_is_no_call_is_left_to_rmcp() {
        for line in [
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x"},"result":null}"#,
            r#"{"jsonrpc":"1.0","id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"id":1,"method":"tools/call","params":{"name":"x"}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"arguments":{}}}"#,
            r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","method":"tools/call","params":{"name":"x"}}"#,
            "[1]",
            "not json",
        ] {
            assert!(read_call(line.as_bytes()).is_none(), "{line}");
        }
    }
}

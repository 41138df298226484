//! JSON-RPC's own error codes, which every transport answers with, and what a transport reads of
//! a message's text before rmcp parses it: the lowest module, named by the transports and the
//! server and never naming them.

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

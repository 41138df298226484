//! JSON-RPC's own error codes, which every transport answers with: the lowest module, named by
//! the transports and never naming them.

/// JSON-RPC's "parse error": the line is not JSON.
pub const PARSE_ERROR: i64 = -32700;

/// JSON-RPC's "invalid request": not a message, or too large to read.
pub const INVALID_REQUEST: i64 = -32600;

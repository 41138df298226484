//! A server reading and writing newline-delimited JSON-RPC, as over stdio, on an in-memory pipe.

use envelope_mcp::{EnvelopeServer, McpError};
use tokio::io::{DuplexStream, ReadHalf, WriteHalf};
use tokio::task::JoinHandle;

/// `server` serving lines on one end of an in-memory pipe: the other end's halves, to read its
/// answers from and write requests to, and the serving task.
pub(crate) fn serve_lines_in_memory(
    server: EnvelopeServer,
) -> (
    ReadHalf<DuplexStream>,
    WriteHalf<DuplexStream>,
    JoinHandle<Result<(), McpError>>,
) {
    let (client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let serving = tokio::spawn(server.serve_lines(server_read, server_write));
    let (client_read, client_write) = tokio::io::split(client_io);
    (client_read, client_write, serving)
}

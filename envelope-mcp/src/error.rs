//! The crate's error.

/// What serving can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The MCP handshake or session failed.
    #[error("MCP session failed: {0}")]
    Session(String),
    /// Binding or serving a socket failed.
    #[error("cannot serve on {addr}")]
    Io {
        /// The address.
        addr: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
}

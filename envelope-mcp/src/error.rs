//! The crate's error.

/// What serving can fail with.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// A `_meta` key prefix that is malformed, not reverse-DNS, or reserved for MCP.
    #[error("invalid `_meta` prefix `{prefix}`: {reason}")]
    MetaPrefix {
        /// The prefix (its first 64 characters).
        prefix: String,
        /// Which rule it breaks.
        reason: String,
    },
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

//! What the test binaries share, a file each: raw HTTP/1.1 on loopback ([`raw_http`]), rmcp's
//! own client in memory ([`rmcp_client`]), newline-delimited JSON-RPC in memory ([`lines`]) and
//! small tools to serve ([`tools`]). The example server's tests (`workspace-server`'s
//! `tests/common`) share `raw_http` and `rmcp_client` too.

// Each test binary uses its own share of these.
#![allow(dead_code)]

pub(crate) mod lines;
pub(crate) mod raw_http;
pub(crate) mod rmcp_client;
pub(crate) mod tools;

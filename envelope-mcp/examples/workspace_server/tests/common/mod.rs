//! What the example's test binaries share, a file each: the fixture tree and its server
//! ([`tree`]), calling a tool ([`calls`]) and paging through its answers ([`pages`]); and, from
//! `envelope-mcp`'s own tests, raw HTTP/1.1 on loopback ([`raw_http`]) and rmcp's client in
//! memory ([`rmcp_client`]) and newline-delimited JSON-RPC in memory ([`lines`]), included by path so that there is one copy of each.

// Each test binary uses its own share of these.
#![allow(dead_code)]

pub(crate) mod calls;
#[path = "../../../../tests/common/lines.rs"]
pub(crate) mod lines;
pub(crate) mod pages;
#[path = "../../../../tests/common/raw_http.rs"]
pub(crate) mod raw_http;
#[path = "../../../../tests/common/rmcp_client.rs"]
pub(crate) mod rmcp_client;
pub(crate) mod tree;

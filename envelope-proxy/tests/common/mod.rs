//! What the proxy's tests share: the proxy in front of the fixture, and, from
//! `envelope-mcp`'s own tests, raw HTTP/1.1 on loopback ([`raw_http`]), included by path so
//! that there is one copy.

// Each test binary uses its own share of these.
#![allow(dead_code)]

use std::path::Path;

use envelope_mcp::EnvelopeConfig;
use envelope_proxy::{Proxy, ProxyConfig};

#[path = "../../../envelope-mcp/tests/common/raw_http.rs"]
pub(crate) mod raw_http;

/// The fixture upstream's script (`fixtures/upstream.py`).
pub(crate) fn fixture() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/upstream.py")
        .display()
        .to_string()
}

/// The proxy's configuration in front of the fixture, `extra` (TOML) appended to the
/// upstream's.
pub(crate) fn fronting_the_fixture_with(extra: &str) -> String {
    format!(
        "[upstream]\ncommand = [\"python3\", {:?}]\ncall_timeout_seconds = 5\n{extra}",
        fixture()
    )
}

/// The proxy in front of the fixture, serving as `serving` says.
pub(crate) async fn fronting_the_fixture(serving: EnvelopeConfig) -> Proxy {
    let config =
        ProxyConfig::parse(&fronting_the_fixture_with("")).expect("the configuration parses");
    Proxy::start(config, serving)
        .await
        .expect("the proxy starts")
}

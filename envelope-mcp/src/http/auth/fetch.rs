//! What a verifier asks of an authorization server over HTTP: its metadata, its keys, an
//! introspection. Bounded in time and size, over TLS unless the host is loopback.

use std::net::IpAddr;
use std::time::Duration;

use serde::de::DeserializeOwned;
use url::Url;

use super::verifier::AuthConfigError;

/// How long one request to the authorization server may take, connection included.
pub(crate) const FETCH_TIMEOUT: Duration = Duration::from_secs(10);

/// The largest answer read from the authorization server: a JWKS of a few dozen keys, or a
/// metadata document, is a few kilobytes.
pub(crate) const MAX_ANSWER_BYTES: usize = 1 << 20;

/// `url`, checked as `what`: absolute, `https`, or `http` to a loopback host (a provider on the
/// developer's machine, or a test's).
pub(crate) fn checked_url(what: &'static str, url: &str) -> Result<Url, AuthConfigError> {
    let refused = |why: &str| AuthConfigError::Url {
        what,
        url: url.to_owned(),
        why: why.to_owned(),
    };
    let parsed = Url::parse(url).map_err(|error| refused(&error.to_string()))?;
    if parsed.cannot_be_a_base() || parsed.host().is_none() {
        return Err(refused("it names no host"));
    }
    if parsed.fragment().is_some() {
        return Err(refused("it has a fragment"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(refused("it has credentials in it"));
    }
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        "http" => Err(refused(
            "plain `http` is accepted for loopback hosts only; use `https`",
        )),
        _ => Err(refused("its scheme is not `https`")),
    }
}

/// Whether `url` names this machine: `localhost`, or a loopback address.
fn is_loopback(url: &Url) -> bool {
    match url.host() {
        Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(ip)) => IpAddr::V4(ip).is_loopback(),
        Some(url::Host::Ipv6(ip)) => IpAddr::V6(ip).is_loopback(),
        None => false,
    }
}

/// Makes ring the process's default rustls crypto provider, unless one is installed already
/// (that one, the caller's choice, stays).
///
/// With feature `auth`, reqwest is built without a provider of its own (its default, aws-lc-rs,
/// is a C library of its own beside the RustCrypto crates JOSE uses): envelope-mcp's fetches
/// carry their own configuration on ring, but any other reqwest client in the process (rmcp's
/// streamable HTTP client, an OpenTelemetry exporter) reads the process default, and reqwest
/// panics building one when there is none. envelope-mcp calls this when it builds its own
/// client; a binary that builds other reqwest clients first calls it at start.
///
/// ```
/// envelope_mcp::auth::install_crypto_provider();
/// let client = reqwest::Client::new(); // no panic: a provider is installed
/// # drop(client);
/// ```
pub fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error means another was installed meanwhile: the caller's choice, kept.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// The client every verifier fetches with: rustls on ring, the platform's roots, HTTP/1.1, no
/// redirects (an authorization server's endpoints are where its metadata says).
pub(crate) fn client() -> Result<reqwest::Client, AuthConfigError> {
    use rustls_platform_verifier::BuilderVerifierExt;
    install_crypto_provider();
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let mut tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .and_then(|builder| builder.with_platform_verifier())
        .map_err(|error| AuthConfigError::Client(error.to_string()))?
        .with_no_client_auth();
    tls.alpn_protocols = vec![b"http/1.1".to_vec()];
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|error| AuthConfigError::Client(error.to_string()))
}

/// Why a fetch failed, in words that name the URL and never a token.
pub(crate) fn failed(url: &Url, why: impl std::fmt::Display) -> String {
    format!("{url}: {why}")
}

/// The JSON document `request` answers with `200`, read up to [`MAX_ANSWER_BYTES`].
pub(crate) async fn json<T: DeserializeOwned>(
    url: &Url,
    request: reqwest::RequestBuilder,
) -> Result<T, String> {
    json_within(url, request, MAX_ANSWER_BYTES).await
}

/// The JSON document `request` answers with `200`, read up to `limit` bytes: a longer answer
/// is a failure, found before more than `limit` bytes are held.
pub(crate) async fn json_within<T: DeserializeOwned>(
    url: &Url,
    request: reqwest::RequestBuilder,
    limit: usize,
) -> Result<T, String> {
    let mut response = request
        .header(http::header::ACCEPT, "application/json")
        .send()
        .await
        // Without the URL reqwest would print: the URL is said once, by `failed`.
        .map_err(|error| failed(url, error.without_url()))?;
    if !response.status().is_success() {
        return Err(failed(url, format!("answered {}", response.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| failed(url, error.without_url()))?
    {
        if body.len() + chunk.len() > limit {
            return Err(failed(url, format!("answered more than {limit} bytes")));
        }
        body.extend_from_slice(&chunk);
    }
    serde_json::from_slice(&body)
        .map_err(|error| failed(url, format!("not the JSON expected: {error}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_loopback_http_is_accepted() {
        for url in [
            "https://auth.example.com",
            "https://auth.example.com/tenant/",
            "http://127.0.0.1:8080",
            "http://localhost/issuer",
            "http://[::1]:9/x",
        ] {
            assert!(checked_url("issuer", url).is_ok(), "{url}");
        }
        for (url, why) in [
            ("http://auth.example.com", "loopback hosts only"),
            ("ftp://auth.example.com", "scheme"),
            ("auth.example.com", "relative URL"),
            ("https://user:pw@auth.example.com", "credentials"),
            ("https://auth.example.com/#x", "fragment"),
        ] {
            let error = checked_url("issuer", url).expect_err(url).to_string();
            assert!(error.contains(why), "{url}: {error}");
        }
    }
}

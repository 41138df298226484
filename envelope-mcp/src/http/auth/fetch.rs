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

/// The client every verifier fetches with: reqwest's rustls, the platform's roots, no
/// redirects (an authorization server's endpoints are where its metadata says).
pub(crate) fn client() -> Result<reqwest::Client, AuthConfigError> {
    reqwest::Client::builder()
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

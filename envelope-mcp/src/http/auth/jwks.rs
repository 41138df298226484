//! The issuer's public keys: a JWKS document, cached, and fetched again when a token names a
//! key it does not hold (the issuer rotated its keys) — at most once per refresh interval, so
//! that tokens naming made-up keys cannot make the server hammer the issuer.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey};
use serde::Deserialize;
use serde_json::Value;
use url::Url;

use super::fetch::{self, checked_url};
use super::verifier::{AuthConfigError, TokenError};

/// The least time between two fetches of the keys that a token naming an unknown key forces.
pub const DEFAULT_JWKS_REFRESH_INTERVAL: Duration = Duration::from_secs(10);

/// How long fetched keys are used before they are fetched again on the next token.
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);

/// Where the issuer's public keys are.
#[derive(Debug, Clone)]
pub enum JwksSource {
    /// At the `jwks_uri` of the issuer's metadata: RFC 8414's
    /// `/.well-known/oauth-authorization-server`, else OpenID Connect's
    /// `/.well-known/openid-configuration`. Fetched on the first token, not at start-up, so the
    /// server may start before its issuer.
    Discover,
    /// At this URL (`https`, or `http` on a loopback host).
    Url(String),
    /// In this file, a JWKS document (`{"keys": [...]}`): read at start-up, and read again
    /// when a token names a key it does not hold, so a rotated file is picked up without a
    /// restart.
    File(PathBuf),
}

/// One verification key.
pub(crate) struct Key {
    pub(crate) decoding: DecodingKey,
    /// The algorithm the JWK pins the key to, if it names one.
    algorithm: Option<Value>,
}

impl Key {
    /// Whether the key may check a signature made with `algorithm`.
    fn fits(&self, algorithm: Algorithm) -> bool {
        let pinned = self
            .algorithm
            .as_ref()
            .is_none_or(|pinned| serde_json::to_value(algorithm).is_ok_and(|alg| alg == *pinned));
        pinned && self.decoding.family() == algorithm.family()
    }
}

/// The keys of one JWKS document, by `kid`.
struct Keys {
    by_kid: HashMap<String, Arc<Key>>,
    /// Keys without a `kid`, used by a token that names none.
    unnamed: Vec<Arc<Key>>,
    fetched: Instant,
}

impl Keys {
    /// The signing keys of `document`; keys for encryption, symmetric keys, and keys that do
    /// not parse are left out (one bad key does not lose the others).
    fn of(document: &JwksDocument) -> Keys {
        let mut keys = Keys {
            by_kid: HashMap::new(),
            unnamed: Vec::new(),
            fetched: Instant::now(),
        };
        for raw in &document.keys {
            let Ok(jwk) = serde_json::from_value::<Jwk>(raw.clone()) else {
                continue;
            };
            if matches!(
                jwk.common.public_key_use,
                Some(PublicKeyUse::Encryption | PublicKeyUse::Other(_))
            ) {
                continue;
            }
            let Ok(decoding) = DecodingKey::from_jwk(&jwk) else {
                continue;
            };
            if decoding.family() == AlgorithmFamily::Hmac {
                continue;
            }
            let key = Arc::new(Key {
                decoding,
                algorithm: jwk
                    .common
                    .key_algorithm
                    .and_then(|alg| serde_json::to_value(alg).ok()),
            });
            match jwk.common.key_id {
                Some(kid) => {
                    keys.by_kid.insert(kid, key);
                }
                None => keys.unnamed.push(key),
            }
        }
        keys
    }

    fn len(&self) -> usize {
        self.by_kid.len() + self.unnamed.len()
    }

    /// The key a token with `kid` (or none) and `algorithm` is checked with.
    fn find(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<Arc<Key>> {
        match kid {
            Some(kid) => self
                .by_kid
                .get(kid)
                .filter(|key| key.fits(algorithm))
                .cloned(),
            // Without a `kid`, only a document whose one fitting key is unambiguous.
            None => {
                let mut fitting = self
                    .by_kid
                    .values()
                    .chain(&self.unnamed)
                    .filter(|key| key.fits(algorithm));
                match (fitting.next(), fitting.next()) {
                    (Some(key), None) => Some(Arc::clone(key)),
                    _ => None,
                }
            }
        }
    }
}

#[derive(Deserialize)]
struct JwksDocument {
    keys: Vec<Value>,
}

/// The last ask for the keys: when it ended, and whether it brought keys.
#[derive(Clone, Copy)]
struct Asked {
    ended: Instant,
    answered: bool,
}

/// The least refresh interval: below it, tokens naming made-up keys would fetch the JWKS at
/// the pace they arrive.
pub(crate) const MIN_JWKS_REFRESH_INTERVAL: Duration = Duration::from_millis(100);

/// Where the keys are fetched from, resolved.
enum Origin {
    Discover {
        issuer: Url,
        jwks_uri: RwLock<Option<Url>>,
    },
    Url(Url),
    File(PathBuf),
}

/// An issuer's keys as a verifier uses them.
pub(crate) struct KeySet {
    origin: Origin,
    client: reqwest::Client,
    keys: RwLock<Option<Arc<Keys>>>,
    /// How the last ask for the keys went; held while asking, so one fetch serves every
    /// token waiting on it.
    last_refresh: tokio::sync::Mutex<Option<Asked>>,
    pub(crate) refresh_interval: Duration,
    pub(crate) max_age: Duration,
}

impl KeySet {
    pub(crate) fn new(
        issuer: &Url,
        source: JwksSource,
        client: reqwest::Client,
    ) -> Result<KeySet, AuthConfigError> {
        let (origin, keys) = match source {
            JwksSource::Discover => (
                Origin::Discover {
                    issuer: issuer.clone(),
                    jwks_uri: RwLock::new(None),
                },
                None,
            ),
            JwksSource::Url(url) => (Origin::Url(checked_url("JWKS URL", &url)?), None),
            JwksSource::File(path) => {
                let keys = read_file(&path).map_err(|why| AuthConfigError::JwksFile {
                    path: path.display().to_string(),
                    why,
                })?;
                (Origin::File(path), Some(Arc::new(keys)))
            }
        };
        Ok(KeySet {
            origin,
            client,
            keys: RwLock::new(keys),
            last_refresh: tokio::sync::Mutex::new(None),
            refresh_interval: DEFAULT_JWKS_REFRESH_INTERVAL,
            max_age: DEFAULT_JWKS_MAX_AGE,
        })
    }

    fn current(&self) -> Option<Arc<Keys>> {
        self.keys.read().ok().and_then(|keys| keys.clone())
    }

    /// The key to check a token naming `kid` and `algorithm` with: from the cache; the cache
    /// refreshed first when it is past its age (by one request: the others use the cached keys
    /// meanwhile), or when it lacks `kid` and the keys were not asked for within the refresh
    /// interval. A key still unknown then is an invalid token; keys the issuer could not be
    /// asked for make it unverifiable.
    pub(crate) async fn key(
        &self,
        kid: Option<&str>,
        algorithm: Algorithm,
    ) -> Result<Arc<Key>, TokenError> {
        let mut current = self.current();
        // A file is read again only for a key it lacks: it has no age of its own to expire.
        let stale = current.as_ref().is_none_or(|keys| {
            !matches!(self.origin, Origin::File(_)) && keys.fetched.elapsed() >= self.max_age
        });
        if stale {
            match &current {
                // Stale keys still serve while one request refreshes them, and while the
                // issuer is down.
                Some(_) => {
                    if let Ok(mut last) = self.last_refresh.try_lock() {
                        match self.refresh_with(&mut last).await {
                            Ok(keys) => current = Some(keys),
                            Err(why) => tracing::warn!(
                                %why,
                                "the issuer's keys could not be fetched again; the cached ones are used"
                            ),
                        }
                    }
                }
                None => current = Some(self.refresh().await.map_err(TokenError::Unverifiable)?),
            }
        }
        if let Some(key) = current.as_ref().and_then(|keys| keys.find(kid, algorithm)) {
            return Ok(key);
        }
        // A key the cache lacks: the issuer may have rotated. Ask again, unless just asked.
        let keys = self.refresh().await.map_err(TokenError::Unverifiable)?;
        keys.find(kid, algorithm).ok_or_else(|| unknown_key(kid))
    }

    /// The keys fetched again, waiting for a refresh under way to end first.
    async fn refresh(&self) -> Result<Arc<Keys>, String> {
        let mut last = self.last_refresh.lock().await;
        self.refresh_with(&mut last).await
    }

    /// Fetches the keys again and caches them, unless the last ask ended within the refresh
    /// interval: then its answer stands (the keys it fetched, perhaps for a token that waited
    /// on this one's lock, or its failure). A document with no usable key is a failure: the
    /// keys cached before are kept.
    async fn refresh_with(&self, last: &mut Option<Asked>) -> Result<Arc<Keys>, String> {
        if let Some(asked) = *last
            && asked.ended.elapsed() < self.refresh_interval
        {
            return match (asked.answered, self.current()) {
                (true, Some(keys)) => Ok(keys),
                _ => Err("the issuer's keys were asked for moments ago, in vain".to_owned()),
            };
        }
        let fetched = self.fetch().await.and_then(|keys| {
            if keys.len() == 0 {
                Err("the issuer's JWKS holds no signing key this server can use".to_owned())
            } else {
                Ok(keys)
            }
        });
        *last = Some(Asked {
            ended: Instant::now(),
            answered: fetched.is_ok(),
        });
        let keys = Arc::new(fetched?);
        tracing::debug!(keys = keys.len(), "fetched the issuer's keys");
        if let Ok(mut slot) = self.keys.write() {
            *slot = Some(Arc::clone(&keys));
        }
        Ok(keys)
    }

    async fn fetch(&self) -> Result<Keys, String> {
        match &self.origin {
            Origin::Url(url) => self.fetch_url(url).await,
            Origin::File(path) => {
                let path = path.clone();
                tokio::task::spawn_blocking(move || read_file(&path))
                    .await
                    .map_err(|error| error.to_string())?
            }
            Origin::Discover { issuer, jwks_uri } => {
                let known = jwks_uri.read().ok().and_then(|uri| uri.clone());
                let url = match known {
                    Some(url) => url,
                    None => {
                        let url = discover(&self.client, issuer).await?;
                        if let Ok(mut slot) = jwks_uri.write() {
                            *slot = Some(url.clone());
                        }
                        url
                    }
                };
                self.fetch_url(&url).await
            }
        }
    }

    async fn fetch_url(&self, url: &Url) -> Result<Keys, String> {
        let document: JwksDocument = fetch::json(url, self.client.get(url.clone())).await?;
        Ok(Keys::of(&document))
    }
}

fn unknown_key(kid: Option<&str>) -> TokenError {
    match kid {
        Some(_) => TokenError::invalid("it is signed with a key the issuer does not publish"),
        None => TokenError::invalid("it names no key (`kid`), and the issuer publishes several"),
    }
}

fn read_file(path: &std::path::Path) -> Result<Keys, String> {
    let text = std::fs::read_to_string(path).map_err(|error| error.to_string())?;
    let document: JwksDocument =
        serde_json::from_str(&text).map_err(|error| format!("not a JWKS document: {error}"))?;
    let keys = Keys::of(&document);
    if keys.len() == 0 {
        return Err("it holds no signing key this server can use".to_owned());
    }
    Ok(keys)
}

/// The metadata documents of `issuer`, in the order RFC 8414 and OpenID Connect Discovery have
/// clients try them.
fn metadata_urls(issuer: &Url) -> Vec<Url> {
    let path = issuer.path().trim_end_matches('/');
    let mut urls = Vec::new();
    let mut at = |path: String| {
        let mut url = issuer.clone();
        url.set_path(&path);
        url.set_query(None);
        urls.push(url);
    };
    // RFC 8414 §3.1: the well-known part goes between the host and the issuer's path.
    at(format!("/.well-known/oauth-authorization-server{path}"));
    // OpenID Connect Discovery §4: after the issuer's path.
    at(format!("{path}/.well-known/openid-configuration"));
    urls
}

#[derive(Deserialize)]
struct IssuerMetadata {
    issuer: String,
    jwks_uri: Option<String>,
}

/// The `jwks_uri` of `issuer`'s metadata, from the first document that answers; its `issuer`
/// must be `issuer` (RFC 8414 §3.3), or another server could pose as it.
async fn discover(client: &reqwest::Client, issuer: &Url) -> Result<Url, String> {
    let mut why = Vec::new();
    for url in metadata_urls(issuer) {
        match fetch::json::<IssuerMetadata>(&url, client.get(url.clone())).await {
            Ok(metadata) => {
                if !same_issuer(&metadata.issuer, issuer) {
                    return Err(fetch::failed(
                        &url,
                        format!("names the issuer `{}`, not `{issuer}`", metadata.issuer),
                    ));
                }
                let Some(jwks_uri) = metadata.jwks_uri else {
                    return Err(fetch::failed(&url, "has no `jwks_uri`"));
                };
                return checked_url("jwks_uri", &jwks_uri).map_err(|error| error.to_string());
            }
            Err(error) => why.push(error),
        }
    }
    Err(format!(
        "no metadata found for the issuer: {}",
        why.join("; ")
    ))
}

/// Whether the issuer identifier `named` is `issuer` (a trailing slash aside: `Url` adds one to
/// an empty path).
pub(crate) fn same_issuer(named: &str, issuer: &Url) -> bool {
    named.trim_end_matches('/') == issuer.as_str().trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metadata_is_looked_for_where_both_specs_put_it() {
        let urls = |issuer: &str| -> Vec<String> {
            metadata_urls(&Url::parse(issuer).expect("a URL"))
                .iter()
                .map(Url::to_string)
                .collect()
        };
        assert_eq!(
            urls("https://auth.example.com"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration",
            ]
        );
        assert_eq!(
            urls("https://auth.example.com/tenant/1/"),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant/1",
                "https://auth.example.com/tenant/1/.well-known/openid-configuration",
            ]
        );
    }

    #[test]
    fn issuers_compare_without_the_slash_url_adds() {
        let issuer = Url::parse("http://127.0.0.1:4000").expect("a URL");
        assert!(same_issuer("http://127.0.0.1:4000", &issuer));
        assert!(same_issuer("http://127.0.0.1:4000/", &issuer));
        assert!(!same_issuer("http://127.0.0.1:4001", &issuer));
    }

    #[test]
    fn encryption_symmetric_and_unparsable_keys_are_left_out() {
        let document: JwksDocument = serde_json::from_value(serde_json::json!({"keys": [
            {"kty": "OKP", "crv": "Ed25519", "kid": "sig", "use": "sig",
             "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "OKP", "crv": "Ed25519", "kid": "enc", "use": "enc",
             "x": "11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"},
            {"kty": "oct", "kid": "secret", "k": "c2VjcmV0"},
            {"kty": "RSA", "kid": "broken", "n": "!", "e": "AQAB"},
            {"kty": "unknown", "kid": "other"},
        ]}))
        .expect("a JWKS");
        let keys = Keys::of(&document);
        assert_eq!(keys.len(), 1);
        assert!(keys.find(Some("sig"), Algorithm::EdDSA).is_some());
        assert!(keys.find(Some("sig"), Algorithm::RS256).is_none());
        assert!(keys.find(None, Algorithm::EdDSA).is_some());
        assert!(keys.find(Some("secret"), Algorithm::HS256).is_none());
    }
}

//! The proxy as an OAuth resource server, over its HTTP API: a page is its caller's alone. A
//! `next-page` action one authenticated caller got, replayed verbatim by another, is refused
//! with a typed error, and neither shows that caller the first one's rows nor runs the tool
//! again (the paged answers here are a read-only tool's, paged by calling the upstream again,
//! and a tool that is not, paged from the result store).

mod common;

use common::raw_http;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use envelope_core::paging::{CONTINUATION_SCOPE_MISMATCH, ContinuationKey, Continuations};
use envelope_mcp::auth::{JwksSource, JwtVerifier, ResourceServer};
use envelope_mcp::{EnvelopeConfig, HttpConfig};
use envelope_proxy::Proxy;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "http://127.0.0.1:4000";
const AUDIENCE: &str = "http://127.0.0.1:5000/mcp";

/// envelope-mcp's test issuer key: the same fixture its own OAuth tests sign with.
fn issuer_key() -> EncodingKey {
    let pem = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../envelope-mcp/tests/fixtures/auth/issuer-1.pem");
    let pem = std::fs::read(pem).expect("the fixture key");
    EncodingKey::from_rsa_pem(&pem).expect("an RSA key")
}

/// An access token naming `subject`, signed with the issuer's key.
fn token(key: &EncodingKey, subject: &str) -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs();
    let claims = json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": subject, "scope": "",
        "iat": now, "exp": now + 600,
    });
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".to_owned());
    header.typ = Some("at+jwt".to_owned());
    jsonwebtoken::encode(&header, &claims, key).expect("signed")
}

/// A JWKS file holding the issuer's public key.
fn jwks_file(key: &EncodingKey) -> PathBuf {
    let mut jwk = Jwk::from_encoding_key(key, Algorithm::RS256).expect("a JWK");
    jwk.common.key_id = Some("k1".to_owned());
    let dir = std::env::temp_dir().join(format!("envelope-proxy-callers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("jwks.json");
    let set = JwkSet { keys: vec![jwk] };
    std::fs::write(&path, serde_json::to_string(&set).expect("serializes")).expect("written");
    path
}

/// The proxy in front of the test upstream, served over HTTP on loopback, verifying tokens
/// against `jwks`.
async fn serve(jwks: PathBuf) -> (Proxy, SocketAddr) {
    let serving = EnvelopeConfig::new("proxy-callers", "1.0.0")
        .with_continuations(Continuations::new(ContinuationKey::new(1, [7; 32])));
    let proxy = common::fronting_the_fixture(serving).await;
    let verifier = JwtVerifier::new(ISSUER, AUDIENCE, JwksSource::File(jwks)).expect("a verifier");
    let auth = ResourceServer::new(AUDIENCE, verifier).expect("a resource server");
    let http = HttpConfig::default()
        .with_stateless(true)
        .with_json_response(true)
        .with_auth(auth);
    let addr = raw_http::serve_on_loopback_with(proxy.server().clone(), http).await;
    (proxy, addr)
}

/// `POST /tools/{tool}` with `arguments` as `bearer`: the status and the envelope (a
/// problem's `envelope` member when the call failed).
async fn call(addr: SocketAddr, bearer: &str, tool: &str, arguments: &Value) -> (u16, Value) {
    let body = arguments.to_string();
    let request = format!(
        "POST /tools/{tool} HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         authorization: Bearer {bearer}\r\nconnection: close\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let (head, body) = raw_http::http_exchange(addr, request, |_| false).await;
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status");
    let body: Value = serde_json::from_str(&body).unwrap_or(Value::String(body));
    let envelope = body.get("envelope").cloned().unwrap_or(body);
    (status, envelope)
}

/// The `next-page` action of `envelope`, as `(tool, arguments)`.
fn next_page(envelope: &Value) -> (String, Value) {
    let action = envelope["next_actions"]
        .as_array()
        .and_then(|actions| actions.iter().find(|action| action["id"] == "next-page"))
        .unwrap_or_else(|| panic!("a next page: {envelope}"));
    (
        action["tool"].as_str().expect("a tool").to_owned(),
        action["arguments"].clone(),
    )
}

/// The `rerun` recovery of a refused `envelope`.
fn rerun(envelope: &Value) -> Value {
    let found = envelope["error"]["recovery"]
        .as_array()
        .into_iter()
        .flatten()
        .chain(envelope["next_actions"].as_array().into_iter().flatten())
        .find(|action| action["id"] == "rerun")
        .cloned();
    found.unwrap_or_else(|| panic!("a rerun: {envelope}"))
}

/// `tool` called with another caller's `arguments` as `bearer`: refused `422`
/// `CONTINUATION_SCOPE_MISMATCH`; the envelope.
async fn replayed_by(addr: SocketAddr, bearer: &str, tool: &str, arguments: &Value) -> Value {
    let (status, replayed) = call(addr, bearer, tool, arguments).await;
    assert_eq!(status, 422, "{replayed}");
    assert_eq!(
        replayed["error"]["code"], CONTINUATION_SCOPE_MISMATCH,
        "{replayed}"
    );
    replayed
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_replayed_by_another_caller_is_refused_and_shows_nothing() {
    let key = issuer_key();
    let (_proxy, addr) = serve(jwks_file(&key)).await;
    let (alice, bob) = (token(&key, "alice"), token(&key, "bob"));

    // `append` is not read-only: its answer is kept under Alice's call, never made again.
    let (status, first) = call(addr, &alice, "append", &json!({"count": 5_000})).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["data"][0], "appended 1 times\n", "{first}");
    let (tool, arguments) = next_page(&first);

    let replayed = replayed_by(addr, &bob, &tool, &arguments).await;
    assert!(replayed.get("data").is_none(), "{replayed}");
    // Bob may start his own: the rerun is this request's first page, and says that it runs
    // the tool again.
    let again = rerun(&replayed);
    assert_eq!(again["arguments"], json!({"count": 5_000}), "{again}");
    assert!(
        again["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("runs the tool again"),
        "{again}"
    );
    assert!(
        !replayed.to_string().contains("appended"),
        "none of Alice's rows: {replayed}"
    );

    // Alice's own page still follows, from the answer kept: the tool ran once.
    let (status, second) = call(addr, &alice, &tool, &arguments).await;
    assert_eq!(status, 200, "{second}");
    let rows = second["data"].as_array().expect("rows");
    assert!(!rows.is_empty(), "{second}");
    assert!(
        !second.to_string().contains("appended 2 times"),
        "the tool did not run again: {second}"
    );

    // `lines` is read-only: its pages call the upstream again, bound to their caller as well.
    let (_, first) = call(addr, &alice, "lines", &json!({"count": 5_000})).await;
    let (tool, arguments) = next_page(&first);
    let replayed = replayed_by(addr, &bob, &tool, &arguments).await;
    assert_eq!(rerun(&replayed)["arguments"], json!({"count": 5_000}));
    let (status, own) = call(addr, &bob, "lines", &rerun(&replayed)["arguments"]).await;
    assert_eq!(status, 200, "Bob's own first page: {own}");

    let (status, second) = call(addr, &alice, &tool, &arguments).await;
    assert_eq!(status, 200, "{second}");

    // Refused before the upstream is called: `ticking` counts its calls.
    let (_, first) = call(addr, &alice, "ticking", &json!({"count": 5_000})).await;
    assert_eq!(first["data"][0], "called 1 times\n", "{first}");
    let (tool, arguments) = next_page(&first);
    replayed_by(addr, &bob, &tool, &arguments).await;
    let (_, again) = call(addr, &alice, "ticking", &json!({"count": 5_000})).await;
    assert_eq!(again["data"][0], "called 2 times\n", "{again}");
}

//! The server as an OAuth resource server (feature `auth`): the JWT verifier against a JWKS
//! file, a URL and an issuer's metadata (rotation, its rate limit, every way a token can be
//! wrong); the HTTP layer's refusals, metadata and open paths, the token checked before the
//! body is read; the scope gate over MCP; RFC 7662 introspection against a fake issuer that
//! counts its requests (the cache, one question per token, the bound on questions at once, the
//! deadline, the size of an answer); and introspection against a real OpenID provider
//! (oidc-provider, `tests/auth`), when it is installed.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::raw_http::{header, http_exchange};
use envelope_core::{Caller, NextAction, Reply, Role, ToolContext, ToolResult, tool, toolset};
use envelope_mcp::auth::{
    IntrospectionVerifier, JwksSource, JwtVerifier, ResourceServer, TokenError, TokenVerifier,
};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer, HttpConfig};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};

const ISSUER: &str = "http://127.0.0.1:4000";
const AUDIENCE: &str = "http://127.0.0.1:5000/mcp";

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/auth")
        .join(name)
}

/// An issuer's signing key, by fixture name, and its `kid`.
struct Signer {
    key: EncodingKey,
    kid: String,
}

impl Signer {
    fn new(pem: &str, kid: &str) -> Signer {
        let pem = std::fs::read(fixture(pem)).expect("the fixture key");
        Signer {
            key: EncodingKey::from_rsa_pem(&pem).expect("an RSA key"),
            kid: kid.to_owned(),
        }
    }

    fn jwk(&self) -> Jwk {
        let mut jwk = Jwk::from_encoding_key(&self.key, Algorithm::RS256).expect("a JWK");
        jwk.common.key_id = Some(self.kid.clone());
        jwk
    }

    /// An access token of `claims`, typed `at+jwt` as RFC 9068 has it.
    fn sign(&self, claims: &Value) -> String {
        self.sign_typed(claims, Some("at+jwt"))
    }

    /// A JWT of `claims` whose header's `typ` is `typ` (none for `None`).
    fn sign_typed(&self, claims: &Value, typ: Option<&str>) -> String {
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(self.kid.clone());
        header.typ = typ.map(str::to_owned);
        jsonwebtoken::encode(&header, claims, &self.key).expect("signed")
    }
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("after 1970")
        .as_secs()
}

/// The claims of a good token of `subject` with `scope`.
fn claims(subject: &str, scope: &str) -> Value {
    json!({
        "iss": ISSUER, "aud": AUDIENCE, "sub": subject, "scope": scope,
        "iat": now(), "exp": now() + 600,
    })
}

fn jwks(signers: &[&Signer]) -> String {
    serde_json::to_string(&JwkSet {
        keys: signers.iter().map(|signer| signer.jwk()).collect(),
    })
    .expect("serializes")
}

/// A JWKS file holding `signers`' keys, in a directory of its own.
fn jwks_file(name: &str, signers: &[&Signer]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("envelope-auth-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temp dir");
    let path = dir.join("jwks.json");
    std::fs::write(&path, jwks(signers)).expect("written");
    path
}

fn refused(result: Result<Caller, TokenError>) -> String {
    match result {
        Err(TokenError::Invalid(why)) => why.into_owned(),
        other => panic!("expected an invalid token, got {other:?}"),
    }
}

#[tokio::test]
async fn a_good_token_names_its_issuer_subject_and_scopes() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let verifier = JwtVerifier::new(
        ISSUER,
        AUDIENCE,
        JwksSource::File(jwks_file("good", &[&signer])),
    )
    .expect("a verifier");
    let caller = verifier
        .verify(&signer.sign(&claims("agent", "notes:read notes:write")))
        .await
        .expect("accepted");
    assert_eq!(caller.principal().issuer(), ISSUER);
    assert_eq!(caller.principal().subject(), "agent");
    assert!(caller.may(&["notes:read", "notes:write"]));
    // `scp` as a list; and no `sub` is no caller, even with a `client_id` (RFC 9068 requires
    // `sub`: a client's id may be a user's subject).
    let mut listed = claims("agent", "");
    if let Some(claims) = listed.as_object_mut() {
        claims.remove("scope");
    }
    listed["scp"] = json!(["notes:read"]);
    let caller = verifier
        .verify(&signer.sign(&listed))
        .await
        .expect("accepted");
    assert!(caller.may(&["notes:read"]) && !caller.may(&["notes:write"]));
    let mut anonymous = claims("ignored", "notes:read");
    if let Some(claims) = anonymous.as_object_mut() {
        claims.remove("sub");
    }
    anonymous["client_id"] = json!("service");
    assert!(refused(verifier.verify(&signer.sign(&anonymous)).await).contains("no subject"));
    // A verifier for another audience cannot guard this resource.
    let other = JwtVerifier::new(
        ISSUER,
        "http://127.0.0.1:9/other",
        JwksSource::File(jwks_file("good", &[&signer])),
    )
    .expect("a verifier");
    let error = ResourceServer::new(AUDIENCE, other).expect_err("audiences differ");
    assert!(
        error.to_string().contains("not for the resource"),
        "{error}"
    );
}

#[tokio::test]
async fn every_way_a_token_can_be_wrong_is_refused_and_said() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let stranger = Signer::new("stranger.pem", "k1");
    let verifier = JwtVerifier::new(
        ISSUER,
        AUDIENCE,
        JwksSource::File(jwks_file("wrong", &[&signer])),
    )
    .expect("a verifier")
    .with_leeway(Duration::from_secs(5));
    let with = |change: &dyn Fn(&mut Value)| {
        let mut claims = claims("agent", "notes:read");
        change(&mut claims);
        claims
    };
    let good = signer.sign(&claims("agent", "notes:read"));
    let tampered = {
        // The payload widened to every scope, the issuer's signature kept.
        let parts: Vec<&str> = good.split('.').collect();
        let payload = base64_url(
            &serde_json::to_vec(&claims("agent", "notes:read notes:write")).expect("JSON"),
        );
        format!("{}.{payload}.{}", parts[0], parts[2])
    };
    let unsigned = format!(
        "{}.{}.",
        base64_url(br#"{"alg":"none","typ":"JWT"}"#),
        base64_url(&serde_json::to_vec(&claims("agent", "notes:read")).expect("JSON"))
    );
    let symmetric = {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k1".to_owned());
        header.typ = Some("at+jwt".to_owned());
        jsonwebtoken::encode(
            &header,
            &claims("agent", "notes:read"),
            &EncodingKey::from_secret(b"guessed").expect("a secret"),
        )
        .expect("signed")
    };
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "expired",
            signer.sign(&with(&|c| c["exp"] = json!(now() - 3600))),
            "expired",
        ),
        (
            "not yet valid",
            signer.sign(&with(&|c| c["nbf"] = json!(now() + 3600))),
            "not valid yet",
        ),
        (
            "another audience",
            signer.sign(&with(&|c| c["aud"] = json!("http://127.0.0.1:9/other"))),
            "another resource",
        ),
        (
            "another issuer",
            signer.sign(&with(&|c| c["iss"] = json!("http://127.0.0.1:4001"))),
            "another issuer",
        ),
        (
            "no expiry",
            signer.sign(&with(&|c| {
                c.as_object_mut().map(|c| c.remove("exp"));
            })),
            "`exp`",
        ),
        (
            "no subject",
            signer.sign(&with(&|c| {
                c.as_object_mut().map(|c| c.remove("sub"));
            })),
            "no subject",
        ),
        (
            "another key, the same kid",
            stranger.sign(&claims("agent", "notes:read")),
            "signature",
        ),
        ("tampered payload", tampered, "signature"),
        ("alg none", unsigned, "`alg: none`"),
        (
            "a logout token",
            signer.sign_typed(&claims("agent", "notes:read"), Some("logout+jwt")),
            "`typ`",
        ),
        (
            "a generic JWT",
            signer.sign_typed(&claims("agent", "notes:read"), Some("JWT")),
            "`typ` is `JWT`",
        ),
        (
            "no typ",
            signer.sign_typed(&claims("agent", "notes:read"), None),
            "no `typ`",
        ),
        ("HS256 with a guessed secret", symmetric, "does not accept"),
        ("garbage", "not-a-jwt".to_owned(), "`alg: none`"),
    ];
    for (case, token, said) in cases {
        let why = refused(verifier.verify(&token).await);
        assert!(why.contains(said), "{case}: {why}");
        // Nothing of the token is said back.
        let signature = token.rsplit('.').next().unwrap_or_default();
        assert!(
            signature.is_empty() || !why.contains(signature),
            "{case}: {why}"
        );
    }
    assert!(verifier.verify(&good).await.is_ok());
}

#[tokio::test]
async fn only_at_jwt_is_an_access_token_unless_plain_jwts_are_allowed() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let keys = || JwksSource::File(jwks_file("typ", &[&signer]));
    let strict = JwtVerifier::new(ISSUER, AUDIENCE, keys()).expect("a verifier");
    let plain = JwtVerifier::new(ISSUER, AUDIENCE, keys())
        .expect("a verifier")
        .with_plain_jwt_typ(true);
    let token = |typ: Option<&str>| signer.sign_typed(&claims("agent", "notes:read"), typ);
    // Both take RFC 9068's types, in any case.
    for typ in [
        "at+jwt",
        "application/at+jwt",
        "AT+JWT",
        "Application/AT+JWT",
    ] {
        for verifier in [&strict, &plain] {
            let caller = verifier
                .verify(&token(Some(typ)))
                .await
                .unwrap_or_else(|error| panic!("`{typ}`: {error:?}"));
            assert_eq!(caller.principal().subject(), "agent");
        }
    }
    // Strict by default: a generic `JWT`, or none, says why it is refused.
    for (typ, said) in [
        (Some("JWT"), "`typ` is `JWT`"),
        (Some("application/jwt"), "`typ` is `JWT`"),
        (None, "no `typ`"),
    ] {
        let why = refused(strict.verify(&token(typ)).await);
        assert!(
            why.contains(said) && why.contains("`at+jwt`"),
            "{typ:?}: {why}"
        );
        assert!(plain.verify(&token(typ)).await.is_ok(), "{typ:?}");
    }
    // The opt-in takes no other kind of token.
    assert!(refused(plain.verify(&token(Some("logout+jwt"))).await).contains("`typ`"));

    // Over HTTP, the refusal is an `invalid_token` challenge saying why.
    let addr = serve(resource_server("typ-http", &signer)).await;
    let (head, _) = exchange(
        addr,
        mcp(addr, &bearer(&token(Some("JWT"))), "tools/list", json!({})),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("`typ` is `JWT`"),
        "{challenge}"
    );
}

/// Base64url without padding, as JOSE writes it.
fn base64_url(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |n, b| (n << 8) | u32::from(*b)) << (8 * (3 - chunk.len()));
        for i in 0..=chunk.len() {
            out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
        }
    }
    out
}

#[tokio::test]
async fn a_rotated_jwks_file_is_read_again_for_a_new_key() {
    let old = Signer::new("issuer-1.pem", "k1");
    let new = Signer::new("issuer-2.pem", "k2");
    let path = jwks_file("rotated", &[&old]);
    let verifier = JwtVerifier::new(ISSUER, AUDIENCE, JwksSource::File(path.clone()))
        .expect("a verifier")
        .with_jwks_refresh_interval(Duration::ZERO);
    assert!(verifier.verify(&old.sign(&claims("a", ""))).await.is_ok());
    let by_new = new.sign(&claims("a", ""));
    assert!(refused(verifier.verify(&by_new).await).contains("does not publish"));
    std::fs::write(&path, jwks(&[&new, &old])).expect("rotated");
    // The file is read again once the (shortest) refresh interval has passed.
    tokio::time::sleep(Duration::from_millis(150)).await;
    assert!(
        verifier.verify(&by_new).await.is_ok(),
        "the new key is read"
    );
    assert!(verifier.verify(&old.sign(&claims("a", ""))).await.is_ok());
}

/// A JWKS (and issuer metadata naming it) served on loopback, counting the JWKS fetches.
struct KeyServer {
    base: String,
    fetches: Arc<AtomicUsize>,
    keys: Arc<std::sync::Mutex<String>>,
}

async fn key_server(metadata_issuer: Option<&str>) -> KeyServer {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let fetches = Arc::new(AtomicUsize::new(0));
    let keys = Arc::new(std::sync::Mutex::new(String::from(r#"{"keys":[]}"#)));
    let metadata = json!({
        "issuer": metadata_issuer.map_or_else(|| base.clone(), str::to_owned),
        "jwks_uri": format!("{base}/jwks"),
    })
    .to_string();
    let (counted, served) = (Arc::clone(&fetches), Arc::clone(&keys));
    let router = axum::Router::new()
        .route(
            "/jwks",
            axum::routing::get(move || {
                counted.fetch_add(1, Ordering::SeqCst);
                let body = served.lock().expect("unpoisoned").clone();
                async move { body }
            }),
        )
        .route(
            "/.well-known/openid-configuration",
            axum::routing::get(move || {
                let metadata = metadata.clone();
                async move { metadata }
            }),
        );
    tokio::spawn(async move { axum::serve(listener, router).await });
    KeyServer {
        base,
        fetches,
        keys,
    }
}

#[tokio::test]
async fn unknown_keys_refetch_the_jwks_at_most_once_per_interval() {
    let server = key_server(None).await;
    let signer = Signer::new("issuer-1.pem", "k1");
    *server.keys.lock().expect("unpoisoned") = jwks(&[&signer]);
    let verifier = JwtVerifier::new(
        ISSUER,
        AUDIENCE,
        JwksSource::Url(format!("{}/jwks", server.base)),
    )
    .expect("a verifier")
    .with_jwks_refresh_interval(Duration::from_millis(300));
    assert!(
        verifier
            .verify(&signer.sign(&claims("a", "")))
            .await
            .is_ok()
    );
    assert_eq!(server.fetches.load(Ordering::SeqCst), 1);
    // A flood of made-up key ids, all within the interval: not one more fetch.
    for kid in 0..20 {
        let forged = Signer::new("stranger.pem", &format!("made-up-{kid}"));
        refused(verifier.verify(&forged.sign(&claims("a", ""))).await);
    }
    assert_eq!(server.fetches.load(Ordering::SeqCst), 1);
    // The issuer rotates; past the interval a new key is fetched, once.
    let new = Signer::new("issuer-2.pem", "k2");
    *server.keys.lock().expect("unpoisoned") = jwks(&[&new, &signer]);
    tokio::time::sleep(Duration::from_millis(350)).await;
    assert!(verifier.verify(&new.sign(&claims("a", ""))).await.is_ok());
    assert!(verifier.verify(&new.sign(&claims("b", ""))).await.is_ok());
    assert_eq!(server.fetches.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn keys_are_found_through_the_issuers_metadata_and_only_its_own() {
    let server = key_server(None).await;
    let signer = Signer::new("issuer-1.pem", "k1");
    *server.keys.lock().expect("unpoisoned") = jwks(&[&signer]);
    let verifier =
        JwtVerifier::new(&server.base, AUDIENCE, JwksSource::Discover).expect("a verifier");
    let mut claims = claims("a", "");
    claims["iss"] = json!(server.base);
    assert!(verifier.verify(&signer.sign(&claims)).await.is_ok());

    // Metadata naming another issuer is not the issuer's: the token cannot be checked.
    let impostor = key_server(Some("https://auth.example.com")).await;
    *impostor.keys.lock().expect("unpoisoned") = jwks(&[&signer]);
    let verifier =
        JwtVerifier::new(&impostor.base, AUDIENCE, JwksSource::Discover).expect("a verifier");
    claims["iss"] = json!(impostor.base);
    match verifier.verify(&signer.sign(&claims)).await {
        Err(TokenError::Unverifiable(why)) => assert!(why.contains("names the issuer"), "{why}"),
        other => panic!("expected an unverifiable token, got {other:?}"),
    }
    assert_eq!(impostor.fetches.load(Ordering::SeqCst), 0);
}

/// Who is calling, as the tool sees it.
#[tool(tier = lite, read_only, scopes = ["notes:read"])]
fn whoami(ctx: &ToolContext) -> ToolResult<Value> {
    let caller = ctx
        .caller()
        .ok_or_else(|| envelope_core::ToolError::not_found("no caller"))?;
    Ok(json!({
        "issuer": caller.principal().issuer(),
        "subject": caller.principal().subject(),
        "scopes": caller.scopes().iter().collect::<Vec<_>>(),
    }))
}

/// Erase every note.
#[tool(tier = lite, destructive, scopes = ["notes:read", "notes:write"])]
fn erase() -> ToolResult<&'static str> {
    Ok("erased")
}

/// Answer anyone, suggesting the other tools.
#[tool(tier = lite, read_only)]
fn ping() -> ToolResult<Reply<&'static str>> {
    let who = NextAction::call::<whoami>("who", Role::Inspect, 0, (), "see who is calling")?;
    let erase = NextAction::call::<erase>("erase", Role::Inspect, 0, (), "start afresh")?;
    let again = NextAction::call::<ping>("again", Role::Retry, 0, (), "answer again")?;
    Ok(Reply::new("pong").next_actions([who, erase, again]))
}

/// The three tools served on loopback with `auth`, stateless JSON answers.
async fn serve(auth: ResourceServer) -> std::net::SocketAddr {
    let server = EnvelopeServer::new(
        toolset![whoami, erase, ping],
        EnvelopeConfig::new("notes", "1").with_instructions(
            "Notes, one per file. `whoami` says who is calling. Wipe every note with `erase`! \
             `ping` answers anyone.",
        ),
    );
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    let config = HttpConfig::default()
        .with_stateless(true)
        .with_json_response(true)
        .with_auth(auth);
    tokio::spawn(server.serve_http_with(addr, config));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    addr
}

fn resource_server(name: &str, signer: &Signer) -> ResourceServer {
    let verifier = JwtVerifier::new(
        ISSUER,
        AUDIENCE,
        JwksSource::File(jwks_file(name, &[signer])),
    )
    .expect("a verifier");
    ResourceServer::new(AUDIENCE, verifier).expect("a resource server")
}

/// A stateless MCP request of `method` with `params`, with `extra` header lines.
fn mcp(addr: std::net::SocketAddr, extra: &str, method: &str, params: Value) -> String {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params }).to_string();
    format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         accept: application/json, text/event-stream\r\nmcp-protocol-version: 2025-06-18\r\n\
         connection: close\r\n{extra}content-length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn bearer(token: &str) -> String {
    format!("authorization: Bearer {token}\r\n")
}

async fn exchange(addr: std::net::SocketAddr, request: String) -> (String, Value) {
    let (head, body) = http_exchange(addr, request, |_| false).await;
    (
        head,
        serde_json::from_str(&body).unwrap_or(Value::String(body)),
    )
}

#[tokio::test]
async fn the_door_refuses_with_a_challenge_and_lets_a_good_token_in() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let addr = serve(resource_server("door", &signer)).await;
    let metadata =
        "resource_metadata=\"http://127.0.0.1:5000/.well-known/oauth-protected-resource/mcp\"";

    // No token: 401, the scopes to ask for, where the metadata is.
    let (head, _) = exchange(addr, mcp(addr, "", "tools/list", json!({}))).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert_eq!(
        header(&head, "www-authenticate"),
        Some(format!("Bearer scope=\"notes:read notes:write\", {metadata}").as_str())
    );
    // A bad one: `invalid_token`, and why.
    let expired = {
        let mut claims = claims("agent", "notes:read");
        claims["exp"] = json!(now() - 3600);
        signer.sign(&claims)
    };
    let (head, _) = exchange(addr, mcp(addr, &bearer(&expired), "tools/list", json!({}))).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge.contains("error=\"invalid_token\"") && challenge.contains("expired"),
        "{challenge}"
    );
    // A malformed header: 400 `invalid_request`.
    let (head, _) = exchange(
        addr,
        mcp(
            addr,
            "authorization: Bearer a b\r\n",
            "tools/list",
            json!({}),
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 400"), "{head}");
    // On the REST gateway, a problem.
    let (head, problem) = exchange(
        addr,
        format!("GET /tools HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert_eq!(problem["envelope"]["error"]["code"], "unauthenticated");

    // Health, readiness and the metadata are open.
    for path in [
        "/healthz",
        "/readyz",
        "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp",
    ] {
        let (head, body) = exchange(
            addr,
            format!("GET {path} HTTP/1.1\r\nhost: {addr}\r\nconnection: close\r\n\r\n"),
        )
        .await;
        assert!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        if path.starts_with("/.well-known") {
            assert_eq!(body["resource"], AUDIENCE);
            assert_eq!(body["authorization_servers"], json!([ISSUER]));
            assert_eq!(
                body["scopes_supported"],
                json!(["notes:read", "notes:write"])
            );
        }
    }

    // A good token: the tool sees who it names, typed.
    let token = signer.sign(&claims("agent", "notes:read"));
    let (head, answer) = exchange(
        addr,
        mcp(
            addr,
            &bearer(&token),
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let envelope = &answer["result"]["structuredContent"];
    assert_eq!(
        envelope["data"],
        json!({"issuer": ISSUER, "subject": "agent", "scopes": ["notes:read"]})
    );
    assert!(!answer.to_string().contains(&token));
}

#[tokio::test]
async fn a_body_is_not_read_before_the_token_is_checked() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let addr = serve(resource_server("body", &signer)).await;
    // A head announcing a large body that never comes: refused at once, not after the body
    // timeout (30 s) and not after reading anything.
    let request = format!(
        "POST /mcp HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n\
         content-length: 1000000\r\n\r\n"
    );
    let started = std::time::Instant::now();
    let (head, _) = http_exchange(addr, request, |_| true).await;
    assert!(head.starts_with("HTTP/1.1 401"), "{head}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[tokio::test]
async fn a_missing_scope_is_a_permission_envelope_naming_it() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let addr = serve(resource_server("scopes", &signer)).await;
    let reader = signer.sign(&claims("reader", "notes:read"));

    // The listing says what each tool needs, before any call.
    let (_, listed) = exchange(addr, mcp(addr, &bearer(&reader), "tools/list", json!({}))).await;
    let tools = listed["result"]["tools"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let scopes_of = |name: &str| {
        tools
            .iter()
            .find(|tool| tool["name"] == name)
            .map(|tool| tool["_meta"]["rs.envelope/scopes"].clone())
    };
    assert_eq!(
        scopes_of("erase"),
        Some(json!(["notes:read", "notes:write"]))
    );
    assert_eq!(scopes_of("whoami"), Some(json!(["notes:read"])));
    assert_eq!(
        scopes_of("ping"),
        Some(Value::Null),
        "an unscoped tool lists none"
    );

    let (head, answer) = exchange(
        addr,
        mcp(
            addr,
            &bearer(&reader),
            "tools/call",
            json!({"name": "erase", "arguments": {}}),
        ),
    )
    .await;
    // The specification's step-up: `403` and the scopes in the challenge, for the client's
    // OAuth layer to ask for them and retry; the envelope in the body, for a client that reads.
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge
            .starts_with("Bearer error=\"insufficient_scope\", scope=\"notes:read notes:write\""),
        "{challenge}"
    );
    assert!(
        challenge.contains("resource_metadata=\"http://"),
        "{challenge}"
    );
    assert_eq!(answer["id"], 1);
    assert_eq!(
        answer["error"]["code"],
        envelope_mcp::INSUFFICIENT_SCOPE_ERROR
    );
    let error = &answer["error"]["data"]["error"];
    assert_eq!(error["category"], "permission");
    assert_eq!(error["code"], envelope_core::INSUFFICIENT_SCOPE);
    assert_eq!(error["retryable"], false);
    assert_eq!(
        error["data"],
        json!({"required": ["notes:read", "notes:write"], "missing": ["notes:write"]})
    );
    assert!(
        error["hint"]
            .as_str()
            .unwrap_or_default()
            .contains("scope `notes:read notes:write`")
    );

    // Over REST, 403 and the scopes in the challenge.
    let (head, problem) = exchange(
        addr,
        format!(
            "POST /tools/erase HTTP/1.1\r\nhost: {addr}\r\ncontent-type: application/json\r\n{}\
             connection: close\r\ncontent-length: 2\r\n\r\n{{}}",
            bearer(&reader)
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 403"), "{head}");
    let challenge = header(&head, "www-authenticate").unwrap_or_default();
    assert!(
        challenge
            .starts_with("Bearer error=\"insufficient_scope\", scope=\"notes:read notes:write\""),
        "{challenge}"
    );
    assert_eq!(
        problem["envelope"]["error"]["code"],
        envelope_core::INSUFFICIENT_SCOPE
    );

    // Unscoped tools answer any authenticated caller.
    let nobody = signer.sign(&claims("nobody", ""));
    let (_, answer) = exchange(
        addr,
        mcp(
            addr,
            &bearer(&nobody),
            "tools/call",
            json!({"name": "ping", "arguments": {}}),
        ),
    )
    .await;
    assert_eq!(answer["result"]["structuredContent"]["data"], "pong");
}

/// A REST request of `method` at `path` with `token`; a `POST` sends `{}`.
fn rest(addr: std::net::SocketAddr, method: &str, path: &str, token: &str) -> String {
    let body = if method == "POST" { "{}" } else { "" };
    format!(
        "{method} {path} HTTP/1.1\r\nhost: {addr}\r\n{}content-type: application/json\r\n\
         connection: close\r\ncontent-length: {}\r\n\r\n{body}",
        bearer(token),
        body.len()
    )
}

/// The names at `key` of each item of `items`, sorted.
fn names_in(items: &Value, key: &str) -> Vec<String> {
    let mut names: Vec<String> = items
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|item| item[key].as_str().map(str::to_owned))
        .collect();
    names.sort();
    names.dedup();
    names
}

/// The tools `token` is shown, on every surface that names tools: the MCP listing, the
/// unknown-tool error over MCP and REST, the REST listing, the OpenAPI document's operations,
/// the next actions `ping` suggests over MCP and REST, and the server's prose (initialize's
/// instructions, the OpenAPI document's description).
async fn shown_to(addr: std::net::SocketAddr, token: &str) -> Vec<(&'static str, Vec<String>)> {
    let (_, listed) = exchange(addr, mcp(addr, &bearer(token), "tools/list", json!({}))).await;
    let (_, unknown) = exchange(
        addr,
        mcp(
            addr,
            &bearer(token),
            "tools/call",
            json!({"name": "nope", "arguments": {}}),
        ),
    )
    .await;
    let (head, rest_unknown) = exchange(addr, rest(addr, "POST", "/tools/nope", token)).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    let (_, rest_listed) = exchange(addr, rest(addr, "GET", "/tools", token)).await;
    let (_, document) = exchange(addr, rest(addr, "GET", "/openapi.json", token)).await;
    let mut operations: Vec<String> = document["paths"]
        .as_object()
        .into_iter()
        .flat_map(|paths| paths.keys())
        .filter_map(|path| path.strip_prefix("/tools/").map(str::to_owned))
        .collect();
    operations.sort();
    let (_, pinged) = exchange(
        addr,
        mcp(
            addr,
            &bearer(token),
            "tools/call",
            json!({"name": "ping", "arguments": {}}),
        ),
    )
    .await;
    let (_, rest_pinged) = exchange(addr, rest(addr, "POST", "/tools/ping", token)).await;
    let initialize = json!({
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "auth-test", "version": "0"}
    });
    let (_, initialized) =
        exchange(addr, mcp(addr, &bearer(token), "initialize", initialize)).await;
    // The tools the server's prose names, as words of their own.
    let named = |prose: &Value| {
        let prose = prose.as_str().unwrap_or_default();
        ["erase", "ping", "whoami"]
            .into_iter()
            .filter(|name| {
                prose
                    .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                    .any(|word| word == *name)
            })
            .map(str::to_owned)
            .collect::<Vec<String>>()
    };
    let available = |list: &Value| {
        let mut names: Vec<String> = list
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|name| name.as_str().map(str::to_owned))
            .collect();
        names.sort();
        names
    };
    vec![
        ("tools/list", names_in(&listed["result"]["tools"], "name")),
        (
            "the MCP unknown-tool error",
            available(&unknown["error"]["data"]["available"]),
        ),
        (
            "the REST unknown-tool problem",
            available(&rest_unknown["envelope"]["error"]["data"]["available"]),
        ),
        ("GET /tools", names_in(&rest_listed["tools"], "name")),
        ("GET /openapi.json", operations),
        (
            "next actions over MCP",
            names_in(
                &pinged["result"]["structuredContent"]["next_actions"],
                "tool",
            ),
        ),
        (
            "next actions over REST",
            names_in(&rest_pinged["next_actions"], "tool"),
        ),
        (
            "initialize's instructions",
            named(&initialized["result"]["instructions"]),
        ),
        (
            "the OpenAPI document's description",
            named(&document["info"]["description"]),
        ),
    ]
}

#[tokio::test]
async fn a_filtered_listing_holds_what_the_caller_may_call_everywhere() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let addr = serve(resource_server("filtered", &signer).with_filtered_listing(true)).await;
    for (scope, expected) in [
        ("notes:read", vec!["ping", "whoami"]),
        ("notes:read notes:write", vec!["erase", "ping", "whoami"]),
        ("", vec!["ping"]),
    ] {
        let token = signer.sign(&claims("agent", scope));
        for (surface, shown) in shown_to(addr, &token).await {
            assert_eq!(shown, expected, "{surface} with `{scope}`");
        }
    }

    // Filtered means hidden: a reader calling `erase` is told no such tool is there, not
    // that it lacks a scope (which would say the tool exists).
    let reader = signer.sign(&claims("reader", "notes:read"));
    let (head, answer) = exchange(
        addr,
        mcp(
            addr,
            &bearer(&reader),
            "tools/call",
            json!({"name": "erase", "arguments": {}}),
        ),
    )
    .await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(
        answer["error"]["message"], "unknown tool `erase`",
        "{answer}"
    );
    assert_eq!(
        answer["error"]["data"],
        json!({"tool": "erase", "available": ["ping", "whoami"]})
    );
    let (head, problem) = exchange(addr, rest(addr, "POST", "/tools/erase", &reader)).await;
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
    assert!(header(&head, "www-authenticate").is_none(), "{head}");
    assert_eq!(problem["envelope"]["error"]["code"], "unknown_tool");
    assert_eq!(
        problem["envelope"]["error"]["data"]["available"],
        json!(["ping", "whoami"])
    );
    // The reader's OpenAPI document holds nothing of `erase`, its schemas included.
    let (_, document) = exchange(addr, rest(addr, "GET", "/openapi.json", &reader)).await;
    assert!(document["paths"]["/tools/whoami"].is_object(), "{document}");
    assert!(!document.to_string().contains("erase"), "{document}");
}

#[tokio::test]
async fn an_unfiltered_listing_names_every_tool_everywhere() {
    let signer = Signer::new("issuer-1.pem", "k1");
    let addr = serve(resource_server("unfiltered", &signer)).await;
    for scope in ["notes:read", ""] {
        let token = signer.sign(&claims("agent", scope));
        for (surface, shown) in shown_to(addr, &token).await {
            assert_eq!(
                shown,
                ["erase", "ping", "whoami"],
                "{surface} with `{scope}`"
            );
        }
    }
}

/// The OpenID provider of `tests/auth`, when its packages are installed: `None` (and the test
/// says so) without them, unless `ENVELOPE_REQUIRE_AUTH` is set, as CI sets it.
struct Provider {
    child: std::process::Child,
    started: Value,
}

impl Drop for Provider {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn provider() -> Option<Provider> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/auth");
    if !dir.join("node_modules/oidc-provider").exists() {
        assert!(
            std::env::var_os("ENVELOPE_REQUIRE_AUTH").is_none(),
            "ENVELOPE_REQUIRE_AUTH is set, but tests/auth has no node_modules: run `npm ci --prefix tests/auth`"
        );
        eprintln!("skipped: the OpenID provider is not installed (`npm ci --prefix tests/auth`)");
        return None;
    }
    use std::io::BufRead;
    let mut child = std::process::Command::new("node")
        .arg(dir.join("provider.mjs"))
        .args(["--port", "0"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("node runs");
    let stdout = child.stdout.take().expect("piped");
    let mut line = String::new();
    std::io::BufReader::new(stdout)
        .read_line(&mut line)
        .expect("the provider starts");
    let started = serde_json::from_str(&line).expect("the provider's first line is JSON");
    Some(Provider { child, started })
}

#[tokio::test]
async fn opaque_tokens_are_introspected_at_a_real_provider() {
    let Some(provider) = provider() else {
        return;
    };
    let issuer = provider.started["issuer"]
        .as_str()
        .expect("an issuer")
        .to_owned();
    let token_endpoint = provider.started["token_endpoint"]
        .as_str()
        .expect("a token endpoint")
        .to_owned();
    let introspection = provider.started["introspection_endpoint"]
        .as_str()
        .expect("an endpoint")
        .to_owned();
    let resource = "http://127.0.0.1:9/opaque";
    envelope_mcp::auth::install_crypto_provider();
    let client = reqwest::Client::new();
    let token = |id: &'static str| {
        let request = client
            .post(&token_endpoint)
            .basic_auth(id, Some(format!("{id}-secret")))
            .form(&[
                ("grant_type", "client_credentials"),
                ("scope", "workspace:read"),
                ("resource", resource),
            ]);
        async move {
            let answer = request
                .send()
                .await
                .expect("answers")
                .bytes()
                .await
                .expect("a body");
            let answer: Value = serde_json::from_slice(&answer).expect("JSON");
            answer["access_token"].as_str().expect("a token").to_owned()
        }
    };
    let opaque = token("agent").await;
    assert_eq!(opaque.split('.').count(), 1, "an opaque token, not a JWT");
    let verifier =
        IntrospectionVerifier::new(&issuer, &introspection, resource, "reader", "reader-secret")
            .expect("a verifier");
    let caller = verifier.verify(&opaque).await.expect("active");
    assert_eq!(caller.principal().subject(), "agent");
    assert_eq!(caller.principal().issuer(), issuer.trim_end_matches('/'));
    assert!(caller.may(&["workspace:read"]) && !caller.may(&["workspace:heavy"]));

    assert!(refused(verifier.verify("never-issued").await).contains("not active"));
    let elsewhere = IntrospectionVerifier::new(
        &issuer,
        &introspection,
        "http://127.0.0.1:9/other",
        "reader",
        "reader-secret",
    )
    .expect("a verifier");
    assert!(refused(elsewhere.verify(&opaque).await).contains("another resource"));
    // Wrong client credentials: the token cannot be checked, which is no verdict on it.
    let locked_out =
        IntrospectionVerifier::new(&issuer, &introspection, resource, "reader", "wrong")
            .expect("a verifier");
    assert!(matches!(
        locked_out.verify(&opaque).await,
        Err(TokenError::Unverifiable(_))
    ));
}

/// What a fake issuer answers to one introspection request: its status and body, given the
/// request's number among those about its token (from 0) and the token; a future that never ends never answers.
type IntrospectionAnswer = Arc<
    dyn Fn(usize, String) -> std::pin::Pin<Box<dyn Future<Output = (u16, String)> + Send>>
        + Send
        + Sync,
>;

/// An RFC 7662 introspection endpoint on loopback, counting the requests it gets, by token
/// too, and the most it ever had at once.
struct FakeIssuer {
    base: String,
    endpoint: String,
    hits: Arc<AtomicUsize>,
    by_token: Arc<std::sync::Mutex<std::collections::HashMap<String, usize>>>,
    peak: Arc<AtomicUsize>,
}

impl FakeIssuer {
    fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    fn hits_for(&self, token: &str) -> usize {
        self.by_token
            .lock()
            .expect("unpoisoned")
            .get(token)
            .copied()
            .unwrap_or(0)
    }

    fn verifier(&self) -> IntrospectionVerifier {
        IntrospectionVerifier::new(&self.base, &self.endpoint, AUDIENCE, "rs", "rs-secret")
            .expect("a verifier")
    }
}

/// The answer of `issuer` that `token` is active for the tests' audience until `exp`, its
/// subject the token itself.
fn active(issuer: &str, token: &str, exp: u64) -> String {
    json!({
        "active": true, "iss": issuer, "aud": AUDIENCE, "sub": token,
        "scope": "notes:read", "exp": exp,
    })
    .to_string()
}

/// Counts a request in flight while it lives.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

async fn fake_issuer(answer: impl Fn(&FakeIssuer) -> IntrospectionAnswer) -> Arc<FakeIssuer> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a port");
    let base = format!("http://{}", listener.local_addr().expect("an address"));
    let issuer = FakeIssuer {
        endpoint: format!("{base}/introspect"),
        base,
        hits: Arc::new(AtomicUsize::new(0)),
        by_token: Arc::default(),
        peak: Arc::new(AtomicUsize::new(0)),
    };
    let answer = answer(&issuer);
    let (hits, by_token, peak) = (
        Arc::clone(&issuer.hits),
        Arc::clone(&issuer.by_token),
        Arc::clone(&issuer.peak),
    );
    let now_in_flight = Arc::new(AtomicUsize::new(0));
    let router = axum::Router::new().route(
        "/introspect",
        axum::routing::post(move |body: String| {
            hits.fetch_add(1, Ordering::SeqCst);
            // The tests' tokens need no percent-decoding.
            let token = body
                .split('&')
                .find_map(|pair| pair.strip_prefix("token="))
                .unwrap_or_default()
                .to_owned();
            let hit = {
                let mut by_token = by_token.lock().expect("unpoisoned");
                let count = by_token.entry(token.clone()).or_default();
                *count += 1;
                *count - 1
            };
            let now = now_in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            let in_flight = InFlight(Arc::clone(&now_in_flight));
            let answer = answer(hit, token);
            async move {
                let (status, body) = answer.await;
                drop(in_flight);
                (
                    http::StatusCode::from_u16(status).expect("a status"),
                    [(http::header::CONTENT_TYPE, "application/json")],
                    body,
                )
            }
        }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    Arc::new(issuer)
}

/// Answers every token active, after `delay`, until `exp`.
fn answering_after(delay: Duration, exp: u64) -> impl Fn(&FakeIssuer) -> IntrospectionAnswer {
    move |issuer| {
        let base = issuer.base.clone();
        Arc::new(move |_, token| {
            let body = active(&base, &token, exp);
            Box::pin(async move {
                tokio::time::sleep(delay).await;
                (200, body)
            })
        })
    }
}

#[tokio::test]
async fn an_introspected_token_is_asked_about_once_until_max_age_or_exp() {
    let start = now();
    let issuer = fake_issuer(|issuer| {
        let base = issuer.base.clone();
        Arc::new(move |hit, token| {
            let active = |exp: u64| active(&base, &token, exp);
            let answer = match token.as_str() {
                // Expires within two seconds.
                "short-lived" => (200, active(start + 2)),
                "never-issued" => (200, json!({"active": false}).to_string()),
                // The issuer fails once, then answers.
                "flaky" if hit == 0 => (500, String::new()),
                _ => (200, active(start + 600)),
            };
            Box::pin(async move { answer })
        })
    })
    .await;
    let verifier = issuer
        .verifier()
        .with_cache_max_age(Duration::from_millis(400));

    for _ in 0..5 {
        let caller = verifier.verify("long-lived").await.expect("active");
        assert_eq!(caller.principal().subject(), "long-lived");
        assert!(caller.may(&["notes:read"]));
    }
    assert_eq!(issuer.hits_for("long-lived"), 1, "asked once, then cached");
    // Past the maximum age, the issuer is asked again, and once.
    tokio::time::sleep(Duration::from_millis(500)).await;
    for _ in 0..3 {
        verifier.verify("long-lived").await.expect("active");
    }
    assert_eq!(issuer.hits_for("long-lived"), 2);

    // A token expiring before the maximum age is believed until its `exp` only.
    let verifier = issuer
        .verifier()
        .with_cache_max_age(Duration::from_secs(60));
    for _ in 0..3 {
        verifier.verify("short-lived").await.expect("active");
    }
    assert_eq!(issuer.hits_for("short-lived"), 1);
    while now() <= start + 2 {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(refused(verifier.verify("short-lived").await).contains("expired"));
    assert_eq!(issuer.hits_for("short-lived"), 2, "asked again past `exp`");

    // A refusal is not kept: each call asks.
    for _ in 0..3 {
        assert!(refused(verifier.verify("never-issued").await).contains("not active"));
    }
    assert_eq!(issuer.hits_for("never-issued"), 3);
    // Nor is a failure to ask: the next call asks again, and is answered.
    assert!(matches!(
        verifier.verify("flaky").await,
        Err(TokenError::Unverifiable(_))
    ));
    verifier
        .verify("flaky")
        .await
        .expect("answered the second time");
    verifier.verify("flaky").await.expect("cached");
    assert_eq!(issuer.hits_for("flaky"), 2);

    // A maximum age of zero keeps nothing.
    let uncached = issuer.verifier().with_cache_max_age(Duration::ZERO);
    for _ in 0..3 {
        uncached.verify("uncached").await.expect("active");
    }
    assert_eq!(issuer.hits_for("uncached"), 3);
}

#[tokio::test]
async fn concurrent_first_calls_with_one_token_ask_the_issuer_once() {
    let issuer = fake_issuer(answering_after(Duration::from_millis(300), now() + 600)).await;
    let verifier = Arc::new(issuer.verifier());
    let calls: Vec<_> = (0..20)
        .map(|_| {
            let verifier = Arc::clone(&verifier);
            tokio::spawn(async move { verifier.verify("fresh").await })
        })
        .collect();
    for call in calls {
        let caller = call.await.expect("no panic").expect("active");
        assert_eq!(caller.principal().subject(), "fresh");
    }
    assert_eq!(issuer.hits(), 1);
}

#[tokio::test]
async fn a_waiter_whose_asking_call_went_away_asks_itself() {
    // The first request about a token is never answered; later ones are.
    let issuer = fake_issuer(|issuer| {
        let base = issuer.base.clone();
        Arc::new(move |hit, token| {
            let body = active(&base, &token, now() + 600);
            Box::pin(async move {
                if hit == 0 {
                    std::future::pending::<()>().await;
                }
                (200, body)
            })
        })
    })
    .await;
    // A deadline far beyond the test's own: the waiter is answered because it asked again,
    // not because its deadline passed.
    let verifier = Arc::new(
        issuer
            .verifier()
            .with_introspection_deadline(Duration::from_secs(120)),
    );
    let leader = {
        let verifier = Arc::clone(&verifier);
        tokio::spawn(async move { verifier.verify("abandoned").await })
    };
    while issuer.hits() == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiter = {
        let verifier = Arc::clone(&verifier);
        tokio::spawn(async move { verifier.verify("abandoned").await })
    };
    // Let the waiter find the question in flight, then take its asker away.
    tokio::time::sleep(Duration::from_millis(200)).await;
    leader.abort();
    let answered = tokio::time::timeout(Duration::from_secs(30), waiter)
        .await
        .expect("the waiter is not left hanging")
        .expect("no panic");
    assert_eq!(answered.expect("active").principal().subject(), "abandoned");
    assert_eq!(issuer.hits(), 2);
}

#[tokio::test]
async fn the_issuer_never_has_more_questions_at_once_than_the_limit() {
    let issuer = fake_issuer(answering_after(Duration::from_millis(150), now() + 600)).await;
    let verifier = Arc::new(
        issuer
            .verifier()
            .with_max_concurrent_introspections(2)
            .with_introspection_deadline(Duration::from_secs(60)),
    );
    let calls: Vec<_> = (0..10)
        .map(|i| {
            let verifier = Arc::clone(&verifier);
            tokio::spawn(async move { verifier.verify(&format!("token-{i}")).await })
        })
        .collect();
    for call in calls {
        call.await.expect("no panic").expect("active");
    }
    assert_eq!(issuer.hits(), 10);
    let peak = issuer.peak.load(Ordering::SeqCst);
    assert!((1..=2).contains(&peak), "{peak} at once");
}

#[tokio::test]
async fn a_stalled_issuer_is_answered_503_within_the_deadline_while_cached_tokens_go_on() {
    // Tokens starting `stalled` are never answered.
    let issuer = fake_issuer(|issuer| {
        let base = issuer.base.clone();
        Arc::new(move |_, token| {
            let stalls = token.starts_with("stalled");
            let body = active(&base, &token, now() + 600);
            Box::pin(async move {
                if stalls {
                    std::future::pending::<()>().await;
                }
                (200, body)
            })
        })
    })
    .await;
    // One question at a time: while the stalled one holds it, another uncached token waits for
    // its turn, and is refused at its deadline too (should it get the turn as the first gives
    // it up, it stalls as well).
    let verifier = issuer
        .verifier()
        .with_max_concurrent_introspections(1)
        .with_introspection_deadline(Duration::from_secs(3));
    let addr = serve(ResourceServer::new(AUDIENCE, verifier).expect("a resource server")).await;
    let call = |token: &str| {
        mcp(
            addr,
            &bearer(token),
            "tools/call",
            json!({"name": "whoami", "arguments": {}}),
        )
    };
    let (head, _) = exchange(addr, call("cached")).await;
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");

    let stalled = tokio::spawn(exchange(addr, call("stalled-mcp")));
    while issuer.hits_for("stalled-mcp") == 0 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let waiting = tokio::spawn(exchange(
        addr,
        format!(
            "GET /tools HTTP/1.1\r\nhost: {addr}\r\n{}connection: close\r\n\r\n",
            bearer("stalled-waiting")
        ),
    ));
    for _ in 0..5 {
        let (head, answer) = exchange(addr, call("cached")).await;
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        assert_eq!(
            answer["result"]["structuredContent"]["data"]["subject"],
            "cached"
        );
    }
    // The whole deadline is the margin: the cached calls did not wait for the stalled one.
    assert!(
        !stalled.is_finished(),
        "cached tokens are answered meanwhile"
    );
    assert_eq!(issuer.hits_for("cached"), 1);

    let within = Duration::from_secs(30);
    let (head, _) = tokio::time::timeout(within, stalled)
        .await
        .expect("the stalled call is answered")
        .expect("no panic");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(header(&head, "retry-after").is_some(), "{head}");
    let (head, problem) = tokio::time::timeout(within, waiting)
        .await
        .expect("the waiting call is answered")
        .expect("no panic");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(header(&head, "retry-after").is_some(), "{head}");
    assert_eq!(problem["envelope"]["error"]["code"], "token_unverifiable");
    // The issuer stalls the REST gateway's calls the same way.
    let (head, problem) = tokio::time::timeout(
        within,
        exchange(
            addr,
            format!(
                "GET /tools HTTP/1.1\r\nhost: {addr}\r\n{}connection: close\r\n\r\n",
                bearer("stalled-rest")
            ),
        ),
    )
    .await
    .expect("the stalled REST call is answered");
    assert!(head.starts_with("HTTP/1.1 503"), "{head}");
    assert!(header(&head, "retry-after").is_some(), "{head}");
    assert_eq!(problem["envelope"]["error"]["code"], "token_unverifiable");
}

#[tokio::test]
async fn a_huge_introspection_answer_is_refused_unread_and_not_kept() {
    let issuer = fake_issuer(|issuer| {
        let base = issuer.base.clone();
        Arc::new(move |_, token| {
            // A megabyte of scopes.
            let scope = "notes:read ".repeat(100_000);
            let body = json!({
                "active": true, "iss": base, "aud": AUDIENCE, "sub": token,
                "scope": scope, "exp": now() + 600,
            })
            .to_string();
            Box::pin(async move { (200, body) })
        })
    })
    .await;
    let verifier = issuer.verifier();
    for _ in 0..2 {
        match verifier.verify("wordy").await {
            Err(TokenError::Unverifiable(why)) => {
                assert!(why.contains("answered more than"), "{why}");
                assert!(!why.contains("wordy"), "{why}");
            }
            other => panic!("expected an unverifiable token, got {other:?}"),
        }
    }
    assert_eq!(issuer.hits(), 2, "a failure is not kept");
}

//! `envelope-check` logged in (issue #37): an envelope server that answers only requests
//! bearing a token its fake authorization server issued, checked through the command line with
//! the client-credentials grant (`client_secret_basic` and `client_secret_post`) and with a
//! token file; without a login, with a wrong secret, with every kind of bad file, and with a
//! token endpoint that answers wrong, each failing with a message that says why. Every run's
//! output, `RUST_LOG=trace` set, is searched for the secret and the tokens issued.

use std::collections::HashMap;
use std::hash::{BuildHasher as _, Hasher as _, RandomState};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use envelope_check::login::MIN_REDACTED_PREFIX;
use envelope_check::login::{ClientAuth, ClientCredentials};
use envelope_check::{Login, LoginError, MIN_TOKEN_USE, Secret, TokenSource};
use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// Rows per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(RowsArgs);

#[derive(Serialize, schemars::JsonSchema)]
struct Rows {
    rows: Vec<String>,
}

/// Twenty numbered rows, a page at a time.
#[tool(tier = lite, read_only)]
fn rows(ctx: &ToolContext, args: RowsArgs) -> ToolResult<Reply<Rows>> {
    let pager = Pager::<rows>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
    let page: Vec<String> = (0..20)
        .filter(|index| pager.takes(*index))
        .map(|index| format!("row {index:02}"))
        .collect();
    let count = PageCount::new(page.len(), 20);
    pager.finish(ctx, &args, Reply::new(Rows { rows: page }), count)
}

/// 64 random hex digits: a secret or a token no other run shares.
fn random() -> String {
    (0..4)
        .map(|_| format!("{:016x}", RandomState::new().build_hasher().finish()))
        .collect()
}

/// What the fake token endpoint answers besides a good token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Answer {
    /// A token as RFC 6749 has it.
    Token,
    /// `200` with HTML.
    NotJson,
    /// `200` with JSON but no `access_token`.
    NoAccessToken,
    /// `200` with a `mac` token.
    NotBearer,
    /// `400` whose `error_description` echoes the request (its `Authorization` header and
    /// its form), cut inside the client's secret when `cut`.
    Echo { cut: bool },
}

/// The fake authorization server and the protected server's shared state.
struct Authority {
    client_id: String,
    secret: String,
    scopes: Vec<String>,
    /// The protected server's `/mcp`: the resource every token request must name.
    resource: String,
    answer: Answer,
    /// Each token's lifetime.
    lifetime: Duration,
    /// The tokens issued, and when each expires.
    issued: Mutex<HashMap<String, Instant>>,
    /// The requests the protected server refused, and the ones it let through.
    refused: Mutex<usize>,
    admitted: Mutex<usize>,
}

impl Authority {
    fn issue(&self) -> String {
        let token = random();
        self.issued
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .insert(token.clone(), Instant::now() + self.lifetime);
        token
    }

    fn tokens(&self) -> Vec<String> {
        self.issued
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .keys()
            .cloned()
            .collect()
    }

    fn admitted(&self) -> usize {
        *self
            .admitted
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn refused(&self) -> usize {
        *self
            .refused
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// An RFC 6749 §5.2 error answer.
fn oauth_error(status: StatusCode, error: &str, description: &str) -> Response {
    let body = json!({ "error": error, "error_description": description }).to_string();
    (status, [(CONTENT_TYPE, "application/json")], body).into_response()
}

/// The token endpoint: the client's id and secret by `client_secret_basic` or
/// `client_secret_post`, the grant, the scopes and the resource are each checked.
async fn token_endpoint(
    State(authority): State<Arc<Authority>>,
    headers: HeaderMap,
    body: String,
) -> Response {
    let form: HashMap<String, String> = form_urlencoded::parse(body.as_bytes())
        .into_owned()
        .collect();
    let decode = |text: &str| -> String {
        form_urlencoded::parse(format!("x={text}").as_bytes())
            .next()
            .map(|(_, value)| value.into_owned())
            .unwrap_or_default()
    };
    let basic = headers
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Basic "))
        .and_then(|encoded| {
            base64::engine::general_purpose::STANDARD
                .decode(encoded)
                .ok()
        })
        .and_then(|decoded| String::from_utf8(decoded).ok())
        .and_then(|pair| {
            let (id, secret) = pair.split_once(':')?;
            Some((decode(id), decode(secret)))
        });
    let posted = form
        .get("client_id")
        .zip(form.get("client_secret"))
        .map(|(id, secret)| (id.clone(), secret.clone()));
    if let Answer::Echo { cut } = authority.answer {
        let authorization = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default();
        let mut echo = format!("you sent {authorization} and {body}");
        if cut {
            // Cut ten characters into the secret as sent: encoded in the form, or in base64.
            let encoded: String =
                form_urlencoded::byte_serialize(authority.secret.as_bytes()).collect();
            let at = echo
                .find(&encoded)
                .map(|at| at + 10)
                .or_else(|| echo.find("Basic ").map(|at| at + 6 + 20))
                .unwrap_or(echo.len());
            echo.truncate(at);
        }
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_request", &echo);
    }
    let Some((id, secret)) = basic.or(posted) else {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "no client authentication",
        );
    };
    if id != authority.client_id || secret != authority.secret {
        return oauth_error(
            StatusCode::UNAUTHORIZED,
            "invalid_client",
            "client authentication failed",
        );
    }
    if form.get("grant_type").map(String::as_str) != Some("client_credentials") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type", "");
    }
    let mut scopes: Vec<&str> = form
        .get("scope")
        .map(|scope| scope.split(' ').collect())
        .unwrap_or_default();
    scopes.sort_unstable();
    if scopes != authority.scopes {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_scope", "wrong scopes");
    }
    if form.get("resource") != Some(&authority.resource) {
        return oauth_error(StatusCode::BAD_REQUEST, "invalid_target", "wrong resource");
    }
    let lifetime = authority.lifetime.as_secs();
    let body = match authority.answer {
        Answer::Token => json!({
            "access_token": authority.issue(), "token_type": "bearer", "expires_in": lifetime,
        }),
        Answer::NotJson => return (StatusCode::OK, "<html>login</html>").into_response(),
        Answer::NoAccessToken => json!({ "token_type": "Bearer", "expires_in": lifetime }),
        Answer::NotBearer => json!({
            "access_token": authority.issue(), "token_type": "mac", "expires_in": lifetime,
        }),
        Answer::Echo { .. } => unreachable!("answered above"),
    };
    (
        StatusCode::OK,
        [(CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// In front of the envelope server: a request passes with a token the endpoint issued and
/// that has not expired, and is refused `401` with a challenge otherwise.
async fn require_bearer(
    State(authority): State<Arc<Authority>>,
    request: Request,
    next: Next,
) -> Response {
    let now = Instant::now();
    let valid = request
        .headers()
        .get(AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .is_some_and(|token| {
            authority
                .issued
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get(token)
                .is_some_and(|expires| *expires > now)
        });
    let count = if valid {
        &authority.admitted
    } else {
        &authority.refused
    };
    *count
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) += 1;
    if !valid {
        let challenge = format!(
            "Bearer resource_metadata=\"{}/.well-known/oauth-protected-resource\"",
            authority.resource.trim_end_matches("/mcp")
        );
        return (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, challenge)]).into_response();
    }
    next.run(request).await
}

/// How the fake authority is set up.
struct Setup {
    answer: Answer,
    lifetime: Duration,
    /// What the client's secret starts with (a random tail follows).
    secret: &'static str,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            answer: Answer::Token,
            lifetime: Duration::from_secs(3600),
            secret: "s3cret+",
        }
    }
}

/// A running protected server and its token endpoint, and a directory for secret files.
struct World {
    authority: Arc<Authority>,
    url: String,
    token_url: String,
    dir: PathBuf,
}

async fn listener() -> (tokio::net::TcpListener, SocketAddr) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a free port");
    let addr = listener.local_addr().expect("bound");
    (listener, addr)
}

async fn world(setup: Setup) -> World {
    let (mcp, mcp_addr) = listener().await;
    let (token, token_addr) = listener().await;
    let url = format!("http://{mcp_addr}/mcp");
    let mut scopes = vec!["mcp:read".to_owned(), "mcp:tools".to_owned()];
    scopes.sort_unstable();
    let authority = Arc::new(Authority {
        client_id: "checker:ci".to_owned(),
        secret: format!("{}{}", setup.secret, random()),
        scopes,
        resource: url.clone(),
        answer: setup.answer,
        lifetime: setup.lifetime,
        issued: Mutex::default(),
        refused: Mutex::default(),
        admitted: Mutex::default(),
    });
    let key = ContinuationKey::new(1, [7; 32]);
    let server = EnvelopeServer::new(
        toolset![rows],
        EnvelopeConfig::new("protected", "1").with_continuations(Continuations::new(key)),
    );
    let protected = server
        .http_router()
        .layer(axum::middleware::from_fn_with_state(
            Arc::clone(&authority),
            require_bearer,
        ));
    tokio::spawn(async move { axum::serve(mcp, protected).await });
    let endpoint = axum::Router::new()
        .route("/token", axum::routing::post(token_endpoint))
        .with_state(Arc::clone(&authority));
    tokio::spawn(async move { axum::serve(token, endpoint).await });
    let dir = std::env::temp_dir().join(format!("envelope-check-login-{}", random()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    World {
        authority,
        url,
        token_url: format!("http://{token_addr}/token"),
        dir,
    }
}

impl World {
    /// A file of `bytes` in the world's directory.
    fn file(&self, name: &str, bytes: &[u8]) -> PathBuf {
        let path = self.dir.join(name);
        std::fs::write(&path, bytes).expect("the file is written");
        path
    }

    /// The client-credentials flags, the secret in a file with a final newline.
    fn login_args(&self, secret: &str) -> Vec<String> {
        let file = self.file("client.secret", format!("{secret}\n").as_bytes());
        vec![
            "--url".into(),
            self.url.clone(),
            "--oauth-token-url".into(),
            self.token_url.clone(),
            "--client-id".into(),
            self.authority.client_id.clone(),
            "--client-secret-file".into(),
            path_arg(&file),
            "--scope".into(),
            "mcp:tools mcp:read".into(),
        ]
    }

    /// A token source logging in to this world's endpoint with its client's credentials.
    fn token_source(&self) -> TokenSource {
        TokenSource::new(
            Login::ClientCredentials(ClientCredentials {
                token_url: self.token_url.clone(),
                client_id: self.authority.client_id.clone(),
                client_secret: Secret::new(self.authority.secret.clone()),
                scopes: vec!["mcp:read".to_owned(), "mcp:tools".to_owned()],
                resource: self.url.clone(),
                auth: ClientAuth::Basic,
            }),
            Duration::from_secs(10),
        )
        .expect("a token source")
    }

    /// Asserts that no secret of this world, nor any token it issued, is in `output`, in any
    /// form (see [`assert_no_form_of`]).
    fn assert_no_secret(&self, output: &str) {
        assert_no_form_of(output, "the client secret", &self.authority.secret);
        let id: String =
            form_urlencoded::byte_serialize(self.authority.client_id.as_bytes()).collect();
        let secret: String =
            form_urlencoded::byte_serialize(self.authority.secret.as_bytes()).collect();
        let engine = base64::engine::general_purpose::STANDARD;
        // The `Basic` header's base64: its first characters encode the id alone, so it is
        // its part past the id that must not show.
        let basic = engine.encode(format!("{id}:{secret}"));
        let past_id = (id.len() + 1) * 4 / 3 + 4;
        assert!(
            !output.contains(&basic[past_id..past_id + MIN_REDACTED_PREFIX]),
            "the Basic credentials were printed: {output}"
        );
        for token in self.authority.tokens() {
            assert_no_form_of(output, "an access token", &token);
        }
    }
}

/// Asserts that `output` holds none of the printed forms of `secret`: as is, JSON-escaped,
/// form-urlencoded (`+` or `%20` for a space, upper- or lower-case hex), nor the first
/// [`MIN_REDACTED_PREFIX`] characters of any of them (what a cut echo leaves).
fn assert_no_form_of(output: &str, what: &str, secret: &str) {
    let json = Value::from(secret).to_string();
    let form: String = form_urlencoded::byte_serialize(secret.as_bytes()).collect();
    let lower = {
        let mut lower = String::new();
        let mut hex = 0;
        for char in form.chars() {
            lower.push(if hex > 0 {
                char.to_ascii_lowercase()
            } else {
                char
            });
            hex = if char == '%' { 2 } else { hex.max(1) - 1 };
        }
        lower
    };
    for form in [
        secret.to_owned(),
        json[1..json.len() - 1].to_owned(),
        form.clone(),
        form.replace('+', "%20"),
        lower,
    ] {
        let prefix: String = form.chars().take(MIN_REDACTED_PREFIX).collect();
        assert!(
            !output.contains(&prefix),
            "{what} was printed, as `{form}` or its first characters: {output}"
        );
    }
}

fn path_arg(path: &Path) -> String {
    path.to_str().expect("a UTF-8 temporary path").to_owned()
}

/// The command line with `args` and `RUST_LOG=trace`: its exit status, and its standard
/// output and error.
async fn envelope_check(args: &[String]) -> (i32, String, String) {
    let running = tokio::process::Command::new(env!("CARGO_BIN_EXE_envelope-check"))
        .args(["--seed", "3", "--variations", "1"])
        .args(args)
        .env("RUST_LOG", "trace")
        .kill_on_drop(true)
        .output();
    // No run here takes long: one that waits (on a FIFO, say) fails instead of hanging.
    let output = tokio::time::timeout(Duration::from_secs(120), running)
        .await
        .unwrap_or_else(|_| panic!("envelope-check {args:?} ran past two minutes"))
        .expect("envelope-check runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

fn args(list: &[&str]) -> Vec<String> {
    list.iter().map(|arg| (*arg).to_owned()).collect()
}

#[tokio::test]
async fn a_client_credentials_login_passes_and_shows_no_secret() {
    let world = world(Setup::default()).await;
    let secret = world.authority.secret.clone();
    for method in ["basic", "post"] {
        let mut login = world.login_args(&secret);
        login.extend(args(&["--client-auth", method, "--json"]));
        let (status, stdout, stderr) = envelope_check(&login).await;
        assert_eq!(status, 0, "{method}: {stdout}{stderr}");
        let report: Value = serde_json::from_str(&stdout).expect("--json prints JSON");
        assert_eq!(report["failed_count"], 0, "{stdout}");
        assert_eq!(report["tools"][0]["tool"], "rows");
        world.assert_no_secret(&stdout);
        world.assert_no_secret(&stderr);
        // The same run as text.
        let (status, stdout, stderr) = envelope_check(&world.login_args(&secret)).await;
        assert_eq!(status, 0, "{stdout}{stderr}");
        world.assert_no_secret(&stdout);
        world.assert_no_secret(&stderr);
    }
    // Every request of every run carried a token the endpoint had issued.
    assert_eq!(world.authority.refused(), 0);
    assert!(world.authority.admitted() > 4);
    assert_eq!(world.authority.tokens().len(), 4, "a token per run");
}

#[tokio::test]
async fn a_bearer_token_file_passes() {
    let world = world(Setup::default()).await;
    let token = world.authority.issue();
    let file = world.file("token", format!("{token}\n").as_bytes());
    let (status, stdout, stderr) = envelope_check(&args(&[
        "--url",
        &world.url,
        "--bearer-token-file",
        &path_arg(&file),
        "--json",
    ]))
    .await;
    assert_eq!(status, 0, "{stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("--json prints JSON");
    assert_eq!(report["failed_count"], 0, "{stdout}");
    assert_eq!(world.authority.refused(), 0);
    world.assert_no_secret(&format!("{stdout}{stderr}"));
}

#[tokio::test]
async fn without_a_login_the_server_refuses_and_the_message_says_how_to_log_in() {
    let world = world(Setup::default()).await;
    let (status, stdout, stderr) = envelope_check(&args(&["--url", &world.url])).await;
    assert_eq!(status, 2, "{stdout}{stderr}");
    assert!(stderr.contains("requires a login (HTTP 401"), "{stderr}");
    assert!(stderr.contains("--oauth-token-url"), "{stderr}");
    // A token the endpoint never issued is refused too, and said to be.
    let file = world.file("forged", b"forged-token");
    let (status, _, stderr) = envelope_check(&args(&[
        "--url",
        &world.url,
        "--bearer-token-file",
        &path_arg(&file),
    ]))
    .await;
    assert_eq!(status, 2);
    assert!(
        stderr.contains("refused the access token (HTTP 401"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_wrong_secret_names_the_endpoints_refusal_and_not_the_secret() {
    let world = world(Setup::default()).await;
    let wrong = format!("wrong-{}", random());
    let (status, stdout, stderr) = envelope_check(&world.login_args(&wrong)).await;
    assert_eq!(status, 2, "{stdout}{stderr}");
    assert!(
        stderr.contains(&format!(
            "the token endpoint {} refused the login: HTTP 401 (invalid_client: client \
             authentication failed)",
            world.token_url
        )),
        "{stderr}"
    );
    assert!(!stderr.contains(&wrong) && !stdout.contains(&wrong));
    world.assert_no_secret(&format!("{stdout}{stderr}"));
    // A scope the client may not have: the endpoint's own words again.
    let mut login = world.login_args(&world.authority.secret);
    login.extend(args(&["--scope", "admin"]));
    let (status, _, stderr) = envelope_check(&login).await;
    assert_eq!(status, 2);
    assert!(stderr.contains("HTTP 400 (invalid_scope"), "{stderr}");
    world.assert_no_secret(&stderr);
}

/// A token endpoint that echoes the request (the `Basic` header, the posted form), whole or
/// cut inside the secret: the secret, form-encoded (`+/=&:%` as base64 secrets hold), in base64,
/// or a prefix of either, is printed nowhere.
#[tokio::test]
async fn an_echoing_token_endpoint_never_gets_a_secret_printed() {
    for cut in [false, true] {
        let world = world(Setup {
            answer: Answer::Echo { cut },
            secret: "Zk9+b/A=&c:d%e",
            ..Setup::default()
        })
        .await;
        for method in ["basic", "post"] {
            let mut login = world.login_args(&world.authority.secret);
            login.extend(args(&["--client-auth", method]));
            let (status, stdout, stderr) = envelope_check(&login).await;
            assert_eq!(status, 2, "{method}: {stdout}{stderr}");
            assert!(stderr.contains("HTTP 400 (invalid_request"), "{stderr}");
            // The echo was there, and what it held of the secret is gone.
            assert!(
                stderr.contains("[redacted]"),
                "{method}, cut {cut}: {stderr}"
            );
            world.assert_no_secret(&format!("{stdout}{stderr}"));
        }
    }
}

/// How a server quotes back the bearer token it was sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Quoting {
    /// Every request refused `400`, the body quoting the `Authorization` header.
    InARefusal,
    /// Every tool answer quoting it, in its text and its structured content.
    InAnAnswer,
}

/// A streamable HTTP server with one read-only tool, quoting the token as `quoting` says.
async fn quoting_server(quoting: Quoting) -> String {
    use axum::body::Body;
    async fn mcp(quoting: Quoting, headers: HeaderMap, body: String) -> Response<Body> {
        let message: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
        let sent = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        if quoting == Quoting::InARefusal {
            let body = json!({ "error": format!("bad credentials: {sent}") }).to_string();
            return (
                StatusCode::BAD_REQUEST,
                [(CONTENT_TYPE, "application/json")],
                body,
            )
                .into_response();
        }
        let json = |result: Value| {
            let body = json!({ "jsonrpc": "2.0", "id": message["id"], "result": result });
            ([(CONTENT_TYPE, "application/json")], body.to_string()).into_response()
        };
        match message["method"].as_str() {
            Some("initialize") => json(json!({
                "protocolVersion": message["params"]["protocolVersion"],
                "capabilities": { "tools": {} },
                "serverInfo": { "name": "quoting", "version": "1" },
            })),
            Some("tools/list") => json(json!({ "tools": [{
                "name": "whoami",
                "inputSchema": { "type": "object", "properties": {} },
                "annotations": { "readOnlyHint": true },
            }] })),
            Some("tools/call") => json(json!({
                "content": [{ "type": "text", "text": json!({ "you_sent": sent }).to_string() }],
                "structuredContent": { "you_sent": sent },
                "isError": false,
            })),
            Some(_) if message.get("id").is_some() => json(json!({})),
            _ => StatusCode::ACCEPTED.into_response(),
        }
    }
    let (listener, addr) = listener().await;
    let router = axum::Router::new().route(
        "/mcp",
        axum::routing::post(move |headers, body| mcp(quoting, headers, body))
            .get(|| async { StatusCode::METHOD_NOT_ALLOWED }),
    );
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{addr}/mcp")
}

/// A server that quotes the bearer token back, in a refusal (to stderr) or in a tool's answer
/// (to the report's excerpts, as text and as JSON): the token, JSON-escaped once or twice (it
/// holds a quote and a backslash), is printed nowhere.
#[tokio::test]
async fn a_server_quoting_the_bearer_token_gets_it_printed_nowhere() {
    let token = format!("tok\"en\\{}", random());
    let dir = std::env::temp_dir().join(format!("envelope-check-quoting-{}", random()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let file = dir.join("token");
    std::fs::write(&file, format!("{token}\n")).expect("the token file is written");
    for quoting in [Quoting::InARefusal, Quoting::InAnAnswer] {
        let url = quoting_server(quoting).await;
        for format in [None, Some("--json")] {
            let mut line = args(&["--url", &url, "--bearer-token-file", &path_arg(&file)]);
            line.extend(format.map(str::to_owned));
            let (status, stdout, stderr) = envelope_check(&line).await;
            let printed = format!("{stdout}{stderr}");
            match quoting {
                Quoting::InARefusal => assert_eq!(status, 2, "{printed}"),
                // Quoted in an answer that is no envelope: checks fail, with excerpts.
                Quoting::InAnAnswer => {
                    assert_eq!(status, 1, "{printed}");
                    assert!(stdout.contains("you_sent"), "{printed}");
                }
            }
            assert!(printed.contains("[redacted]"), "{quoting:?}: {printed}");
            assert_no_form_of(&printed, "the bearer token", &token);
            // Escaped twice: a text content that is JSON, excerpted.
            let once = Value::from(token.as_str()).to_string();
            let twice = Value::from(&once[1..once.len() - 1]).to_string();
            let twice = &twice[1..twice.len() - 1];
            assert!(
                !printed.contains(&twice[..MIN_REDACTED_PREFIX]),
                "{quoting:?}: {printed}"
            );
        }
    }
}

#[tokio::test]
async fn every_kind_of_bad_secret_file_is_told_clearly() {
    let world = world(Setup::default()).await;
    let dir = world.dir.join("a-directory");
    std::fs::create_dir_all(&dir).expect("a directory");
    let cases: Vec<(PathBuf, &str)> = vec![
        (world.dir.join("nothing-here"), "does not exist"),
        (dir, "is a directory, not a regular file"),
        (world.file("latin1", b"caf\xe9"), "is not UTF-8 text"),
        (world.file("empty", b""), "is empty"),
        (world.file("newline", b"\n"), "is empty"),
        (
            world.file("large", &vec![b'a'; 64 * 1024 + 1]),
            "is larger than 65536 bytes",
        ),
    ];
    // A FIFO nobody writes to: refused at once, never waited on (a blocking open would hang
    // the run forever; `envelope_check` is bounded below).
    #[cfg(unix)]
    let cases = {
        let mut cases = cases;
        let fifo = world.dir.join("a-fifo");
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .expect("mkfifo runs");
        assert!(made.success());
        cases.push((fifo, "is a FIFO, not a regular file"));
        cases
    };
    for (path, message) in &cases {
        let mut login = world.login_args(&world.authority.secret);
        let at = login
            .iter()
            .position(|arg| arg == "--client-secret-file")
            .expect("the flag")
            + 1;
        login[at] = path_arg(path);
        let (status, stdout, stderr) = envelope_check(&login).await;
        assert_eq!(status, 2, "{}: {stdout}{stderr}", path.display());
        assert!(
            stderr.contains(&format!("the client secret file `{}`", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains(message), "{message}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
        let (status, _, stderr) = envelope_check(&args(&[
            "--url",
            &world.url,
            "--bearer-token-file",
            &path_arg(path),
        ]))
        .await;
        assert_eq!(status, 2, "{stderr}");
        assert!(
            stderr.contains(&format!("the bearer token file `{}`", path.display())),
            "{stderr}"
        );
        assert!(stderr.contains(message), "{message}: {stderr}");
    }
    // A token file of two lines is no token.
    let two = world.file("two-lines", b"one\ntwo\n");
    let (status, _, stderr) = envelope_check(&args(&[
        "--url",
        &world.url,
        "--bearer-token-file",
        &path_arg(&two),
    ]))
    .await;
    assert_eq!(status, 2);
    assert!(stderr.contains("holds more than one line"), "{stderr}");
    // Nothing got as far as the server.
    assert_eq!(world.authority.admitted() + world.authority.refused(), 0);
}

#[tokio::test]
async fn a_token_endpoint_that_answers_wrong_is_told_clearly() {
    let cases = [
        (
            Answer::NotJson,
            "answered HTTP 200 with a body that is not JSON",
        ),
        (Answer::NoAccessToken, "answered no `access_token`"),
        (
            Answer::NotBearer,
            "issued a `mac` token, not a `Bearer` one",
        ),
    ];
    for (answer, message) in cases {
        let world = world(Setup {
            answer,
            ..Setup::default()
        })
        .await;
        let (status, stdout, stderr) =
            envelope_check(&world.login_args(&world.authority.secret)).await;
        assert_eq!(status, 2, "{answer:?}: {stdout}{stderr}");
        assert!(stderr.contains("cannot log in"), "{stderr}");
        assert!(stderr.contains(message), "{answer:?}: {stderr}");
        world.assert_no_secret(&format!("{stdout}{stderr}"));
    }
    // Nothing listens at the endpoint.
    let world = world(Setup::default()).await;
    let mut login = world.login_args(&world.authority.secret);
    let at = login
        .iter()
        .position(|arg| arg == "--oauth-token-url")
        .expect("the flag")
        + 1;
    login[at] = "http://127.0.0.1:1/token".to_owned();
    let (status, _, stderr) = envelope_check(&login).await;
    assert_eq!(status, 2);
    assert!(
        stderr.contains("cannot reach the token endpoint http://127.0.0.1:1/token"),
        "{stderr}"
    );
    world.assert_no_secret(&stderr);
}

#[tokio::test]
async fn the_login_flags_go_together_and_with_an_http_server_only() {
    let world = world(Setup::default()).await;
    let secret = path_arg(&world.file("client.secret", b"x"));
    let cases: [(Vec<&str>, &str); 5] = [
        // A stdio server takes no login.
        (
            vec![
                "--oauth-token-url",
                &world.token_url,
                "--client-id",
                "a",
                "--client-secret-file",
                &secret,
                "--",
                "true",
            ],
            "cannot be used with",
        ),
        (
            vec!["--bearer-token-file", &secret, "--", "true"],
            "cannot be used with",
        ),
        // The client-credentials flags need one another.
        (
            vec!["--url", &world.url, "--oauth-token-url", &world.token_url],
            "--client-id <ID>",
        ),
        (
            vec!["--url", &world.url, "--client-id", "a", "--scope", "x"],
            "--oauth-token-url <URL>",
        ),
        // One login at a time.
        (
            vec![
                "--url",
                &world.url,
                "--bearer-token-file",
                &secret,
                "--oauth-token-url",
                &world.token_url,
                "--client-id",
                "a",
                "--client-secret-file",
                &secret,
            ],
            "cannot be used with",
        ),
    ];
    for (case, message) in cases {
        let (status, _, stderr) = envelope_check(&args(&case)).await;
        assert_eq!(status, 2, "{case:?}: {stderr}");
        assert!(stderr.contains(message), "{case:?}: {stderr}");
    }
    assert_eq!(world.authority.admitted() + world.authority.refused(), 0);
}

#[tokio::test]
async fn a_token_said_to_expire_at_once_is_not_fetched_per_request() {
    let world = world(Setup {
        lifetime: Duration::ZERO,
        ..Setup::default()
    })
    .await;
    let tokens = world.token_source();
    // `expires_in: 0`, and fifty requests in a row: one token.
    let first = tokens.bearer().await.expect("a token");
    for _ in 0..50 {
        assert_eq!(tokens.bearer().await.expect("a token"), first);
    }
    assert_eq!(tokens.tokens_issued(), 1);
    // Once it has been used for the minimum, the next request gets a new one.
    tokio::time::sleep(MIN_TOKEN_USE + Duration::from_millis(100)).await;
    assert_ne!(tokens.bearer().await.expect("a token"), first);
    assert_eq!(tokens.tokens_issued(), 2);
}

#[tokio::test]
async fn a_token_about_to_expire_is_renewed() {
    let world = world(Setup {
        lifetime: Duration::from_secs(2),
        ..Setup::default()
    })
    .await;
    let tokens = world.token_source();
    let first = tokens.bearer().await.expect("a token");
    let again = tokens.bearer().await.expect("a token");
    assert_eq!(first, again, "a fresh token is kept");
    assert_eq!(tokens.tokens_issued(), 1);
    // Half of its two seconds gone: renewed.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let renewed = tokens.bearer().await.expect("a token");
    assert_ne!(first, renewed);
    assert_eq!(tokens.tokens_issued(), 2);
    // Its Debug output hides the secret and the token.
    let debug = format!("{tokens:?}");
    world.assert_no_secret(&debug);
    assert!(debug.contains("[redacted]"), "{debug}");

    // A wrong secret: the error, its Debug too, names no secret.
    let wrong = TokenSource::new(
        Login::ClientCredentials(ClientCredentials {
            token_url: world.token_url.clone(),
            client_id: world.authority.client_id.clone(),
            client_secret: Secret::new("not-the-secret"),
            scopes: Vec::new(),
            resource: world.url.clone(),
            auth: ClientAuth::Post,
        }),
        Duration::from_secs(10),
    )
    .expect("a token source");
    let error = wrong.bearer().await.expect_err("refused");
    assert!(
        matches!(&error, LoginError::Refused { status: 401, error: Some(code), .. } if code == "invalid_client"),
        "{error:?}"
    );
    assert!(!format!("{error} {error:?}").contains("not-the-secret"));
}

//! `envelope-check`: points at any MCP server and reports whether its tool responses are
//! agent-grade (see `envelope_check` and `docs/CHECKS.md`).
//!
//! ```text
//! envelope-check [OPTIONS] -- COMMAND [ARGS...]    a server on stdio
//! envelope-check [OPTIONS] --url URL               a streamable HTTP server
//! ```
//!
//! A server that is an OAuth 2.1 resource server is checked logged in: with a token from a file
//! (`--bearer-token-file PATH`), or with one the client-credentials grant gets and renews
//! (`--oauth-token-url URL --client-id ID --client-secret-file PATH [--scope SCOPE]...`).
//! Neither secret is ever printed.
//!
//! By default only tools the server lists as `readOnlyHint: true` are called, and next actions
//! naming any other tool are reported, not run: `--allow-tool NAME` calls one more, and
//! `--allow-writes` every tool.
//!
//! Exits 0 when something was checked and nothing failed, 1 when a check failed, the run
//! stopped early (a listing that fails, the time budget, a lost connection) or every tool was
//! withheld, 2 when the server could not be started or
//! connected to, or the command line is wrong.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::{ExitCode, Stdio};
use std::sync::Arc;
use std::time::Duration;

use clap::Parser;
use envelope_check::login::{ClientAuth, ClientCredentials, LoggedInClient, Redactor};
use envelope_check::{
    Check, CheckConfig, DEFAULT_MAX_ANSWER_BYTES, Login, LoginError, Report, Secret, TokenSource,
    Watcher, error_chain, run, run_watching, stdio_transport,
};
use rmcp::ServiceExt as _;
use rmcp::service::ClientInitializeError;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::streamable_http_client::{AuthRequiredError, InsufficientScopeError};

/// Check whether an MCP server's tool responses are agent-grade: envelopes that say whether
/// the call worked, whether a retry can help, how complete and how large the answer is, and
/// what to call next.
#[derive(Debug, Parser)]
#[command(name = "envelope-check", version)]
struct Options {
    /// A streamable HTTP server's endpoint (http://…/mcp), instead of a command.
    #[arg(long, value_name = "URL", conflicts_with = "command", value_parser = http_url)]
    url: Option<String>,

    /// The seed of the random calls (printed in the report; the same seed replays a run).
    /// Default: one drawn from the clock.
    #[arg(long)]
    seed: Option<u64>,

    /// Random valid calls per tool, beside the fixed ones.
    #[arg(long, default_value_t = 3)]
    variations: usize,

    /// Make only these checks (an id, repeatable or comma-separated).
    #[arg(long, value_name = "CHECK", value_delimiter = ',')]
    only: Vec<Check>,

    /// Do not make these checks (an id, repeatable or comma-separated).
    #[arg(long, value_name = "CHECK", value_delimiter = ',')]
    skip: Vec<Check>,

    /// Check only these tools (repeatable or comma-separated).
    // wire: the flag's name
    #[arg(long = "tool", value_name = "NAME", value_delimiter = ',')]
    tools: Vec<String>,

    /// Also call this tool, though the server does not list it as read-only (repeatable or
    /// comma-separated). Without it, only `readOnlyHint: true` tools are called.
    #[arg(long = "allow-tool", value_name = "NAME", value_delimiter = ',')]
    allow_tools: Vec<String>,

    /// Call every tool, those that may delete, send or change things included. Only against a
    /// server whose world may change: a scratch copy, a test account.
    #[arg(long)]
    allow_writes: bool,

    /// Stop making calls after this many seconds; the report says the run stopped early.
    #[arg(long, value_name = "SECONDS", default_value_t = 600)]
    time_budget: u64,

    /// The longest answer read, in bytes (one line on stdio; one event or JSON body over
    /// HTTP); a longer one fails `call.answered`.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_ANSWER_BYTES)]
    max_answer_bytes: usize,

    /// How long one call may take before it fails `call.answered`.
    #[arg(long, value_name = "SECONDS", default_value_t = 30)]
    call_timeout: u64,

    /// The most pages followed, and next actions run, per tool.
    #[arg(long, value_name = "N", default_value_t = 50)]
    max_pages: usize,

    /// The wire the server answers in: `envelope` (the default), or a source contract's
    /// (`pincher`, `cos`, `tsa`, `frigg`). Each answer is validated against that dialect's
    /// schema and read back as the envelope it carries; a check of a field the dialect has no
    /// place for is skipped.
    #[arg(long, value_name = "NAME", default_value = "envelope", value_parser = parse_dialect)]
    dialect: envelope_core::Dialect,

    /// Print the report as JSON.
    #[arg(long)]
    json: bool,

    /// Let a stdio server's standard error through (its logs); by default it is discarded.
    #[arg(long)]
    server_stderr: bool,

    /// The command that runs a server on stdio, and its arguments (after `--`).
    #[arg(last = true, value_name = "COMMAND")]
    command: Vec<String>,

    // Last: its heading would also title every argument declared after it.
    #[command(flatten)]
    login: LoginOptions,
}

/// How to log in to an HTTP server: a bearer token, or OAuth's client-credentials grant.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Logging in (HTTP only)")]
struct LoginOptions {
    /// Log in with the bearer token in this file (one line; a final line ending is dropped),
    /// sent as `Authorization: Bearer …` on every request. Only with `--url`; never printed.
    #[arg(
        long,
        value_name = "PATH",
        requires = "url",
        conflicts_with_all = ["command", "oauth_token_url", "client_id", "client_secret_file", "scopes", "client_auth"],
    )]
    bearer_token_file: Option<PathBuf>,

    /// Log in with the OAuth client-credentials grant at this token endpoint (http://…),
    /// asking for a token for the `--url` resource (RFC 8707), and send it as
    /// `Authorization: Bearer …` on every request; renewed when it is about to expire. Needs
    /// `--client-id` and `--client-secret-file`. Example: `--url http://127.0.0.1:8765/mcp
    /// --oauth-token-url http://127.0.0.1:9000/token --client-id agent --client-secret-file
    /// agent.secret --scope workspace:read`.
    #[arg(
        long,
        value_name = "URL",
        value_parser = http_url,
        requires_all = ["url", "client_id", "client_secret_file"],
        conflicts_with = "command",
    )]
    oauth_token_url: Option<String>,

    /// The OAuth client's id (with `--oauth-token-url`).
    #[arg(long, value_name = "ID", requires = "oauth_token_url")]
    client_id: Option<String>,

    /// The file holding the OAuth client's secret (with `--oauth-token-url`; one line, a
    /// final line ending is dropped). Never printed.
    #[arg(long, value_name = "PATH", requires = "oauth_token_url")]
    client_secret_file: Option<PathBuf>,

    /// A scope to ask the token endpoint for (with `--oauth-token-url`). Repeatable, or several
    /// in one value separated by spaces: `--scope "a b"` is `--scope a --scope b`. None asks
    /// for the client's default scopes.
    // wire: the flag's name
    #[arg(
        long = "scope",
        value_name = "SCOPE",
        value_delimiter = ' ',
        requires = "oauth_token_url"
    )]
    scopes: Vec<String>,

    /// How the client authenticates to the token endpoint: `basic` (client_secret_basic, HTTP
    /// Basic with the id and secret form-urlencoded) or `post` (client_secret_post, both in
    /// the form).
    #[arg(
        long,
        value_name = "METHOD",
        value_enum,
        default_value_t = ClientAuthMethod::Basic,
        requires = "oauth_token_url"
    )]
    client_auth: ClientAuthMethod,
}

/// `--client-auth`'s values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ClientAuthMethod {
    /// client_secret_basic.
    Basic,
    /// client_secret_post.
    Post,
}

/// A URL the HTTP client can reach: `http://`. (This build speaks no TLS: check an `https`
/// server through a local tunnel or its plain HTTP port.)
fn http_url(text: &str) -> Result<String, String> {
    if text.starts_with("http://") {
        Ok(text.to_owned())
    } else if text.starts_with("https://") {
        Err("this build speaks plain HTTP only: reach the server at an http:// address".to_owned())
    } else {
        Err("the URL must start with http://".to_owned())
    }
}

fn config(options: &Options, seed: u64) -> CheckConfig {
    CheckConfig {
        seed,
        variations: options.variations,
        only: options.only.iter().copied().collect(),
        skip: options.skip.iter().copied().collect(),
        tools: options.tools.iter().cloned().collect::<BTreeSet<_>>(),
        allow_tools: options.allow_tools.iter().cloned().collect(),
        allow_writes: options.allow_writes,
        time_budget: Some(Duration::from_secs(options.time_budget)),
        call_timeout: Duration::from_secs(options.call_timeout.max(1)),
        max_pages: options.max_pages.max(1),
        dialect: options.dialect,
    }
}

/// Reads `--dialect`: a wire name, or the message naming every dialect.
fn parse_dialect(name: &str) -> Result<envelope_core::Dialect, String> {
    name.parse().map_err(|_| {
        format!(
            "`{name}` names no dialect; the dialects are {}",
            envelope_core::Dialect::names()
        )
    })
}

/// Connects as `options` say, checks, and disconnects; the login's secrets, and every token it
/// is issued, go into `redactor`, which everything printed passes through.
async fn check(
    options: &Options,
    config: &CheckConfig,
    redactor: &Redactor,
) -> Result<Report, String> {
    if let Some(url) = &options.url {
        let mut http = StreamableHttpClientTransportConfig::with_uri(url.as_str());
        // One limit on an answer, whichever way it comes: an event or a JSON body.
        http.max_sse_event_size = options.max_answer_bytes.max(1);
        http.max_json_response_size = options.max_answer_bytes.max(1);
        let login = login(&options.login, url).map_err(|error| error_chain(&error))?;
        let logged_in = login.is_some();
        let connecting = match login {
            Some(login) => {
                let tokens = Arc::new(
                    TokenSource::with_redactor(login, config.call_timeout, redactor.clone())
                        .map_err(|error| error_chain(&error))?,
                );
                // The first token before the first request: a login that fails says so, not
                // the server's 401.
                tokens
                    .bearer()
                    .await
                    .map_err(|error| format!("cannot log in: {}", error_chain(&error)))?;
                let client = LoggedInClient::new(tokens).map_err(|error| error_chain(&error))?;
                let transport = StreamableHttpClientTransport::with_client(client, http);
                tokio::time::timeout(config.call_timeout, Watcher::new().serve(transport)).await
            }
            None => {
                let transport = StreamableHttpClientTransport::from_config(http);
                tokio::time::timeout(config.call_timeout, Watcher::new().serve(transport)).await
            }
        };
        let client = connecting
            .map_err(|_| format!("cannot connect to {url}: no answer to `initialize`"))?
            .map_err(|error| not_connected(url, &error, logged_in))?;
        let report = run(&client, config).await;
        let _ = client.cancel().await;
        return Ok(report);
    }
    let Some((program, args)) = options.command.split_first() else {
        return Err("name a server: `--url URL`, or `-- COMMAND [ARGS...]`".to_owned());
    };
    let mut command = tokio::process::Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true);
    if !options.server_stderr {
        command.stderr(Stdio::null());
    }
    let mut child = command
        .spawn()
        .map_err(|error| format!("cannot run `{program}`: {error}"))?;
    let (Some(output), Some(input)) = (child.stdout.take(), child.stdin.take()) else {
        return Err(format!(
            "`{program}` has no standard input and output to talk over"
        ));
    };
    // The checker's own framing: bounded lines, and what cannot be read told to the call.
    let (transport, faults) = stdio_transport(output, input, options.max_answer_bytes.max(1));
    let client = tokio::time::timeout(config.call_timeout, Watcher::new().serve(transport))
        .await
        .map_err(|_| format!("`{program}` did not answer `initialize`"))?
        .map_err(|error| format!("`{program}` did not start an MCP session: {error}"))?;
    let report = run_watching(&client, config, &faults).await;
    let _ = client.cancel().await;
    let _ = child.kill().await;
    Ok(report)
}

/// The login the command line asks for, if any; its secrets read from their files.
fn login(options: &LoginOptions, url: &str) -> Result<Option<Login>, LoginError> {
    if let Some(path) = &options.bearer_token_file {
        return Ok(Some(Login::Bearer(Secret::read_token_file(path)?)));
    }
    let (Some(token_url), Some(client_id), Some(secret_file)) = (
        &options.oauth_token_url,
        &options.client_id,
        &options.client_secret_file,
    ) else {
        return Ok(None);
    };
    Ok(Some(Login::ClientCredentials(ClientCredentials {
        token_url: token_url.clone(),
        client_id: client_id.clone(),
        client_secret: Secret::read_file(secret_file, "client secret")?,
        scopes: options
            .scopes
            .iter()
            .filter(|scope| !scope.is_empty())
            .cloned()
            .collect(),
        resource: url.to_owned(),
        auth: match options.client_auth {
            ClientAuthMethod::Basic => ClientAuth::Basic,
            ClientAuthMethod::Post => ClientAuth::Post,
        },
    })))
}

/// Why `initialize` failed, in words: a refusal for want of a login says which flags give one.
fn not_connected(url: &str, error: &ClientInitializeError, logged_in: bool) -> String {
    // rmcp keeps the transport's error beside its message, not as its source.
    let mut source: Option<&(dyn std::error::Error + 'static)> = match error {
        ClientInitializeError::TransportError { error, .. } => Some(error),
        _ => None,
    };
    while let Some(cause) = source {
        if let Some(refusal) = cause.downcast_ref::<AuthRequiredError>() {
            let challenge = &refusal.www_authenticate_header;
            return if logged_in {
                format!(
                    "cannot connect to {url}: the server refused the access token (HTTP 401, \
                     `WWW-Authenticate: {challenge}`)"
                )
            } else {
                format!(
                    "cannot connect to {url}: the server requires a login (HTTP 401, \
                     `WWW-Authenticate: {challenge}`); give `--bearer-token-file PATH`, or \
                     `--oauth-token-url URL --client-id ID --client-secret-file PATH`"
                )
            };
        }
        if let Some(refusal) = cause.downcast_ref::<InsufficientScopeError>() {
            return format!(
                "cannot connect to {url}: the token lacks a scope the server requires (HTTP \
                 403, `WWW-Authenticate: {}`); ask for it with `--scope`",
                refusal.www_authenticate_header
            );
        }
        source = cause.source();
    }
    format!("cannot connect to {url}: {}", error_chain(error))
}

fn main() -> ExitCode {
    // Before rmcp builds its reqwest client: reqwest may have TLS without a provider of its own.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let options = Options::parse();
    let seed = options.seed.unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(1, |elapsed| elapsed.as_nanos() as u64 % 1_000_000_007)
    });
    let config = config(&options, seed);
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("envelope-check: cannot start a runtime: {error}");
            return ExitCode::from(2);
        }
    };
    // Whatever the checker prints passes through it: a server or a token endpoint may quote
    // back what it was sent, in any encoding, whole or cut.
    let redactor = Redactor::new();
    let report = match runtime.block_on(check(&options, &config, &redactor)) {
        Ok(report) => report,
        Err(error) => {
            eprintln!("envelope-check: {}", redactor.redact(&error));
            return ExitCode::from(2);
        }
    };
    if options.json {
        let mut json = report.to_json();
        redactor.redact_json(&mut json);
        println!("{json:#}");
    } else {
        print!("{}", redactor.redact(&report.render()));
    }
    if report.is_clean() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

//! The command line of `workspace_server`.
//!
//! ```text
//! workspace_server [OPTIONS]                       serve over stdio
//! workspace_server [OPTIONS] --http ADDR           serve streamable HTTP at http://ADDR/mcp,
//!                                                  and the tools at http://ADDR/tools/{name}
//! workspace_server [OPTIONS] call TOOL ['JSON']    call one tool, print its envelope
//! workspace_server [OPTIONS] list                  print the tool listing
//! ```
//!
//! `--help` lists every option, the HTTP ones (hosts, origins, stateless, limits, connection
//! deadlines and cap, CORS, draining, the plain HTTP API) under their own heading. Over HTTP, SIGTERM or Ctrl-C drains calls in flight,
//! then the process exits 0.
//!
//! `--continuation-key-file PATH` (or `WORKSPACE_SERVER_CONTINUATION_KEY`, 64 hex characters)
//! sets the key that seals paging tokens and target refs, so that servers sharing it accept
//! each other's. Without one, the key kept in your state directory is used (made on first use
//! and, on Unix, readable only by you): the `next-page` action one `call` prints then works
//! pasted into the next `call`, and a restarted server still opens the tokens it gave out.
//!
//! Logs go to stderr, filtered by `RUST_LOG` (default `info,rmcp=warn`: a call logs nothing
//! unless something is wrong), as text or, with
//! `--log-format json`, one JSON object a line; on stdio, stdout carries only the protocol.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand, ValueEnum};
use envelope_core::Arguments;
use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::auth::{IntrospectionVerifier, JwksSource, JwtVerifier, ResourceServer};
use envelope_mcp::{CancellationToken, EnvelopeServer, HttpConfig, RestConfig};

/// Reads `--dialect`: a wire name, or the message naming every dialect.
fn parse_dialect(name: &str) -> Result<envelope_core::Dialect, String> {
    name.parse().map_err(|_| {
        format!(
            "`{name}` names no dialect; the dialects are {}",
            envelope_core::Dialect::names()
        )
    })
}

/// Reads one name of `--call-dialects`: a dialect, or `all`.
fn parse_call_dialects(name: &str) -> Result<envelope_core::DialectSet, String> {
    if name == "all" {
        return Ok(envelope_core::DialectSet::ALL);
    }
    parse_dialect(name).map(envelope_core::DialectSet::only)
}

/// The environment variable holding the continuation key, as hex.
const KEY_VAR: &str = "WORKSPACE_SERVER_CONTINUATION_KEY";

/// Serve one directory tree over MCP, every answer an envelope.
///
/// Without a command, serves over stdio (or streamable HTTP with `--http`). Logs go to stderr,
/// filtered by `RUST_LOG` (default `info,rmcp=warn`); on stdio, stdout carries only the protocol.
#[derive(Debug, Parser)]
#[command(name = "workspace_server", version)]
struct Options {
    /// The directory to serve.
    #[arg(long, value_name = "DIR", default_value = ".")]
    root: PathBuf,

    /// The key that seals paging tokens and target refs: a file of 64 hex characters, shared by
    /// servers that must accept each other's tokens. Without it, the key in
    /// WORKSPACE_SERVER_CONTINUATION_KEY (hex), else the key kept in
    /// $XDG_STATE_HOME/envelope/workspace_server.key (or ~/.local/state/envelope/), made on
    /// first use and, on Unix, readable only by you.
    #[arg(
        long,
        value_name = "PATH",
        env = "WORKSPACE_SERVER_CONTINUATION_KEY_FILE"
    )]
    continuation_key_file: Option<PathBuf>,

    /// Switch a module off (repeatable): `graph` holds graph_export, which then answers
    /// `module_disabled`.
    #[arg(long = "disable-module", value_name = "NAME")]
    disabled: Vec<String>,

    /// How logs are written to stderr.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, env = "WORKSPACE_SERVER_LOG_FORMAT")]
    log_format: LogFormat,

    /// Export each call's span over OTLP/HTTP to this collector (like
    /// http://localhost:4318/v1/traces), in its caller's trace when the request carries a
    /// `traceparent`.
    #[cfg(feature = "otlp")]
    #[arg(long, value_name = "URL", env = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")]
    otlp_endpoint: Option<String>,

    /// How long a call may run before it answers a retryable `deadline_exceeded` envelope.
    #[arg(long, value_name = "SECONDS", default_value_t = 120)]
    call_timeout: u64,

    /// How many calls of one tool run at once (every tool here works on the blocking pool);
    /// the rest wait their turn, each tool's in its own line. 0 for no limit. Default: twice
    /// the cores this process may run on.
    #[arg(long, value_name = "N")]
    blocking_calls_per_tool: Option<usize>,

    /// The largest request read, in bytes.
    #[arg(long, value_name = "BYTES", default_value_t = envelope_mcp::DEFAULT_MAX_REQUEST_BYTES)]
    max_request_bytes: usize,

    /// List every tool in full: the shaping controls in each input schema and the envelope's
    /// whole schema in each output schema (by default they are said once, in the instructions,
    /// and the output schemas type `data` with the envelope terse).
    #[arg(long)]
    full_listing: bool,

    /// The wire every answer is written in, unless a call asks for another with its `dialect`
    /// argument: `envelope` (the default), or a source contract's: `pincher`, `cos`, `tsa`,
    /// `frigg`. The listing's output schemas follow it.
    #[arg(long, value_name = "NAME", default_value = "envelope", value_parser = parse_dialect)]
    dialect: envelope_core::Dialect,

    /// The dialects a call may ask for with its `dialect` argument besides `--dialect`,
    /// comma-separated, or `all`. Each is added to every tool's output schema, since clients
    /// check an answer against it; none by default.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', value_parser = parse_call_dialects)]
    call_dialects: Vec<envelope_core::DialectSet>,

    #[command(flatten)]
    http: HttpOptions,

    #[command(subcommand)]
    command: Option<Command>,
}

/// Streamable HTTP.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Streamable HTTP")]
struct HttpOptions {
    /// Serve streamable HTTP at ADDR (like 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// The path the MCP endpoint is mounted at.
    #[arg(
        long,
        value_name = "PATH",
        default_value = envelope_mcp::DEFAULT_MCP_PATH,
        value_parser = mcp_path,
        requires = "http"
    )]
    path: String,

    /// Accept this `Host` (a name, or name:port; repeatable). Default: loopback names only.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,

    /// Accept any `Host` header: only behind a proxy that checks it.
    #[arg(long, conflicts_with = "allowed_hosts", requires = "http")]
    any_host: bool,

    /// Refuse requests whose `Origin` is none of these (scheme://host:port; repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    allowed_origins: Vec<String>,

    /// Answer a call that sends nothing before its result as application/json, not SSE.
    #[arg(long, requires = "http")]
    json_response: bool,

    /// Seconds between keep-alive comments on open event streams (0: none).
    #[arg(long, value_name = "SECONDS", default_value_t = 15, requires = "http")]
    sse_keep_alive: u64,

    /// Keep no sessions, whatever protocol version a client speaks: replicas behind a load
    /// balancer need no stickiness. (MCP 2026-07-28 is always served so.)
    #[arg(long, requires = "http")]
    stateless: bool,

    /// Bound each request, its upload included, to this long from the end of its head: a body
    /// not in by then is answered 408, a call still running 503 with Retry-After (keep it above
    /// --call-timeout).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    request_timeout: Option<u64>,

    /// Close a connection that has not sent a whole request head this long after the server
    /// began waiting for one (accepted, or its previous answer sent); 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::DEFAULT_HEADER_TIMEOUT.as_secs(),
        requires = "http"
    )]
    header_timeout: u64,

    /// Close a connection with no request in flight that reads and writes nothing this long
    /// (one with a call or an event stream open never is); 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::DEFAULT_IDLE_TIMEOUT.as_secs(),
        requires = "http"
    )]
    idle_timeout: u64,

    /// Close a connection whose client leaves the server's output unread this long, and give up
    /// an answer (an HTTP/2 stream, an event stream) it takes nothing of for this long, freeing
    /// its place; 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::DEFAULT_WRITE_TIMEOUT.as_secs(),
        requires = "http"
    )]
    write_timeout: u64,

    /// At most this many requests in flight on one HTTP/2 connection (its announced
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(
        long,
        value_name = "STREAMS",
        default_value_t = envelope_mcp::DEFAULT_MAX_STREAMS_PER_CONNECTION,
        requires = "http"
    )]
    max_streams_per_connection: u32,

    /// Serve HTTP/1.1 only: close a connection that opens with HTTP/2's preface.
    #[arg(long, requires = "http")]
    no_http2: bool,

    /// Answer 408 and close the connection when a request's body has not arrived whole this
    /// long after its head; 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::DEFAULT_BODY_TIMEOUT.as_secs(),
        requires = "http"
    )]
    body_timeout: u64,

    /// Hold at most N connections open. Default, and never more than: the file limit
    /// (RLIMIT_NOFILE) less a quarter of it for the files tools open. Past the cap, the oldest
    /// connection with no request in flight is closed; if every one is busy, the new one gets
    /// 503 with Retry-After.
    #[arg(long, value_name = "N", requires = "http")]
    max_connections: Option<usize>,

    /// Serve at most N requests at once; one more is refused at once with 503.
    #[arg(long, value_name = "N", requires = "http")]
    max_concurrent_requests: Option<usize>,

    /// Allow browser callers from this origin (`*` for any; repeatable). Default: no CORS.
    #[arg(long = "cors-origin", value_name = "ORIGIN", requires = "http")]
    cors_origins: Vec<String>,

    /// On SIGTERM or Ctrl-C, how long calls in flight may still run before the server exits.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, requires = "http")]
    drain_timeout: u64,

    /// Serve no plain HTTP API beside MCP. Without it, `POST /tools/{name}` calls a tool,
    /// `GET /tools` lists them and `GET /openapi.json` describes them.
    #[arg(long, requires = "http")]
    no_rest: bool,

    /// The most a plain HTTP call opted out of the budget (`apply_budget=false`) may answer,
    /// in token-normalized characters.
    #[arg(
        long,
        value_name = "CHARS",
        default_value_t = envelope_mcp::DEFAULT_UNBUDGETED_CEILING,
        conflicts_with = "no_rest",
        requires = "http"
    )]
    unbudgeted_ceiling: usize,

    #[command(flatten)]
    auth: AuthOptions,
}

/// OAuth: the server as a resource server of one issuer.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "OAuth")]
struct AuthOptions {
    /// Accept only access tokens this issuer signed (its identifier, an `https` URL; `http` on
    /// loopback). Every request but /healthz, /readyz and the metadata at
    /// /.well-known/oauth-protected-resource then needs `Authorization: Bearer <token>`; the
    /// tools need the scope `workspace:read`, `graph_export` also `workspace:heavy`.
    #[arg(long, value_name = "URL", requires_all = ["http", "auth_audience"])]
    auth_issuer: Option<String>,

    /// The audience the tokens must name: this resource's URL, the MCP endpoint's (like
    /// https://mcp.example.com/mcp), which clients ask their tokens for.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    auth_audience: Option<String>,

    /// Read the issuer's keys from this JWKS file (read again when a token names a key it
    /// lacks) instead of fetching them from the issuer's metadata.
    #[arg(
        long,
        value_name = "PATH",
        requires = "auth_issuer",
        conflicts_with = "auth_introspection_endpoint"
    )]
    auth_jwks_file: Option<PathBuf>,

    /// Tokens are opaque: ask the issuer about each at this introspection endpoint (RFC 7662),
    /// as the client `--auth-client-id`, instead of verifying JWTs with its keys.
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["auth_issuer", "auth_client_id", "auth_client_secret"]
    )]
    auth_introspection_endpoint: Option<String>,

    /// This server's client id at the issuer, for introspection.
    #[arg(long, value_name = "ID", requires = "auth_introspection_endpoint")]
    auth_client_id: Option<String>,

    /// This server's client secret at the issuer, for introspection (best from the
    /// environment, which a process listing does not show).
    #[arg(
        long,
        value_name = "SECRET",
        env = "WORKSPACE_SERVER_AUTH_CLIENT_SECRET",
        hide_env_values = true,
        requires = "auth_introspection_endpoint"
    )]
    auth_client_secret: Option<String>,

    /// How long an introspected token is believed without asking the issuer again (never past
    /// its `exp`): also how long a revoked one may still be accepted. 0 asks on every request.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::auth::DEFAULT_INTROSPECTION_CACHE_MAX_AGE.as_secs(),
        requires = "auth_introspection_endpoint"
    )]
    auth_introspection_cache_max_age: u64,

    /// The least time between two fetches of the issuer's keys forced by tokens naming a key
    /// not held (after a rotation).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = envelope_mcp::auth::DEFAULT_JWKS_REFRESH_INTERVAL.as_secs(),
        requires = "auth_issuer"
    )]
    auth_jwks_refresh_interval: u64,

    /// List to each caller only the tools its token's scopes cover.
    #[arg(long, requires = "auth_issuer")]
    auth_filter_listing: bool,
}

impl AuthOptions {
    /// The resource server these flags ask for; `None` without `--auth-issuer`.
    fn resource_server(&self) -> Result<Option<ResourceServer>, String> {
        let (Some(issuer), Some(audience)) = (&self.auth_issuer, &self.auth_audience) else {
            return Ok(None);
        };
        let server = match (
            &self.auth_introspection_endpoint,
            &self.auth_client_id,
            &self.auth_client_secret,
        ) {
            (Some(endpoint), Some(client_id), Some(secret)) => {
                let verifier = IntrospectionVerifier::new(
                    issuer,
                    endpoint,
                    audience.as_str(),
                    client_id.as_str(),
                    secret.as_str(),
                )
                .map_err(|error| error.to_string())?
                .with_cache_max_age(Duration::from_secs(self.auth_introspection_cache_max_age));
                ResourceServer::new(audience, verifier)
            }
            _ => {
                let keys = match &self.auth_jwks_file {
                    Some(path) => JwksSource::File(path.clone()),
                    None => JwksSource::Discover,
                };
                let verifier = JwtVerifier::new(issuer, audience.as_str(), keys)
                    .map_err(|error| error.to_string())?
                    .with_jwks_refresh_interval(Duration::from_secs(
                        self.auth_jwks_refresh_interval,
                    ));
                ResourceServer::new(audience, verifier)
            }
        };
        let server = server
            .map_err(|error| error.to_string())?
            .with_resource_name("workspace_server")
            .with_filtered_listing(self.auth_filter_listing);
        Ok(Some(server))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object a line, span fields included.
    Json,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Call one tool and print its answer; exits 0 when the answer says the call worked (by its
    /// dialect's own success field), 2 otherwise.
    Call {
        /// The tool's name.
        tool: String,
        /// Its arguments, a JSON object (a control named twice in it is refused, as over MCP).
        #[arg(default_value = "{}", value_parser = parse_arguments)]
        arguments: Arguments,
    },
    /// Print the tool listing as JSON.
    List,
}

/// A path to mount the MCP endpoint at: not the root, which holds `/healthz` and `/readyz`,
/// nor the plain HTTP API's.
fn mcp_path(text: &str) -> Result<String, String> {
    if text.trim_matches('/').is_empty() {
        return Err("the MCP endpoint needs a path of its own, like /mcp".to_owned());
    }
    if envelope_mcp::rest::is_gateway_path(text) {
        return Err(format!(
            "`{text}` is the plain HTTP API's; mount the MCP endpoint elsewhere, like /mcp"
        ));
    }
    Ok(text.to_owned())
}

fn parse_arguments(text: &str) -> Result<Arguments, String> {
    Arguments::from_json(text).map_err(|error| format!("the JSON arguments do not parse: {error}"))
}

impl Options {
    /// Parses `args` (the program's name first), refusing what clap alone cannot: a command
    /// given with `--http`, which serves.
    fn parse_checked(args: Vec<String>) -> Result<Options, clap::Error> {
        use clap::CommandFactory;
        let options = Options::try_parse_from(args)?;
        if options.command.is_some() && options.http.http.is_some() {
            return Err(Options::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "`--http` serves; it takes no command",
            ));
        }
        Ok(options)
    }
}

impl HttpOptions {
    /// The HTTP configuration these flags ask for, stopping on `shutdown`; an error for an
    /// issuer, audience or JWKS file that cannot be used.
    fn config(&self, shutdown: CancellationToken) -> Result<HttpConfig, String> {
        let seconds = Duration::from_secs;
        let mut config =
            HttpConfig::default()
                .with_path(self.path.clone())
                .with_allowed_origins(self.allowed_origins.clone())
                .with_json_response(self.json_response)
                .with_sse_keep_alive(some_seconds(self.sse_keep_alive))
                .with_stateless(self.stateless)
                .with_request_timeout(self.request_timeout.map(seconds))
                .with_max_concurrent_requests(self.max_concurrent_requests)
                .with_header_timeout(some_seconds(self.header_timeout))
                .with_idle_timeout(some_seconds(self.idle_timeout))
                .with_write_timeout(some_seconds(self.write_timeout))
                .with_http2(!self.no_http2)
                .with_max_streams_per_connection(self.max_streams_per_connection)
                .with_body_timeout(some_seconds(self.body_timeout))
                .with_max_connections(self.max_connections)
                .with_cors_origins(self.cors_origins.clone())
                .with_drain_timeout(seconds(self.drain_timeout))
                .with_shutdown(shutdown)
                .with_rest((!self.no_rest).then(|| {
                    RestConfig::default().with_unbudgeted_ceiling(self.unbudgeted_ceiling)
                }));
        if self.any_host {
            config = config.with_any_host();
        } else if !self.allowed_hosts.is_empty() {
            config = config.with_allowed_hosts(self.allowed_hosts.clone());
        }
        if let Some(auth) = self.auth.resource_server()? {
            config = config.with_auth(auth);
        }
        Ok(config)
    }
}

/// `seconds` as a limit: `None` for 0, which is none.
fn some_seconds(seconds: u64) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

/// The paging key: from the key file, else from [`KEY_VAR`], else the one kept in the user's
/// state directory ([`kept_key_file`]), else (no state directory can hold it) a fresh one that
/// only this process accepts.
fn continuations(key_file: Option<&Path>) -> Result<Continuations, String> {
    const KEY_ID: u32 = 1;
    let read = |path: &Path| -> Result<ContinuationKey, String> {
        let text = std::fs::read_to_string(path)
            .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
        ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{}`: {error}", path.display()))
    };
    let key = match (key_file, std::env::var(KEY_VAR)) {
        (Some(path), _) => read(path)?,
        (None, Ok(text)) => ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{KEY_VAR}`: {error}"))?,
        (None, Err(std::env::VarError::NotUnicode(_))) => {
            return Err(format!("`{KEY_VAR}` is not valid UTF-8"));
        }
        (None, Err(std::env::VarError::NotPresent)) => match kept_key_file() {
            Ok(path) => read(&path).map_err(|error| {
                format!(
                    "{error}; delete the file to make a new key, or pass `--continuation-key-file`"
                )
            })?,
            Err(why) => {
                eprintln!(
                    "workspace_server: {why}; paging tokens work only in this process \
                     (pass `--continuation-key-file` or set `{KEY_VAR}` to share them)"
                );
                ContinuationKey::generate(KEY_ID)
                    .map_err(|error| format!("cannot make a continuation key: {error}"))?
            }
        },
    };
    Ok(Continuations::new(key))
}

/// The key file kept for this user, made on first use: `$XDG_STATE_HOME/envelope/` (when it is
/// absolute), else `~/.local/state/envelope/`, `workspace_server.key`, readable only by its owner
/// on Unix. Processes making it at once agree: each writes a draft of its own, and the first to
/// link its draft into place wins; nobody ever reads a half-written key.
fn kept_key_file() -> Result<PathBuf, String> {
    let absolute = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|path| path.is_absolute())
    };
    let state = absolute("XDG_STATE_HOME")
        .or_else(|| absolute("HOME").map(|home| home.join(".local/state")))
        .ok_or("neither XDG_STATE_HOME nor HOME is an absolute path to keep a key under")?;
    let dir = state.join("envelope");
    let path = dir.join("workspace_server.key");
    if path.exists() {
        return Ok(path);
    }
    let cannot =
        |what: &Path, error: std::io::Error| format!("cannot make `{}`: {error}", what.display());
    std::fs::create_dir_all(&dir).map_err(|error| cannot(&dir, error))?;
    let mut bytes = [0_u8; 32];
    getrandom::fill(&mut bytes).map_err(|error| format!("cannot make a key: {error}"))?;
    let hex: String = bytes.iter().map(|byte| format!("{byte:02x}")).collect();
    // A random draft name: two processes of one PID (containers sharing a home) never share it.
    let draft = dir.join(format!("workspace_server.key.{}", &hex[..16]));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let written = options.open(&draft).and_then(|mut file| {
        use std::io::Write;
        file.write_all(format!("{hex}\n").as_bytes())?;
        // On disk before it is linked in: a crash never leaves an empty key in place.
        file.sync_all()
    });
    let linked = written.and_then(|()| std::fs::hard_link(&draft, &path));
    let _ = std::fs::remove_file(&draft);
    match linked {
        Ok(()) => Ok(path),
        // Another process made it first: use theirs.
        Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => Ok(path),
        Err(error) => Err(cannot(&path, error)),
    }
}

/// Runs the command line given to this process, and says how it went: 0 when it served or the
/// called tool's envelope is ok, 2 for a usage error or an envelope that is not ok.
pub fn main() -> ExitCode {
    let options = match options() {
        Ok(options) => options,
        Err(code) => return code,
    };
    // ring as rustls's process default before any reqwest client is built (the OTLP
    // exporter's among them): envelope-mcp's `auth` builds reqwest without a provider.
    envelope_mcp::auth::install_crypto_provider();
    // Before the runtime: the OTLP exporter's blocking client must not be made inside it.
    let logging = match init_logging(&options) {
        Ok(logging) => logging,
        Err(message) => {
            eprintln!("workspace_server: {message}");
            return ExitCode::from(2);
        }
    };
    let code = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime.block_on(run(options)),
        Err(error) => {
            eprintln!("workspace_server: cannot start the runtime: {error}");
            ExitCode::FAILURE
        }
    };
    // Spans not yet exported are flushed here.
    drop(logging);
    code
}

/// The options this process was given, or the exit code after saying what is wrong with them
/// (or printing `--help` or `--version`).
fn options() -> Result<Options, ExitCode> {
    // `std::env::args` panics on an argument that is not UTF-8; say so instead.
    let args: Result<Vec<String>, String> = std::env::args_os()
        .map(|arg| {
            arg.into_string().map_err(|arg| {
                format!(
                    "the argument `{}` is not valid UTF-8",
                    arg.to_string_lossy()
                )
            })
        })
        .collect();
    let args = args.map_err(|message| {
        eprintln!("workspace_server: {message}");
        ExitCode::from(2)
    })?;
    Options::parse_checked(args).map_err(|error| {
        // `--help` and `--version` print and exit 0; a usage error exits 2.
        let _ = error.print();
        ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2))
    })
}

async fn run(options: Options) -> ExitCode {
    let workspace = match crate::workspace::Workspace::open(&options.root) {
        Ok(workspace) => workspace,
        Err(error) => {
            eprintln!(
                "workspace_server: cannot serve `{}`: {error}",
                options.root.display()
            );
            return ExitCode::from(2);
        }
    };
    let continuations = match continuations(options.continuation_key_file.as_deref()) {
        Ok(continuations) => continuations,
        Err(message) => {
            eprintln!("workspace_server: {message}");
            return ExitCode::from(2);
        }
    };
    let root = workspace.root().display().to_string();
    let limits = crate::server::Limits {
        call_timeout: some_seconds(options.call_timeout),
        blocking_calls_per_tool: match options.blocking_calls_per_tool {
            None => Some(envelope_mcp::default_blocking_calls_per_tool()),
            Some(0) => None,
            Some(calls) => Some(calls),
        },
        max_request_bytes: options.max_request_bytes,
        listing: if options.full_listing {
            envelope_mcp::Listing::Full
        } else {
            envelope_mcp::Listing::Lean
        },
        dialect: options.dialect,
        call_dialects: options
            .call_dialects
            .iter()
            .flat_map(|set| set.iter())
            .collect(),
    };
    let server = crate::server::server_with(workspace, continuations, &options.disabled, limits);

    match (options.command, options.http.http) {
        (None, None) => {
            tracing::info!(%root, "serving over stdio");
            match server.serve_stdio().await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("workspace_server: {error}");
                    ExitCode::FAILURE
                }
            }
        }
        (None, Some(addr)) => serve_http(server, &root, addr, &options.http).await,
        (Some(Command::Call { tool, arguments }), _) => call_tool(&server, &tool, arguments).await,
        (Some(Command::List), _) => match serde_json::to_string_pretty(&*server.tools()) {
            Ok(text) => {
                print_out(&text);
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("workspace_server: cannot print the listing: {error}");
                ExitCode::FAILURE
            }
        },
    }
}

/// Serves `server` over streamable HTTP at `addr` as `http` configures it, until SIGTERM or
/// Ctrl-C; warns when it is reachable beyond this machine without authentication.
async fn serve_http(
    server: EnvelopeServer,
    root: &str,
    addr: SocketAddr,
    http: &HttpOptions,
) -> ExitCode {
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    let config = match http.config(shutdown) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("workspace_server: {message}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "workspace_server: serving {root} at http://{addr}{}",
        config.path()
    );
    match config.auth() {
        Some(auth) => eprintln!(
            "workspace_server: OAuth on: tokens for {}, metadata at {}",
            auth.resource(),
            auth.metadata_url()
        ),
        None if !addr.ip().is_loopback() => {
            eprintln!(
                "workspace_server: warning: {addr} is reachable beyond this machine and \
                 no authentication is on: anyone who reaches the port may call every \
                 tool; see --auth-issuer"
            );
            tracing::warn!(%addr, "serving beyond loopback without authentication");
        }
        None => {}
    }
    match server.serve_http_with(addr, config).await {
        Ok(()) => {
            tracing::info!("stopped");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("workspace_server: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Calls `tool` once with `arguments` and prints its answer: 0 when it says the call worked
/// (by the dialect's own success field), 2 when it does not or no tool has that name.
async fn call_tool(server: &EnvelopeServer, tool: &str, arguments: Arguments) -> ExitCode {
    let Some(prepared) = server.call(tool, arguments).await else {
        let tools = server.tools();
        let available: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        eprintln!(
            "workspace_server: unknown tool `{tool}`; available: {}",
            available.join(", ")
        );
        return ExitCode::from(2);
    };
    match serde_json::to_string_pretty(&prepared.structured) {
        Ok(text) => print_out(&text),
        Err(error) => {
            eprintln!("workspace_server: cannot print the envelope: {error}");
            return ExitCode::FAILURE;
        }
    }
    // The dialect's own success field, as MCP's `isError` reads it: `ok` in the envelope and
    // cos, `success` in tsa, no error in pincher's `diagnosis_v2` or Frigg's `error_code`.
    if prepared.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

/// Prints `text` and a newline to stdout. A reader that went away (`| head`) is not an error
/// worth a panic: what it did not read is dropped.
fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// What logging set up, kept until the process ends: with OTLP, the provider whose spans are
/// flushed on the way out.
struct Logging {
    #[cfg(feature = "otlp")]
    provider: Option<opentelemetry_sdk::trace::SdkTracerProvider>,
}

impl Drop for Logging {
    fn drop(&mut self) {
        #[cfg(feature = "otlp")]
        if let Some(provider) = self.provider.take() {
            let _ = provider.shutdown();
        }
    }
}

/// Logs to stderr as `options` say, filtered by `RUST_LOG` (default
/// [`envelope_mcp::DEFAULT_LOG_FILTER`]: `info`, rmcp at `warn`); a tool's own lines
/// carry its call's span: `request_id`, `tool`, `tier` and the rest. With `--otlp-endpoint`,
/// the spans are exported too.
fn init_logging(options: &Options) -> Result<Logging, String> {
    use tracing_subscriber::layer::{Layer, SubscriberExt};
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{EnvFilter, Registry};

    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(envelope_mcp::DEFAULT_LOG_FILTER));
    let logs = tracing_subscriber::fmt::layer().with_writer(std::io::stderr);
    let logs: Box<dyn Layer<Registry> + Send + Sync> = match options.log_format {
        LogFormat::Text => logs.boxed(),
        LogFormat::Json => logs
            .json()
            .with_current_span(true)
            .with_span_list(false)
            .boxed(),
    };
    #[cfg_attr(not(feature = "otlp"), allow(unused_mut))]
    let mut layers = vec![logs];
    #[allow(unused_mut)]
    let mut logging = Logging {
        #[cfg(feature = "otlp")]
        provider: None,
    };
    #[cfg(feature = "otlp")]
    if let Some(endpoint) = &options.otlp_endpoint {
        use opentelemetry::trace::TracerProvider as _;
        let provider = otlp_provider(endpoint)?;
        let tracer = provider.tracer("workspace_server");
        layers.push(tracing_opentelemetry::layer().with_tracer(tracer).boxed());
        logging.provider = Some(provider);
    }
    tracing_subscriber::registry()
        .with(layers)
        .with(filter)
        .try_init()
        .map_err(|error| format!("cannot set up logging: {error}"))?;
    Ok(logging)
}

/// A tracer provider exporting in batches over OTLP/HTTP (protobuf) to `endpoint`, as
/// `--otlp-endpoint` sets up. Make it outside an async runtime: its HTTP client blocks.
#[cfg(feature = "otlp")]
pub fn otlp_provider(
    endpoint: &str,
) -> Result<opentelemetry_sdk::trace::SdkTracerProvider, String> {
    use opentelemetry_otlp::{SpanExporter, WithExportConfig};
    // Its reqwest client reads rustls's process default: reqwest has no provider of its own.
    envelope_mcp::auth::install_crypto_provider();
    let exporter = SpanExporter::builder()
        .with_http()
        .with_endpoint(endpoint)
        .build()
        .map_err(|error| format!("cannot export to `{endpoint}`: {error}"))?;
    let resource = opentelemetry_sdk::Resource::builder()
        .with_service_name("workspace_server")
        .build();
    Ok(opentelemetry_sdk::trace::SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource)
        .build())
}

/// Cancels `shutdown` on SIGTERM (what an orchestrator sends) or Ctrl-C.
async fn stop_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut terminate) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            shutdown.cancel();
            return;
        };
        tokio::select! {
            _ = terminate.recv() => tracing::info!("SIGTERM: draining, then stopping"),
            _ = tokio::signal::ctrl_c() => tracing::info!("interrupted: draining, then stopping"),
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    shutdown.cancel();
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_consistent() {
        Options::command().debug_assert();
    }

    #[test]
    fn flags_become_the_http_configuration() {
        let options = Options::try_parse_from([
            "workspace_server",
            "--http",
            "0.0.0.0:8080",
            "--allowed-host",
            "mcp.example.com",
            "--stateless",
            "--json-response",
            "--max-concurrent-requests",
            "64",
            "--path",
            "rpc",
        ])
        .expect("parses");
        let config = options
            .http
            .config(CancellationToken::new())
            .expect("a configuration");
        assert_eq!(config.path(), "/rpc");
        assert!(config.auth().is_none());
        assert_eq!(
            options.http.http,
            Some("0.0.0.0:8080".parse().expect("an address"))
        );
        // The plain HTTP API comes with it, unless turned off.
        assert_eq!(
            config.rest().map(RestConfig::unbudgeted_ceiling),
            Some(envelope_mcp::DEFAULT_UNBUDGETED_CEILING)
        );
        let parse = |args: &[&str]| {
            let options = Options::try_parse_from(args).expect("parses");
            options
                .http
                .config(CancellationToken::new())
                .expect("a configuration")
        };
        let capped = parse(&["w", "--http", "127.0.0.1:1", "--unbudgeted-ceiling", "9000"]);
        assert_eq!(
            capped.rest().map(RestConfig::unbudgeted_ceiling),
            Some(9_000)
        );
        assert!(
            parse(&["w", "--http", "127.0.0.1:1", "--no-rest"])
                .rest()
                .is_none()
        );
        // The connection deadlines and cap: defaults, set, or (0) off.
        let defaults = format!("{:?}", parse(&["w", "--http", "127.0.0.1:1"]));
        assert!(defaults.contains("header_timeout: Some(10s)"), "{defaults}");
        assert!(defaults.contains("idle_timeout: Some(60s)"), "{defaults}");
        assert!(defaults.contains("body_timeout: Some(30s)"), "{defaults}");
        assert!(defaults.contains("max_connections: None"), "{defaults}");
        let set = format!(
            "{:?}",
            parse(&[
                "w",
                "--http",
                "127.0.0.1:1",
                "--header-timeout",
                "0",
                "--idle-timeout",
                "5",
                "--body-timeout",
                "7",
                "--max-connections",
                "100",
            ])
        );
        assert!(set.contains("header_timeout: None"), "{set}");
        assert!(set.contains("idle_timeout: Some(5s)"), "{set}");
        assert!(set.contains("body_timeout: Some(7s)"), "{set}");
        assert!(set.contains("max_connections: Some(100)"), "{set}");
    }

    #[test]
    fn the_auth_flags_make_a_resource_server() {
        // `--http` and the OAuth flags of issuer `issuer`, then `more`.
        let config = |issuer: &str, more: &[&str]| {
            let args: Vec<String> = ["w", "--http", "127.0.0.1:1", "--auth-issuer", issuer]
                .into_iter()
                .chain(["--auth-audience", "http://127.0.0.1:1/mcp"])
                .chain(more.iter().copied())
                .map(str::to_owned)
                .collect();
            let options = Options::parse_checked(args).expect("parses");
            options.http.config(CancellationToken::new())
        };
        let jwks = std::env::temp_dir().join(format!("jwks-{}.json", std::process::id()));
        std::fs::write(
            &jwks,
            r#"{"keys":[{"kty":"OKP","crv":"Ed25519","kid":"k1","x":"11qYAYKxCrfVS_7TyWQHOg7hcvPapiMlrwIaaPcHURo"}]}"#,
        )
        .expect("writable");
        let jwks = jwks.display().to_string();
        let on = config(
            "http://127.0.0.1:9",
            &["--auth-jwks-file", &jwks, "--auth-filter-listing"],
        )
        .expect("a configuration");
        let auth = on.auth().expect("auth on");
        assert_eq!(auth.resource(), "http://127.0.0.1:1/mcp");
        assert!(auth.filters_listing());
        // A file that is no JWKS, and an issuer that is no URL, are said at start-up.
        let refused = config(
            "http://127.0.0.1:9",
            &["--auth-jwks-file", "/nonexistent/jwks.json"],
        )
        .expect_err("no such file");
        assert!(refused.contains("JWKS file"), "{refused}");
        let refused =
            config("http://issuer.example.com", &[]).expect_err("plain http off loopback");
        assert!(refused.contains("loopback"), "{refused}");
        // Opaque tokens, asked about at the issuer as a client of it.
        let introspection = [
            "--auth-introspection-endpoint",
            "http://127.0.0.1:9/token/introspection",
            "--auth-client-id",
            "rs",
            "--auth-client-secret",
            "rs-secret",
        ];
        let on = config("http://127.0.0.1:9", &introspection).expect("a configuration");
        let auth = on.auth().expect("auth on");
        assert_eq!(auth.resource(), "http://127.0.0.1:1/mcp");
        assert!(!format!("{on:?}").contains("rs-secret"));
        // Introspection needs a client, and is no JWKS file's.
        for more in [
            &introspection[..4],
            &[&introspection[..], &["--auth-jwks-file", &jwks]].concat(),
        ] {
            let args: Vec<String> = ["w", "--http", "127.0.0.1:1"]
                .into_iter()
                .chain(["--auth-issuer", "http://127.0.0.1:9"])
                .chain(["--auth-audience", "http://127.0.0.1:1/mcp"])
                .chain(more.iter().copied())
                .map(str::to_owned)
                .collect();
            assert!(Options::parse_checked(args).is_err(), "{more:?}");
        }
        // The audience needs the issuer, and the issuer the audience.
        for args in [
            &[
                "w",
                "--http",
                "127.0.0.1:1",
                "--auth-audience",
                "http://127.0.0.1:1/mcp",
            ][..],
            &[
                "w",
                "--http",
                "127.0.0.1:1",
                "--auth-issuer",
                "http://127.0.0.1:9",
            ],
        ] {
            assert!(
                Options::parse_checked(args.iter().map(|a| a.to_string()).collect()).is_err(),
                "{args:?}"
            );
        }
    }

    #[test]
    fn usage_errors_are_refused() {
        for args in [
            &["workspace_server", "--allowed-host", "x"][..],
            &["workspace_server", "--http", "127.0.0.1:1", "list"],
            &["workspace_server", "--http", "not an address"],
            &["workspace_server", "call"],
            &["workspace_server", "call", "read_file", "{not json"],
            &[
                "workspace_server",
                "--http",
                "127.0.0.1:1",
                "--path",
                "/tools",
            ],
            &[
                "workspace_server",
                "--http",
                "127.0.0.1:1",
                "--path",
                "openapi.json",
            ],
            &[
                "workspace_server",
                "--http",
                "127.0.0.1:1",
                "--no-rest",
                "--unbudgeted-ceiling",
                "10",
            ],
            &[
                "workspace_server",
                "--any-host",
                "--allowed-host",
                "x",
                "--http",
                "127.0.0.1:1",
            ],
        ] {
            let owned = args.iter().map(|arg| arg.to_string()).collect();
            assert!(Options::parse_checked(owned).is_err(), "{args:?}");
        }
    }
}

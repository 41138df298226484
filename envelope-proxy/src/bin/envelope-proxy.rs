//! `envelope-proxy`: one upstream MCP server, every answer an envelope.
//!
//! ```text
//! envelope-proxy [OPTIONS] -- COMMAND [ARGS...]         front a server spoken to over stdio
//! envelope-proxy [OPTIONS] --upstream-url URL           front a streamable-HTTP server
//! envelope-proxy [OPTIONS] --config proxy.toml          the upstream and its tools from a file
//!
//!   ... --http ADDR        serve streamable HTTP at http://ADDR/mcp (and REST) instead of stdio
//!   ... --list             print the listing and exit
//!   ... --call TOOL [--arguments 'JSON']
//!                          call one tool, print its envelope, exit 0 when it worked
//! ```

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use clap::Parser;
use envelope_core::Arguments;
use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::{CancellationToken, EnvelopeConfig, HttpConfig, RestConfig};
use envelope_proxy::{Proxy, ProxyConfig};

/// The environment variable holding the continuation key, as hex.
const KEY_VAR: &str = "ENVELOPE_PROXY_CONTINUATION_KEY";

/// Front one MCP server: its tools listed lean, every answer an envelope, too-big answers paged.
///
/// Serves over stdio unless `--http` is given. Logs go to stderr, filtered by `RUST_LOG`.
#[derive(Debug, Parser)]
#[command(name = "envelope-proxy", version)]
struct Options {
    /// The configuration file (TOML): the upstream, tiers, scopes and budgets per tool.
    #[arg(long, value_name = "PATH", env = "ENVELOPE_PROXY_CONFIG")]
    config: Option<PathBuf>,

    /// Front the streamable-HTTP MCP server at this URL.
    #[arg(long, value_name = "URL")]
    upstream_url: Option<String>,

    /// The largest message read from the upstream, in bytes; a longer answer is refused.
    #[arg(long, value_name = "BYTES")]
    max_message_bytes: Option<usize>,

    /// How long one call to the upstream may take, in seconds.
    #[arg(long, value_name = "SECONDS")]
    upstream_timeout: Option<u64>,

    /// The key that seals paging tokens: a file of 64 hex characters, shared by proxies that
    /// must accept each other's tokens. Without it, the key in ENVELOPE_PROXY_CONTINUATION_KEY
    /// (hex), else a key drawn for this process only.
    #[arg(long, value_name = "PATH")]
    continuation_key_file: Option<PathBuf>,

    /// Serve streamable HTTP at ADDR (like 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,

    /// Accept this `Host` over HTTP (repeatable). Default: loopback names only.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    allowed_hosts: Vec<String>,

    /// Keep no sessions over HTTP: replicas behind a load balancer need no stickiness.
    #[arg(long, requires = "http")]
    stateless: bool,

    /// Serve no plain HTTP API beside MCP.
    #[arg(long, requires = "http")]
    no_rest: bool,

    /// Print the tool listing as JSON and exit.
    #[arg(long, conflicts_with_all = ["http", "call"])]
    list: bool,

    /// Call this tool once, print its envelope and exit: 0 when the call worked, 2 otherwise.
    #[arg(long, value_name = "TOOL", conflicts_with = "http")]
    call: Option<String>,

    /// The arguments of `--call`, a JSON object.
    #[arg(long, value_name = "JSON", default_value = "{}", value_parser = parse_arguments, requires = "call")]
    arguments: Arguments,

    /// The upstream command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    upstream: Vec<String>,
}

/// What to do instead of serving.
enum Command {
    List,
    Call { tool: String, arguments: Arguments },
}

fn parse_arguments(text: &str) -> Result<Arguments, String> {
    Arguments::from_json(text).map_err(|error| format!("the JSON arguments do not parse: {error}"))
}

fn main() -> ExitCode {
    let options = Options::parse();
    init_logging();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("envelope-proxy: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(options))
}

fn init_logging() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| EnvFilter::new(envelope_mcp::DEFAULT_LOG_FILTER));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// The configuration the file and the flags make together: a flag wins over the file.
fn proxy_config(options: &Options) -> Result<ProxyConfig, String> {
    let mut config = match &options.config {
        Some(path) => ProxyConfig::load(path).map_err(|error| error.to_string())?,
        None => ProxyConfig::default(),
    };
    if !options.upstream.is_empty() {
        config.upstream.command = options.upstream.clone();
        config.upstream.url = None;
    }
    if let Some(url) = &options.upstream_url {
        if !options.upstream.is_empty() {
            return Err("front a command or a URL, not both".to_owned());
        }
        config.upstream.url = Some(url.clone());
        config.upstream.command.clear();
    }
    if let Some(bytes) = options.max_message_bytes {
        config.upstream.max_message_bytes = Some(bytes);
    }
    if let Some(seconds) = options.upstream_timeout {
        config.upstream.call_timeout_seconds = Some(seconds);
    }
    config.target().map_err(|error| error.to_string())?;
    Ok(config)
}

/// The paging key: from the key file, else from [`KEY_VAR`], else one drawn now.
fn continuations(key_file: Option<&Path>) -> Result<Continuations, String> {
    const KEY_ID: u32 = 1;
    let key = match (key_file, std::env::var(KEY_VAR)) {
        (Some(path), _) => {
            let text = std::fs::read_to_string(path)
                .map_err(|error| format!("cannot read `{}`: {error}", path.display()))?;
            ContinuationKey::from_hex(KEY_ID, &text)
                .map_err(|error| format!("the key in `{}`: {error}", path.display()))?
        }
        (None, Ok(text)) => ContinuationKey::from_hex(KEY_ID, &text)
            .map_err(|error| format!("the key in `{KEY_VAR}`: {error}"))?,
        (None, Err(_)) => ContinuationKey::generate(KEY_ID)
            .map_err(|error| format!("cannot make a continuation key: {error}"))?,
    };
    Ok(Continuations::new(key))
}

async fn run(options: Options) -> ExitCode {
    let config = match proxy_config(&options) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("envelope-proxy: {message}");
            return ExitCode::from(2);
        }
    };
    let continuations = match continuations(options.continuation_key_file.as_deref()) {
        Ok(continuations) => continuations,
        Err(message) => {
            eprintln!("envelope-proxy: {message}");
            return ExitCode::from(2);
        }
    };
    // ring as rustls's process default before any reqwest client is built.
    envelope_mcp::auth::install_crypto_provider();
    let serving = EnvelopeConfig::new("envelope-proxy", env!("CARGO_PKG_VERSION"))
        .with_continuations(continuations);
    let proxy = match Proxy::start(config, serving).await {
        Ok(proxy) => proxy,
        Err(message) => {
            eprintln!("envelope-proxy: {message}");
            return ExitCode::FAILURE;
        }
    };
    let server = proxy.server().clone();
    let command = match (options.list, options.call) {
        (true, _) => Some(Command::List),
        (false, Some(tool)) => Some(Command::Call {
            tool,
            arguments: options.arguments,
        }),
        (false, None) => None,
    };
    match (command, options.http) {
        (Some(Command::List), _) => match serde_json::to_string_pretty(&*server.tools()) {
            Ok(text) => {
                println!("{text}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("envelope-proxy: cannot print the listing: {error}");
                ExitCode::FAILURE
            }
        },
        (Some(Command::Call { tool, arguments }), _) => {
            let Some(prepared) = server.call(&tool, arguments).await else {
                eprintln!("envelope-proxy: the upstream has no tool `{tool}`");
                return ExitCode::from(2);
            };
            println!("{}", prepared.structured);
            if prepared.ok {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(2)
            }
        }
        (None, None) => match server.serve_stdio().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("envelope-proxy: {error}");
                ExitCode::FAILURE
            }
        },
        (None, Some(addr)) => {
            let shutdown = CancellationToken::new();
            let stop = shutdown.clone();
            tokio::spawn(async move {
                let _ = tokio::signal::ctrl_c().await;
                stop.cancel();
            });
            let mut config = HttpConfig::default()
                .with_stateless(options.stateless)
                .with_drain_timeout(Duration::from_secs(30))
                .with_shutdown(shutdown)
                .with_rest((!options.no_rest).then(RestConfig::default));
            if !options.allowed_hosts.is_empty() {
                config = config.with_allowed_hosts(options.allowed_hosts.clone());
            }
            eprintln!("envelope-proxy: serving at http://{addr}{}", config.path());
            match server.serve_http_with(addr, config).await {
                Ok(()) => ExitCode::SUCCESS,
                Err(error) => {
                    eprintln!("envelope-proxy: {error}");
                    ExitCode::FAILURE
                }
            }
        }
    }
}

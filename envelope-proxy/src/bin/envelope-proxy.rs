//! `envelope-proxy`: one upstream MCP server, every answer an envelope.
//!
//! ```text
//! envelope-proxy [OPTIONS] -- COMMAND [ARGS...]         front a server spoken to over stdio
//! envelope-proxy [OPTIONS] --upstream-url URL           front a streamable-HTTP server
//! envelope-proxy [OPTIONS] --config proxy.toml          the upstream and its tools from a file
//!
//!   ... --http ADDR        serve streamable HTTP at http://ADDR/mcp (and REST) instead of stdio,
//!                          with every HTTP and OAuth option an envelope server has (`--help`)
//!   ... --list             print the listing and exit
//!   ... --call TOOL [--arguments 'JSON']
//!                          call one tool, print its envelope, exit 0 when it worked
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
#[cfg(test)]
use std::time::Duration;

use clap::Parser;
use envelope_core::Arguments;
use envelope_mcp::EnvelopeConfig;
use envelope_mcp::cli::{self, HttpOptions, ServerOptions};
use envelope_proxy::{Proxy, ProxyConfig, Target};

/// The environment variable holding the continuation key, as hex.
const KEY_VAR: &str = "ENVELOPE_PROXY_CONTINUATION_KEY";

/// The program, as it names itself in what it prints and in the key file it keeps.
const PROGRAM: &str = "envelope-proxy";

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
    /// (hex), else the key kept in $XDG_STATE_HOME/envelope/envelope-proxy.key (or
    /// ~/.local/state/envelope/), made on first use and, on Unix, readable only by you.
    #[arg(
        long,
        value_name = "PATH",
        env = "ENVELOPE_PROXY_CONTINUATION_KEY_FILE"
    )]
    continuation_key_file: Option<PathBuf>,

    /// Print the tool listing as JSON and exit.
    #[arg(long, conflicts_with_all = ["http", "call"])]
    list: bool,

    /// Call this tool once, print its envelope and exit: 0 when the call worked, 2 otherwise.
    #[arg(long, value_name = "TOOL", conflicts_with = "http")]
    call: Option<String>,

    /// The arguments of `--call`, a JSON object.
    #[arg(
        long,
        value_name = "JSON",
        default_value = "{}",
        value_parser = cli::parse_arguments,
        requires = "call"
    )]
    arguments: Arguments,

    #[command(flatten)]
    server: ServerOptions,

    #[command(flatten)]
    http: HttpOptions,

    /// The upstream command and its arguments, after `--`.
    #[arg(last = true, value_name = "COMMAND")]
    upstream: Vec<String>,
}

impl Options {
    /// The options this process was given, or clap's error (`--help` and `--version` among
    /// them); `ENVELOPE_PROXY_AUTH_CLIENT_SECRET` supplies `--auth-client-secret`.
    fn parse_from(
        args: impl IntoIterator<Item = std::ffi::OsString>,
    ) -> Result<Options, clap::Error> {
        use clap::{CommandFactory as _, FromArgMatches as _};
        let matches = cli::with_env_prefix(Options::command(), "ENVELOPE_PROXY")
            .try_get_matches_from(args)?;
        Options::from_arg_matches(&matches)
    }
}

fn main() -> ExitCode {
    let options = match Options::parse_from(std::env::args_os()) {
        Ok(options) => options,
        Err(error) => {
            let _ = error.print();
            return ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
        }
    };
    init_logging();
    // ring as rustls's process default before any reqwest client is built (the upstream's
    // and the OAuth issuer's).
    envelope_mcp::auth::install_crypto_provider();
    // One client over stdio is served best on one thread: a call crosses from the client's
    // line to the upstream's and back without waking another thread on the way. HTTP serves
    // many at once, on every core.
    let runtime = if options.http.http.is_some() {
        tokio::runtime::Runtime::new()
    } else {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
    };
    let runtime = match runtime {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("{PROGRAM}: cannot start the runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(options))
}

/// Logs to stderr, filtered by `RUST_LOG` (default: `info`, rmcp at `warn`); on stdio, stdout
/// carries only the protocol.
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

async fn run(options: Options) -> ExitCode {
    let config = match proxy_config(&options) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("{PROGRAM}: {message}");
            return ExitCode::from(2);
        }
    };
    let continuations =
        match cli::continuations(PROGRAM, options.continuation_key_file.as_deref(), KEY_VAR) {
            Ok(continuations) => continuations,
            Err(message) => {
                eprintln!("{PROGRAM}: {message}");
                return ExitCode::from(2);
            }
        };
    let upstream = match config.target() {
        Ok(Target::Command { program, .. }) => program,
        Ok(Target::Url(url)) => url,
        Err(error) => error.to_string(),
    };
    let serving = options.server.apply(
        EnvelopeConfig::new(PROGRAM, env!("CARGO_PKG_VERSION")).with_continuations(continuations),
    );
    let proxy = match Proxy::start(config, serving).await {
        Ok(proxy) => proxy,
        Err(message) => {
            eprintln!("{PROGRAM}: {message}");
            return ExitCode::FAILURE;
        }
    };
    let server = proxy.server().clone();
    if options.list {
        return cli::print_listing(&server, PROGRAM);
    }
    if let Some(tool) = options.call {
        return cli::call_once(&server, PROGRAM, &tool, options.arguments).await;
    }
    match options.http.http {
        Some(addr) => cli::serve_http(server, PROGRAM, &upstream, addr, &options.http).await,
        None => match server.serve_stdio().await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("{PROGRAM}: {error}");
                ExitCode::FAILURE
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> Result<Options, clap::Error> {
        Options::parse_from(args.iter().map(std::ffi::OsString::from))
    }

    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory as _;
        Options::command().debug_assert();
    }

    #[test]
    fn the_serving_options_are_the_examples() {
        let options = parse(&[
            "envelope-proxy",
            "--http",
            "127.0.0.1:1",
            "--stateless",
            "--max-connections",
            "10",
            "--call-timeout",
            "30",
            "--",
            "server",
            "--root",
            ".",
        ])
        .expect("parses");
        assert_eq!(options.upstream, ["server", "--root", "."]);
        assert_eq!(options.server.call_timeout(), Some(Duration::from_secs(30)));
        let config = options
            .http
            .config(envelope_mcp::CancellationToken::new(), PROGRAM)
            .expect("a configuration");
        assert!(format!("{config:?}").contains("max_connections: Some(10)"));
        assert_eq!(
            proxy_config(&options).expect("an upstream").target().ok(),
            Some(Target::Command {
                program: "server".to_owned(),
                args: vec!["--root".to_owned(), ".".to_owned()],
            })
        );
    }

    #[test]
    fn usage_errors_are_refused() {
        for args in [
            &[
                "envelope-proxy",
                "--list",
                "--http",
                "127.0.0.1:1",
                "--",
                "s",
            ][..],
            &["envelope-proxy", "--arguments", "{}", "--", "s"],
            &[
                "envelope-proxy",
                "--call",
                "t",
                "--arguments",
                "{not json",
                "--",
                "s",
            ],
            &["envelope-proxy", "--stateless", "--", "s"],
        ] {
            assert!(parse(args).is_err(), "{args:?}");
        }
        let both = parse(&[
            "envelope-proxy",
            "--upstream-url",
            "http://x/mcp",
            "--",
            "s",
        ])
        .expect("parses");
        assert!(proxy_config(&both).is_err());
        let none = parse(&["envelope-proxy"]).expect("parses");
        assert!(proxy_config(&none).is_err());
    }
}

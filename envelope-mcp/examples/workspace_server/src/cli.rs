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

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand, ValueEnum};
use envelope_core::Arguments;
use envelope_mcp::cli::{HttpOptions, ServerOptions};

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

    /// How many calls of one tool run at once (every tool here works on the blocking pool);
    /// the rest wait their turn, each tool's in its own line. 0 for no limit. Default: twice
    /// the cores this process may run on.
    #[arg(long, value_name = "N")]
    blocking_calls_per_tool: Option<usize>,

    #[command(flatten)]
    server: ServerOptions,

    #[command(flatten)]
    http: HttpOptions,

    #[command(subcommand)]
    command: Option<Command>,
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
        #[arg(default_value = "{}", value_parser = envelope_mcp::cli::parse_arguments)]
        arguments: Arguments,
    },
    /// Print the tool listing as JSON.
    List,
}

impl Options {
    /// Parses `args` (the program's name first), refusing what clap alone cannot: a command
    /// given with `--http`, which serves.
    fn parse_checked(args: Vec<String>) -> Result<Options, clap::Error> {
        use clap::CommandFactory;
        use clap::FromArgMatches as _;
        let matches = envelope_mcp::cli::with_env_prefix(Options::command(), "WORKSPACE_SERVER")
            .try_get_matches_from(args)?;
        let options = Options::from_arg_matches(&matches)?;
        if options.command.is_some() && options.http.http.is_some() {
            return Err(Options::command().error(
                clap::error::ErrorKind::ArgumentConflict,
                "`--http` serves; it takes no command",
            ));
        }
        Ok(options)
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
    let continuations = match envelope_mcp::cli::continuations(
        "workspace_server",
        options.continuation_key_file.as_deref(),
        KEY_VAR,
    ) {
        Ok(continuations) => continuations,
        Err(message) => {
            eprintln!("workspace_server: {message}");
            return ExitCode::from(2);
        }
    };
    let root = workspace.root().display().to_string();
    let limits = crate::server::Limits {
        call_timeout: options.server.call_timeout(),
        blocking_calls_per_tool: match options.blocking_calls_per_tool {
            None => Some(envelope_mcp::default_blocking_calls_per_tool()),
            Some(0) => None,
            Some(calls) => Some(calls),
        },
        max_request_bytes: options.server.max_request_bytes,
        listing: options.server.listing(),
        dialect: options.server.dialect,
        call_dialects: options.server.call_dialects(),
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
        (None, Some(addr)) => {
            envelope_mcp::cli::serve_http(server, "workspace_server", &root, addr, &options.http)
                .await
        }
        (Some(Command::Call { tool, arguments }), _) => {
            envelope_mcp::cli::call_once(&server, "workspace_server", &tool, arguments).await
        }
        (Some(Command::List), _) => envelope_mcp::cli::print_listing(&server, "workspace_server"),
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;
    // The shared options, read through this command line.
    use envelope_mcp::{CancellationToken, RestConfig};

    #[test]
    fn the_command_line_is_consistent() {
        Options::command().debug_assert();
    }

    #[test]
    fn flags_become_the_http_configuration() {
        let options = Options::parse_checked(
            [
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
            ]
            .map(str::to_owned)
            .to_vec(),
        )
        .expect("parses");
        let config = options
            .http
            .config(CancellationToken::new(), "workspace_server")
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
            let owned = args.iter().map(|arg| arg.to_string()).collect();
            let options = Options::parse_checked(owned).expect("parses");
            options
                .http
                .config(CancellationToken::new(), "workspace_server")
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
            options
                .http
                .config(CancellationToken::new(), "workspace_server")
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

//! `conformance-server`: the fixtures of the official MCP conformance suite
//! (`@modelcontextprotocol/conformance`), served by envelope.
//!
//! ```text
//! conformance-server --http 127.0.0.1:PORT   serve streamable HTTP at http://127.0.0.1:PORT/mcp
//! conformance-server --stdio                 serve over standard input and output
//! ```
//!
//! The fixture tools are envelope tools (`tools.rs`): every answer an envelope, media attached
//! beside it. Prompts, resources, subscriptions and completion are an ordinary rmcp handler
//! (`handler.rs`, `prompts.rs`, `resources.rs`), composed with the envelope server by
//! [`EnvelopeServer::with_handler`]. Over HTTP only loopback `Host` headers are accepted (the
//! suite checks DNS-rebinding protection), and sessions are kept for the protocol versions that
//! have them; SIGTERM or Ctrl-C stops the server.

mod fixtures;
mod handler;
mod input_required;
mod paged;
mod prompts;
mod resources;
mod tools;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::time::Duration;

use envelope_core::paging::{ContinuationKey, Continuations};
use envelope_mcp::{CancellationToken, EnvelopeConfig, EnvelopeServer, HttpConfig};
// rmcp's macros write `rmcp::…` paths; the modules that use them import this.
use envelope_mcp::rmcp;

/// How the server is reached.
#[derive(Debug, PartialEq, Eq)]
enum Transport {
    /// Streamable HTTP on this address, at `/mcp`.
    Http(SocketAddr),
    /// Standard input and output.
    Stdio,
}

/// Why the command line was not understood.
#[derive(Debug, PartialEq, Eq)]
enum Usage {
    /// `--help`: the usage is what was asked for.
    Help,
    /// Anything else: what was wrong.
    Wrong(String),
}

const USAGE: &str = "usage: conformance-server --http ADDR   (streamable HTTP at http://ADDR/mcp, ADDR like 127.0.0.1:8765)\n       conformance-server --stdio";

/// The transport the arguments (the program's name left out) ask for.
fn parse(mut args: impl Iterator<Item = String>) -> Result<Transport, Usage> {
    let transport = match args.next().as_deref() {
        Some("--http") => {
            let addr = args.next().ok_or_else(|| {
                Usage::Wrong("--http needs an address, like 127.0.0.1:8765".into())
            })?;
            let addr = addr
                .parse()
                .map_err(|error| Usage::Wrong(format!("--http {addr}: {error}")))?;
            Transport::Http(addr)
        }
        Some("--stdio") => Transport::Stdio,
        Some("--help" | "-h") => return Err(Usage::Help),
        Some(other) => return Err(Usage::Wrong(format!("unknown argument `{other}`"))),
        None => {
            return Err(Usage::Wrong(
                "say how to serve: --http ADDR or --stdio".into(),
            ));
        }
    };
    match args.next() {
        Some(extra) => Err(Usage::Wrong(format!("unexpected argument `{extra}`"))),
        None => Ok(transport),
    }
}

/// The envelope server of the fixture tools, composed with the handler of the rest.
fn server() -> Result<EnvelopeServer, String> {
    // A key of this process's own: its tokens are for its own calls.
    let key = ContinuationKey::generate(1)
        .map_err(|error| format!("cannot draw a continuation key: {error}"))?;
    Ok(EnvelopeServer::new(
        tools::toolset(),
        EnvelopeConfig::new("envelope-conformance", env!("CARGO_PKG_VERSION"))
            .with_instructions("The fixtures of the MCP conformance suite, served by envelope.")
            .with_continuations(Continuations::new(key)),
    )
    .with_handler(handler::Fixtures::new()))
}

/// Cancels `shutdown` on SIGTERM or Ctrl-C.
async fn stop_on_signal(shutdown: CancellationToken) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut terminate) => {
                tokio::select! {
                    _ = terminate.recv() => {}
                    _ = tokio::signal::ctrl_c() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    let _ = tokio::signal::ctrl_c().await;
    shutdown.cancel();
}

#[tokio::main]
async fn main() -> ExitCode {
    let transport = match parse(std::env::args().skip(1)) {
        Ok(transport) => transport,
        Err(Usage::Help) => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(Usage::Wrong(why)) => {
            eprintln!("conformance-server: {why}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let server = match server() {
        Ok(server) => server,
        Err(why) => {
            eprintln!("conformance-server: {why}");
            return ExitCode::FAILURE;
        }
    };
    let served = match transport {
        Transport::Http(addr) => {
            let shutdown = CancellationToken::new();
            tokio::spawn(stop_on_signal(shutdown.clone()));
            // The defaults are what the suite checks: loopback hosts only, sessions for the
            // versions that have them, answers as server-sent events. A short drain: the suite's
            // harness waits 5 s before it kills the server.
            let config = HttpConfig::default()
                .with_shutdown(shutdown)
                .with_drain_timeout(Duration::from_secs(2));
            eprintln!("conformance-server: serving http://{addr}/mcp");
            server.serve_http_with(addr, config).await
        }
        Transport::Stdio => server.serve_stdio().await,
    };
    match served {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("conformance-server: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(line: &str) -> impl Iterator<Item = String> {
        line.split_whitespace()
            .map(str::to_owned)
            .collect::<Vec<_>>()
            .into_iter()
    }

    #[test]
    fn the_command_line_names_one_transport() {
        assert_eq!(
            parse(args("--http 127.0.0.1:8765")),
            Ok(Transport::Http(SocketAddr::from(([127, 0, 0, 1], 8765))))
        );
        assert_eq!(parse(args("--stdio")), Ok(Transport::Stdio));
        assert_eq!(parse(args("--help")), Err(Usage::Help));
        for wrong in [
            "",
            "--http",
            "--http nowhere",
            "--stdio --http 1.2.3.4:5",
            "--serve",
        ] {
            assert!(
                matches!(parse(args(wrong)), Err(Usage::Wrong(_))),
                "{wrong:?}"
            );
        }
    }

    #[test]
    fn every_fixture_tool_is_served() {
        let server = server().expect("a key");
        let tools = server.tools();
        let names: Vec<&str> = tools.iter().map(|tool| &*tool.name).collect();
        for name in [
            "test_simple_text",
            "test_error_handling",
            "json_schema_2020_12_tool",
            "envelope_count",
        ] {
            assert!(names.contains(&name), "{name} in {names:?}");
        }
    }
}

//! Serving HTTP from a command line, until a signal drains it.

use std::net::SocketAddr;
use std::process::ExitCode;

use super::HttpOptions;
use crate::{CancellationToken, EnvelopeServer};

/// Serves `server` over streamable HTTP at `addr` as `http` configures it (an OAuth resource
/// named `program`), saying on stderr that it serves `what`, until SIGTERM or Ctrl-C drains
/// it; warns when it is reachable beyond this machine without authentication. Exits 0 when it
/// stopped, 2 for options that cannot be used, 1 when serving failed.
pub async fn serve_http(
    server: EnvelopeServer,
    program: &str,
    what: &str,
    addr: SocketAddr,
    http: &HttpOptions,
) -> ExitCode {
    let shutdown = CancellationToken::new();
    tokio::spawn(stop_on_signal(shutdown.clone()));
    let config = match http.config(shutdown, program) {
        Ok(config) => config,
        Err(message) => {
            eprintln!("{program}: {message}");
            return ExitCode::from(2);
        }
    };
    eprintln!(
        "{program}: serving {what} at http://{addr}{}",
        config.path()
    );
    match config.auth() {
        Some(auth) => eprintln!(
            "{program}: OAuth on: tokens for {}, metadata at {}",
            auth.resource(),
            auth.metadata_url()
        ),
        None if !addr.ip().is_loopback() => {
            eprintln!(
                "{program}: warning: {addr} is reachable beyond this machine and \
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
            eprintln!("{program}: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Cancels `shutdown` on SIGTERM (what an orchestrator sends) or Ctrl-C.
pub async fn stop_on_signal(shutdown: CancellationToken) {
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

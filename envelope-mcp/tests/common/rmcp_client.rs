//! rmcp's own client, as any MCP client would drive a server: over an in-memory duplex, recording
//! the progress notifications it receives.

use std::time::Duration;

use envelope_mcp::EnvelopeServer;

/// One progress notification: how far, out of how much.
pub(crate) type ProgressReport = (f64, Option<f64>);

/// An rmcp client that records the progress notifications it receives.
#[derive(Clone, Default)]
pub(crate) struct ProgressClient {
    progress: std::sync::Arc<std::sync::Mutex<Vec<ProgressReport>>>,
}

impl rmcp::ClientHandler for ProgressClient {
    async fn on_progress(
        &self,
        params: rmcp::model::ProgressNotificationParam,
        _: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.progress
            .lock()
            .expect("no poisoning")
            .push((params.progress, params.total));
    }
}

impl ProgressClient {
    /// The progress reports seen, once there are `count` of them or 5 s have passed.
    /// Notifications are sent as the tool runs; the last may arrive just after the result.
    /// rmcp's client runs each notification's handler as a task of its own, so they may be
    /// seen out of order; the order on the wire is checked by the interop suites.
    pub(crate) async fn wait_for_progress(&self, count: usize) -> Vec<ProgressReport> {
        for _ in 0..500 {
            if self.progress.lock().expect("no poisoning").len() >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.progress.lock().expect("no poisoning").clone()
    }
}

/// `server` and rmcp's own client over an in-memory duplex: the client's running service, and
/// its handler to read the progress it saw.
pub(crate) async fn connect_in_memory(
    server: EnvelopeServer,
) -> (
    rmcp::service::RunningService<rmcp::RoleClient, ProgressClient>,
    ProgressClient,
) {
    let client = ProgressClient::default();
    (connect_with(server, client.clone()).await, client)
}

/// `server` and rmcp's own client, handled by `handler`, over an in-memory duplex.
#[allow(dead_code)] // not every test binary that has these helpers uses each
pub(crate) async fn connect_with<H: rmcp::ClientHandler>(
    server: EnvelopeServer,
    handler: H,
) -> rmcp::service::RunningService<rmcp::RoleClient, H> {
    use rmcp::ServiceExt as _;
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    handler.serve(client_io).await.expect("client connects")
}

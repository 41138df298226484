//! A tool's progress reports, forwarded to the client as `notifications/progress`.

use std::sync::Arc;

use envelope_core::stage::ProgressSink;
use rmcp::RoleServer;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;

/// The longest progress token, in bytes of its JSON, a call's progress is reported under.
/// Every notification repeats the token: a call whose token is longer gets no progress
/// notifications at all (it still answers as usual), so that what a call sends stays within
/// its budget and a fixed allowance however large a token the client chose.
pub const MAX_PROGRESS_TOKEN_BYTES: usize = 256;

/// Whether progress is reported under `token` ([`MAX_PROGRESS_TOKEN_BYTES`]).
pub(super) fn reportable(token: &ProgressToken) -> bool {
    serde_json::to_vec(token).is_ok_and(|json| json.len() <= MAX_PROGRESS_TOKEN_BYTES)
}

/// Forwards a tool's progress reports to the client as `notifications/progress`, one at a time
/// in the order they were made (MCP wants progress to increase).
///
/// The sending task starts at the first report: most calls report nothing, and a task per call
/// would cost two cross-thread wake-ups on every round trip (rmcp's client attaches a progress
/// token to every request).
pub(super) struct PeerProgress {
    token: ProgressToken,
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    forwarding: std::sync::Mutex<Forwarding>,
}

enum Forwarding {
    /// Nothing reported yet: no task.
    Idle,
    /// Reports go to `queue`; `task` sends them in order.
    Running {
        queue: tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>,
        task: tokio::task::JoinHandle<()>,
    },
    /// The result is on its way: later reports (from a task the tool left running) are
    /// dropped, since a client ignores progress for a request that is over.
    Finished,
}

impl ProgressSink for PeerProgress {
    fn report(&self, progress: f64, total: Option<f64>, message: Option<&str>) {
        let mut params = ProgressNotificationParam::new(self.token.clone(), progress);
        if let Some(total) = total {
            params = params.with_total(total);
        }
        if let Some(message) = message {
            params = params.with_message(message);
        }
        // A poisoned lock only means another report panicked mid-send; the queue is still sound.
        let mut forwarding = self
            .forwarding
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Forwarding::Idle = *forwarding {
            let (queue, mut reports) = tokio::sync::mpsc::unbounded_channel();
            let peer = self.peer.clone();
            let task = self.runtime.spawn(async move {
                while let Some(params) = reports.recv().await {
                    let _ = peer.notify_progress(params).await;
                }
            });
            *forwarding = Forwarding::Running { queue, task };
        }
        if let Forwarding::Running { queue, .. } = &*forwarding {
            // Queued, never awaited: a client that stopped listening must not stall the tool.
            let _ = queue.send(params);
        }
    }
}

impl PeerProgress {
    pub(super) fn new(peer: Peer<RoleServer>, token: ProgressToken) -> Arc<Self> {
        Arc::new(PeerProgress {
            token,
            peer,
            runtime: tokio::runtime::Handle::current(),
            forwarding: std::sync::Mutex::new(Forwarding::Idle),
        })
    }

    /// Sends what is still queued. Awaited before the result goes out, so no report arrives
    /// after the result (a client drops those: the request it names is over).
    pub(super) async fn finish(&self) {
        let forwarding = std::mem::replace(
            &mut *self
                .forwarding
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Forwarding::Finished,
        );
        if let Forwarding::Running { queue, task } = forwarding {
            // Closing the queue ends the task once it has sent everything before the close.
            drop(queue);
            let _ = task.await;
        }
    }
}

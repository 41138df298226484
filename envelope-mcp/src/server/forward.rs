//! The notifications one call sends its client while it runs (progress, log messages), one at a
//! time in the order they were made, all sent before the call's result.
//!
//! The sending task starts at the first notification: most calls send none, and a task per call
//! would cost two cross-thread wake-ups on every round trip.
#![allow(deprecated)] // logging, which rmcp marks deprecated for the revisions after 2025-11-25

use rmcp::RoleServer;
use rmcp::model::{LoggingMessageNotificationParam, ProgressNotificationParam};
use rmcp::service::Peer;

/// One notification of a call.
pub(super) enum Outgoing {
    /// `notifications/progress`.
    Progress(ProgressNotificationParam),
    /// `notifications/message`.
    Log(LoggingMessageNotificationParam),
}

/// Sends a call's notifications to its client, in order.
pub(super) struct Forwarder {
    peer: Peer<RoleServer>,
    runtime: tokio::runtime::Handle,
    state: std::sync::Mutex<Forwarding>,
}

enum Forwarding {
    /// Nothing sent yet: no task.
    Idle,
    /// Notifications go to `queue`; `task` sends them in order.
    Running {
        queue: tokio::sync::mpsc::UnboundedSender<Outgoing>,
        task: tokio::task::JoinHandle<()>,
    },
    /// The result is on its way: later notifications (from a task the tool left running) are
    /// dropped, since a client ignores them for a request that is over.
    Finished,
}

impl Forwarder {
    pub(super) fn new(peer: Peer<RoleServer>) -> Self {
        Forwarder {
            peer,
            runtime: tokio::runtime::Handle::current(),
            state: std::sync::Mutex::new(Forwarding::Idle),
        }
    }

    /// Queues `notification`; never waits, so a client that stopped listening cannot stall the
    /// tool.
    pub(super) fn send(&self, notification: Outgoing) {
        // A poisoned lock only means another send panicked; the queue is still sound.
        let mut state = self
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Forwarding::Idle = *state {
            let (queue, mut outgoing) = tokio::sync::mpsc::unbounded_channel();
            let peer = self.peer.clone();
            let task = self.runtime.spawn(async move {
                while let Some(notification) = outgoing.recv().await {
                    let sent = match notification {
                        Outgoing::Progress(params) => peer.notify_progress(params).await,
                        Outgoing::Log(params) => peer.notify_logging_message(params).await,
                    };
                    if let Err(error) = sent {
                        tracing::debug!(%error, "could not send a notification to the client");
                    }
                }
            });
            *state = Forwarding::Running { queue, task };
        }
        if let Forwarding::Running { queue, .. } = &*state {
            let _ = queue.send(notification);
        }
    }

    /// Sends what is still queued. Awaited before the result goes out, so no notification
    /// arrives after the result (a client drops those: the request it names is over), and none
    /// is lost with a stream the result closes.
    pub(super) async fn finish(&self) {
        let state = std::mem::replace(
            &mut *self
                .state
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner),
            Forwarding::Finished,
        );
        if let Forwarding::Running { queue, task } = state {
            // Closing the queue ends the task once it has sent everything before the close.
            drop(queue);
            let _ = task.await;
        }
    }
}

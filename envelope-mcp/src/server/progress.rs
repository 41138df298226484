//! A tool's progress reports, forwarded to the client as `notifications/progress`.

use std::sync::Arc;

use envelope_core::stage::ProgressSink;
use rmcp::model::{ProgressNotificationParam, ProgressToken};

use super::forward::{Forwarder, Outgoing};

/// The longest progress token, in bytes of its JSON, a call's progress is reported under.
/// Every notification repeats the token: a call whose token is longer gets no progress
/// notifications at all (it still answers as usual), so that what a call sends stays within
/// its budget and a fixed allowance however large a token the client chose.
pub const MAX_PROGRESS_TOKEN_BYTES: usize = 256;

/// Whether progress is reported under `token` ([`MAX_PROGRESS_TOKEN_BYTES`]).
pub(super) fn reportable(token: &ProgressToken) -> bool {
    serde_json::to_vec(token).is_ok_and(|json| json.len() <= MAX_PROGRESS_TOKEN_BYTES)
}

/// Forwards a tool's progress reports to the client as `notifications/progress`, in the order
/// they were made (MCP wants progress to increase), through the call's [`Forwarder`].
pub(super) struct PeerProgress {
    token: ProgressToken,
    forward: Arc<Forwarder>,
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
        self.forward.send(Outgoing::Progress(params));
    }
}

impl PeerProgress {
    pub(super) fn new(forward: Arc<Forwarder>, token: ProgressToken) -> Arc<Self> {
        Arc::new(PeerProgress { token, forward })
    }
}

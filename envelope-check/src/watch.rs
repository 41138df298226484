//! Hearing that the server's tool listing changed: rmcp hands a client's handler each
//! `notifications/tools/list_changed`, and the run asks its handler, before every call,
//! whether one came. A run that heard one calls nothing more until it has listed the tools
//! again and judged the new listing.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rmcp::service::{MaybeSendFuture, NotificationContext};
use rmcp::{ClientHandler, RoleClient};

/// What a run asks of its client's handler: whether the server said its tool listing changed
/// since the run last listed it.
pub trait ListingWatch {
    /// Whether a `list_changed` came since the listing was last read (it stays said until
    /// [`relisted`](ListingWatch::relisted)).
    fn listing_changed(&self) -> bool;

    /// The listing has just been read again.
    fn relisted(&self);
}

/// A handler that hears nothing: a run over it never lists again. Serve with [`Watcher`] (as
/// the command line does) to have `list_changed` heard.
impl ListingWatch for () {
    fn listing_changed(&self) -> bool {
        false
    }

    fn relisted(&self) {}
}

/// The checker's client handler: rmcp's defaults, and `notifications/tools/list_changed`
/// remembered until the run lists again. Clones share what they heard.
#[derive(Debug, Clone, Default)]
pub struct Watcher {
    changed: Arc<AtomicBool>,
}

impl Watcher {
    /// A handler that has heard nothing yet.
    pub fn new() -> Self {
        Watcher::default()
    }
}

impl ClientHandler for Watcher {
    fn on_tool_list_changed(
        &self,
        _context: NotificationContext<RoleClient>,
    ) -> impl Future<Output = ()> + MaybeSendFuture + '_ {
        self.changed.store(true, Ordering::SeqCst);
        std::future::ready(())
    }
}

impl ListingWatch for Watcher {
    fn listing_changed(&self) -> bool {
        self.changed.load(Ordering::SeqCst)
    }

    fn relisted(&self) {
        self.changed.store(false, Ordering::SeqCst);
    }
}

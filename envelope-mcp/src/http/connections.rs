//! The connections a server holds open: counted, capped below the process's file limit, each
//! with a count of its requests in flight, the time it last read or wrote a byte and since when
//! its client has left output unread, and each closable from outside its own task (to make room
//! for a new one, or for idleness).

use std::collections::BTreeMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
// Tokio's clock, so that a test with time paused sees connections idle.
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use super::stall::{Stall, millis_since};

/// File descriptors kept free for everything that is not a connection, beside the cap derived
/// from the file limit: at least this many, or a quarter of the limit when that is more. The
/// files and directories tools open, the listener, the runtime's own descriptors and the logs
/// come out of it.
pub const CONNECTION_DESCRIPTOR_HEADROOM: u64 = 64;

/// The connection cap when the process has no file limit at all (`RLIMIT_NOFILE` unlimited).
pub const UNLIMITED_FILES_MAX_CONNECTIONS: usize = 16_384;

/// The most connections a server holds open when nothing lowers it: the soft `RLIMIT_NOFILE`
/// less a headroom of a quarter of it (at least [`CONNECTION_DESCRIPTOR_HEADROOM`]) for the
/// files tools open; at least one.
pub(crate) fn file_limit_max_connections() -> usize {
    #[cfg(unix)]
    {
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        match limit.current {
            Some(soft) => {
                let headroom = (soft / 4).max(CONNECTION_DESCRIPTOR_HEADROOM);
                usize::try_from(soft.saturating_sub(headroom).max(1)).unwrap_or(usize::MAX)
            }
            None => UNLIMITED_FILES_MAX_CONNECTIONS,
        }
    }
    #[cfg(not(unix))]
    {
        UNLIMITED_FILES_MAX_CONNECTIONS
    }
}

/// Every open connection, oldest first, under a cap.
pub(crate) struct Connections {
    open: Mutex<BTreeMap<u64, Arc<Connection>>>,
    next: AtomicU64,
    max: usize,
    epoch: Instant,
}

/// The value of [`Connection::in_flight`] once the connection is closed to make room: no
/// count of requests reaches it, and no request is counted after it.
const CLOSED: usize = usize::MAX;

/// One open connection, as its task and the cap see it.
pub(crate) struct Connection {
    /// Requests whose answers are not yet sent (a streamed answer until its last event), or
    /// [`CLOSED`]. Eviction swaps `0` for [`CLOSED`] in one step, so that a request whose head
    /// was just read is either counted first (and its connection not evicted) or refused.
    in_flight: AtomicUsize,
    /// Whether a request head has been read on it, counted or refused: until then it has
    /// answered nothing and has nothing to write.
    requested: AtomicBool,
    /// Milliseconds from [`Connections::epoch`] to the last byte read or written, or to the
    /// end of the last answer.
    last_active: AtomicU64,
    /// Since a write found the socket full, while it still is: the client is not reading.
    write_blocked: Stall,
    epoch: Instant,
    /// Cancelled once the connection is evicted: its task then shuts it down.
    close: CancellationToken,
    /// Its answers, swept by its task for a client that leaves one unread.
    answers: super::unread::Answers,
}

/// A connection's place under the cap: given up when dropped.
pub(crate) struct Place {
    id: u64,
    pub(crate) connection: Arc<Connection>,
    connections: Arc<Connections>,
}

/// One request in flight on a connection: counted until dropped, and the connection is active
/// again when it ends.
pub(crate) struct Busy(Arc<Connection>);

impl Connections {
    /// At most `max` connections (at least one).
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Connections {
            open: Mutex::default(),
            next: AtomicU64::new(0),
            max: max.max(1),
            epoch: Instant::now(),
        })
    }

    /// A place for a new connection. At the cap, the oldest connection with no request in
    /// flight (idle, or still sending its first request head) is closed to make room: from
    /// then on it takes no request ([`Connection::busy`] refuses), and its task is told to shut
    /// it down. `None` when every one has a request in flight.
    pub(crate) fn open(self: &Arc<Self>) -> Option<Place> {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if open.len() >= self.max {
            let evicted = open
                .iter()
                .find(|(_, connection)| connection.close_if_unused())
                .map(|(id, _)| *id)?;
            if let Some(evicted) = open.remove(&evicted) {
                evicted.close.cancel();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let connection = Arc::new(Connection {
            in_flight: AtomicUsize::new(0),
            requested: AtomicBool::new(false),
            last_active: AtomicU64::new(0),
            write_blocked: Stall::new(self.epoch),
            epoch: self.epoch,
            close: CancellationToken::new(),
            answers: super::unread::Answers::default(),
        });
        connection.touch();
        open.insert(id, Arc::clone(&connection));
        Some(Place {
            id,
            connection,
            connections: Arc::clone(self),
        })
    }

    /// How many connections are open.
    #[cfg(test)]
    fn len(&self) -> usize {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.connections
            .open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.id);
    }
}

impl Connection {
    /// Whether no request is in flight now (and the connection is not closed).
    fn unused(&self) -> bool {
        self.in_flight.load(Ordering::SeqCst) == 0
    }

    /// Closes this connection to requests if none is in flight: `true` when it did.
    fn close_if_unused(&self) -> bool {
        self.in_flight
            .compare_exchange(0, CLOSED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
    }

    /// Counts a request in flight until the guard is dropped; `None` once the connection is
    /// closed to make room, when the request must be refused.
    pub(crate) fn busy(self: &Arc<Self>) -> Option<Busy> {
        self.requested.store(true, Ordering::SeqCst);
        self.in_flight
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |in_flight| {
                // No count reaches the sentinel (nor could, in practice): only `CLOSED` itself
                // refuses.
                in_flight.checked_add(1).filter(|&counted| counted < CLOSED)
            })
            .ok()?;
        Some(Busy(Arc::clone(self)))
    }

    /// Whether a request head has been read on this connection (see [`Connection::busy`]).
    pub(crate) fn has_had_a_request(&self) -> bool {
        self.requested.load(Ordering::SeqCst)
    }

    /// Cancelled once this connection is closed to make room.
    pub(crate) fn closing(&self) -> &CancellationToken {
        &self.close
    }

    /// Its answers, which its task sweeps (see [`Answers::sweep`](super::unread::Answers::sweep)).
    pub(crate) fn answers(&self) -> &super::unread::Answers {
        &self.answers
    }

    /// Marks this connection active now.
    fn touch(&self) {
        self.last_active
            .fetch_max(millis_since(self.epoch), Ordering::Relaxed);
    }

    /// Records a write that found the socket full (`blocked`), or one that went through.
    fn wrote(&self, blocked: bool) {
        if blocked {
            // The first refusal starts the clock; later ones while still full do not.
            self.write_blocked.start();
        } else {
            self.write_blocked.end();
        }
    }

    /// Waits until this connection's socket has taken no byte for `limit` while the server
    /// had bytes for it: the client has stopped reading. Checked every half `limit` at most,
    /// so it ends within one and a half `limit` of the first refused write.
    pub(crate) async fn write_stalled_for(&self, limit: Duration) {
        self.write_blocked.lasted(limit).await;
    }

    /// Waits until this connection has been idle for `idle`: no request in flight, and no byte
    /// read or written for that long.
    pub(crate) async fn idle_for(&self, idle: Duration) {
        loop {
            let last = Duration::from_millis(self.last_active.load(Ordering::Relaxed));
            let idle_since = self.epoch + last;
            if self.unused() && idle_since.elapsed() >= idle {
                return;
            }
            // A connection busy with a request is looked at again a whole `idle` later: its
            // answer's end marks it active, so no deadline is missed by more than that.
            let wake = if self.unused() {
                idle_since + idle
            } else {
                Instant::now() + idle
            };
            tokio::time::sleep_until(wake).await;
        }
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.0.touch();
        self.0.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A connection's socket, marking the connection active on every byte read or written; the
/// bytes read to tell its protocol are put back in front, to be read again by hyper.
pub(crate) struct Watched<T> {
    io: T,
    connection: Arc<Connection>,
    /// Bytes already read from `io` (the connection marked active then), read again first.
    put_back: Vec<u8>,
    /// How much of `put_back` has been read again.
    at: usize,
}

impl<T> Watched<T> {
    /// `io`, the socket of `connection`.
    pub(crate) fn new(io: T, connection: Arc<Connection>) -> Self {
        Watched {
            io,
            connection,
            put_back: Vec::new(),
            at: 0,
        }
    }

    /// Puts `read`, bytes this socket read, back in front of what it reads next.
    pub(crate) fn put_back(&mut self, read: Vec<u8>) {
        self.put_back = read;
        self.at = 0;
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let this = &mut *self;
        if let Some(rest) = this.put_back.get(this.at..).filter(|rest| !rest.is_empty()) {
            let taken = rest.len().min(buf.remaining());
            buf.put_slice(&rest[..taken]);
            this.at += taken;
            return Poll::Ready(Ok(()));
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut this.io).poll_read(cx, buf);
        if buf.filled().len() > before {
            this.connection.touch();
        }
        polled
    }
}

impl<T> Watched<T> {
    /// Marks the connection active when a write went through, and notes when one found the
    /// socket full (for the write deadline).
    fn wrote(&self, polled: &Poll<std::io::Result<usize>>) {
        match polled {
            Poll::Pending => self.connection.wrote(true),
            Poll::Ready(Ok(written)) if *written > 0 => {
                self.connection.wrote(false);
                self.connection.touch();
            }
            Poll::Ready(_) => {}
        }
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.wrote(&polled);
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.wrote(&polled);
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_the_cap_the_oldest_unused_connection_makes_room() {
        let connections = Connections::new(2);
        let first = connections.open().expect("room");
        let second = connections.open().expect("room");
        let _busy = first.connection.busy().expect("open");
        // The first is busy: the second, unused, is closed for the third.
        let third = connections.open().expect("room made");
        assert!(second.connection.closing().is_cancelled());
        assert!(
            second.connection.busy().is_none(),
            "a connection closed to make room takes no request"
        );
        assert!(!first.connection.closing().is_cancelled());
        assert!(
            first.connection.busy().is_some(),
            "a busy one still takes more"
        );
        assert_eq!(connections.len(), 2);
        let _also_busy = third.connection.busy().expect("open");
        assert!(connections.open().is_none(), "every connection is busy");
        drop(second);
        assert_eq!(connections.len(), 2);
        drop(third);
        assert_eq!(connections.len(), 1);
    }

    #[test]
    fn the_file_limit_leaves_headroom() {
        let max = file_limit_max_connections();
        assert!(max >= 1);
        let limit = rustix::process::getrlimit(rustix::process::Resource::Nofile);
        if let Some(soft) = limit.current {
            assert!((max as u64) < soft.max(2));
        }
    }

    #[tokio::test]
    async fn a_connection_is_idle_only_without_a_request() {
        let connections = Connections::new(4);
        let place = connections.open().expect("room");
        let connection = Arc::clone(&place.connection);
        let busy = connection.busy().expect("open");
        let idle = tokio::spawn({
            let connection = Arc::clone(&connection);
            async move { connection.idle_for(Duration::from_millis(50)).await }
        });
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(!idle.is_finished(), "a request in flight is never idle");
        drop(busy);
        tokio::time::timeout(Duration::from_secs(10), idle)
            .await
            .expect("idle once the request is done")
            .expect("joins");
    }

    /// Eviction and a request starting on the same connection at once: either the request is
    /// counted and the connection stays, or the connection is closed and the request refused,
    /// never a request counted on a connection closed under it.
    #[test]
    fn a_request_starting_as_its_connection_is_evicted_is_counted_or_refused() {
        for _ in 0..2_000 {
            let connections = Connections::new(1);
            let place = connections.open().expect("room");
            let connection = Arc::clone(&place.connection);
            let start = Arc::new(std::sync::Barrier::new(2));
            let starting = std::thread::spawn({
                let start = Arc::clone(&start);
                move || {
                    start.wait();
                    connection.busy()
                }
            });
            start.wait();
            let newcomer = connections.open();
            let busy = starting.join().expect("joins");
            let evicted = place.connection.closing().is_cancelled();
            assert_eq!(newcomer.is_some(), evicted);
            assert!(
                busy.is_some() != evicted,
                "counted: {}, evicted: {evicted}",
                busy.is_some()
            );
        }
    }
}

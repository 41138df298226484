//! The accept loop: every connection served by hyper with a timer (so that its request heads
//! have a deadline, from the first byte on) as HTTP/1.1, or as HTTP/2 when it opens with
//! HTTP/2's preface; counted under the connection cap, closed when idle or when its client stops
//! reading, and shut down gracefully with the server.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::connections::{Connection, Connections, Place, Watched};
use crate::drain::Calls;

/// The most bytes of headers an HTTP/2 request may carry, decoded (its
/// `SETTINGS_MAX_HEADER_LIST_SIZE`): room for a large access token and the controls' headers. A
/// request past it is answered `431` or its stream reset, and costs no more than this to read.
pub const MAX_HEADER_LIST_BYTES: u32 = 64 * 1024;

/// The most bytes an HTTP/2 stream holds written but not yet sent (its client's flow-control
/// window shut): past it the answer waits for the client to read, and the write deadline
/// ([`HttpConfig::with_write_timeout`](crate::HttpConfig::with_write_timeout)) drops it if it
/// never does.
pub const MAX_UNSENT_BYTES_PER_STREAM: usize = 256 * 1024;

/// Streams an HTTP/2 client may open and reset before the server reads them (the rapid-reset
/// pattern, CVE-2023-44487) before the connection is told to go away: h2's own default, named.
const MAX_PENDING_ACCEPT_RESET_STREAMS: usize = 20;

/// Streams the server may reset for a client's protocol errors on one connection before it
/// is told to go away: hyper's own default, named.
const MAX_LOCAL_ERROR_RESET_STREAMS: usize = 1024;

/// The preface an HTTP/2 connection opens with, prior knowledge (RFC 9113 §3.4).
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// What every connection is held to.
#[derive(Clone)]
pub(crate) struct Deadlines {
    pub(crate) header: Option<Duration>,
    pub(crate) idle: Option<Duration>,
    pub(crate) write: Option<Duration>,
    /// The streams an HTTP/2 connection may have in flight; `None` serves no HTTP/2.
    pub(crate) http2: Option<u32>,
}

/// Connections answered `503` at the cap at once, at most: past it, a new connection is
/// closed without a word, so that refusing cannot itself use up the descriptors.
const MAX_REFUSING: usize = 64;

/// How long a refused connection is given to take its `503`.
const REFUSAL_GRACE: Duration = Duration::from_secs(1);

/// How long a connection closed to make room is given to finish writing what it is writing (the
/// end of an answer, or the `503` of a request refused as it was evicted) before it is dropped:
/// short, so that a client trickling a head cannot keep its place through it.
const EVICTION_GRACE: Duration = Duration::from_secs(1);

/// The body of the answer to a request whose connection was closed to make room as its head
/// arrived.
const EVICTED: &str = "this connection was closed to make room for another; retry on a new one\n";

/// The answer to a connection past the cap while every open one has a request in flight.
const CONNECTIONS_FULL: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\n\
connection: close\r\n\
content-length: 58\r\n\
\r\n\
this server holds its maximum of connections; retry later\n";

/// Serves `router` on `listener` until `shutdown` is cancelled, then waits for open
/// connections to finish (hyper's graceful shutdown: each answers what it is answering, then
/// closes), for up to `drain` and a second.
pub(crate) async fn accept_loop(
    listener: TcpListener,
    router: axum::Router,
    deadlines: Deadlines,
    connections: Arc<Connections>,
    shutdown: CancellationToken,
    drain: Duration,
) {
    let open = Arc::new(Calls::default());
    let refusing = Arc::new(AtomicUsize::new(0));
    loop {
        let stream = tokio::select! {
            biased;
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors, most likely: the cap leaves headroom, but other
                    // files count too. Wait for some to close rather than spin.
                    tracing::warn!(%error, "a connection could not be accepted");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        // An answer goes out in more than one write (an event stream's priming event, then
        // the result; a large body a piece at a time): without this, Nagle's algorithm holds
        // the second write until the client's delayed acknowledgement, 40 ms later.
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "TCP_NODELAY could not be set on a connection");
        }
        match connections.open() {
            Some(place) => {
                let running = open.begin();
                let (router, deadlines, shutdown) =
                    (router.clone(), deadlines.clone(), shutdown.clone());
                tokio::spawn(async move {
                    serve_connection(stream, router, place, &deadlines, &shutdown).await;
                    drop(running);
                });
            }
            None => refuse(stream, &refusing),
        }
    }
    drop(listener);
    // A connection that outlives the drain (a client holding a finished stream open) does not
    // hold the process: a little after the drain timeout, serving ends regardless.
    if !open.drained(drain + Duration::from_secs(1)).await {
        tracing::warn!(
            open = open.running(),
            "connections still open past the drain timeout are cut off"
        );
    }
}

/// Serves one connection until it ends, goes idle, or (on shutdown) has answered what it was
/// answering; closed to make room, it is shut down, and given up to [`EVICTION_GRACE`] to
/// finish writing once it has had a request.
///
/// Its first bytes tell the protocol: HTTP/2's preface, or an HTTP/1.1 request. They are read
/// here, within the header deadline (hyper-util's automatic builder reads them with no deadline
/// at all), then handed back to hyper, whose HTTP/1 connection starts the header deadline anew
/// as it waits for the rest of the head.
async fn serve_connection(
    stream: TcpStream,
    router: axum::Router,
    place: Place,
    deadlines: &Deadlines,
    shutdown: &CancellationToken,
) {
    let connection = Arc::clone(&place.connection);
    let mut io = Watched::new(stream, Arc::clone(&connection));
    let opened = tokio::select! {
        opened = opening(&mut io, deadlines.header) => opened,
        () = connection.closing().cancelled() => return,
        () = shutdown.cancelled() => return,
        () = idle(&connection, deadlines.idle) => return,
    };
    let (protocol, read) = match opened {
        Ok(Some(opened)) => opened,
        Ok(None) => {
            tracing::debug!("a connection closed or timed out before its first request");
            return;
        }
        Err(error) => {
            tracing::debug!(%error, "a connection failed before its first request");
            return;
        }
    };
    io.put_back(read);
    let io = TokioIo::new(io);
    let answerer = Answerer {
        router,
        connection: Arc::clone(&connection),
        write: deadlines.write,
    };
    let driver = Driver {
        connection: &connection,
        deadlines,
        shutdown,
    };
    // One driver for both protocols: only the builder differs.
    match (protocol, deadlines.http2) {
        (Protocol::Http1, _) => {
            let serving = http1(deadlines).serve_connection(io, answerer);
            driver
                .drive(serving, |serving| serving.graceful_shutdown())
                .await;
        }
        (Protocol::Http2, Some(streams)) => {
            let serving = http2(streams).serve_connection(io, answerer);
            driver
                .drive(serving, |serving| serving.graceful_shutdown())
                .await;
        }
        (Protocol::Http2, None) => {
            tracing::debug!("an HTTP/2 connection is closed: this server serves HTTP/1.1 only");
        }
    }
}

/// The HTTP/1.1 connection builder: the header deadline from `deadlines`.
fn http1(deadlines: &Deadlines) -> hyper::server::conn::http1::Builder {
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(deadlines.header);
    builder
}

/// The HTTP/2 connection builder: at most `streams` in flight, and h2's guards against header,
/// reset and unread-output floods.
fn http2(streams: u32) -> hyper::server::conn::http2::Builder<TokioExecutor> {
    let mut builder = hyper::server::conn::http2::Builder::new(TokioExecutor::new());
    builder
        .timer(TokioTimer::new())
        .max_concurrent_streams(streams)
        .max_header_list_size(MAX_HEADER_LIST_BYTES)
        .max_send_buf_size(MAX_UNSENT_BYTES_PER_STREAM)
        .max_pending_accept_reset_streams(MAX_PENDING_ACCEPT_RESET_STREAMS)
        .max_local_error_reset_streams(MAX_LOCAL_ERROR_RESET_STREAMS);
    builder
}

/// The protocol a connection opens with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Protocol {
    Http1,
    Http2,
}

/// Reads a connection's first bytes, up to HTTP/2's preface or the first byte that differs
/// from it, within `within`: the protocol and the bytes read, or `None` when the connection
/// closed or ran out of time first.
async fn opening<R: AsyncRead + Unpin>(
    io: &mut R,
    within: Option<Duration>,
) -> std::io::Result<Option<(Protocol, Vec<u8>)>> {
    let read = async {
        let mut seen = Vec::with_capacity(PREFACE.len());
        let mut chunk = [0u8; PREFACE.len()];
        while seen.len() < PREFACE.len() && PREFACE.starts_with(&seen) {
            let wanted = PREFACE.len() - seen.len();
            let got = io.read(&mut chunk[..wanted]).await?;
            if got == 0 {
                return Ok(None);
            }
            seen.extend_from_slice(&chunk[..got]);
        }
        let protocol = if seen == PREFACE {
            Protocol::Http2
        } else {
            Protocol::Http1
        };
        Ok(Some((protocol, seen)))
    };
    match within {
        Some(limit) => tokio::time::timeout(limit, read).await.unwrap_or(Ok(None)),
        None => read.await,
    }
}

/// What drives one served connection: its place, its deadlines, the server's shutdown.
struct Driver<'a> {
    connection: &'a Connection,
    deadlines: &'a Deadlines,
    shutdown: &'a CancellationToken,
}

impl Driver<'_> {
    /// Drives `serving` (either protocol's connection; `graceful` shuts it down gracefully)
    /// until it ends, goes idle, stops reading for the write deadline, or (on shutdown) has
    /// answered what it was answering; closed to make room, it is shut down, and given up to
    /// [`EVICTION_GRACE`] to finish writing once it has had a request.
    async fn drive<F>(&self, serving: F, graceful: impl Fn(Pin<&mut F>))
    where
        F: Future<Output = Result<(), hyper::Error>>,
    {
        tokio::pin!(serving);
        drive(
            serving,
            graceful,
            self.connection,
            self.deadlines,
            self.shutdown,
        )
        .await;
    }
}

/// Drives one served connection (either protocol's; `graceful` shuts it down gracefully)
/// until it ends, goes idle, stops reading for the write deadline, or (on shutdown) has
/// answered what it was answering; closed to make room, it is shut down, and given up to
/// [`EVICTION_GRACE`] to finish writing once it has had a request.
async fn drive<F>(
    mut serving: Pin<&mut F>,
    graceful: impl Fn(Pin<&mut F>),
    connection: &Connection,
    deadlines: &Deadlines,
    shutdown: &CancellationToken,
) where
    F: Future<Output = Result<(), hyper::Error>>,
{
    let idle = idle(connection, deadlines.idle);
    tokio::pin!(idle);
    let stalled = write_stalled(connection, deadlines.write);
    tokio::pin!(stalled);
    let sweep = sweep_answers(connection, deadlines.write);
    tokio::pin!(sweep);
    let mut shutting_down = false;
    loop {
        tokio::select! {
            served = serving.as_mut() => {
                if let Err(error) = served {
                    tracing::debug!(%error, "a connection ended with an error");
                }
                return;
            }
            () = connection.closing().cancelled() => break,
            () = &mut idle => {
                tracing::debug!("an idle connection is closed");
                return;
            }
            () = &mut stalled => {
                tracing::debug!("a connection whose client stopped reading is closed");
                return;
            }
            () = &mut sweep => {}
            () = shutdown.cancelled(), if !shutting_down => {
                shutting_down = true;
                graceful(serving.as_mut());
            }
        }
    }
    // Closed to make room: it takes no new request, and one whose head arrived as it was
    // closed is answered `503` rather than reset. Shut down, it closes once what it is writing
    // is written. It is polled once more at least, in case a head has just arrived; one that
    // has had no request (silent, or still sending its first head) has nothing to write, and
    // is dropped then, so that a flood of new connections at the cap holds no more descriptors
    // than the cap. Any other gets the grace, past which a client still trickling a head, or
    // not reading its answer, is cut off.
    tracing::debug!("a connection with no request in flight is closed to make room");
    graceful(serving.as_mut());
    let ended = match tokio::time::timeout(Duration::ZERO, serving.as_mut()).await {
        Err(_) if connection.has_had_a_request() => {
            tokio::time::timeout(EVICTION_GRACE, serving).await
        }
        polled => polled,
    };
    match ended {
        Ok(Ok(())) => {}
        Ok(Err(error)) => {
            tracing::debug!(%error, "a connection closed for room ended with an error");
        }
        Err(_) => tracing::debug!("a connection closed for room is cut off"),
    }
}

/// Ends once `connection`'s client has left its output unread for `limit`; never without one.
async fn write_stalled(connection: &Connection, limit: Option<Duration>) {
    match limit {
        Some(limit) => connection.write_stalled_for(limit).await,
        None => std::future::pending().await,
    }
}

/// Gives up `connection`'s answers that its client leaves unread for `limit`; never ends.
async fn sweep_answers(connection: &Connection, limit: Option<Duration>) {
    match limit {
        Some(limit) => connection.answers().sweep(limit).await,
        None => std::future::pending().await,
    }
}

/// Ends once `connection` has been idle for `limit`; never without one.
async fn idle(connection: &Connection, limit: Option<Duration>) {
    match limit {
        Some(limit) => connection.idle_for(limit).await,
        None => std::future::pending().await,
    }
}

/// Answers a connection past the cap `503` and closes it, on a task of its own bounded by
/// [`REFUSAL_GRACE`]; past [`MAX_REFUSING`] of those at once, closes it at once.
fn refuse(mut stream: TcpStream, refusing: &Arc<AtomicUsize>) {
    if refusing.fetch_add(1, Ordering::SeqCst) >= MAX_REFUSING {
        refusing.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    tracing::warn!("at the connection cap with every connection busy: a new one is refused");
    let refusing = Arc::clone(refusing);
    tokio::spawn(async move {
        let answer = async {
            stream.write_all(CONNECTIONS_FULL).await?;
            stream.shutdown().await?;
            // Reading what the client sent until it closes, so that the close is not a reset
            // that could discard the answer before the client reads it.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink).await? > 0 {}
            Ok::<_, std::io::Error>(())
        };
        let _ = tokio::time::timeout(REFUSAL_GRACE, answer).await;
        refusing.fetch_sub(1, Ordering::SeqCst);
    });
}

/// Answers each request hyper reads on one connection with the router, counted in flight on
/// the connection until its answer is sent; once the connection is closed to make room, with
/// [`closed_for_room`].
#[derive(Clone)]
struct Answerer {
    router: axum::Router,
    connection: Arc<Connection>,
    /// How long an answer may go unread before it is dropped.
    write: Option<Duration>,
}

impl<B> hyper::service::Service<http::Request<B>> for Answerer
where
    B: http_body::Body<Data = axum::body::Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    type Response = http::Response<axum::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn call(&self, request: http::Request<B>) -> Self::Future {
        // Counted as its head is read, before anything else: the connection is either evicted
        // before (and the request refused) or not at all while the answer is on its way.
        let Some(busy) = self.connection.busy() else {
            tracing::debug!("a request on a connection closed to make room is refused");
            return Box::pin(std::future::ready(Ok(closed_for_room())));
        };
        let mut router = self.router.clone();
        let write = self.write;
        let connection = Arc::clone(&self.connection);
        Box::pin(async move {
            use tower_service::Service;
            let request = request.map(axum::body::Body::new);
            // An axum router is always ready, and never fails.
            std::future::poll_fn(|cx| {
                Service::<axum::extract::Request>::poll_ready(&mut router, cx)
            })
            .await?;
            let response = router.call(request).await?;
            // The request counts on its connection until its answer is sent, or given up
            // as unread.
            let response = super::holding::holding(response, busy);
            // Watched by the connection's sweep when there is a write deadline.
            let answers = write.map(|_| connection.answers());
            Ok(super::unread::given_up_after(response, answers))
        })
    }
}

/// The answer to a request whose connection was closed to make room as its head arrived:
/// `503`, `Retry-After: 1` and `Connection: close`, so that the client retries on a new
/// connection.
fn closed_for_room() -> http::Response<axum::body::Body> {
    let mut response = http::Response::new(axum::body::Body::from(EVICTED));
    *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
    let headers = response.headers_mut();
    headers.insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    headers.insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper::service::Service;

    #[tokio::test]
    async fn a_request_on_a_connection_closed_for_room_is_refused_503() {
        let connections = Connections::new(1);
        let place = connections.open().expect("room");
        let answerer = Answerer {
            router: axum::Router::new().route("/", axum::routing::get(|| async { "ok" })),
            connection: Arc::clone(&place.connection),
            write: None,
        };
        let request = || http::Request::new(axum::body::Body::empty());
        let answered = answerer.call(request()).await.expect("infallible");
        assert_eq!(answered.status(), http::StatusCode::OK);
        drop(answered);
        // The connection, unused again, is evicted for a newcomer; a request read on it now
        // (its head arrived as it was closed) is refused, not run.
        let _newcomer = connections.open().expect("room made");
        let refused = answerer.call(request()).await.expect("infallible");
        assert_eq!(refused.status(), http::StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(refused.headers()[http::header::RETRY_AFTER], "1");
        assert_eq!(refused.headers()[http::header::CONNECTION], "close");
    }

    #[test]
    fn the_refusal_is_one_well_formed_response() {
        let text = std::str::from_utf8(CONNECTIONS_FULL).expect("ascii");
        let (head, body) = text.split_once("\r\n\r\n").expect("a head");
        let length: usize = head
            .lines()
            .find_map(|line| line.strip_prefix("content-length: "))
            .and_then(|length| length.parse().ok())
            .expect("a length");
        assert_eq!(body.len(), length);
    }
}

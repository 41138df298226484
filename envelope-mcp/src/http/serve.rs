//! The accept loop: every connection served as HTTP/1.1 by hyper with a timer (so that its
//! request heads have a deadline, from the first byte on), counted under the connection cap,
//! closed when idle, and shut down gracefully with the server.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::connections::{Connection, Connections, Place, Watched};
use crate::drain::Calls;

/// What every connection is held to.
#[derive(Clone)]
pub(crate) struct Deadlines {
    pub(crate) header: Option<Duration>,
    pub(crate) idle: Option<Duration>,
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
/// Only HTTP/1 is served (a client sending HTTP/2's preface is closed): hyper-util's automatic
/// builder first reads the bytes that tell the versions apart with no deadline, so that a
/// connection sending nothing, or trickling the preface, would be held to the idle timeout
/// alone. hyper's own HTTP/1 connection starts the header deadline as it waits for the first
/// byte.
async fn serve_connection(
    stream: TcpStream,
    router: axum::Router,
    place: Place,
    deadlines: &Deadlines,
    shutdown: &CancellationToken,
) {
    let connection = Arc::clone(&place.connection);
    let io = TokioIo::new(Watched {
        io: stream,
        connection: Arc::clone(&connection),
    });
    let answerer = Answerer {
        router,
        connection: Arc::clone(&connection),
    };
    let mut builder = hyper::server::conn::http1::Builder::new();
    builder
        .timer(TokioTimer::new())
        .header_read_timeout(deadlines.header);
    let serving = builder.serve_connection(io, answerer);
    tokio::pin!(serving);
    let idle = idle(&connection, deadlines.idle);
    tokio::pin!(idle);
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
            () = shutdown.cancelled(), if !shutting_down => {
                shutting_down = true;
                serving.as_mut().graceful_shutdown();
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
    serving.as_mut().graceful_shutdown();
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
        Box::pin(async move {
            use tower_service::Service;
            let request = request.map(axum::body::Body::new);
            // An axum router is always ready, and never fails.
            std::future::poll_fn(|cx| {
                Service::<axum::extract::Request>::poll_ready(&mut router, cx)
            })
            .await?;
            let response = router.call(request).await?;
            // The request counts on its connection until its answer is sent.
            Ok(super::holding::holding(response, busy))
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

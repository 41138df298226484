//! The accept loop: every connection served by hyper with a timer (so that its request heads
//! have a deadline), counted under the connection cap, closed when idle, and shut down
//! gracefully with the server.

use std::convert::Infallible;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use super::connections::{Busy, Connection, Connections, Place, Watched};
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

/// Serves one connection until it ends, is closed to make room, goes idle, or (on shutdown)
/// has answered what it was answering.
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
    let counted = Arc::clone(&connection);
    let service =
        hyper::service::service_fn(move |request: http::Request<hyper::body::Incoming>| {
            let busy = counted.busy();
            let mut router = router.clone();
            async move {
                use tower_service::Service;
                let request = request.map(axum::body::Body::new);
                // An axum router is always ready, and never fails.
                std::future::poll_fn(|cx| {
                    Service::<axum::extract::Request>::poll_ready(&mut router, cx)
                })
                .await?;
                let response = router.call(request).await?;
                Ok::<_, Infallible>(
                    response.map(|body| axum::body::Body::new(Answering { body, _busy: busy })),
                )
            }
        });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(deadlines.header);
    let serving = builder.serve_connection(io, service);
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
            () = connection.closing().cancelled() => {
                tracing::debug!("a connection with no request in flight is closed to make room");
                return;
            }
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

/// An answer's body, counting its request in flight on its connection until it is sent or
/// dropped. Its length and end are the inner body's.
struct Answering {
    body: axum::body::Body,
    /// Held, never read: dropping it ends the count.
    _busy: Busy,
}

impl http_body::Body for Answering {
    type Data = axum::body::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::CONNECTIONS_FULL;

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

//! An answer its client leaves unread is given up: a body that hyper has taken a frame of and
//! not come back to for the write deadline (its client's HTTP/2 window shut, or its socket
//! full) is dropped, and with it what it holds (its place under the concurrency limit, its
//! request's count on the connection, the drain's count), whether or not hyper ever polls it
//! again. A later poll then fails, which resets the stream (HTTP/2) or closes the connection
//! (HTTP/1.1).
//!
//! Waiting on the server (a stream between events, a tool still running) is not waiting on the
//! client: only the time from a frame handed over to hyper's next poll counts.
//!
//! One sweep a connection watches all its answers ([`Answers::sweep`], run by the connection's
//! own task): an answer costs a place in its connection's list, not a task and a timer of its
//! own.

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::response::Response;
use tokio::time::Instant;

use super::stall::Stall;

/// The most bytes handed to hyper at once: a large answer goes out a piece at a time, each
/// handed over only once the one before is taken, so that what waits unsent for a slow client
/// is bounded by hyper's buffers, not by the answer's size.
const PIECE_BYTES: usize = 16 * 1024;

/// `response`, its body handed to hyper [`PIECE_BYTES`] at a time and, when `answers` is
/// swept (with the write deadline), given up once its client has taken nothing of it for the
/// deadline.
pub(crate) fn given_up_after(response: Response, answers: Option<&Answers>) -> Response {
    response.map(|body| {
        let shared = Arc::new(Shared {
            body: Mutex::new(Some(body)),
            handed_over: Stall::new(Instant::now()),
        });
        if let Some(answers) = answers {
            answers.watch(&shared);
        }
        Body::new(Unread {
            shared,
            rest: Bytes::new(),
        })
    })
}

/// The answers of one connection, watched by its sweep. Each is held weakly: an answer done
/// with is gone from the list at the next sweep or registration that prunes it.
#[derive(Default)]
pub(crate) struct Answers {
    watched: Mutex<Watched>,
}

#[derive(Default)]
struct Watched {
    answers: Vec<Weak<Shared>>,
    /// How many were live at the last pruning: the list is pruned again once it has doubled,
    /// so it holds at most twice the live answers (and a few), at a constant cost an answer.
    live_at_prune: usize,
}

/// The fewest entries the list prunes at.
const PRUNE_FROM: usize = 16;

impl Answers {
    fn watched(&self) -> std::sync::MutexGuard<'_, Watched> {
        self.watched.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn watch(&self, shared: &Arc<Shared>) {
        let mut watched = self.watched();
        if watched.answers.len() >= (2 * watched.live_at_prune).max(PRUNE_FROM) {
            watched.answers.retain(|answer| answer.strong_count() > 0);
            watched.live_at_prune = watched.answers.len();
        }
        watched.answers.push(Arc::downgrade(shared));
    }

    /// Gives up, every half `limit`, each answer whose client has left a frame untaken for
    /// `limit`: each is given up within one and a half `limit` of its stall's start. Never
    /// ends; the connection's task drops it with the connection.
    pub(crate) async fn sweep(&self, limit: Duration) {
        loop {
            tokio::time::sleep(limit / 2).await;
            let stalled: Vec<Arc<Shared>> = {
                let mut watched = self.watched();
                watched.answers.retain(|answer| answer.strong_count() > 0);
                watched.live_at_prune = watched.answers.len();
                watched
                    .answers
                    .iter()
                    .filter_map(Weak::upgrade)
                    .filter(|answer| answer.handed_over.has_lasted(limit))
                    .collect()
            };
            // Dropped outside the list's lock: a body's drop can be slow.
            for answer in stalled {
                let given_up = answer.body().take();
                if given_up.is_some() {
                    tracing::debug!(
                        limit_ms = limit.as_millis(),
                        "an answer its client left unread is given up"
                    );
                }
            }
        }
    }
}

/// The body, shared with its connection's sweep, which may drop it.
struct Shared {
    /// `None` once given up.
    body: Mutex<Option<Body>>,
    /// Since the frame handed to hyper that it has not come back after.
    handed_over: Stall,
}

/// A response body watched for a client that stops reading it.
struct Unread {
    shared: Arc<Shared>,
    /// What is left of the last data frame, handed over a piece at a time.
    rest: Bytes,
}

/// What a later poll of a given-up body fails with.
#[derive(Debug, thiserror::Error)]
#[error("the client left this answer unread past the write deadline")]
struct GivenUp;

impl Shared {
    fn body(&self) -> std::sync::MutexGuard<'_, Option<Body>> {
        self.body.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The next piece of `rest`, at most [`PIECE_BYTES`] (a view, not a copy).
fn next_piece(rest: &mut Bytes) -> Bytes {
    rest.split_to(rest.len().min(PIECE_BYTES))
}

impl Drop for Unread {
    fn drop(&mut self) {
        // Let go at once of what the body holds, not when the sweep next comes by.
        drop(self.shared.body().take());
    }
}

impl http_body::Body for Unread {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        let this = &mut *self;
        let polled = {
            let mut body = this.shared.body();
            let Some(body) = body.as_mut() else {
                return Poll::Ready(Some(Err(axum::Error::new(GivenUp))));
            };
            if this.rest.is_empty() {
                match Pin::new(body).poll_frame(cx) {
                    Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                        Ok(data) => {
                            this.rest = data;
                            Poll::Ready(Some(Ok(http_body::Frame::data(next_piece(
                                &mut this.rest,
                            )))))
                        }
                        Err(frame) => Poll::Ready(Some(Ok(frame))),
                    },
                    other => other,
                }
            } else {
                Poll::Ready(Some(Ok(http_body::Frame::data(next_piece(&mut this.rest)))))
            }
        };
        // hyper is back: whatever it was handed has been taken.
        let handed_over = matches!(polled, Poll::Ready(Some(Ok(_))));
        if handed_over {
            self.shared.handed_over.restart();
        } else {
            self.shared.handed_over.end();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.shared.body().as_ref().is_none_or(Body::is_end_stream)
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let body = self
            .shared
            .body()
            .as_ref()
            .map(Body::size_hint)
            .unwrap_or_default();
        let rest = self.rest.len() as u64;
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(body.lower().saturating_add(rest));
        if let Some(upper) = body.upper() {
            hint.set_upper(upper.saturating_add(rest));
        }
        hint
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures::StreamExt;
    use http_body_util::BodyExt;

    /// A body of `frames` frames, then (when `then_waits`) a wait on the server that never
    /// ends; the `Arc` it holds tells, by its count, whether it has been let go.
    fn frames(frames: usize, then_waits: bool) -> (Response, Arc<()>) {
        let held = Arc::new(());
        let guard = Arc::clone(&held);
        let sent = futures::stream::iter(
            (0..frames).map(|_| Ok::<_, std::convert::Infallible>(Bytes::from_static(b"frame"))),
        );
        let waits = futures::stream::pending().take(usize::from(then_waits));
        let stream = sent.chain(waits).map(move |frame| {
            let _ = &guard;
            frame
        });
        (Response::new(Body::from_stream(stream)), held)
    }

    const LIMIT: Duration = Duration::from_millis(40);

    /// A connection's answers, swept with [`LIMIT`] for as long as the test runs.
    fn swept() -> Arc<Answers> {
        let answers = Arc::new(Answers::default());
        let sweeping = Arc::clone(&answers);
        tokio::spawn(async move { sweeping.sweep(LIMIT).await });
        answers
    }

    #[tokio::test]
    async fn a_body_read_to_its_end_is_whole() {
        let answers = swept();
        let (response, held) = frames(3, false);
        let body = given_up_after(response, Some(&answers)).into_body();
        let bytes = body.collect().await.expect("whole").to_bytes();
        assert_eq!(bytes.as_ref(), b"frameframeframe");
        assert_eq!(Arc::strong_count(&held), 1, "let go once done");
    }

    #[tokio::test]
    async fn a_large_frame_is_handed_over_in_pieces_and_keeps_its_length() {
        let large = Bytes::from(vec![b'x'; PIECE_BYTES * 5 / 2]);
        let response = given_up_after(Response::new(Body::from(large.clone())), None);
        let mut body = response.into_body();
        assert_eq!(
            http_body::Body::size_hint(&body).exact(),
            Some(large.len() as u64)
        );
        let mut pieces = Vec::new();
        while let Some(frame) = body.frame().await {
            let data = frame.expect("ok").into_data().expect("data");
            pieces.push(data.len());
        }
        assert_eq!(pieces, [PIECE_BYTES, PIECE_BYTES, PIECE_BYTES / 2]);
    }

    #[tokio::test]
    async fn a_body_its_reader_stops_taking_is_given_up() {
        let answers = swept();
        let (response, held) = frames(3, false);
        let mut body = given_up_after(response, Some(&answers)).into_body();
        let first = body.frame().await.expect("a frame").expect("ok");
        assert_eq!(first.into_data().ok().as_deref(), Some(b"frame".as_slice()));
        // Not polled again: the reader has stopped.
        tokio::time::sleep(LIMIT * 4).await;
        assert_eq!(Arc::strong_count(&held), 1, "what it held is let go");
        let later = body.frame().await.expect("a frame");
        assert!(later.is_err(), "a later poll fails");
    }

    #[tokio::test]
    async fn a_body_waiting_on_the_server_is_kept() {
        let answers = swept();
        let (response, held) = frames(1, true);
        let mut body = given_up_after(response, Some(&answers)).into_body();
        body.frame().await.expect("a frame").expect("ok");
        // Polled again, it waits on the server, not on its reader.
        let waiting = tokio::time::timeout(LIMIT * 4, body.frame()).await;
        assert!(waiting.is_err(), "still waiting");
        tokio::time::sleep(LIMIT * 2).await;
        assert_eq!(Arc::strong_count(&held), 2, "kept");
    }

    #[tokio::test]
    async fn answers_done_with_do_not_pile_up_in_the_list() {
        let answers = Answers::default();
        let kept: Vec<Response> = (0..10)
            .map(|_| given_up_after(frames(1, true).0, Some(&answers)))
            .collect();
        for _ in 0..10_000 {
            drop(given_up_after(frames(1, false).0, Some(&answers)));
        }
        let listed = answers.watched().answers.len();
        assert!(listed <= 2 * kept.len() + PRUNE_FROM, "{listed} listed");
    }
}

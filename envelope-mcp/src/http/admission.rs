//! What every posted request is held to, whichever endpoint serves it: the concurrency limit,
//! the body size limit, the body and request deadlines, and the count a draining server waits
//! on.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::response::Response;

use crate::drain::{Calls, Running};

/// The limits every endpoint of one router shares.
#[derive(Clone)]
pub(crate) struct Admission {
    pub(crate) max_request_bytes: usize,
    /// Posted messages whose answers are not yet sent: a draining server waits for them.
    pub(crate) posts: Arc<Calls>,
    /// Closes rmcp's streams when the router is dropped, which also ends the task waiting to
    /// drain it (see `drain_then_close`).
    pub(crate) _closing: Option<Arc<tokio_util::sync::DropGuard>>,
    /// One permit a posted message, held until its answer is sent
    /// ([`HttpConfig::with_max_concurrent_requests`](super::HttpConfig::with_max_concurrent_requests));
    /// `None` without a limit.
    pub(crate) permits: Option<Arc<tokio::sync::Semaphore>>,
    /// How long a body may take to arrive, from the end of its head.
    pub(crate) body_timeout: Option<Duration>,
    /// How long a request may take in all, its upload included, from the end of its head.
    pub(crate) request_timeout: Option<Duration>,
}

/// Why a request was refused before any endpoint saw it.
#[derive(Debug, thiserror::Error)]
pub(crate) enum Refusal {
    /// The server is at its concurrency limit.
    #[error("the server is at its limit of concurrent requests; retry shortly")]
    Overloaded,
    /// The body is over the size limit.
    #[error("the request is larger than {limit} bytes")]
    TooLarge { limit: usize },
    /// The body could not be read (the client hung up, or sent a broken chunk).
    #[error("the request body could not be read")]
    Unreadable,
    /// The body did not arrive whole in time (the body timeout, or the request timeout).
    #[error("the request body did not arrive within {} ms", limit.as_millis())]
    BodyTimeout { limit: Duration },
}

/// A request let through: its head, its whole body, what it holds until answered, and when
/// its request timeout ends.
pub(crate) struct Admitted {
    pub(crate) parts: http::request::Parts,
    pub(crate) bytes: axum::body::Bytes,
    pub(crate) held: Held,
    pub(crate) deadline: Deadline,
}

/// When a request's time is up: its head's arrival plus the request timeout (which is kept
/// for messages); `None` without one.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Deadline(Option<(tokio::time::Instant, Duration)>);

/// The request ran past its request timeout.
#[derive(Debug, thiserror::Error)]
#[error("the request did not finish within the server's request timeout of {} ms", limit.as_millis())]
pub(crate) struct Overran {
    pub(crate) limit: Duration,
}

/// What a posted request holds until its answer is sent: its place in the drain count and
/// under the concurrency limit.
pub(crate) struct Held {
    running: Option<Running>,
    /// Held, never read: dropping it frees a place under the concurrency limit.
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Admission {
    /// Admits `request`, reading its body whole: refused when its body is over the size limit,
    /// whether it declares its length or streams it (at most one byte past the limit is read),
    /// when it does not arrive within the body timeout or the request timeout, or, once it has,
    /// at once past the concurrency limit (never queued). A body still arriving holds no place
    /// under the concurrency limit, so slow uploads cannot keep calls out.
    pub(crate) async fn admit(&self, request: Request) -> Result<Admitted, Refusal> {
        // The request timeout counts from here, the end of the head: the upload is part of it.
        let arrived = tokio::time::Instant::now();
        let deadline = Deadline(self.request_timeout.map(|limit| (arrived + limit, limit)));
        // A posted message counts as in flight from its first byte, so a shutdown that comes
        // while its body is still arriving waits for it too.
        let posted = request.method() == http::Method::POST;
        let running = posted.then(|| self.posts.begin());
        let too_large = Refusal::TooLarge {
            limit: self.max_request_bytes,
        };
        let declared = request
            .headers()
            .get(http::header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.parse::<u64>().ok());
        if declared.is_some_and(|length| length > self.max_request_bytes as u64) {
            return Err(too_large);
        }
        let (parts, body) = request.into_parts();
        let limited = http_body_util::Limited::new(body, self.max_request_bytes);
        let reading = http_body_util::BodyExt::collect(limited);
        let read_limit = match (self.body_timeout, self.request_timeout) {
            (Some(body), Some(request)) => Some(body.min(request)),
            (body, request) => body.or(request),
        };
        let read = match read_limit {
            Some(limit) => tokio::time::timeout_at(arrived + limit, reading)
                .await
                .map_err(|_| Refusal::BodyTimeout { limit })?,
            None => reading.await,
        };
        let bytes = match read {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => return Err(too_large),
            Err(_) => return Err(Refusal::Unreadable),
        };
        // The permit is held until the answer is sent, an event stream's last event included.
        let permit = match (&self.permits, posted) {
            (Some(permits), true) => Some(
                Arc::clone(permits)
                    .try_acquire_owned()
                    .map_err(|_| Refusal::Overloaded)?,
            ),
            _ => None,
        };
        let held = Held {
            running,
            _permit: permit,
        };
        Ok(Admitted {
            parts,
            bytes,
            held,
            deadline,
        })
    }
}

impl Deadline {
    /// `answering`, within what is left of the request timeout: `Err` once it is past, and
    /// `answering` dropped (its work with it).
    pub(crate) async fn bound<F: Future>(self, answering: F) -> Result<F::Output, Overran> {
        match self.0 {
            None => Ok(answering.await),
            Some((end, limit)) => tokio::time::timeout_at(end, answering)
                .await
                .map_err(|_| Overran { limit }),
        }
    }
}

impl Held {
    /// `response`, with its body holding this request's place until it is sent or dropped: a
    /// stream of progress and the result included.
    pub(crate) fn until_sent(self, response: Response) -> Response {
        if self.running.is_none() {
            return response;
        }
        super::holding::holding(response, self)
    }
}

//! What every posted request is held to, whichever endpoint serves it: the concurrency limit,
//! the body size limit, and the count a draining server waits on.

use std::sync::Arc;

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
}

/// A request let through: its head, its whole body, and what it holds until answered.
pub(crate) struct Admitted {
    pub(crate) parts: http::request::Parts,
    pub(crate) bytes: axum::body::Bytes,
    pub(crate) held: Held,
}

/// What a posted request holds until its answer is sent: its place in the drain count and
/// under the concurrency limit.
pub(crate) struct Held {
    running: Option<Running>,
    /// Held, never read: dropping it frees a place under the concurrency limit.
    _permit: Option<tokio::sync::OwnedSemaphorePermit>,
}

impl Admission {
    /// Admits `request`, reading its body whole: refused at once past the concurrency limit
    /// (never queued), or when its body is over the size limit, whether it declares its length
    /// or streams it (at most one byte past the limit is read).
    pub(crate) async fn admit(&self, request: Request) -> Result<Admitted, Refusal> {
        // A posted message counts as in flight from its first byte, so a shutdown that comes
        // while its body is still arriving waits for it too.
        let posted = request.method() == http::Method::POST;
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
            running: posted.then(|| self.posts.begin()),
            _permit: permit,
        };
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
        let bytes = match http_body_util::BodyExt::collect(limited).await {
            Ok(collected) => collected.to_bytes(),
            Err(error) if error.is::<http_body_util::LengthLimitError>() => return Err(too_large),
            Err(_) => return Err(Refusal::Unreadable),
        };
        Ok(Admitted { parts, bytes, held })
    }
}

impl Held {
    /// `response`, with its body holding this request's place until it is sent or dropped: a
    /// stream of progress and the result included.
    pub(crate) fn until_sent(self, response: Response) -> Response {
        if self.running.is_none() {
            return response;
        }
        response.map(|body| axum::body::Body::new(Counted { body, _held: self }))
    }
}

/// A response body counted as in flight until it is sent or dropped. Its length and end are
/// the inner body's, so a complete answer keeps its `content-length`.
struct Counted {
    body: axum::body::Body,
    /// Held, never read: dropping it ends the count and frees the permit.
    _held: Held,
}

impl http_body::Body for Counted {
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

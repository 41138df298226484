//! A response body that holds something until it is sent or dropped: a place under the
//! concurrency limit, a request's count on its connection. Its frames, length and end are the
//! inner body's, so a complete answer keeps its `content-length`.

use std::pin::Pin;
use std::task::{Context, Poll};

use axum::body::{Body, Bytes};
use axum::response::Response;

/// `response`, its body holding `guard` until the last byte is sent or the body is dropped.
pub(crate) fn holding<G: Send + Unpin + 'static>(response: Response, guard: G) -> Response {
    response.map(|body| {
        Body::new(Holding {
            body,
            _guard: guard,
        })
    })
}

/// A body and what it holds.
struct Holding<G> {
    body: Body,
    /// Held, never read: dropping it lets go.
    _guard: G,
}

impl<G: Unpin> http_body::Body for Holding<G> {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

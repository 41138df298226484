//! The outermost layer: every request carries an `X-Request-ID` that is safe to log, echoed on
//! its response.

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::Response;
use envelope_core::RequestId;
use http::HeaderValue;

use crate::REQUEST_ID_HEADER;

/// Middleware: makes sure every request carries an `X-Request-ID` that is safe to log, and
/// echoes it on the response.
///
/// - A ULID from the client is the envelope's `request_id`, echoed.
/// - Another id that is safe to log (a gateway's UUID, say: 1 to 128 printable ASCII
///   characters, see [`RequestId::client_correlation`]) is kept for log correlation: echoed, and
///   stamped beside the envelope's own ULID as `meta.client_request_id`.
/// - Anything else (absent, too long, control characters, CR/LF) is replaced by a fresh ULID,
///   which becomes the `request_id` and is echoed.
pub async fn request_id_layer(mut request: Request, next: Next) -> Response {
    let client = request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok());
    let id = match RequestId::client_correlation(client) {
        Some(correlation) => correlation.to_owned(),
        None => RequestId::from_client(client).to_string(),
    };
    let header = HeaderValue::from_str(&id).ok();
    if let Some(header) = &header {
        request
            .headers_mut()
            .insert(REQUEST_ID_HEADER, header.clone());
    }
    let mut response = next.run(request).await;
    if let Some(header) = header {
        response.headers_mut().insert(REQUEST_ID_HEADER, header);
    }
    response
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use tower::ServiceExt as _;

    use super::*;

    async fn echoed(sent: Option<&str>) -> String {
        let router = axum::Router::new()
            .route(
                "/",
                axum::routing::get(|request: Request| async move {
                    // The handler sees the id the response echoes.
                    request.headers()[REQUEST_ID_HEADER]
                        .to_str()
                        .map(str::to_owned)
                        .unwrap_or_default()
                }),
            )
            .layer(axum::middleware::from_fn(request_id_layer));
        let mut request = http::Request::get("/");
        if let Some(sent) = sent {
            request = request.header(REQUEST_ID_HEADER, sent);
        }
        let response = router
            .oneshot(request.body(Body::empty()).expect("a request"))
            .await
            .expect("answered");
        let header = response.headers()[REQUEST_ID_HEADER]
            .to_str()
            .expect("ASCII")
            .to_owned();
        let body = axum::body::to_bytes(response.into_body(), 1024)
            .await
            .expect("a body");
        assert_eq!(body, header.as_bytes(), "the handler saw the echoed id");
        header
    }

    #[tokio::test]
    async fn a_safe_id_is_kept_and_anything_else_replaced_by_a_ulid() {
        assert_eq!(echoed(Some("gateway-7")).await, "gateway-7");
        for sent in [None, Some("")] {
            let id = echoed(sent).await;
            assert!(RequestId::parse(&id).is_ok(), "{id}");
        }
    }
}

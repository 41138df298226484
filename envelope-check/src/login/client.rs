//! rmcp's streamable HTTP client, logged in: each request asks the [`TokenSource`] for the
//! token to send, so a token renewed mid-run is the one the next request carries. rmcp's own
//! `auth_header` is fixed when the transport is built; this client replaces it, and does the
//! rest exactly as rmcp's reqwest client does (it is that client, with the same limits).

use std::collections::HashMap;
use std::sync::Arc;

use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use sse_stream::Sse;

use super::TokenSource;

/// The most redirects followed for one request, as rmcp's own client.
const MAX_REDIRECTS: usize = 10;

/// An HTTP client for rmcp's `StreamableHttpClientTransport::with_client` that sends
/// `Authorization: Bearer …` from a [`TokenSource`] on every request.
#[derive(Clone, Debug)]
pub struct LoggedInClient {
    http: reqwest::Client,
    tokens: Arc<TokenSource>,
}

/// The error of a request of the logged-in client.
type Failed = StreamableHttpError<reqwest::Error>;

impl LoggedInClient {
    /// A client whose requests carry the tokens of `tokens`.
    pub fn new(tokens: Arc<TokenSource>) -> Result<Self, crate::LoginError> {
        // As rmcp's default client: no idle connections kept (a delayed ACK stalls a reused
        // one), and only same-origin redirects that keep the method and body are followed (a
        // token goes to no other origin).
        super::ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .redirect(reqwest::redirect::Policy::custom(|attempt| {
                let same_origin = attempt
                    .previous()
                    .first()
                    .is_some_and(|first| first.origin() == attempt.url().origin());
                let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
                if same_origin && keeps_body && attempt.previous().len() <= MAX_REDIRECTS {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }))
            .build()
            .map_err(crate::LoginError::Client)?;
        Ok(LoggedInClient { http, tokens })
    }

    /// The token for the next request; a renewal that fails fails the request, saying why
    /// (a [`LoginError`](crate::LoginError) names no secret).
    async fn bearer(&self) -> Result<Option<String>, Failed> {
        match self.tokens.bearer().await {
            Ok(token) => Ok(Some(token.expose().to_owned())),
            Err(error) => Err(StreamableHttpError::UnexpectedServerResponse(
                format!(
                    "cannot renew the access token: {}",
                    crate::error_chain(&error)
                )
                .into(),
            )),
        }
    }
}

/// Forwards each request to `self.http` with the token of the moment in the place of rmcp's
/// `auth_header` (fixed when the transport was built, so ignored): every request's arguments
/// are given before that place (`before`) and after it (`after`), and pass through unchanged.
macro_rules! forward_with_bearer {
    ($(
        async fn $method:ident(
            $($before:ident: $before_type:ty),*;
            auth_header;
            $($after:ident: $after_type:ty),*
        ) -> $answer:ty;
    )*) => {$(
        async fn $method(
            &self,
            $($before: $before_type,)*
            _auth_header: Option<String>,
            $($after: $after_type,)*
        ) -> Result<$answer, Failed> {
            let bearer = self.bearer().await?;
            self.http.$method($($before,)* bearer, $($after,)*).await
        }
    )*};
}

impl StreamableHttpClient for LoggedInClient {
    type Error = reqwest::Error;

    forward_with_bearer! {
        async fn post_message(
            uri: Arc<str>, message: ClientJsonRpcMessage, session_id: Option<Arc<str>>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>
        ) -> StreamableHttpPostResponse;

        async fn post_message_with_max_sse_event_size(
            uri: Arc<str>, message: ClientJsonRpcMessage, session_id: Option<Arc<str>>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>, max_sse_event_size: usize
        ) -> StreamableHttpPostResponse;

        async fn post_message_with_response_limits(
            uri: Arc<str>, message: ClientJsonRpcMessage, session_id: Option<Arc<str>>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>, limits: StreamableHttpResponseLimits
        ) -> StreamableHttpPostResponse;

        async fn delete_session(
            uri: Arc<str>, session_id: Arc<str>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>
        ) -> ();

        async fn get_stream(
            uri: Arc<str>, session_id: Option<Arc<str>>, last_event_id: Option<String>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>
        ) -> BoxStream<'static, Result<Sse, SseError>>;

        async fn get_stream_with_max_sse_event_size(
            uri: Arc<str>, session_id: Option<Arc<str>>, last_event_id: Option<String>;
            auth_header;
            custom_headers: HashMap<HeaderName, HeaderValue>, max_sse_event_size: usize
        ) -> BoxStream<'static, Result<Sse, SseError>>;
    }
}

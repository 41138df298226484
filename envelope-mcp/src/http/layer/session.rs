//! Sessions over HTTP: who may use one (only the principal that opened it, when a resource
//! server names callers), and how many there may be (a new one past the cap is refused).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use envelope_core::Caller;
use http::HeaderValue;
use rmcp::model::{ClientRequest, JsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;

use super::message::Judged;

/// The header naming a request's session.
const SESSION_HEADER: &str = "mcp-session-id";

/// The sessions of one MCP endpoint: rmcp's, the cap, and who opened each.
#[derive(Clone)]
pub(super) struct Sessions {
    pub(super) manager: Arc<LocalSessionManager>,
    pub(super) max: usize,
    /// Who opened each session, by session id, when the resource server named a caller.
    owners: Arc<Mutex<HashMap<String, String>>>,
}

impl Sessions {
    pub(super) fn new(manager: Arc<LocalSessionManager>, max: usize) -> Self {
        Sessions {
            manager,
            max,
            owners: Arc::default(),
        }
    }

    /// Whether a request of `caller` may use `session`: without authentication, yes; with it,
    /// only the principal that opened it (a session whose opening `initialize` never got its
    /// answer has no owner on record, and is no one's). A session id is no credential.
    fn may_use(&self, session: &str, caller: Option<&Caller>) -> bool {
        let Some(caller) = caller else {
            return true;
        };
        let owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        owners
            .get(session)
            .is_some_and(|owner| owner == caller.principal().binding())
    }

    /// Records `caller` as the opener of `session`, dropping the records of sessions closed
    /// since (the record count stays near the session cap).
    async fn own(&self, session: &str, caller: &Caller) {
        let open = self.manager.sessions.read().await;
        let mut owners = self.owners.lock().unwrap_or_else(PoisonError::into_inner);
        if owners.len() >= self.max {
            owners.retain(|id, _| open.contains_key(id.as_str()));
        }
        owners.insert(session.to_owned(), caller.principal().binding().to_owned());
    }
}

/// Middleware, before the body is read: a request naming another principal's session is
/// answered as one naming no session (`404`); a session opened by an authenticated caller is
/// recorded as that caller's once its answer names it.
pub(super) async fn owner(sessions: Sessions, request: Request, next: Next) -> Response {
    let caller = request.extensions().get::<Caller>().cloned();
    let named = request.headers().get(SESSION_HEADER);
    // Only a request naming no session can open one.
    let may_open = named.is_none();
    if let Some(session) = named.and_then(|value| value.to_str().ok())
        && !sessions.may_use(session, caller.as_ref())
    {
        tracing::info!("a request named a session another principal opened");
        return (http::StatusCode::NOT_FOUND, "Session not found").into_response();
    }
    let response = next.run(request).await;
    if may_open
        && let Some(caller) = &caller
        && let Some(session) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
    {
        sessions.own(session, caller).await;
    }
    response
}

/// Middleware: a session's termination (`DELETE` naming it) that rmcp accepted is answered
/// `204 No Content`. rmcp answers `202 Accepted`, which the official Python SDK takes for a
/// failure ("Session termination failed: 202"; it expects 200 or 204) on every close; the
/// termination has happened by then, so there is nothing left to accept.
pub(super) async fn termination(request: Request, next: Next) -> Response {
    let terminates = request.method() == http::Method::DELETE;
    let mut response = next.run(request).await;
    if terminates && response.status() == http::StatusCode::ACCEPTED {
        *response.status_mut() = http::StatusCode::NO_CONTENT;
        *response.body_mut() = axum::body::Body::empty();
        response.headers_mut().remove(http::header::CONTENT_LENGTH);
        response.headers_mut().remove(http::header::CONTENT_TYPE);
    }
    response
}

/// Middleware, once the message is judged: an `initialize` outside a session opens one, and
/// past the cap is refused `503` with `Retry-After`; requests within sessions go on.
pub(super) async fn cap(sessions: Sessions, request: Request, next: Next) -> Response {
    let opens_session = !request.headers().contains_key(SESSION_HEADER)
        && request.extensions().get::<Judged>().is_some_and(|judged| {
            matches!(&*judged.0, JsonRpcMessage::Request(request)
                if matches!(request.request, ClientRequest::InitializeRequest(_)))
        });
    if opens_session && sessions.manager.sessions.read().await.len() >= sessions.max {
        return sessions_full(sessions.max);
    }
    next.run(request).await
}

/// The refusal of a new session past the cap: `503`, and when to try again.
fn sessions_full(max_sessions: usize) -> Response {
    let message = format!("this server holds its maximum of {max_sessions} sessions; retry later");
    let mut refused = (http::StatusCode::SERVICE_UNAVAILABLE, message).into_response();
    refused
        .headers_mut()
        .insert(http::header::RETRY_AFTER, HeaderValue::from_static("30"));
    refused
}

#[cfg(test)]
mod tests {
    use axum::body::Body;
    use envelope_core::{Principal, Scopes};
    use tower::ServiceExt as _;

    use super::*;

    fn caller(subject: &str) -> Caller {
        Caller::new(Principal::new("https://issuer", subject), Scopes::default())
    }

    fn sessions(max: usize) -> Sessions {
        Sessions::new(Arc::default(), max)
    }

    async fn status(router: &axum::Router, session: Option<&str>, who: &str) -> http::StatusCode {
        let mut request = http::Request::post("/mcp");
        if let Some(session) = session {
            request = request.header(SESSION_HEADER, session);
        }
        let mut request = request.body(Body::empty()).expect("a request");
        request.extensions_mut().insert(caller(who));
        router
            .clone()
            .oneshot(request)
            .await
            .expect("answered")
            .status()
    }

    #[tokio::test]
    async fn a_session_is_its_openers_alone() {
        let sessions = sessions(10);
        // The endpoint opens session `s1` for whoever asks without one.
        let router = axum::Router::new()
            .route(
                "/mcp",
                axum::routing::post(|| async { ([(SESSION_HEADER, "s1")], "opened") }),
            )
            .layer(axum::middleware::from_fn(move |request, next| {
                owner(sessions.clone(), request, next)
            }));
        assert_eq!(status(&router, None, "alice").await, http::StatusCode::OK);
        assert_eq!(
            status(&router, Some("s1"), "alice").await,
            http::StatusCode::OK
        );
        assert_eq!(
            status(&router, Some("s1"), "mallory").await,
            http::StatusCode::NOT_FOUND
        );
        assert_eq!(
            status(&router, Some("unknown"), "alice").await,
            http::StatusCode::NOT_FOUND,
            "a session no one opened is no one's"
        );
    }

    #[tokio::test]
    async fn an_initialize_past_the_cap_is_refused_and_anything_else_goes_on() {
        let full = sessions(0);
        let router = axum::Router::new()
            .route("/mcp", axum::routing::post(|| async { "answered" }))
            .layer(axum::middleware::from_fn(move |request, next| {
                cap(full.clone(), request, next)
            }));
        let initialize = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
        let ping = br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
        for (body, expected) in [
            (&initialize[..], http::StatusCode::SERVICE_UNAVAILABLE),
            (&ping[..], http::StatusCode::OK),
        ] {
            let message = crate::lines::judge(body, 1 << 20).expect("a message");
            let mut request = http::Request::post("/mcp")
                .body(Body::empty())
                .expect("a request");
            request.extensions_mut().insert(Judged(Arc::new(message)));
            let response = router.clone().oneshot(request).await.expect("answered");
            assert_eq!(response.status(), expected);
        }
    }

    #[tokio::test]
    async fn a_termination_rmcp_accepted_is_no_content_and_nothing_else_changes() {
        let accepted = || async { (http::StatusCode::ACCEPTED, "accepted") };
        let router = axum::Router::new()
            .route("/mcp", axum::routing::delete(accepted).post(accepted))
            .layer(axum::middleware::from_fn(termination));
        let send = |method: http::Method| {
            let request = http::Request::builder()
                .method(method)
                .uri("/mcp")
                .header(SESSION_HEADER, "s-1")
                .body(Body::empty())
                .expect("a request");
            router.clone().oneshot(request)
        };
        let closed = send(http::Method::DELETE).await.expect("an answer");
        assert_eq!(closed.status(), http::StatusCode::NO_CONTENT);
        let body = axum::body::to_bytes(closed.into_body(), 1024)
            .await
            .expect("a body");
        assert!(body.is_empty());
        // A notification rmcp accepts stays `202`, as the transport says.
        let notified = send(http::Method::POST).await.expect("an answer");
        assert_eq!(notified.status(), http::StatusCode::ACCEPTED);
    }
}

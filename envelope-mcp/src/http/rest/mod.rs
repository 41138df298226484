//! The same tools as a plain HTTP API, for callers that do not speak MCP (feature `rest`).
//!
//! Mounted beside the MCP endpoint on the router of
//! [`EnvelopeServer::http_router_with`](crate::EnvelopeServer::http_router_with) (see
//! [`HttpConfig::with_rest`](crate::HttpConfig::with_rest)), with the same request-id handling,
//! `Host` and `Origin` checks (one judge for both), body size limit, body and request
//! deadlines, concurrency limit, drain on shutdown, and `tool_call` span. It shares the pipeline with MCP, so a call answers the same
//! envelope over either.
//!
//! | route | answers |
//! |---|---|
//! | `POST /tools/{name}` | the envelope: `200` when `ok`, else an RFC 9457 problem |
//! | `GET /tools` | every tool with its input and output schemas and flags |
//! | `GET /openapi.json` | an OpenAPI 3.1 document of the routes |
//!
//! Under a filtered listing (`ResourceServer::with_filtered_listing`, feature `auth`), "every
//! tool" is every tool the caller may call: the others are answered as unknown (`404`).
//!
//! **Calls.** The body is the tool's arguments as a JSON object (empty means `{}`), sent as
//! `Content-Type: application/json`: a page can post a form or text to any origin without
//! asking, never JSON, so another site cannot run a tool from a visitor's browser. The
//! per-call controls (`response_mode`, `output_format`, `compact_only`, `continuation`) may
//! also come as query parameters or as headers (`Envelope-Response-Mode: full`, see
//! [`control_header`]); given in more than one place they must agree.
//!
//! **Statuses.** An `ok` envelope, truncated or empty, is `200` with the envelope as
//! `application/json`. An error is the status of its category ([`CATEGORY_STATUS`]: one table,
//! also in the contract) with an `application/problem+json` body: `type` names the category
//! ([`PROBLEM_TYPE_PREFIX`]), `title` is the category's, `status` is the status, `detail` is the
//! envelope's `error.message` (masked for `internal`), and `envelope` is the whole envelope.
//! A `503` carries `Retry-After`. What the gateway refuses itself (malformed JSON, an unknown
//! tool, a wrong method, an oversized body, a body too slow to arrive, a body not declared
//! JSON, a malformed or disallowed host, an overload) is a problem too,
//! with an envelope of its own ([`GATEWAY_STATUS`]).
//!
//! **Browser callers.** `apply_budget=false` (or `Envelope-Apply-Budget: false`) opts a call
//! out of trimming to the agent budget, as a browser that is not context-limited wants; its
//! response is still cut to the gateway's ceiling
//! ([`RestConfig::with_unbudgeted_ceiling`]). CORS follows
//! [`HttpConfig::with_cors_origins`](crate::HttpConfig::with_cors_origins), which allows the
//! `Envelope-*` headers.
//!
//! ```no_run
//! # use envelope_core::{ToolResult, tool, toolset};
//! # /// Answer with a fixed number.
//! # #[tool(tier = lite, read_only)]
//! # async fn answer() -> ToolResult<u32> {
//! #     Ok(42)
//! # }
//! use envelope_mcp::{EnvelopeConfig, EnvelopeServer, HttpConfig, RestConfig};
//!
//! # async fn serve() -> Result<(), envelope_mcp::McpError> {
//! let config = HttpConfig::default()
//!     .with_cors_origins(["https://app.example.com"])
//!     .with_rest(Some(RestConfig::default().with_unbudgeted_ceiling(1_000_000)));
//! let server = EnvelopeServer::new(toolset![answer], EnvelopeConfig::new("demo", "1"));
//! // MCP at /mcp; `curl -X POST localhost:8080/tools/answer` answers the envelope.
//! server.serve_http_with(([127, 0, 0, 1], 8080).into(), config).await
//! # }
//! ```

mod controls;
mod openapi;
mod problem;
mod status;

pub use controls::{
    APPLY_BUDGET, APPLY_BUDGET_HEADER, CONTROL_HEADER_PREFIX, control_header,
    headers as gateway_headers,
};
pub use problem::PROBLEM_JSON;
pub use status::{
    AUTH_STATUS, CATEGORY_STATUS, CategoryStatus, GATEWAY_STATUS, GatewayStatus, HOST_NOT_ALLOWED,
    INVALID_AUTHORIZATION, INVALID_CONTROL, INVALID_HOST, MALFORMED_JSON, METHOD_NOT_ALLOWED,
    OK_STATUS, OVERLOADED, PROBLEM_TYPE_PREFIX, REQUEST_TIMEOUT, REQUEST_TOO_LARGE,
    TOKEN_UNVERIFIABLE, UNAUTHENTICATED, UNKNOWN_TOOL, UNSUPPORTED_MEDIA_TYPE, category_status,
    problem_type,
};

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get, post};
use http::{HeaderValue, header};
use serde_json::{Value, json};

pub use super::config::{DEFAULT_UNBUDGETED_CEILING, RestConfig};
use super::{Admission, Admitted, HostRefusal, HttpConfig, Refusal};
use crate::server::{CallExtras, Shown, TokenCancellation};
use crate::{EnvelopeServer, REQUEST_ID_HEADER};

/// The path of the tool listing; a tool is called at `/tools/{name}`.
pub const TOOLS_PATH: &str = "/tools";

/// The path of the OpenAPI document.
pub const OPENAPI_PATH: &str = "/openapi.json";

/// Whether the MCP endpoint mounted at `path` would take the gateway's routes: `/tools` or
/// below it, or `/openapi.json`. The router then mounts no gateway (and says so in the log).
pub fn is_gateway_path(path: &str) -> bool {
    let path = format!("/{}", path.trim_matches('/'));
    path == TOOLS_PATH || path.starts_with(&format!("{TOOLS_PATH}/")) || path == OPENAPI_PATH
}

/// The challenge of the resource server, when authentication is on (feature `auth`).
#[cfg(feature = "auth")]
pub(crate) type Challenges = Option<Arc<crate::http::auth::Challenge>>;
/// Nothing, without feature `auth`.
#[cfg(not(feature = "auth"))]
pub(crate) type Challenges = ();

/// What every route of the gateway reads.
#[derive(Clone)]
struct Gateway {
    server: EnvelopeServer,
    ceiling: usize,
    /// `GET /tools`, written once: the toolset does not change while serving. A caller shown
    /// only what it may call gets its own, written for it.
    listing: axum::body::Bytes,
    /// The challenge a call refused for its scopes answers with, when authentication is on.
    #[cfg(feature = "auth")]
    challenge: Option<Arc<crate::http::auth::Challenge>>,
    /// `GET /openapi.json`, written once; and what a caller's own is written from.
    document: axum::body::Bytes,
    http: Arc<HttpConfig>,
}

/// The gateway's routes, held to `admission` (the router holds them to its `Host` and `Origin`
/// judge). Any other path under `/tools/` answers the `unknown_tool` problem: the router's
/// fallback is [`fallback`].
pub(crate) fn routes(
    server: EnvelopeServer,
    config: RestConfig,
    admission: Admission,
    http: &HttpConfig,
    challenge: Challenges,
) -> axum::Router {
    #[cfg(not(feature = "auth"))]
    let () = challenge;
    let document = openapi::document(&server, http, Shown::All).to_string();
    let listing = openapi::listing(&server, Shown::All).to_string();
    let gateway = Gateway {
        server,
        ceiling: config.unbudgeted_ceiling(),
        listing: listing.into(),
        #[cfg(feature = "auth")]
        challenge,
        document: document.into(),
        http: Arc::new(http.clone()),
    };
    axum::Router::new()
        .route(TOOLS_PATH, reading(get(list)))
        .route(
            &format!("{TOOLS_PATH}/{{name}}"),
            post(call).fallback(only_post),
        )
        .route(OPENAPI_PATH, reading(get(openapi)))
        // Anything else under `/tools/` names no tool (`/tools/`, `/tools//`, `/tools/a/`,
        // `/tools/a/b`): matched here rather than by routes, which would miss empty segments.
        .fallback(fallback)
        .layer(axum::middleware::from_fn(move |request, next| {
            admit(admission.clone(), request, next)
        }))
        .with_state(gateway)
}

/// The router's fallback once the gateway is mounted: a path under `/tools/` that is no tool's
/// answers the `unknown_tool` problem; any other path a plain `404`.
async fn fallback(State(gateway): State<Gateway>, request: Request) -> Response {
    if request.uri().path().starts_with(&format!("{TOOLS_PATH}/")) {
        return no_tool(State(gateway), request).await;
    }
    http::StatusCode::NOT_FOUND.into_response()
}

/// The refusal of a request whose `Host` or `Origin` the router's judge refused, as a problem:
/// `400` for one against RFC 9112, `403` for one not allowed.
pub(crate) fn host_refusal(refusal: &HostRefusal, request: &Request) -> Response {
    let refused = match refusal {
        HostRefusal::Malformed(_) => INVALID_HOST,
        HostRefusal::NotAllowed(_) => HOST_NOT_ALLOWED,
    };
    problem::refusal(refused, refusal.to_string(), None, request_id(request))
}

/// A route read with `GET` (and `HEAD`), any other method refused with `405`.
fn reading(route: MethodRouter<Gateway>) -> MethodRouter<Gateway> {
    route.fallback(only_get)
}

async fn only_get(request: Request) -> Response {
    not_allowed("GET, HEAD", &request)
}

async fn only_post(request: Request) -> Response {
    not_allowed("POST", &request)
}

/// A path under `/tools/` that is no tool's: `404`, naming the tools there are.
async fn no_tool(State(gateway): State<Gateway>, request: Request) -> Response {
    let message = format!("no tool is at `{}`", cut(request.uri().path()));
    let shown = Shown::of(Some(request.extensions()));
    unknown_tool(&gateway, message, request_id(&request), shown)
}

/// `404` for a tool that is not served, or not `shown` to the caller, naming those that are.
fn unknown_tool(
    gateway: &Gateway,
    message: String,
    id: Option<&str>,
    shown: Shown<'_>,
) -> Response {
    let served = gateway.server.served();
    let available = served.names_shown(shown);
    let data = json!({ "available": available });
    problem::refusal(UNKNOWN_TOOL, message, Some(data), id)
}

/// `text` cut to 128 characters, for an error message.
fn cut(text: &str) -> String {
    text.chars().take(128).collect()
}

/// Whether `headers` declare a JSON body: `application/json`, or an `application/…+json` type.
fn declares_json(headers: &http::HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|value| value.to_str().ok())
    else {
        return false;
    };
    let media = value
        .split(';')
        .next()
        .unwrap_or_default()
        .trim()
        .to_ascii_lowercase();
    media == "application/json" || (media.starts_with("application/") && media.ends_with("+json"))
}

/// `405` with `Allow`, as a problem.
fn not_allowed(allow: &'static str, request: &Request) -> Response {
    let message = format!(
        "`{}` is not served at `{}`; it takes {allow}",
        cut(request.method().as_str()),
        cut(request.uri().path())
    );
    let mut response = problem::refusal(METHOD_NOT_ALLOWED, message, None, request_id(request));
    response
        .headers_mut()
        .insert(header::ALLOW, HeaderValue::from_static(allow));
    response
}

/// The request's `X-Request-ID`, as the request-id middleware left it.
fn request_id(request: &Request) -> Option<&str> {
    request
        .headers()
        .get(REQUEST_ID_HEADER)
        .and_then(|value| value.to_str().ok())
}

/// Middleware: holds a call to the router's shared limits, answering a refusal as a problem.
/// Only a `POST` is a call: the listing and the document are read without a body.
async fn admit(admission: Admission, request: Request, next: Next) -> Response {
    if request.method() != http::Method::POST {
        return next.run(request).await;
    }
    let id = request_id(&request).map(str::to_owned);
    let Admitted {
        parts,
        bytes,
        held,
        deadline,
    } = match admission.admit(request).await {
        Ok(admitted) => admitted,
        Err(refusal) => {
            let refused = match refusal {
                Refusal::Overloaded => OVERLOADED,
                Refusal::TooLarge { .. } => REQUEST_TOO_LARGE,
                Refusal::Unreadable => MALFORMED_JSON,
                Refusal::BodyTimeout { .. } => REQUEST_TIMEOUT,
            };
            let mut response = problem::refusal(refused, refusal.to_string(), None, id.as_deref());
            if matches!(refusal, Refusal::BodyTimeout { .. }) {
                // The rest of the body may still be on its way: the connection cannot carry
                // another request.
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
            }
            return response;
        }
    };
    let request = Request::from_parts(parts, axum::body::Body::from(bytes));
    // A caller that hangs up, or a call past the request timeout, drops the handler's future:
    // its guard then tells the tool's work to stop.
    match deadline.bound(next.run(request)).await {
        Ok(response) => held.until_sent(response),
        Err(overran) => problem::refusal(OVERLOADED, overran.to_string(), None, id.as_deref()),
    }
}

async fn list(State(gateway): State<Gateway>, request: Request) -> Response {
    match Shown::of(Some(request.extensions())) {
        Shown::All => json_body(gateway.listing),
        // Only the tools the caller may call.
        shown => json_body(openapi::listing(&gateway.server, shown).to_string().into()),
    }
}

async fn openapi(State(gateway): State<Gateway>, request: Request) -> Response {
    match Shown::of(Some(request.extensions())) {
        Shown::All => json_body(gateway.document),
        // Only the operations of the tools the caller may call, and only their schemas.
        shown => {
            let document = openapi::document(&gateway.server, &gateway.http, shown);
            json_body(document.to_string().into())
        }
    }
}

fn json_body(body: axum::body::Bytes) -> Response {
    let json = HeaderValue::from_static("application/json");
    ([(header::CONTENT_TYPE, json)], body).into_response()
}

/// `POST /tools/{name}`: the call, through the same pipeline as MCP's.
async fn call(
    State(gateway): State<Gateway>,
    name: Result<axum::extract::Path<String>, axum::extract::rejection::PathRejection>,
    request: Request,
) -> Response {
    let id = request_id(&request).map(str::to_owned);
    let id = id.as_deref();
    let name = match name {
        Ok(axum::extract::Path(name)) => name,
        Err(rejection) => return problem::refusal(UNKNOWN_TOOL, rejection.body_text(), None, id),
    };
    let shown = Shown::of(Some(request.extensions()));
    let callable_only = matches!(shown, Shown::Callable(_));
    // A tool hidden from the caller (a filtered listing) is answered as one not served: `404`,
    // not the `403` of a scope it lacks, which would say the tool is there.
    let Some(chosen) =
        (gateway.server.served().choose(&name)).filter(|chosen| shown.includes(chosen.tool.spec()))
    else {
        let message = format!("no tool is named `{}`", cut(&name));
        return unknown_tool(&gateway, message, id, shown);
    };
    if !declares_json(request.headers()) {
        let message = "a call's body is its arguments as JSON: send it with \
                       `Content-Type: application/json`";
        return problem::refusal(UNSUPPORTED_MEDIA_TYPE, message, None, id);
    }
    let (parts, body) = request.into_parts();
    // The admission middleware read the body whole, up to the size limit.
    let bytes = match http_body_util::BodyExt::collect(body).await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => return problem::refusal(MALFORMED_JSON, error.to_string(), None, id),
    };
    let mut arguments = if bytes.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(arguments) => arguments,
            Err(error) => {
                let message = format!("the body is not JSON: {error}");
                return problem::refusal(MALFORMED_JSON, message, None, id);
            }
        }
    };
    if let Some(control) = envelope_core::first_control_twice(&bytes) {
        let message = format!("the control `{control}` is given twice in the body");
        return problem::refusal(INVALID_CONTROL, message, None, id);
    }
    let names = &chosen.tool.spec().controls;
    let controls = match controls::merge(&mut arguments, parts.uri.query(), &parts.headers, names) {
        Ok(controls) => controls,
        Err(message) => return problem::refusal(INVALID_CONTROL, message, None, id),
    };
    // A caller that hangs up drops this future, and with it the guard: the tool's work is
    // told to stop, as MCP's cancellation tells it.
    let hung_up = tokio_util::sync::CancellationToken::new();
    let _hang_up = hung_up.clone().drop_guard();
    let extras = CallExtras {
        client_request_id: id.map(str::to_owned),
        session: None,
        // Who the resource server let in, if it is on: never the token itself.
        caller: parts.extensions.get::<envelope_core::Caller>().cloned(),
        callable_only,
        progress: None,
        cancelled: Some(Arc::new(TokenCancellation(hung_up))),
        // Plain HTTP has no channel back to the caller: asking it answers `unavailable`.
        client: None,
        #[cfg(feature = "otel")]
        trace: crate::otel::TraceContext::of(Some(&parts.headers), &serde_json::Map::new()),
        carries_media: false,
        unbudgeted_ceiling: (!controls.apply_budget).then_some(gateway.ceiling),
        // Its statuses and problem documents are read off the envelope's own fields.
        dialect: Some(envelope_core::Dialect::Envelope),
        // Refused above, as a problem of the gateway's own.
        given_twice: None,
    };
    #[cfg(feature = "auth")]
    let scopes = chosen.tool.spec().scopes.clone();
    let call = gateway.server.door(chosen, arguments, extras);
    if let Some(message) = controls::other_dialect(call.given()) {
        return problem::refusal(INVALID_CONTROL, message, None, id);
    }
    #[cfg(feature = "auth")]
    let refused_for_scope = call.refused_for_scope();
    // The request timeout is the admission middleware's: it bounds the upload and this alike.
    let prepared = gateway.server.pass(call).await.prepared;
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let mut response = problem::answer(prepared);
    // RFC 6750 §3.1: a `403` for a scope says which scopes, where a client looks for them.
    #[cfg(feature = "auth")]
    if refused_for_scope && let Some(challenge) = &gateway.challenge {
        response.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            challenge.insufficient_scope(&scopes),
        );
    }
    response
}

/// The refusal of a request the resource server turned away (no token, a bad one, or none it
/// could check), as a problem: `401` and `400` are `permission` and `validation`, `503`
/// `unavailable`.
#[cfg(feature = "auth")]
pub(crate) fn auth_refusal(
    status: http::StatusCode,
    message: String,
    request: &Request,
) -> Response {
    let refused = match status.as_u16() {
        400 => status::INVALID_AUTHORIZATION,
        503 => status::TOKEN_UNVERIFIABLE,
        _ => status::UNAUTHENTICATED,
    };
    problem::refusal(refused, message, None, request_id(request))
}

#[cfg(test)]
mod tests {
    use super::is_gateway_path;

    #[test]
    fn the_gateways_paths_are_known() {
        for path in ["/tools", "tools/", "/tools/x", "/openapi.json"] {
            assert!(is_gateway_path(path), "{path}");
        }
        for path in ["/mcp", "/toolset", "/openapi"] {
            assert!(!is_gateway_path(path), "{path}");
        }
    }
}

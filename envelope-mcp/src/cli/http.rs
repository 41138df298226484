//! The serving options: `--http` and what HTTP is served with (hosts, origins, sessions,
//! deadlines, connection caps, CORS, draining, the plain HTTP API), and OAuth.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::auth::{IntrospectionVerifier, JwksSource, JwtVerifier, ResourceServer};
use crate::{CancellationToken, HttpConfig, RestConfig};

/// Streamable HTTP.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "Streamable HTTP")]
pub struct HttpOptions {
    /// Serve streamable HTTP at ADDR (like 127.0.0.1:8765) instead of stdio.
    #[arg(long, value_name = "ADDR")]
    pub http: Option<SocketAddr>,

    /// The path the MCP endpoint is mounted at.
    #[arg(
        long,
        value_name = "PATH",
        default_value = crate::DEFAULT_MCP_PATH,
        value_parser = mcp_path,
        requires = "http"
    )]
    pub path: String,

    /// Accept this `Host` (a name, or name:port; repeatable). Default: loopback names only.
    #[arg(long = "allowed-host", value_name = "HOST", requires = "http")]
    pub allowed_hosts: Vec<String>,

    /// Accept any `Host` header: only behind a proxy that checks it.
    #[arg(long, conflicts_with = "allowed_hosts", requires = "http")]
    pub any_host: bool,

    /// Refuse requests whose `Origin` is none of these (scheme://host:port; repeatable).
    #[arg(long = "allowed-origin", value_name = "ORIGIN", requires = "http")]
    pub allowed_origins: Vec<String>,

    /// Answer a call that sends nothing before its result as application/json, not SSE.
    #[arg(long, requires = "http")]
    pub json_response: bool,

    /// Seconds between keep-alive comments on open event streams (0: none).
    #[arg(long, value_name = "SECONDS", default_value_t = 15, requires = "http")]
    pub sse_keep_alive: u64,

    /// Keep no sessions, whatever protocol version a client speaks: replicas behind a load
    /// balancer need no stickiness. (MCP 2026-07-28 is always served so.)
    #[arg(long, requires = "http")]
    pub stateless: bool,

    /// Bound each request, its upload included, to this long from the end of its head: a body
    /// not in by then is answered 408, a call still running 503 with Retry-After (keep it above
    /// --call-timeout).
    #[arg(long, value_name = "SECONDS", requires = "http")]
    pub request_timeout: Option<u64>,

    /// Close a connection that has not sent a whole request head this long after the server
    /// began waiting for one (accepted, or its previous answer sent); 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::DEFAULT_HEADER_TIMEOUT.as_secs(),
        requires = "http"
    )]
    pub header_timeout: u64,

    /// Close a connection with no request in flight that reads and writes nothing this long
    /// (one with a call or an event stream open never is); 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::DEFAULT_IDLE_TIMEOUT.as_secs(),
        requires = "http"
    )]
    pub idle_timeout: u64,

    /// Close a connection whose client leaves the server's output unread this long, and give up
    /// an answer (an HTTP/2 stream, an event stream) it takes nothing of for this long, freeing
    /// its place; 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::DEFAULT_WRITE_TIMEOUT.as_secs(),
        requires = "http"
    )]
    pub write_timeout: u64,

    /// At most this many requests in flight on one HTTP/2 connection (its announced
    /// SETTINGS_MAX_CONCURRENT_STREAMS).
    #[arg(
        long,
        value_name = "STREAMS",
        default_value_t = crate::DEFAULT_MAX_STREAMS_PER_CONNECTION,
        requires = "http"
    )]
    pub max_streams_per_connection: u32,

    /// Serve HTTP/1.1 only: close a connection that opens with HTTP/2's preface.
    #[arg(long, requires = "http")]
    no_http2: bool,

    /// Answer 408 and close the connection when a request's body has not arrived whole this
    /// long after its head; 0: no limit.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::DEFAULT_BODY_TIMEOUT.as_secs(),
        requires = "http"
    )]
    pub body_timeout: u64,

    /// Hold at most N connections open. Default, and never more than: the file limit
    /// (RLIMIT_NOFILE) less a quarter of it for the files tools open. Past the cap, the oldest
    /// connection with no request in flight is closed; if every one is busy, the new one gets
    /// 503 with Retry-After.
    #[arg(long, value_name = "N", requires = "http")]
    pub max_connections: Option<usize>,

    /// Serve at most N requests at once; one more is refused at once with 503.
    #[arg(long, value_name = "N", requires = "http")]
    pub max_concurrent_requests: Option<usize>,

    /// Allow browser callers from this origin (`*` for any; repeatable). Default: no CORS.
    #[arg(long = "cors-origin", value_name = "ORIGIN", requires = "http")]
    pub cors_origins: Vec<String>,

    /// On SIGTERM or Ctrl-C, how long calls in flight may still run before the server exits.
    #[arg(long, value_name = "SECONDS", default_value_t = 30, requires = "http")]
    pub drain_timeout: u64,

    /// Serve no plain HTTP API beside MCP. Without it, `POST /tools/{name}` calls a tool,
    /// `GET /tools` lists them and `GET /openapi.json` describes them.
    #[arg(long, requires = "http")]
    pub no_rest: bool,

    /// The most a plain HTTP call opted out of the budget (`apply_budget=false`) may answer,
    /// in token-normalized characters.
    #[arg(
        long,
        value_name = "CHARS",
        default_value_t = crate::DEFAULT_UNBUDGETED_CEILING,
        conflicts_with = "no_rest",
        requires = "http"
    )]
    pub unbudgeted_ceiling: usize,

    /// OAuth.
    #[command(flatten)]
    pub auth: AuthOptions,
}

/// OAuth: the server as a resource server of one issuer.
#[derive(Debug, clap::Args)]
#[command(next_help_heading = "OAuth")]
pub struct AuthOptions {
    /// Accept only access tokens this issuer signed (its identifier, an `https` URL; `http` on
    /// loopback). Every request but /healthz, /readyz and the metadata at
    /// /.well-known/oauth-protected-resource then needs `Authorization: Bearer <token>`, and
    /// each tool the scopes it lists.
    #[arg(long, value_name = "URL", requires_all = ["http", "auth_audience"])]
    pub auth_issuer: Option<String>,

    /// The audience the tokens must name: this resource's URL, the MCP endpoint's (like
    /// `https://mcp.example.com/mcp`), which clients ask their tokens for.
    #[arg(long, value_name = "URL", requires = "auth_issuer")]
    pub auth_audience: Option<String>,

    /// Read the issuer's keys from this JWKS file (read again when a token names a key it
    /// lacks) instead of fetching them from the issuer's metadata.
    #[arg(
        long,
        value_name = "PATH",
        requires = "auth_issuer",
        conflicts_with = "auth_introspection_endpoint"
    )]
    pub auth_jwks_file: Option<PathBuf>,

    /// Tokens are opaque: ask the issuer about each at this introspection endpoint (RFC 7662),
    /// as the client `--auth-client-id`, instead of verifying JWTs with its keys.
    #[arg(
        long,
        value_name = "URL",
        requires_all = ["auth_issuer", "auth_client_id", "auth_client_secret"]
    )]
    pub auth_introspection_endpoint: Option<String>,

    /// This server's client id at the issuer, for introspection.
    #[arg(long, value_name = "ID", requires = "auth_introspection_endpoint")]
    pub auth_client_id: Option<String>,

    /// This server's client secret at the issuer, for introspection (best from the
    /// environment, which a process listing does not show: `with_env_prefix` names it).
    #[arg(long, value_name = "SECRET", requires = "auth_introspection_endpoint")]
    pub auth_client_secret: Option<String>,

    /// How long an introspected token is believed without asking the issuer again (never past
    /// its `exp`): also how long a revoked one may still be accepted. 0 asks on every request.
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::auth::DEFAULT_INTROSPECTION_CACHE_MAX_AGE.as_secs(),
        requires = "auth_introspection_endpoint"
    )]
    pub auth_introspection_cache_max_age: u64,

    /// The least time between two fetches of the issuer's keys forced by tokens naming a key
    /// not held (after a rotation).
    #[arg(
        long,
        value_name = "SECONDS",
        default_value_t = crate::auth::DEFAULT_JWKS_REFRESH_INTERVAL.as_secs(),
        requires = "auth_issuer"
    )]
    pub auth_jwks_refresh_interval: u64,

    /// List to each caller only the tools its token's scopes cover.
    #[arg(long, requires = "auth_issuer")]
    pub auth_filter_listing: bool,
}

impl AuthOptions {
    /// The resource server these flags ask for, named `resource_name` in its metadata; `None`
    /// without `--auth-issuer`.
    pub fn resource_server(&self, resource_name: &str) -> Result<Option<ResourceServer>, String> {
        let (Some(issuer), Some(audience)) = (&self.auth_issuer, &self.auth_audience) else {
            return Ok(None);
        };
        let server = match (
            &self.auth_introspection_endpoint,
            &self.auth_client_id,
            &self.auth_client_secret,
        ) {
            (Some(endpoint), Some(client_id), Some(secret)) => {
                let verifier = IntrospectionVerifier::new(
                    issuer,
                    endpoint,
                    audience.as_str(),
                    client_id.as_str(),
                    secret.as_str(),
                )
                .map_err(|error| error.to_string())?
                .with_cache_max_age(Duration::from_secs(self.auth_introspection_cache_max_age));
                ResourceServer::new(audience, verifier)
            }
            _ => {
                let keys = match &self.auth_jwks_file {
                    Some(path) => JwksSource::File(path.clone()),
                    None => JwksSource::Discover,
                };
                let verifier = JwtVerifier::new(issuer, audience.as_str(), keys)
                    .map_err(|error| error.to_string())?
                    .with_jwks_refresh_interval(Duration::from_secs(
                        self.auth_jwks_refresh_interval,
                    ));
                ResourceServer::new(audience, verifier)
            }
        };
        let server = server
            .map_err(|error| error.to_string())?
            .with_resource_name(resource_name)
            .with_filtered_listing(self.auth_filter_listing);
        Ok(Some(server))
    }
}

impl HttpOptions {
    /// The HTTP configuration these flags ask for, stopping on `shutdown`, an OAuth resource
    /// server named `resource_name` when `--auth-issuer` is given; an error for an issuer,
    /// audience or JWKS file that cannot be used.
    pub fn config(
        &self,
        shutdown: CancellationToken,
        resource_name: &str,
    ) -> Result<HttpConfig, String> {
        let seconds = Duration::from_secs;
        let mut config =
            HttpConfig::default()
                .with_path(self.path.clone())
                .with_allowed_origins(self.allowed_origins.clone())
                .with_json_response(self.json_response)
                .with_sse_keep_alive(some_seconds(self.sse_keep_alive))
                .with_stateless(self.stateless)
                .with_request_timeout(self.request_timeout.map(seconds))
                .with_max_concurrent_requests(self.max_concurrent_requests)
                .with_header_timeout(some_seconds(self.header_timeout))
                .with_idle_timeout(some_seconds(self.idle_timeout))
                .with_write_timeout(some_seconds(self.write_timeout))
                .with_http2(!self.no_http2)
                .with_max_streams_per_connection(self.max_streams_per_connection)
                .with_body_timeout(some_seconds(self.body_timeout))
                .with_max_connections(self.max_connections)
                .with_cors_origins(self.cors_origins.clone())
                .with_drain_timeout(seconds(self.drain_timeout))
                .with_shutdown(shutdown)
                .with_rest((!self.no_rest).then(|| {
                    RestConfig::default().with_unbudgeted_ceiling(self.unbudgeted_ceiling)
                }));
        if self.any_host {
            config = config.with_any_host();
        } else if !self.allowed_hosts.is_empty() {
            config = config.with_allowed_hosts(self.allowed_hosts.clone());
        }
        if let Some(auth) = self.auth.resource_server(resource_name)? {
            config = config.with_auth(auth);
        }
        Ok(config)
    }
}

/// `seconds` as a limit: `None` for 0, which is none.
pub fn some_seconds(seconds: u64) -> Option<Duration> {
    (seconds > 0).then(|| Duration::from_secs(seconds))
}

/// A path to mount the MCP endpoint at: not the root, which holds `/healthz` and `/readyz`,
/// nor the plain HTTP API's.
pub fn mcp_path(text: &str) -> Result<String, String> {
    if text.trim_matches('/').is_empty() {
        return Err("the MCP endpoint needs a path of its own, like /mcp".to_owned());
    }
    if crate::rest::is_gateway_path(text) {
        return Err(format!(
            "`{text}` is the plain HTTP API's; mount the MCP endpoint elsewhere, like /mcp"
        ));
    }
    Ok(text.to_owned())
}

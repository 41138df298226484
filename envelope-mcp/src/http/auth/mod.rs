//! Who may call what over HTTP: the server as an OAuth 2.1 resource server, as the MCP
//! authorization specification has it (feature `auth`).
//!
//! [`HttpConfig::with_auth`](crate::HttpConfig::with_auth) takes a [`ResourceServer`]: the
//! resource this server is (its URL, the audience its tokens must name, RFC 8707) and a
//! [`TokenVerifier`] that turns an access token into a [`Caller`](envelope_core::Caller). Then:
//!
//! - every request but health, readiness and the metadata carries `Authorization: Bearer …`,
//!   checked before its body is read; a missing or invalid token is answered `401` with
//!   `WWW-Authenticate: Bearer resource_metadata="…"` (and `error="invalid_token"` when a token
//!   was sent, RFC 6750), on `/mcp` and the REST gateway alike;
//! - `/.well-known/oauth-protected-resource` (and the same under the resource's path) serves the
//!   RFC 9728 metadata: the resource, its authorization servers, the scopes its tools declare;
//! - a tool declared `#[tool(scopes = [...])]` is refused before it runs when the token lacks
//!   one of them: over MCP a `permission` envelope of code
//!   [`INSUFFICIENT_SCOPE`](envelope_core::INSUFFICIENT_SCOPE) naming the missing scopes, over
//!   the REST gateway `403` with `WWW-Authenticate: Bearer error="insufficient_scope", scope="…"`;
//! - with [`ResourceServer::with_filtered_listing`], a caller is shown only the tools its
//!   scopes cover, wherever tools are named (listings, the OpenAPI document, the unknown-tool
//!   error's `available`, next actions), and a hidden tool called by name answers as an
//!   unknown one;
//! - the caller's principal (issuer and subject) is what continuations and target refs are
//!   bound to, so a refreshed token resumes a page and another subject's token cannot.
//!
//! The token itself goes no further than the verifier: the `Authorization` header is taken off
//! the request once checked, and no refusal, log line or envelope quotes it.
//!
//! Two verifiers ship: [`JwtVerifier`] (JWT access tokens against the issuer's JWKS, found
//! through its metadata, at a URL, or in a file; refreshed when a token names an unknown key)
//! and [`IntrospectionVerifier`] (RFC 7662, for opaque tokens). Another is a
//! [`TokenVerifier`] of your own.
//!
//! A JWT access token must be typed as one: its header's `typ` is `at+jwt` (or
//! `application/at+jwt`), as RFC 9068 §4 requires, so no other JWT its issuer signs (an ID
//! token, a logout token) passes for it. A token typed `JWT`, or not typed, is refused
//! (`invalid_token`, saying why) unless the verifier is built
//! [`with_plain_jwt_typ(true)`](JwtVerifier::with_plain_jwt_typ), for an issuer that writes
//! no `at+jwt`.
//!
//! Neither asks the issuer on every call. The JWT verifier keeps the issuer's keys. The
//! introspection verifier keeps the caller of each accepted token (under the token's SHA-256,
//! never the token) until the earlier of its `exp` and a maximum age, so a revoked token may
//! be accepted for that long ([`DEFAULT_INTROSPECTION_CACHE_MAX_AGE`] unless set), at most
//! [`DEFAULT_INTROSPECTION_CACHE_CAPACITY`] of them; asks once about a token however many
//! calls bring it at the same moment; has at most [`DEFAULT_MAX_CONCURRENT_INTROSPECTIONS`]
//! questions at the issuer at once; and gives up on a check after
//! [`DEFAULT_INTROSPECTION_DEADLINE`]. A token that could not be checked (a deadline passed,
//! an issuer down, an answer too large to read) is answered `503` with `Retry-After`, on `/mcp`
//! and the REST gateway alike, while calls with cached tokens go on being answered; such a
//! failure is never kept, and the next call asks again. Refusals are not kept either.
//!
//! ```no_run
//! # async fn run(server: envelope_mcp::EnvelopeServer) -> Result<(), Box<dyn std::error::Error>> {
//! use envelope_mcp::HttpConfig;
//! use envelope_mcp::auth::{JwksSource, JwtVerifier, ResourceServer};
//!
//! let verifier = JwtVerifier::new(
//!     "https://auth.example.com",
//!     "https://mcp.example.com/mcp",
//!     JwksSource::Discover,
//! )?;
//! let auth = ResourceServer::new("https://mcp.example.com/mcp", verifier)?;
//! let config = HttpConfig::default()
//!     .with_allowed_hosts(["mcp.example.com"])
//!     .with_auth(auth);
//! server.serve_http_with("0.0.0.0:8080".parse()?, config).await?;
//! # Ok(()) }
//! ```

mod cache;
mod challenge;
mod fetch;
mod gate;
mod introspect;
mod issuer;
mod jwks;
mod jwt;
mod resource;
mod verifier;

pub(crate) use challenge::Challenge;
pub use fetch::install_crypto_provider;
pub(crate) use gate::{Gate, declared_scopes};
pub use introspect::{
    DEFAULT_INTROSPECTION_CACHE_CAPACITY, DEFAULT_INTROSPECTION_CACHE_MAX_AGE,
    DEFAULT_INTROSPECTION_DEADLINE, DEFAULT_MAX_CONCURRENT_INTROSPECTIONS, IntrospectionVerifier,
};
pub use jsonwebtoken::Algorithm;
pub use jwks::{DEFAULT_JWKS_MAX_AGE, DEFAULT_JWKS_REFRESH_INTERVAL, JwksSource};
pub use jwt::{DEFAULT_ALGORITHMS, DEFAULT_LEEWAY, JwtVerifier};
pub use resource::{METADATA_PATH, ResourceServer};
pub use verifier::{AuthConfigError, TokenError, TokenVerifier};

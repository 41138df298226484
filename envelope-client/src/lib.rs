//! A client kit for MCP servers that answer in envelopes, on rmcp's client.
//!
//! Every call of a [`Client`] answers a typed [`Envelope<T>`](envelope_core::Envelope), or a
//! [`ClientError`] that says what went wrong and, for an answer that is not the envelope asked
//! for, names the field at fault. An `ok: false` envelope is a successful read: the call failed,
//! and its [`error`](envelope_core::Envelope::error) says how and whether a retry can help.
//!
//! - [`Client::call`]: a call, decoded, retried as the envelope asks ([`RetryPolicy`]; turned
//!   off with [`RetryPolicy::never`], or [`Client::call_once`]): only a
//!   `retryable` error, only for a tool listed idempotent or read-only (or an error that says
//!   nothing ran, [`NOT_RUN_CODES`](envelope_core::NOT_RUN_CODES)), paced by `retry_after_ms` or
//!   a jittered exponential backoff, every wait clamped to a ceiling, the whole bounded by a
//!   deadline.
//! - [`Client::pages`]: the `next-page` action followed as given, to the end or to a
//!   [`PageLimits`] limit, with the totals checked and a repeated cursor caught.
//! - [`Client::follow`]: a next action run by its id, refused unless its tool is listed and its
//!   arguments pass the tool's input schema.
//! - [`Client::read`]: a read through a target ref, re-resolved once by the recovery the
//!   envelope names when the ref went stale.
//! - [`Client::call_any`]: for a server that mixes plain tools with envelope tools: an envelope
//!   tool's answer decoded, a plain tool's handed back as it came ([`Answer::Plain`]), told by
//!   the listed output schema ([`read::speaks_envelope`]) or, listed without one, by the answer;
//!   [`Client::call_plain`] calls a plain tool once.
//! - [`read`]: the reader of the wire underneath, for code that holds a `CallToolResult`
//!   already (`envelope-check` reads results through it).
//!
//! The decisions underneath are public, so that a loop of one's own decides the same way:
//! [`RetryPolicy::decide`] (what follows a failure), [`next_call`] (the page after a page),
//! [`check_action`] (whether a next action may be sent) and [`read::envelope_value`] (where the
//! envelope is in a result). The Python kit (`clients/python`) makes the same promises: each is
//! one case in `clients/cases/`, which this crate's `tests/shared_cases.rs` and the Python kit's
//! tests both run, listed in `docs/KITS.md`.
//!
//! `examples/getting_started.rs` connects over stdio (a child process) or streamable HTTP and
//! walks the kit; CI runs it as its docs say, against the example server, over both.
//!
//! ```no_run
//! use envelope_client::{Client, PageLimits, RetryPolicy};
//! use rmcp::ServiceExt as _;
//! use serde_json::{Value, json};
//!
//! # async fn run(transport: tokio::io::DuplexStream) -> Result<(), Box<dyn std::error::Error>> {
//! // Any rmcp client transport; here a stream already connected to the server.
//! let service = ().serve(transport).await?;
//! let client = Client::new(service).await?.with_policy(RetryPolicy::default());
//!
//! // One typed call: a failed call is an envelope too.
//! let envelope = client.call::<Value>("search_text", json!({"query": "needle"})).await?;
//! match envelope.error() {
//!     Some(error) => eprintln!("{}: {}", error.category(), error.message()),
//!     None => println!("{}", envelope.summary_line().unwrap_or_default()),
//! }
//!
//! // Every page, following the server's own next-page action.
//! let mut pages =
//!     client.pages::<Value>("search_text", json!({"query": "needle"}), PageLimits::rows(500));
//! while let Some(page) = pages.next().await {
//!     let page = page?;
//!     println!("{} rows", page.completeness().map_or(0, |c| c.returned()));
//! }
//!
//! // What the first answer suggested, by id.
//! if let Some(action) = envelope.next_actions().first() {
//!     let followed = client.follow::<Value, _>(&envelope, &action.id).await?;
//!     println!("{}", followed.is_ok());
//! }
//! # Ok(())
//! # }
//! ```

mod client;
mod error;
mod pages;
pub mod read;
mod retry;
mod walk;

pub use client::{Client, STALE_REF_CODES, check_action};
pub use error::{ClientError, DecodeError, ReadError};
pub use pages::{
    ActionPlace, NEXT_PAGE_PLACES, PageLimits, Pages, PagesEnd, TOKEN_PLACES, next_call,
};
pub use read::Answer;
pub use retry::{NEVER_RETRIED, NotRetried, RetryDecision, RetryPolicy};
pub use walk::{MAX_CONTINUATION_CHARS, WalkGuard};

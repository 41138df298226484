//! A server's command line, the part every envelope server shares (feature `cli`): the
//! options that shape what it serves ([`ServerOptions`]: the call deadline, the request limit,
//! the listing, the dialects) and how it serves over HTTP ([`HttpOptions`]: `--http` with its
//! hosts, origins, sessions, deadlines, connection caps, CORS, draining, the plain HTTP API and
//! OAuth), each a clap `Args` a program flattens into its own `Parser`; and the start-up around
//! them: the paging key kept per user ([`continuations`]), HTTP served until a signal drains it
//! ([`serve_http`]), one call or the listing printed ([`call_once`], [`print_listing`]).
//!
//! ```
//! use clap::{CommandFactory as _, FromArgMatches as _, Parser};
//! use envelope_mcp::cli::{HttpOptions, ServerOptions, with_env_prefix};
//!
//! /// Serve my tools.
//! #[derive(Debug, Parser)]
//! #[command(name = "my_server")]
//! struct Options {
//!     #[command(flatten)]
//!     server: ServerOptions,
//!     #[command(flatten)]
//!     http: HttpOptions,
//! }
//!
//! // `MY_SERVER_AUTH_CLIENT_SECRET` supplies `--auth-client-secret`.
//! let command = with_env_prefix(Options::command(), "MY_SERVER");
//! let matches = command.try_get_matches_from(["my_server", "--http", "127.0.0.1:8765", "--stateless"])?;
//! let options = Options::from_arg_matches(&matches)?;
//! assert_eq!(options.http.http, Some("127.0.0.1:8765".parse()?));
//! assert_eq!(options.server.call_timeout(), Some(std::time::Duration::from_secs(120)));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod http;
mod key;
mod once;
mod serve;
mod server;

pub use http::{AuthOptions, HttpOptions, mcp_path, some_seconds};
pub use key::continuations;
pub use once::{call_once, parse_arguments, print_listing, print_out};
pub use serve::{serve_http, stop_on_signal};
pub use server::{ServerOptions, parse_call_dialects, parse_dialect};

/// `command` with its shared options read from the environment too, under `prefix`:
/// `<prefix>_AUTH_CLIENT_SECRET` for `--auth-client-secret` (a secret is best given so: a
/// process listing does not show it, and `--help` hides its value).
pub fn with_env_prefix(command: clap::Command, prefix: &str) -> clap::Command {
    command.mut_arg("auth_client_secret", |arg| {
        arg.env(format!("{prefix}_AUTH_CLIENT_SECRET"))
            .hide_env_values(true)
    })
}

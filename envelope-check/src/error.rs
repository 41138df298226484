//! Why a login failed. No variant holds a secret: a file is named by its path, a token
//! endpoint's refusal by its status and its own `error` and `error_description`, never by what
//! was sent to it.

use std::path::PathBuf;

/// Why the checker could not log in to the server it checks (see [`Login`](crate::Login)).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoginError {
    /// A secret's file is not there.
    #[error("the {what} file `{}` does not exist", path.display())]
    FileMissing {
        /// Which secret it holds: "client secret", "bearer token".
        what: &'static str,
        /// The file as named.
        path: PathBuf,
    },
    /// A secret's file is a directory, a device, a pipe: not a regular file.
    #[error("the {what} file `{}` is {kind}, not a regular file", path.display())]
    NotAFile {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
        /// What it is instead: "a directory", "a FIFO", "a socket", "a device", "something
        /// else".
        kind: &'static str,
    },
    /// A secret's file could not be opened or read (permissions, I/O).
    #[error("cannot read the {what} file `{}`", path.display())]
    FileUnreadable {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// A secret's file is larger than any secret: a wrong file, most likely.
    #[error("the {what} file `{}` is larger than {limit} bytes", path.display())]
    FileTooLarge {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
        /// The most a secret's file may hold.
        limit: usize,
    },
    /// A secret's file is not UTF-8 text.
    #[error("the {what} file `{}` is not UTF-8 text", path.display())]
    FileNotUtf8 {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
    },
    /// A secret's file is empty (or holds only a line ending).
    #[error("the {what} file `{}` is empty", path.display())]
    FileEmpty {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
    },
    /// A bearer token's file holds more than one line, or characters an HTTP header cannot
    /// carry.
    #[error(
        "the {what} file `{}` holds more than one line, or characters other than visible ASCII",
        path.display()
    )]
    NotAToken {
        /// Which secret it holds.
        what: &'static str,
        /// The file as named.
        path: PathBuf,
    },
    /// The HTTP client of the token requests could not be built.
    #[error("cannot build the HTTP client for the token endpoint")]
    Client(#[source] reqwest::Error),
    /// The token endpoint could not be reached, or did not answer in time.
    #[error("cannot reach the token endpoint {url}")]
    Unreachable {
        /// The token endpoint.
        url: String,
        /// What the HTTP client said (it names no credential).
        #[source]
        source: reqwest::Error,
    },
    /// The token endpoint refused the request: its status, and the `error` and
    /// `error_description` of its answer when it is the JSON of RFC 6749 §5.2.
    #[error(
        "the token endpoint {url} refused the login: HTTP {status}{}",
        refusal(error.as_deref(), description.as_deref())
    )]
    Refused {
        /// The token endpoint.
        url: String,
        /// The HTTP status it answered.
        status: u16,
        /// Its `error` code (`invalid_client`, `invalid_scope`, …), when it sent one.
        error: Option<String>,
        /// Its `error_description`, when it sent one.
        description: Option<String>,
    },
    /// The token endpoint answered `200` with something that is not a JSON object.
    #[error("the token endpoint {url} answered HTTP {status} with a body that is not JSON")]
    NotJson {
        /// The token endpoint.
        url: String,
        /// The HTTP status it answered.
        status: u16,
    },
    /// The token endpoint's answer is larger than any token answer.
    #[error("the token endpoint {url} answered more than {limit} bytes")]
    AnswerTooLarge {
        /// The token endpoint.
        url: String,
        /// The most read of an answer.
        limit: usize,
    },
    /// The token endpoint answered `200` without an `access_token` string.
    #[error("the token endpoint {url} answered no `access_token`")]
    NoAccessToken {
        /// The token endpoint.
        url: String,
    },
    /// The token endpoint's `access_token` is no bearer token an HTTP header can carry.
    #[error(
        "the token endpoint {url} answered an `access_token` that is not one line of visible ASCII"
    )]
    BadAccessToken {
        /// The token endpoint.
        url: String,
    },
    /// The token endpoint issued a token of another type than `Bearer`, which the checker
    /// cannot present.
    #[error("the token endpoint {url} issued a `{token_type}` token, not a `Bearer` one")]
    NotBearer {
        /// The token endpoint.
        url: String,
        /// The `token_type` it answered (cut to 40 characters; `none` when missing).
        token_type: String,
    },
}

/// The tail of [`LoginError::Refused`]'s message: the endpoint's own words, when it sent any.
fn refusal(error: Option<&str>, description: Option<&str>) -> String {
    match (error, description) {
        (Some(error), Some(description)) => format!(" ({error}: {description})"),
        (Some(error), None) => format!(" ({error})"),
        (None, Some(description)) => format!(" ({description})"),
        (None, None) => String::new(),
    }
}

/// `error` and each of its sources, joined by `: `, as a command line prints a failure.
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

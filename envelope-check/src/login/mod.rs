//! Logging in to a server that is an OAuth 2.1 resource server: a bearer token read from a
//! file, or one got with the client-credentials grant and renewed before it expires, sent as
//! `Authorization: Bearer …` on every HTTP request of the check.
//!
//! Invariant: a secret (the client secret, a token) goes nowhere but the request that needs
//! it. It is a [`Secret`], whose `Debug` and `Display` print `[redacted]` and whose memory is
//! wiped when dropped; no error, report or log line holds one.

mod client;
mod redact;
mod secret;
mod token;

pub use client::LoggedInClient;
pub use redact::{MIN_REDACTED_PREFIX, REDACTED, Redactor};
pub use secret::{MAX_SECRET_BYTES, Secret};
pub use token::{ClientAuth, ClientCredentials, MAX_TOKEN_ANSWER_BYTES};

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::LoginError;
use token::AccessToken;

/// How the checker logs in to the server it checks.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Login {
    /// A bearer token given as is (`--bearer-token-file`); it is never renewed.
    Bearer(Secret),
    /// The client-credentials grant (`--oauth-token-url`, `--client-id`,
    /// `--client-secret-file`, `--scope`); the token is renewed when it is about to expire.
    ClientCredentials(ClientCredentials),
}

/// The longest a token is renewed before it expires: a request made with it still arrives in
/// time.
const RENEW_BEFORE: Duration = Duration::from_secs(30);

/// The least time a token is used before another is asked for, whatever lifetime the token
/// endpoint gives it: a token endpoint answering `expires_in: 0` (or 1 ms) would otherwise be
/// asked for a new token before every request. A token that truly lives shorter fails the
/// requests made with it after it expires, and the report says they failed.
pub const MIN_TOKEN_USE: Duration = Duration::from_secs(1);

/// Where each request's bearer token comes from: the [`Login`], and the token it last got.
#[derive(Debug)]
pub struct TokenSource {
    login: Login,
    http: reqwest::Client,
    timeout: Duration,
    current: tokio::sync::Mutex<Option<AccessToken>>,
    issued: AtomicUsize,
    /// Every secret of the login, and every token issued, in each printed form.
    redactor: Redactor,
}

/// Makes ring rustls's process default unless a provider is installed: built in one workspace
/// with envelope-mcp's `auth`, reqwest has TLS without a provider of its own, and panics
/// building a client without one (ring is the one provider of every rustls in the tree).
pub(crate) fn ensure_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

impl TokenSource {
    /// A source of tokens for `login`, each token request waiting at most `timeout`.
    pub fn new(login: Login, timeout: Duration) -> Result<Self, LoginError> {
        TokenSource::with_redactor(login, timeout, Redactor::new())
    }

    /// [`new`](TokenSource::new), holding the login's secrets and every token it is issued in
    /// `redactor`, which the caller runs over everything it prints.
    pub fn with_redactor(
        login: Login,
        timeout: Duration,
        redactor: Redactor,
    ) -> Result<Self, LoginError> {
        match &login {
            Login::Bearer(token) => redactor.hold_secret(token),
            Login::ClientCredentials(credentials) => {
                redactor.hold_client_credentials(&credentials.client_id, &credentials.client_secret)
            }
        }
        ensure_crypto_provider();
        // A token endpoint that redirects is answered as a refusal: the form, and the basic
        // credentials, go to the URL given and nowhere else.
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(LoginError::Client)?;
        Ok(TokenSource {
            login,
            http,
            timeout,
            current: tokio::sync::Mutex::new(None),
            issued: AtomicUsize::new(0),
            redactor,
        })
    }

    /// The token to send now: the fixed one, or the last one issued while it has more than a
    /// little time left (30 s, or half its lifetime when that is shorter), else a new one.
    pub async fn bearer(&self) -> Result<Secret, LoginError> {
        let credentials = match &self.login {
            Login::Bearer(token) => return Ok(token.clone()),
            Login::ClientCredentials(credentials) => credentials,
        };
        // Held across the request: requests made meanwhile wait for the one new token.
        let mut current = self.current.lock().await;
        if let Some(token) = current.as_ref()
            && !about_to_expire(token, Instant::now())
        {
            return Ok(token.token.clone());
        }
        let token = credentials.request_token(&self.http, self.timeout).await?;
        self.redactor.hold_secret(&token.token);
        self.issued.fetch_add(1, Ordering::Relaxed);
        let bearer = token.token.clone();
        *current = Some(token);
        Ok(bearer)
    }

    /// The redactor holding the login's secrets and every token issued so far.
    pub fn redactor(&self) -> &Redactor {
        &self.redactor
    }

    /// How many tokens the token endpoint has issued so far (0 for a fixed token).
    pub fn tokens_issued(&self) -> usize {
        self.issued.load(Ordering::Relaxed)
    }
}

/// Whether `token` expires within [`RENEW_BEFORE`] (or half its lifetime, when shorter) of
/// `now`, and has been used for [`MIN_TOKEN_USE`]. A token whose lifetime is unknown is kept.
fn about_to_expire(token: &AccessToken, now: Instant) -> bool {
    let (Some(expires_at), Some(lifetime)) = (token.expires_at, token.lifetime) else {
        return false;
    };
    let issued = expires_at.checked_sub(lifetime).unwrap_or(now);
    let renew_at = expires_at
        .checked_sub(RENEW_BEFORE.min(lifetime / 2))
        .unwrap_or(issued)
        .max(issued + MIN_TOKEN_USE);
    now >= renew_at
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(lifetime: u64, issued: Instant) -> AccessToken {
        let lifetime = Duration::from_secs(lifetime);
        AccessToken {
            token: Secret::new("t"),
            expires_at: Some(issued + lifetime),
            lifetime: Some(lifetime),
        }
    }

    #[test]
    fn a_token_is_renewed_shortly_before_it_expires() {
        let now = Instant::now();
        let hour = token(3600, now);
        assert!(!about_to_expire(&hour, now));
        assert!(!about_to_expire(&hour, now + Duration::from_secs(3569)));
        assert!(about_to_expire(&hour, now + Duration::from_secs(3571)));
        // A short-lived token is kept for half its life, not renewed on every request.
        let short = token(10, now);
        assert!(!about_to_expire(&short, now + Duration::from_secs(4)));
        assert!(about_to_expire(&short, now + Duration::from_secs(5)));
        // A token said to expire at once (or within a millisecond) is still used for a while.
        for lifetime in [Duration::ZERO, Duration::from_millis(1)] {
            let instant = AccessToken {
                token: Secret::new("t"),
                expires_at: Some(now + lifetime),
                lifetime: Some(lifetime),
            };
            assert!(!about_to_expire(&instant, now));
            assert!(!about_to_expire(&instant, now + Duration::from_millis(999)));
            assert!(about_to_expire(&instant, now + MIN_TOKEN_USE));
        }
        let unknown = AccessToken {
            token: Secret::new("t"),
            expires_at: None,
            lifetime: None,
        };
        assert!(!about_to_expire(
            &unknown,
            now + Duration::from_secs(1 << 30)
        ));
    }
}

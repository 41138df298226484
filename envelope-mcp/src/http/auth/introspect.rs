//! Opaque access tokens, checked by asking their issuer (OAuth 2.0 Token Introspection,
//! RFC 7662): the answers kept a while, one question per token in flight, a bounded number
//! of questions at once, each answered or given up within a deadline.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use envelope_core::{Caller, Scopes};
use serde::Deserialize;
use tokio::sync::{Semaphore, watch};
use url::Url;

use super::cache::{Cache, TokenKey};
use super::fetch::{self, checked_url};
use super::issuer::{Issuer, IssuerVerifier};
use super::jwks::same_issuer;
use super::verifier::{AuthConfigError, TokenError};

/// How long an accepted token is believed without asking its issuer again, unless configured:
/// also how long a revoked token may still be accepted.
pub const DEFAULT_INTROSPECTION_CACHE_MAX_AGE: Duration = Duration::from_secs(60);

/// How many accepted tokens are remembered at most, unless configured.
pub const DEFAULT_INTROSPECTION_CACHE_CAPACITY: usize = 10_000;

/// How many introspection requests may be at the issuer at once, unless configured.
pub const DEFAULT_MAX_CONCURRENT_INTROSPECTIONS: usize = 16;

/// How long a token's check may take, the wait for a turn at the issuer included, unless
/// configured.
pub const DEFAULT_INTROSPECTION_DEADLINE: Duration = Duration::from_secs(5);

/// The largest introspection answer read: RFC 7662's are a few hundred bytes.
const MAX_INTROSPECTION_BYTES: usize = 64 * 1024;

/// The most bytes of `sub` and `scope` a cached caller holds: a caller with more is answered
/// but not kept, so the cache's memory is bounded by its capacity.
const MAX_CACHED_CLAIMS_BYTES: usize = 4 * 1024;

/// What a check comes to.
type Verdict = Result<Caller, TokenError>;

/// Verifies opaque tokens at the issuer's introspection endpoint, as a client of it (HTTP Basic
/// authentication with this resource server's own client id and secret).
///
/// A token is accepted when the issuer answers `active: true`, its `iss` (if given) is the
/// issuer, its `aud` holds the audience, and its `exp` (if given) has not passed. The caller
/// is `sub` of the issuer (required), with the scopes of `scope`.
///
/// The issuer is spared and a slow one cannot stall the server:
///
/// - **A cache.** An accepted token's caller is kept, under the SHA-256 of the token (never the
///   token), until the earlier of its `exp` and the cache's maximum age
///   ([`with_cache_max_age`](Self::with_cache_max_age),
///   [`DEFAULT_INTROSPECTION_CACHE_MAX_AGE`] unless set); at most
///   [`with_cache_capacity`](Self::with_cache_capacity) of them
///   ([`DEFAULT_INTROSPECTION_CACHE_CAPACITY`]), the expired dropped first, then the oldest. A
///   revoked token is thus accepted for up to the maximum age; `Duration::ZERO` asks every time.
///   Refusals are not kept: a token issued a moment ago is not refused from memory, and a flood
///   of made-up tokens cannot push the good ones out. Nor is a failure to ask: the next call
///   asks again. Nor is a caller whose subject and scopes exceed 4 KiB, so the cache's memory
///   is bounded by its capacity.
/// - **One question per token.** Calls with a token that is not cached, arriving while it is
///   being asked about, wait for that one answer instead of asking again. A waiter whose
///   question was abandoned (its caller went away) asks itself.
/// - **A bound on questions.** At most
///   [`with_max_concurrent_introspections`](Self::with_max_concurrent_introspections)
///   ([`DEFAULT_MAX_CONCURRENT_INTROSPECTIONS`]) are at the issuer at once; the others wait
///   for a turn.
/// - **A deadline.** A check not done within
///   [`with_introspection_deadline`](Self::with_introspection_deadline)
///   ([`DEFAULT_INTROSPECTION_DEADLINE`]), the wait for a turn included, fails as
///   [`TokenError::Unverifiable`]: the server answers `503` with `Retry-After`, and calls with
///   cached tokens go on being answered.
///
/// An answer longer than 64 KiB is such a failure too, read no further.
///
/// ```no_run
/// # fn run() -> Result<(), envelope_mcp::auth::AuthConfigError> {
/// use std::time::Duration;
///
/// use envelope_mcp::auth::{IntrospectionVerifier, ResourceServer};
///
/// let verifier = IntrospectionVerifier::new(
///     "https://auth.example.com",
///     "https://auth.example.com/oauth2/introspect",
///     "https://mcp.example.com/mcp",
///     "mcp-server",
///     std::env::var("INTROSPECTION_SECRET").unwrap_or_default(),
/// )?
/// // Believe an accepted token for 30 s at most (and never past its `exp`).
/// .with_cache_max_age(Duration::from_secs(30))
/// .with_cache_capacity(50_000)
/// .with_max_concurrent_introspections(8)
/// .with_introspection_deadline(Duration::from_secs(2));
/// let auth = ResourceServer::new("https://mcp.example.com/mcp", verifier)?;
/// # let _ = auth; Ok(()) }
/// ```
pub struct IntrospectionVerifier {
    issuer: Issuer,
    endpoint: Url,
    client_id: String,
    client_secret: String,
    client: reqwest::Client,
    max_age: Duration,
    deadline: Duration,
    /// Turns at the issuer.
    turns: Semaphore,
    max_concurrent: usize,
    state: Mutex<State>,
}

/// What the verifier remembers between calls.
struct State {
    cache: Cache,
    /// The tokens being asked about, each with the channel its answer comes on.
    flights: HashMap<TokenKey, watch::Receiver<Option<Verdict>>>,
}

/// The one question in flight about a token, held by the call asking it. Dropped, done or
/// abandoned, it leaves the flights; a waiter then finds its answer, or a closed channel.
struct Flight<'a> {
    state: &'a Mutex<State>,
    key: TokenKey,
    answer: watch::Sender<Option<Verdict>>,
}

impl Drop for Flight<'_> {
    fn drop(&mut self) {
        // Off the flights before the sender closes: a waiter that sees it closed finds no
        // flight, and asks itself.
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flights
            .remove(&self.key);
    }
}

/// What a call finds of its token.
enum Found {
    Cached(Caller),
    InFlight(watch::Receiver<Option<Verdict>>),
    /// Nobody is asking: this call does.
    Unknown(watch::Sender<Option<Verdict>>),
}

impl IntrospectionVerifier {
    /// A verifier asking `endpoint` (the issuer's `introspection_endpoint`) about tokens
    /// `issuer` issued for `audience`, authenticating as `client_id` with `client_secret`.
    pub fn new(
        issuer: &str,
        endpoint: &str,
        audience: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Result<Self, AuthConfigError> {
        Ok(IntrospectionVerifier {
            issuer: Issuer::new(issuer, audience.into())?,
            endpoint: checked_url("introspection endpoint", endpoint)?,
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            client: fetch::client()?,
            max_age: DEFAULT_INTROSPECTION_CACHE_MAX_AGE,
            deadline: DEFAULT_INTROSPECTION_DEADLINE,
            turns: Semaphore::new(DEFAULT_MAX_CONCURRENT_INTROSPECTIONS),
            max_concurrent: DEFAULT_MAX_CONCURRENT_INTROSPECTIONS,
            state: Mutex::new(State {
                cache: Cache::new(DEFAULT_INTROSPECTION_CACHE_CAPACITY),
                flights: HashMap::new(),
            }),
        })
    }

    /// Believes an accepted token for `max_age` at most, and never past its `exp`
    /// ([`DEFAULT_INTROSPECTION_CACHE_MAX_AGE`] unless set). A token revoked at the issuer is
    /// accepted until then; `Duration::ZERO` keeps nothing and asks on every call.
    #[must_use]
    pub fn with_cache_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age;
        self
    }

    /// Remembers `capacity` accepted tokens at most
    /// ([`DEFAULT_INTROSPECTION_CACHE_CAPACITY`] unless set): past it the expired entries go,
    /// then the oldest. `0` keeps nothing.
    #[must_use]
    pub fn with_cache_capacity(mut self, capacity: usize) -> Self {
        self.state
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .cache = Cache::new(capacity);
        self
    }

    /// Lets `limit` introspection requests be at the issuer at once
    /// ([`DEFAULT_MAX_CONCURRENT_INTROSPECTIONS`] unless set; never fewer than one). A call
    /// past it waits for a turn, within the deadline.
    #[must_use]
    pub fn with_max_concurrent_introspections(mut self, limit: usize) -> Self {
        self.max_concurrent = limit.max(1);
        self.turns = Semaphore::new(self.max_concurrent);
        self
    }

    /// Gives up on a check after `deadline`, the wait for a turn at the issuer included
    /// ([`DEFAULT_INTROSPECTION_DEADLINE`] unless set): the token is then
    /// [`TokenError::Unverifiable`], answered `503` with `Retry-After`.
    #[must_use]
    pub fn with_introspection_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// The verdict on `token`: remembered, awaited from the call asking about it, or asked.
    async fn verdict(&self, key: TokenKey, token: &str) -> Verdict {
        loop {
            let answer = match self.find(key) {
                Found::Cached(caller) => return Ok(caller),
                Found::InFlight(answer) => answer,
                Found::Unknown(answer) => {
                    let flight = Flight {
                        state: &self.state,
                        key,
                        answer,
                    };
                    return self.lead(flight, token).await;
                }
            };
            if let Some(verdict) = wait(answer).await {
                return verdict;
            }
            // The call asking went away without an answer: ask again.
        }
    }

    fn find(&self, key: TokenKey) -> Found {
        let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(caller) = state.cache.get(&key, Instant::now()) {
            return Found::Cached(caller);
        }
        if let Some(answer) = state.flights.get(&key) {
            return Found::InFlight(answer.clone());
        }
        let (sender, receiver) = watch::channel(None);
        state.flights.insert(key, receiver);
        Found::Unknown(sender)
    }

    /// Asks the issuer about `token` for every call waiting on `flight`, and keeps an
    /// accepted caller.
    async fn lead(&self, flight: Flight<'_>, token: &str) -> Verdict {
        let verdict = self.introspect(token).await;
        if let Ok((caller, until)) = &verdict {
            let now = Instant::now();
            let expires = now + (*until).min(self.max_age);
            if claims_bytes(caller) <= MAX_CACHED_CLAIMS_BYTES {
                let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
                state.cache.insert(flight.key, caller.clone(), expires, now);
            }
        }
        let verdict = verdict.map(|(caller, _)| caller);
        flight.answer.send_replace(Some(verdict.clone()));
        verdict
    }

    /// The issuer's verdict on `token`, with how long it holds (until `exp`), asked within a
    /// turn.
    async fn introspect(&self, token: &str) -> Result<(Caller, Duration), TokenError> {
        let turn = self.turns.acquire().await.map_err(|_| {
            TokenError::Unverifiable("the verifier no longer asks its issuer".to_owned())
        })?;
        let request = self
            .client
            .post(self.endpoint.clone())
            .basic_auth(&self.client_id, Some(&self.client_secret))
            .form(&[("token", token), ("token_type_hint", "access_token")]);
        let answer: Introspection =
            fetch::json_within(&self.endpoint, request, MAX_INTROSPECTION_BYTES)
                .await
                .map_err(TokenError::Unverifiable)?;
        drop(turn);
        self.judge(answer)
    }

    /// The caller `answer` vouches for, and how long until its `exp`; or why it does not.
    fn judge(&self, answer: Introspection) -> Result<(Caller, Duration), TokenError> {
        if !answer.active {
            return Err(TokenError::invalid(
                "its issuer says it is not active (expired, revoked, or never issued)",
            ));
        }
        if let Some(iss) = &answer.iss
            && !same_issuer(iss, self.issuer.url())
        {
            return Err(TokenError::invalid(
                "it was issued by another issuer (`iss`)",
            ));
        }
        let audiences = match answer.aud {
            Some(Audience::One(aud)) => vec![aud],
            Some(Audience::Many(auds)) => auds,
            None => Vec::new(),
        };
        if !audiences.iter().any(|aud| aud == self.issuer.audience()) {
            return Err(TokenError::invalid(
                "it was issued for another resource (`aud`)",
            ));
        }
        let since_epoch = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap_or_default();
        let until = match answer.exp {
            Some(exp) if exp <= since_epoch.as_secs() => {
                return Err(TokenError::invalid("it has expired"));
            }
            Some(exp) => Duration::from_secs(exp).saturating_sub(since_epoch),
            None => Duration::MAX,
        };
        let scopes = answer
            .scope
            .as_deref()
            .map(Scopes::parse)
            .unwrap_or_default();
        let caller = self.issuer.caller(answer.sub, scopes)?;
        Ok((caller, until))
    }
}

/// The verdict that comes on `answer`; `None` when the call asking went away without one.
async fn wait(mut answer: watch::Receiver<Option<Verdict>>) -> Option<Verdict> {
    let verdict = answer.wait_for(Option::is_some).await.ok()?;
    verdict.clone()
}

/// How many bytes of claims `caller` holds: its subject and scopes.
fn claims_bytes(caller: &Caller) -> usize {
    caller.principal().subject().len() + caller.scopes().iter().map(str::len).sum::<usize>()
}

impl IssuerVerifier for IntrospectionVerifier {
    fn issuer(&self) -> &Issuer {
        &self.issuer
    }

    async fn check_token(&self, token: &str) -> Result<Caller, TokenError> {
        let key = TokenKey::of(token);
        match tokio::time::timeout(self.deadline, self.verdict(key, token)).await {
            Ok(verdict) => verdict,
            // Dropping the check abandons its flight, if it led one: its waiters ask again.
            Err(_) => Err(TokenError::Unverifiable(fetch::failed(
                &self.endpoint,
                format!("no answer within {} ms", self.deadline.as_millis()),
            ))),
        }
    }
}

impl std::fmt::Debug for IntrospectionVerifier {
    /// The client secret is not shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IntrospectionVerifier")
            .field("issuer", &self.issuer.id())
            .field("endpoint", &self.endpoint.as_str())
            .field("audience", &self.issuer.audience())
            .field("client_id", &self.client_id)
            .field("cache_max_age", &self.max_age)
            .field("max_concurrent_introspections", &self.max_concurrent)
            .field("introspection_deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

/// RFC 7662 §2.2's answer, what of it is read.
#[derive(Deserialize)]
struct Introspection {
    active: bool,
    scope: Option<String>,
    sub: Option<String>,
    iss: Option<String>,
    aud: Option<Audience>,
    exp: Option<u64>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Audience {
    One(String),
    Many(Vec<String>),
}

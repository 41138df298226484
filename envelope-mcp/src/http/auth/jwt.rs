//! JWT access tokens (RFC 9068), checked against the issuer's keys: the signature by an
//! allowed algorithm with a key the issuer publishes, the issuer, the audience (this resource,
//! RFC 8707), the expiry and the not-before time.

use std::collections::HashSet;
use std::time::Duration;

use envelope_core::{Caller, Scopes};
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::{Algorithm, AlgorithmFamily, Validation};
use serde::Deserialize;

use super::fetch;
use super::issuer::{Issuer, IssuerVerifier};
use super::jwks::{JwksSource, KeySet};
use super::verifier::{AuthConfigError, TokenError};

/// The algorithms accepted unless configured: every asymmetric one jsonwebtoken verifies. Never
/// `none`, and never `HS*`, which would need the issuer's secret here.
pub const DEFAULT_ALGORITHMS: [Algorithm; 9] = [
    Algorithm::RS256,
    Algorithm::RS384,
    Algorithm::RS512,
    Algorithm::PS256,
    Algorithm::PS384,
    Algorithm::PS512,
    Algorithm::ES256,
    Algorithm::ES384,
    Algorithm::EdDSA,
];

/// How far the clocks of issuer and server may disagree on `exp` and `nbf`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);

/// The `typ` an access token carries (RFC 9068 §2.1), with and without the `application/`
/// that RFC 7515 §4.1.9 lets a media type drop; compared ignoring case.
const ACCESS_TOKEN_TYPES: [&str; 2] = ["at+jwt", "application/at+jwt"];

/// The `typ` of a JWT of any kind (RFC 7519 §5.1), which some issuers write on access tokens:
/// accepted only under [`JwtVerifier::with_plain_jwt_typ`].
const PLAIN_JWT_TYPES: [&str; 2] = ["JWT", "application/jwt"];

/// Verifies JWT access tokens of one issuer for one audience.
///
/// A token is accepted when its header names an allowed algorithm and a key of the issuer's
/// JWKS (fetched again, at most once per refresh interval, when the `kid` is new: the issuer
/// rotated its keys), its signature verifies with that key, `iss` is the issuer, `aud` holds
/// the audience, `exp` has not passed and `nbf` (if any) has. The caller is `sub` of the
/// issuer (required, RFC 9068); the scopes are `scope` (space-delimited) or `scp`.
///
/// The header's `typ` must say the token is an access token: `at+jwt` (or
/// `application/at+jwt`, in any case), as RFC 9068 §4 requires of a resource server. A `JWT`,
/// or no `typ`, is refused unless [`with_plain_jwt_typ`](JwtVerifier::with_plain_jwt_typ)
/// allows it; any other `typ` (a logout token's `logout+jwt`) always is. The type is what
/// tells an access token from another JWT its issuer signs whose claims would pass too
/// (explicit typing, RFC 8725 §3.11).
pub struct JwtVerifier {
    issuer: Issuer,
    algorithms: Vec<Algorithm>,
    leeway: Duration,
    /// Whether a `typ` of `JWT`, or none, is taken for an access token's.
    plain_jwt_typ: bool,
    keys: KeySet,
}

impl JwtVerifier {
    /// A verifier of tokens issued by `issuer` for `audience` (this resource's URL, the
    /// `resource` its clients ask tokens for), the keys found as `keys` says. Fails on an
    /// issuer that is no `https` URL (`http` on loopback aside), or a JWKS file that cannot be
    /// read.
    pub fn new(
        issuer: &str,
        audience: impl Into<String>,
        keys: JwksSource,
    ) -> Result<Self, AuthConfigError> {
        if jsonwebtoken::crypto::CryptoProvider::try_get_default().is_none() {
            return Err(AuthConfigError::NoCryptoProvider);
        }
        let issuer = Issuer::new(issuer, audience.into())?;
        let keys = KeySet::new(issuer.url(), keys, fetch::client()?)?;
        Ok(JwtVerifier {
            issuer,
            algorithms: DEFAULT_ALGORITHMS.to_vec(),
            leeway: DEFAULT_LEEWAY,
            plain_jwt_typ: false,
            keys,
        })
    }

    /// Accepts only `algorithms` ([`DEFAULT_ALGORITHMS`] unless set). Fails when none is given
    /// or one is `HS*`.
    pub fn with_algorithms(
        mut self,
        algorithms: impl IntoIterator<Item = Algorithm>,
    ) -> Result<Self, AuthConfigError> {
        let algorithms: Vec<Algorithm> = algorithms.into_iter().collect();
        if algorithms.is_empty() {
            return Err(AuthConfigError::Algorithms(
                "at least one algorithm must be allowed".to_owned(),
            ));
        }
        if let Some(symmetric) = algorithms
            .iter()
            .find(|alg| alg.family() == AlgorithmFamily::Hmac)
        {
            return Err(AuthConfigError::Algorithms(format!(
                "`{symmetric:?}` needs the issuer's shared secret; a resource server accepts \
                 asymmetric signatures only"
            )));
        }
        self.algorithms = algorithms;
        Ok(self)
    }

    /// Lets `exp` and `nbf` be off by `leeway` ([`DEFAULT_LEEWAY`] unless set).
    #[must_use]
    pub fn with_leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// Whether a token typed `JWT` (or `application/jwt`), or not typed at all, is accepted
    /// as an access token (off unless set: only `at+jwt` is).
    ///
    /// For an issuer that predates RFC 9068 and writes no `at+jwt` on its access tokens, as
    /// Microsoft Entra ID writes `JWT`. `typ` is optional in a JWT (RFC 7519 §5.1), and the
    /// generic `JWT` says no more than its absence does: "a JWT, of no particular kind". So the
    /// one switch allows both, whichever such an issuer writes. The header then cannot tell
    /// its access tokens from its other JWTs (an ID token), and the claims have to: this
    /// resource as `aud`, `exp`, `sub`. Turn it on only for an issuer that needs it. A `typ`
    /// naming another kind of token (`logout+jwt`) is refused all the same.
    #[must_use]
    pub fn with_plain_jwt_typ(mut self, accept: bool) -> Self {
        self.plain_jwt_typ = accept;
        self
    }

    /// The least time between the end of one fetch of the keys and the next, forced by
    /// tokens naming an unknown key or by the keys' age
    /// ([`DEFAULT_JWKS_REFRESH_INTERVAL`](super::DEFAULT_JWKS_REFRESH_INTERVAL) unless set; never
    /// below 100 ms).
    #[must_use]
    pub fn with_jwks_refresh_interval(mut self, interval: Duration) -> Self {
        self.keys.refresh_interval = interval.max(super::jwks::MIN_JWKS_REFRESH_INTERVAL);
        self
    }

    /// How long fetched keys are used before they are fetched again
    /// ([`DEFAULT_JWKS_MAX_AGE`](super::DEFAULT_JWKS_MAX_AGE) unless set).
    #[must_use]
    pub fn with_jwks_max_age(mut self, age: Duration) -> Self {
        self.keys.max_age = age;
        self
    }

    /// The issuer whose tokens are accepted.
    pub fn issuer(&self) -> &str {
        self.issuer.id()
    }

    /// The audience the tokens must name.
    pub fn audience(&self) -> &str {
        self.issuer.audience()
    }
}

impl IssuerVerifier for JwtVerifier {
    fn issuer(&self) -> &Issuer {
        &self.issuer
    }

    async fn check_token(&self, token: &str) -> Result<Caller, TokenError> {
        // `alg: none` and unknown algorithms fail here: jsonwebtoken has no such algorithm.
        let header = jsonwebtoken::decode_header(token).map_err(|_| {
            TokenError::invalid(
                "it is not a well-formed signed JWT (an unsigned one, `alg: none`, is refused)",
            )
        })?;
        if let Some(why) = typ_refusal(header.typ.as_deref(), self.plain_jwt_typ) {
            return Err(TokenError::invalid(why));
        }
        if !self.algorithms.contains(&header.alg) {
            return Err(TokenError::invalid(format!(
                "it is signed with `{:?}`, which this server does not accept",
                header.alg
            )));
        }
        let key = self.keys.key(header.kid.as_deref(), header.alg).await?;
        let mut validation = Validation::new(header.alg);
        let issuer = self.issuer.id();
        validation.set_issuer(&[issuer.to_owned(), format!("{issuer}/")]);
        validation.set_audience(&[self.issuer.audience()]);
        validation.leeway = self.leeway.as_secs();
        validation.validate_exp = true;
        validation.validate_nbf = true;
        validation.required_spec_claims = HashSet::from(["exp", "iss", "aud"].map(str::to_owned));
        let claims = jsonwebtoken::decode::<Claims>(token, &key.decoding, &validation)
            .map_err(|error| TokenError::invalid(refusal(error.kind())))?
            .claims;
        let scopes = match (claims.scope, claims.scp) {
            (Some(scope), _) => Scopes::parse(&scope),
            (None, Some(ScopeList::Many(scopes))) => scopes.into_iter().collect(),
            (None, Some(ScopeList::One(scope))) => Scopes::parse(&scope),
            (None, None) => Scopes::default(),
        };
        self.issuer.caller(claims.sub, scopes)
    }
}

impl std::fmt::Debug for JwtVerifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("JwtVerifier")
            .field("issuer", &self.issuer.id())
            .field("audience", &self.issuer.audience())
            .field("algorithms", &self.algorithms)
            .field("leeway", &self.leeway)
            .field("plain_jwt_typ", &self.plain_jwt_typ)
            .finish_non_exhaustive()
    }
}

/// Why a token of header type `typ` is no access token, `None` when it is one: `at+jwt` (RFC
/// 9068 §2.1), or with `plain` also a generic `JWT` or none. Types compare ignoring case (RFC
/// 7515 §4.1.9).
fn typ_refusal(typ: Option<&str>, plain: bool) -> Option<&'static str> {
    let is = |types: &[&str], typ: &str| types.iter().any(|t| typ.eq_ignore_ascii_case(t));
    match typ {
        Some(typ) if is(&ACCESS_TOKEN_TYPES, typ) => None,
        Some(typ) if is(&PLAIN_JWT_TYPES, typ) => (!plain).then_some(
            "its `typ` is `JWT`, which any JWT may carry; an access token is typed `at+jwt` \
             (RFC 9068)",
        ),
        None => (!plain).then_some("it has no `typ`; an access token is typed `at+jwt` (RFC 9068)"),
        // Some other token: a logout token, a request object, an ID token typed as such.
        Some(_) => Some("its `typ` says it is not an access token (`at+jwt`)"),
    }
}

/// What a refused token is told, by what jsonwebtoken found: never the token, nor a claim's
/// value.
fn refusal(kind: &ErrorKind) -> String {
    match kind {
        ErrorKind::ExpiredSignature => "it has expired".to_owned(),
        ErrorKind::ImmatureSignature => "it is not valid yet (`nbf`)".to_owned(),
        ErrorKind::InvalidAudience => "it was issued for another resource (`aud`)".to_owned(),
        ErrorKind::InvalidIssuer => "it was issued by another issuer (`iss`)".to_owned(),
        ErrorKind::InvalidSignature => "its signature does not verify".to_owned(),
        ErrorKind::InvalidAlgorithm => "its algorithm does not fit the issuer's key".to_owned(),
        ErrorKind::MissingRequiredClaim(claim) => format!("it lacks the `{claim}` claim"),
        ErrorKind::InvalidClaimFormat(claim) => format!("its `{claim}` claim is malformed"),
        _ => "it is not a well-formed JWT".to_owned(),
    }
}

/// The claims read of a verified token.
#[derive(Deserialize)]
struct Claims {
    sub: Option<String>,
    scope: Option<String>,
    scp: Option<ScopeList>,
}

/// `scp`, as a list (Okta, Azure) or a space-delimited string.
#[derive(Deserialize)]
#[serde(untagged)]
enum ScopeList {
    Many(Vec<String>),
    One(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symmetric_and_empty_algorithm_lists_are_refused() {
        let verifier = || {
            JwtVerifier::new(
                "https://auth.example.com",
                "https://mcp.example.com/mcp",
                JwksSource::Discover,
            )
            .expect("a verifier")
        };
        let error = verifier()
            .with_algorithms([Algorithm::RS256, Algorithm::HS256])
            .expect_err("HS256");
        assert!(error.to_string().contains("shared secret"), "{error}");
        assert!(verifier().with_algorithms([]).is_err());
        assert!(verifier().with_algorithms([Algorithm::ES256]).is_ok());
    }

    #[test]
    fn an_issuer_must_be_https_or_loopback() {
        let error = JwtVerifier::new("http://auth.example.com", "aud", JwksSource::Discover)
            .expect_err("plain http");
        assert!(error.to_string().contains("loopback"), "{error}");
    }

    #[test]
    fn only_an_access_tokens_typ_is_accepted_unless_plain_jwts_are() {
        for typ in [
            "at+jwt",
            "AT+JWT",
            "application/at+jwt",
            "Application/At+JWT",
        ] {
            assert_eq!(typ_refusal(Some(typ), false), None, "{typ}");
            assert_eq!(typ_refusal(Some(typ), true), None, "{typ}");
        }
        for typ in ["JWT", "jwt", "application/jwt"] {
            let why = typ_refusal(Some(typ), false).expect("strict refuses it");
            assert!(
                why.contains("`JWT`") && why.contains("`at+jwt`"),
                "{typ}: {why}"
            );
            assert_eq!(typ_refusal(Some(typ), true), None, "{typ}");
        }
        let why = typ_refusal(None, false).expect("strict refuses no typ");
        assert!(why.contains("no `typ`"), "{why}");
        assert_eq!(typ_refusal(None, true), None);
        for typ in ["logout+jwt", "oauth-authz-req+jwt", "at+jwt+x", ""] {
            for plain in [false, true] {
                assert!(typ_refusal(Some(typ), plain).is_some(), "{typ} {plain}");
            }
        }
    }

    #[test]
    fn refusals_name_the_claim_never_its_value() {
        assert_eq!(refusal(&ErrorKind::ExpiredSignature), "it has expired");
        assert_eq!(
            refusal(&ErrorKind::MissingRequiredClaim("exp".to_owned())),
            "it lacks the `exp` claim"
        );
        assert_eq!(
            refusal(&ErrorKind::InvalidToken),
            "it is not a well-formed JWT"
        );
    }
}

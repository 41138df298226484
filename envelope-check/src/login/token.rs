//! The client-credentials grant (RFC 6749 §4.4): one form posted to the token endpoint, one
//! bearer token read back. The request names the resource it is for (RFC 8707), as the MCP
//! authorization specification requires. What the endpoint answers is read up to a bound, and
//! a refusal is told by its status and its own `error` fields, never by what was sent.

use std::time::{Duration, Instant};

use base64::Engine as _;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue};
use serde_json::Value;
use zeroize::Zeroizing;

use super::Secret;
use crate::LoginError;

/// The largest token endpoint answer read: 64 KiB, far past any token answer.
pub const MAX_TOKEN_ANSWER_BYTES: usize = 64 << 10;

/// How the client proves who it is to the token endpoint (RFC 6749 §2.3.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuth {
    /// `client_secret_basic`: HTTP Basic authentication, the id and secret form-urlencoded
    /// first. What every authorization server must accept.
    #[default]
    Basic,
    /// `client_secret_post`: the id and secret in the form.
    Post,
}

impl ClientAuth {
    /// The method's name in OAuth metadata (`token_endpoint_auth_method`), which the command
    /// line takes too.
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::Basic => "client_secret_basic",
            ClientAuth::Post => "client_secret_post",
        }
    }
}

/// A client-credentials login: where to ask, as whom, for what.
#[derive(Debug, Clone)]
pub struct ClientCredentials {
    /// The authorization server's token endpoint (`http://…`).
    pub token_url: String,
    /// The client's id.
    pub client_id: String,
    /// The client's secret.
    pub client_secret: Secret,
    /// The scopes asked for; none leaves them to the authorization server.
    pub scopes: Vec<String>,
    /// The resource the token is for (RFC 8707): the checked server's `/mcp` URL.
    pub resource: String,
    /// How the client authenticates.
    pub auth: ClientAuth,
}

/// A bearer token as issued, and when it stops being good.
#[derive(Debug, Clone)]
pub(crate) struct AccessToken {
    pub(crate) token: Secret,
    /// When it expires, by `expires_in`; `None` when the endpoint did not say.
    pub(crate) expires_at: Option<Instant>,
    /// Its whole lifetime, by `expires_in`.
    pub(crate) lifetime: Option<Duration>,
}

impl ClientCredentials {
    /// Asks the token endpoint for a token, waiting at most `timeout`.
    pub(crate) async fn request_token(
        &self,
        http: &reqwest::Client,
        timeout: Duration,
    ) -> Result<AccessToken, LoginError> {
        let url = &self.token_url;
        let mut request = http
            .post(url)
            .timeout(timeout)
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
        if self.auth == ClientAuth::Basic {
            request = request.header(AUTHORIZATION, self.basic_header());
        }
        let body = self.form();
        // The URL is in the message once; the client's error need not repeat it.
        let unreachable = |source: reqwest::Error| LoginError::Unreachable {
            url: url.clone(),
            source: source.without_url(),
        };
        let mut response = request
            .body(body.as_bytes().to_vec())
            .send()
            .await
            .map_err(unreachable)?;
        let status = response.status().as_u16();
        let mut answer = Zeroizing::new(Vec::new());
        while let Some(chunk) = response.chunk().await.map_err(unreachable)? {
            if answer.len() + chunk.len() > MAX_TOKEN_ANSWER_BYTES {
                return Err(LoginError::AnswerTooLarge {
                    url: url.clone(),
                    limit: MAX_TOKEN_ANSWER_BYTES,
                });
            }
            answer.extend_from_slice(&chunk);
        }
        let parsed = serde_json::from_slice::<Value>(&answer).ok();
        if status != 200 {
            // RFC 6749 §5.2: `error` and `error_description`, cut short; the secret is taken
            // out should the endpoint quote it back.
            let field = |name: &str| {
                parsed
                    .as_ref()
                    .and_then(|answer| answer.get(name))
                    .and_then(Value::as_str)
                    .map(|text| self.quote(text))
            };
            return Err(LoginError::Refused {
                url: url.clone(),
                status,
                error: field("error"), // wire: RFC 6749's error code
                description: field("error_description"),
            });
        }
        let Some(Value::Object(mut answer)) = parsed else {
            return Err(LoginError::NotJson {
                url: url.clone(),
                status,
            });
        };
        let Some(Value::String(token)) = answer.remove("access_token") else {
            return Err(LoginError::NoAccessToken { url: url.clone() });
        };
        let token = Secret::new(token);
        if !token.is_header_safe() {
            return Err(LoginError::BadAccessToken { url: url.clone() });
        }
        let token_type = answer.get("token_type").and_then(Value::as_str);
        if !token_type.is_some_and(|kind| kind.eq_ignore_ascii_case("bearer")) {
            return Err(LoginError::NotBearer {
                url: url.clone(),
                token_type: token_type.map_or("none".to_owned(), |kind| self.quote(kind)),
            });
        }
        // A number, as RFC 6749 has it; some servers send a numeric string.
        let lifetime = match answer.get("expires_in") {
            Some(Value::Number(seconds)) => seconds.as_u64(),
            Some(Value::String(seconds)) => seconds.parse().ok(),
            _ => None,
        }
        .map(Duration::from_secs);
        Ok(AccessToken {
            token,
            expires_at: lifetime.and_then(|lifetime| Instant::now().checked_add(lifetime)),
            lifetime,
        })
    }

    /// The request's form: the grant, the scopes, the resource, and with `client_secret_post`
    /// the client's id and secret.
    fn form(&self) -> Zeroizing<String> {
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "client_credentials");
        if !self.scopes.is_empty() {
            form.append_pair("scope", &self.scopes.join(" "));
        }
        form.append_pair("resource", &self.resource);
        if self.auth == ClientAuth::Post {
            form.append_pair("client_id", &self.client_id);
            form.append_pair("client_secret", self.client_secret.expose());
        }
        Zeroizing::new(form.finish())
    }

    /// `Basic base64(urlencode(id) ":" urlencode(secret))`, marked sensitive so the HTTP
    /// stack never prints it (RFC 6749 §2.3.1 encodes before joining: an id or secret may hold
    /// a `:`).
    fn basic_header(&self) -> HeaderValue {
        let id: String = form_urlencoded::byte_serialize(self.client_id.as_bytes()).collect();
        let secret: Zeroizing<String> = Zeroizing::new(
            form_urlencoded::byte_serialize(self.client_secret.expose().as_bytes()).collect(),
        );
        let pair = Zeroizing::new(format!("{id}:{}", secret.as_str()));
        let header = Zeroizing::new(format!(
            "Basic {}",
            base64::engine::general_purpose::STANDARD.encode(pair.as_bytes())
        ));
        let mut value =
            HeaderValue::from_str(&header).expect("a scheme and base64 make a valid header value");
        value.set_sensitive(true);
        value
    }

    /// The endpoint's text, at most 200 characters, with the secret taken out in every form an
    /// echo of the request could hold it (see [`Redactor`](super::Redactor)).
    fn quote(&self, text: &str) -> String {
        let redactor = super::Redactor::new();
        redactor.hold_client_credentials(&self.client_id, &self.client_secret);
        let text = redactor.redact(text);
        if text.chars().count() <= 200 {
            return text;
        }
        let cut: String = text.chars().take(200).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn credentials(id: &str, secret: &str) -> ClientCredentials {
        ClientCredentials {
            token_url: "http://127.0.0.1:1/token".to_owned(),
            client_id: id.to_owned(),
            client_secret: Secret::new(secret),
            scopes: Vec::new(),
            resource: "http://127.0.0.1:2/mcp".to_owned(),
            auth: ClientAuth::Basic,
        }
    }

    #[test]
    fn basic_auth_encodes_the_id_and_secret_before_joining_them() {
        let header = credentials("my:client", "a b+c/%").basic_header();
        assert!(header.is_sensitive());
        let encoded = header
            .to_str()
            .expect("ASCII")
            .strip_prefix("Basic ")
            .expect("the Basic scheme");
        let decoded = base64::engine::general_purpose::STANDARD
            .decode(encoded)
            .expect("base64");
        assert_eq!(decoded, b"my%3Aclient:a+b%2Bc%2F%25");
    }

    #[test]
    fn a_quoted_answer_never_holds_the_secret() {
        let login = credentials("agent", "s3cret");
        assert_eq!(
            login.quote("client s3cret is wrong"),
            "client [redacted] is wrong"
        );
        assert_eq!(login.quote(&"x".repeat(300)).chars().count(), 201);
        // An echo of the posted form holds the secret form-urlencoded.
        let login = credentials("agent", "a+b/c=d&e");
        assert_eq!(
            login.quote("got client_secret=a%2Bb%2Fc%3Dd%26e"),
            "got client_secret=[redacted]"
        );
    }
}

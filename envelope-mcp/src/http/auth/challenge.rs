//! `WWW-Authenticate: Bearer …` (RFC 6750 §3), each pointing at the resource's metadata
//! (RFC 9728 §5.1), so a client that was refused learns where to get a token.

use http::HeaderValue;

/// The challenges of one resource.
pub(crate) struct Challenge {
    metadata_url: String,
    /// Every scope a tool declares, space-delimited: what a first token should ask for.
    scopes: String,
}

/// `text` as an RFC 6750 quoted value may hold it: printable ASCII without `"` and `\`.
fn quotable(text: &str) -> String {
    text.chars()
        .map(|c| match c {
            ' ' | '!' | '#'..='[' | ']'..='~' => c,
            _ => ' ',
        })
        .collect()
}

impl Challenge {
    pub(crate) fn new(metadata_url: &str, scopes: &[&str]) -> Challenge {
        Challenge {
            metadata_url: quotable(metadata_url),
            scopes: scopes.join(" "),
        }
    }

    fn header(&self, params: &[(&str, &str)]) -> HeaderValue {
        let mut value = String::from("Bearer ");
        for (name, text) in params {
            value.push_str(&format!("{name}=\"{}\", ", quotable(text)));
        }
        value.push_str(&format!("resource_metadata=\"{}\"", self.metadata_url));
        // Every part is printable ASCII by now.
        HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
    }

    /// No bearer token was sent: no error code (RFC 6750 §3.1), the scopes to ask for.
    pub(crate) fn missing(&self) -> HeaderValue {
        if self.scopes.is_empty() {
            return self.header(&[]);
        }
        self.header(&[("scope", &self.scopes)])
    }

    /// The token sent is not accepted, for `why`.
    pub(crate) fn invalid_token(&self, why: &str) -> HeaderValue {
        // wire: RFC 6750's error code
        self.header(&[("error", "invalid_token"), ("error_description", why)])
    }

    /// The `Authorization` header is malformed.
    pub(crate) fn invalid_request(&self, why: &str) -> HeaderValue {
        // wire: RFC 6750's error code
        self.header(&[("error", "invalid_request"), ("error_description", why)])
    }

    /// The token lacks scopes a call needs: `required`, all of the tool's.
    pub(crate) fn insufficient_scope<S: AsRef<str>>(&self, required: &[S]) -> HeaderValue {
        let required: Vec<&str> = required.iter().map(AsRef::as_ref).collect();
        let scope = required.join(" ");
        self.header(&[
            // wire: RFC 6750's error code
            ("error", envelope_core::INSUFFICIENT_SCOPE),
            ("scope", &scope),
            (
                "error_description",
                "the access token does not grant every scope this tool requires",
            ),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const METADATA: &str = "http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp";

    #[test]
    fn every_challenge_points_at_the_metadata() {
        let challenge = Challenge::new(METADATA, &["workspace:read", "workspace:heavy"]);
        assert_eq!(
            challenge.missing(),
            "Bearer scope=\"workspace:read workspace:heavy\", \
             resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        assert_eq!(
            challenge.invalid_token("it has \"expired\"\n"),
            "Bearer error=\"invalid_token\", error_description=\"it has  expired  \", \
             resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
        let insufficient = challenge.insufficient_scope(&["workspace:read", "workspace:heavy"]);
        let insufficient = insufficient.to_str().expect("ASCII");
        assert!(insufficient.starts_with(
            "Bearer error=\"insufficient_scope\", scope=\"workspace:read workspace:heavy\", "
        ));
        let bare = Challenge::new(METADATA, &[]);
        assert_eq!(
            bare.missing(),
            "Bearer resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/mcp\""
        );
    }
}

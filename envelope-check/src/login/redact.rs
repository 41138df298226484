//! Every form in which a secret a run holds could be printed, taken out of what the checker
//! prints: a token endpoint or a server may echo what it was sent, encoded as it was sent, or
//! cut short.
//!
//! The forms of each secret: as it is; JSON-escaped (a report's excerpt of an answer quoting
//! it); form-urlencoded, as `client_secret_post` sends it, with `+` or `%20` for a space and
//! upper- or lower-case hex; and for the client credentials, the `Basic` header's base64 of
//! `urlencode(id):urlencode(secret)` (and of the raw `id:secret`). Any run of at least
//! [`MIN_REDACTED_PREFIX`] characters that begins one of these forms is taken out too, so an
//! echo cut at 200 characters leaves no prefix of a secret behind.
//!
//! Invariant: [`Redactor::redact`] leaves no substring of its input that is a form of a held
//! secret, or a prefix of one at least [`MIN_REDACTED_PREFIX`] bytes long.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use base64::Engine as _;
use zeroize::Zeroizing;

use super::Secret;

/// The shortest prefix of a secret's form that is taken out (a whole form shorter than this is
/// taken out whole): shorter runs say too little of the secret, and match too much else.
pub const MIN_REDACTED_PREFIX: usize = 8;

/// What a secret becomes in printed text.
pub const REDACTED: &str = "[redacted]";

/// The printed forms of every secret a run holds; clones share them, so a token issued during
/// the run is redacted wherever the run's text is printed.
#[derive(Clone, Default)]
pub struct Redactor {
    forms: Arc<Mutex<Vec<Zeroizing<String>>>>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let held = self.lock().len();
        write!(f, "Redactor({held} forms, [redacted])")
    }
}

impl Redactor {
    /// A redactor holding no secret yet.
    pub fn new() -> Self {
        Redactor::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Zeroizing<String>>> {
        // A panic elsewhere while holding the lock leaves the forms whole: they are only pushed.
        self.forms.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn hold(&self, form: Zeroizing<String>) {
        if form.is_empty() {
            return;
        }
        let mut forms = self.lock();
        if !forms.iter().any(|held| held.as_str() == form.as_str()) {
            forms.push(form);
        }
    }

    /// Holds `secret` (a bearer token, a client secret) in each of its printed forms.
    pub fn hold_secret(&self, secret: &Secret) {
        for form in text_forms(secret.expose()) {
            self.hold(form);
        }
    }

    /// Holds a client's credentials: the secret's forms, and the `Basic` header's.
    pub fn hold_client_credentials(&self, client_id: &str, secret: &Secret) {
        self.hold_secret(secret);
        let engine = base64::engine::general_purpose::STANDARD;
        let id: String = form_urlencoded::byte_serialize(client_id.as_bytes()).collect();
        let encoded: Zeroizing<String> =
            Zeroizing::new(form_urlencoded::byte_serialize(secret.expose().as_bytes()).collect());
        for pair in [
            Zeroizing::new(format!("{id}:{}", encoded.as_str())),
            Zeroizing::new(format!("{client_id}:{}", secret.expose())),
        ] {
            let basic = Zeroizing::new(engine.encode(pair.as_bytes()));
            // Unpadded too: an echo may drop the `=`.
            let unpadded = Zeroizing::new(basic.trim_end_matches('=').to_owned());
            self.hold(basic);
            self.hold(unpadded);
        }
    }

    /// Every string of `value` (keys included) redacted as [`redact`](Redactor::redact) does:
    /// run over a report's JSON before it is written, where a string already holding escaped
    /// JSON (an excerpt of an answer) would be escaped a second time.
    pub fn redact_json(&self, value: &mut serde_json::Value) {
        use serde_json::Value;
        match value {
            Value::String(text) => *text = self.redact(text),
            Value::Array(items) => items.iter_mut().for_each(|item| self.redact_json(item)),
            Value::Object(map) => {
                let entries = std::mem::take(map);
                for (key, mut item) in entries {
                    self.redact_json(&mut item);
                    map.insert(self.redact(&key), item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }

    /// `text` with every held form, and every prefix of one at least
    /// [`MIN_REDACTED_PREFIX`] bytes long, replaced by `[redacted]`.
    pub fn redact(&self, text: &str) -> String {
        let forms = self.lock();
        let bytes = text.as_bytes();
        let mut spans: Vec<(usize, usize)> = Vec::new();
        for form in forms.iter() {
            let form = form.as_bytes();
            let needle = &form[..form.len().min(MIN_REDACTED_PREFIX)];
            let mut from = 0;
            while let Some(found) = find(&bytes[from..], needle) {
                let start = from + found;
                let mut end = start + needle.len();
                while end < bytes.len()
                    && end - start < form.len()
                    && bytes[end] == form[end - start]
                {
                    end += 1;
                }
                // A prefix that stops inside a character of the text takes the whole character.
                while !text.is_char_boundary(end) {
                    end += 1;
                }
                spans.push((start, end));
                from = start + 1;
                while !text.is_char_boundary(from) {
                    from += 1;
                }
            }
        }
        if spans.is_empty() {
            return text.to_owned();
        }
        spans.sort_unstable();
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in spans {
            if end <= at {
                continue;
            }
            if start > at {
                out.push_str(&text[at..start]);
            }
            if start >= at {
                out.push_str(REDACTED);
            }
            at = end;
        }
        out.push_str(&text[at..]);
        out
    }
}

/// Where `needle` first occurs in `haystack`.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    if needle.is_empty() || needle.len() > haystack.len() {
        return None;
    }
    haystack
        .windows(needle.len())
        .position(|window| window == needle)
}

/// A secret's printed forms: as is, JSON-escaped, and form-urlencoded in its variants.
fn text_forms(secret: &str) -> Vec<Zeroizing<String>> {
    let mut forms = vec![Zeroizing::new(secret.to_owned())];
    let json = Zeroizing::new(serde_json::Value::from(secret).to_string());
    let escaped = Zeroizing::new(json[1..json.len() - 1].to_owned());
    // Escaped twice: JSON text quoted inside a JSON string (a text content, excerpted).
    let twice = Zeroizing::new(serde_json::Value::from(escaped.as_str()).to_string());
    forms.push(Zeroizing::new(twice[1..twice.len() - 1].to_owned()));
    forms.push(escaped);
    // JSON may escape every non-ASCII character too.
    let mut ascii_json = String::new();
    for unit in secret.encode_utf16() {
        if unit < 0x80 {
            let text = serde_json::Value::from(char::from(unit as u8).to_string()).to_string();
            ascii_json.push_str(&text[1..text.len() - 1]);
        } else {
            ascii_json.push_str(&format!("\\u{unit:04x}"));
        }
    }
    forms.push(Zeroizing::new(ascii_json));
    let form: Zeroizing<String> =
        Zeroizing::new(form_urlencoded::byte_serialize(secret.as_bytes()).collect());
    let spaces = Zeroizing::new(form.replace('+', "%20"));
    for encoded in [form, spaces] {
        forms.push(Zeroizing::new(lower_hex(&encoded)));
        forms.push(encoded);
    }
    forms
}

/// `%2B` as `%2b`: what a server that re-encodes what it was sent may write.
fn lower_hex(encoded: &str) -> String {
    let mut out = String::with_capacity(encoded.len());
    let mut chars = encoded.chars();
    while let Some(char) = chars.next() {
        out.push(char);
        if char == '%' {
            for hex in chars.by_ref().take(2) {
                out.push(hex.to_ascii_lowercase());
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A secret as base64 secrets are: `+/=` beside `&:%` and a space.
    const SECRET: &str = "Zk9+b/Ar=&c:d%e f";

    fn redactor() -> Redactor {
        let redactor = Redactor::new();
        redactor.hold_client_credentials("agent:1", &Secret::new(SECRET));
        redactor
    }

    fn assert_redacted(form: &str) {
        let text = format!("before {form} after");
        let redacted = redactor().redact(&text);
        assert_eq!(redacted, "before [redacted] after", "{form}");
    }

    #[test]
    fn every_form_of_the_secret_is_redacted() {
        assert_redacted(SECRET);
        // JSON-escaped: no character of this one needs it, but a quote or a backslash does.
        let quoted = Redactor::new();
        quoted.hold_secret(&Secret::new("a\"b\\cdéfgh"));
        assert_eq!(
            quoted.redact(r#"{"echo":"a\"b\\cdéfgh","ascii":"a\"b\\cd\u00e9fgh"}"#),
            r#"{"echo":"[redacted]","ascii":"[redacted]"}"#
        );
        // `client_secret_post`'s form, and its variants.
        let form: String = form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
        assert_eq!(form, "Zk9%2Bb%2FAr%3D%26c%3Ad%25e+f");
        assert_redacted(&form);
        assert_redacted(&form.replace('+', "%20"));
        assert_redacted(&lower_hex(&form));
        // The `Basic` header's base64, padded or not, of the encoded pair and the raw one.
        let engine = base64::engine::general_purpose::STANDARD;
        let basic = engine.encode(format!("agent%3A1:{form}"));
        assert_redacted(&basic);
        assert_redacted(basic.trim_end_matches('='));
        assert_redacted(&engine.encode(format!("agent:1:{SECRET}")));
    }

    #[test]
    fn a_prefix_of_eight_characters_or_more_is_redacted() {
        let form: String = form_urlencoded::byte_serialize(SECRET.as_bytes()).collect();
        for cut in [8, 12, SECRET.len() - 1] {
            let prefix = &SECRET[..cut];
            assert_eq!(
                redactor().redact(&format!("echo: {prefix}…")),
                "echo: [redacted]…",
                "{prefix}"
            );
        }
        // An echo of the form cut at 200 characters ends in a prefix of the encoded secret.
        let echo = format!(
            "grant_type=client_credentials&client_secret={}",
            &form[..10]
        );
        assert_eq!(
            redactor().redact(&echo),
            "grant_type=client_credentials&client_secret=[redacted]"
        );
        // Seven characters say too little: left alone.
        assert_eq!(redactor().redact("Zk9+b/A"), "Zk9+b/A");
    }

    #[test]
    fn a_report_s_json_is_redacted_string_by_string() {
        let redactor = Redactor::new();
        redactor.hold_secret(&Secret::new(r#"tok"en\x1234"#));
        // An excerpt holds the token JSON-escaped; written out, it would be escaped again.
        let excerpt = serde_json::json!({ "echo": r#"tok"en\x1234"# }).to_string();
        let mut report = serde_json::json!({ "failures": [{ "response": excerpt }] });
        redactor.redact_json(&mut report);
        assert_eq!(
            report.to_string(),
            r#"{"failures":[{"response":"{\"echo\":\"[redacted]\"}"}]}"#
        );
        // And quoted twice over, as text content that is itself JSON.
        let twice = serde_json::Value::from(excerpt).to_string();
        assert_eq!(redactor.redact(&twice), r#""{\"echo\":\"[redacted]\"}""#);
    }

    #[test]
    fn tokens_held_later_are_redacted_by_every_clone() {
        let redactor = Redactor::new();
        let printer = redactor.clone();
        redactor.hold_secret(&Secret::new("eyJhbGciOiJIUzI1NiJ9.issued-later"));
        assert_eq!(
            printer.redact("400: bad token eyJhbGciOiJIUzI1NiJ9.issued-later here"),
            "400: bad token [redacted] here"
        );
        assert!(!format!("{printer:?}").contains("eyJ"));
        // Overlapping and repeated forms leave one mark each, and the rest of the text whole.
        assert_eq!(
            printer.redact("é eyJhbGciOiJIUzI1NiJ9 eyJhbGciOiJIUzI1NiJ9.issued-later é"),
            "é [redacted] [redacted] é"
        );
    }
}

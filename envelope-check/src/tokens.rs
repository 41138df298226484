//! The opaque tokens of an answer (continuations, target refs, anything that looks sealed),
//! masked when answers and rows are compared: a server may seal each answer's tokens afresh.

use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::envelope as field;
use envelope_core::fields::next_action as action_field;
use envelope_core::paging::DEFAULT_CONTINUATION_FIELD;
use std::collections::BTreeSet;

use serde_json::Value;

/// The opaque tokens of an answer, masked when answers are compared: a server may seal each
/// answer's tokens afresh. A token is a string the answer hands back as a continuation (in
/// `completeness` or a next action's arguments), or one that looks sealed: 20 or more
/// base64url characters mixing upper case, lower case and digits (a path has `/` or `.`, a
/// hash no upper case).
pub(super) struct Tokens(pub(super) BTreeSet<String>);

impl Tokens {
    pub(super) fn of(envelope: &Value) -> Tokens {
        let mut tokens = BTreeSet::new();
        if let Some(token) =
            envelope[field::COMPLETENESS][completeness_field::CONTINUATION].as_str()
        {
            tokens.insert(token.to_owned());
        }
        // A page's target ref is sealed afresh on every answer too.
        if let Some(token) = envelope[field::DATA]["target_ref"].as_str() {
            tokens.insert(token.to_owned());
        }
        for action in envelope[field::NEXT_ACTIONS]
            .as_array()
            .into_iter()
            .flatten()
        {
            if let Some(token) =
                action[action_field::ARGUMENTS][DEFAULT_CONTINUATION_FIELD].as_str()
            {
                tokens.insert(token.to_owned());
            }
        }
        Tokens(tokens)
    }

    fn is_token(&self, text: &str) -> bool {
        let sealed = text.len() >= 20
            && text
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
            && text.bytes().any(|byte| byte.is_ascii_uppercase())
            && text.bytes().any(|byte| byte.is_ascii_lowercase())
            && text.bytes().any(|byte| byte.is_ascii_digit());
        sealed || self.0.contains(text)
    }

    /// `value` with every token replaced by one placeholder.
    pub(super) fn masked(&self, value: &Value) -> Value {
        match value {
            Value::String(text) if self.is_token(text) => Value::from("<token>"),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.masked(item)).collect())
            }
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, value)| (key.clone(), self.masked(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

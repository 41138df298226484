//! A call's arguments as a client sent them: the JSON value, and the first per-call control the
//! text named twice, which a parsed value can no longer tell.

use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
use serde_json::{Value, json};

use crate::controls::Controls;
use crate::fields::code::INVALID_CONTROL;
use crate::tool_error::ToolError;

/// A call's arguments, and the per-call control ([`Controls::KEYS`]) the text they were read
/// from named twice, if it did.
///
/// A JSON parser keeps one of a key given twice (serde_json the last) without a word: a call
/// carrying two `dialect`s or two `continuation`s would have one of them win silently. Read
/// from text ([`Arguments::from_json`]), the arguments remember it, and the server refuses the
/// call ([`control_given_twice`]) before its tool runs, on every surface alike. A [`Value`]
/// converts as it is: it holds each key once.
///
/// ```
/// use envelope_core::Arguments;
///
/// let twice = Arguments::from_json(r#"{"query":"x","dialect":"tsa","dialect":"cos"}"#)?;
/// assert_eq!(twice.given_twice(), Some("dialect"));
/// let once = Arguments::from_json(r#"{"query":"x","dialect":"cos"}"#)?;
/// assert_eq!(once.given_twice(), None);
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Arguments {
    value: Value,
    given_twice: Option<&'static str>,
}

impl Arguments {
    /// The arguments in the JSON text `text`, and the first control it names twice.
    pub fn from_json(text: &str) -> Result<Arguments, serde_json::Error> {
        Ok(Arguments {
            value: serde_json::from_str(text)?,
            given_twice: first_control_twice(text.as_bytes()),
        })
    }

    /// `value`, read from text in which `given_twice` was named twice (a transport that parsed
    /// the message itself says so).
    pub fn noting(value: Value, given_twice: Option<&'static str>) -> Arguments {
        Arguments { value, given_twice }
    }

    /// The first control the text named twice.
    pub fn given_twice(&self) -> Option<&'static str> {
        self.given_twice
    }

    /// The arguments as parsed (a key given twice holds its last value).
    pub fn value(&self) -> &Value {
        &self.value
    }

    /// The arguments as parsed.
    pub fn into_value(self) -> Value {
        self.value
    }
}

impl From<Value> for Arguments {
    fn from(value: Value) -> Self {
        Arguments {
            value,
            given_twice: None,
        }
    }
}

/// The refusal of a call whose arguments name `control` twice: `validation`, code
/// `invalid_control`, before the tool runs (so a retry with the control given once is safe).
pub fn control_given_twice(control: &str) -> ToolError {
    ToolError::validation(format!(
        "the control `{control}` is given twice in the arguments"
    ))
    .with_code(INVALID_CONTROL)
    .with_hint("give each control once")
    .with_data(json!({ "control": control }))
}

/// The first control the JSON object `arguments` names twice; `None` for one that names each
/// once, or for text that is no JSON object.
pub fn first_control_twice(arguments: &[u8]) -> Option<&'static str> {
    let mut json = serde_json::Deserializer::from_slice(arguments);
    json.deserialize_any(FirstTwice).ok().flatten()
}

/// The first control the `params.arguments` of the JSON-RPC message `message` names twice (a
/// `tools/call`'s, or a `prompts/get`'s, which no control reads).
pub fn first_control_twice_in_params(message: &[u8]) -> Option<&'static str> {
    #[derive(serde::Deserialize)]
    struct Message {
        params: Option<Params>,
    }
    #[derive(serde::Deserialize)]
    struct Params {
        arguments: Option<Twice>,
    }
    struct Twice(Option<&'static str>);
    impl<'de> serde::Deserialize<'de> for Twice {
        fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            deserializer.deserialize_any(FirstTwice).map(Twice)
        }
    }
    let message: Message = serde_json::from_slice(message).ok()?;
    message.params?.arguments?.0
}

/// Visits a JSON value: for an object, the first control named twice; anything else, none.
struct FirstTwice;

impl<'de> Visitor<'de> for FirstTwice {
    type Value = Option<&'static str>;

    fn expecting(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut seen = [false; Controls::KEYS.len()];
        let mut twice = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            map.next_value::<IgnoredAny>()?;
            if let Some(index) = Controls::KEYS.iter().position(|control| *control == key) {
                if seen[index] {
                    twice = twice.or(Some(Controls::KEYS[index]));
                }
                seen[index] = true;
            }
        }
        Ok(twice)
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_control_named_twice_is_found_however_it_is_spelt() {
        for (text, twice) in [
            (r#"{"dialect":"tsa","dialect":"cos"}"#, Some("dialect")),
            (
                r#"{"continuation":"a","q":1,"continuation":"b"}"#,
                Some("continuation"),
            ),
            // An escaped key is the same key.
            (r#"{"dialect":"tsa","dialec\u0074":"cos"}"#, Some("dialect")),
            (
                r#"{"compact_only":true,"response_mode":"full","compact_only":false}"#,
                Some("compact_only"),
            ),
            // The tool's own arguments may repeat: the tool's decoding judges them.
            (r#"{"query":"a","query":"b"}"#, None),
            // Nested objects are the tool's own.
            (r#"{"filter":{"dialect":"a","dialect":"b"}}"#, None),
            (r#"{"dialect":"cos"}"#, None),
            (r#"["dialect","dialect"]"#, None),
            ("not json", None),
        ] {
            assert_eq!(first_control_twice(text.as_bytes()), twice, "{text}");
        }
    }

    #[test]
    fn a_messages_arguments_are_read_for_it() {
        let message = br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"dialect":"a","dialect":"b"}}}"#;
        assert_eq!(first_control_twice_in_params(message), Some("dialect"));
        // The order of the members does not matter.
        let message = br#"{"params":{"arguments":{"continuation":"a","continuation":"b"},"name":"t"},"method":"tools/call","id":1,"jsonrpc":"2.0"}"#;
        assert_eq!(first_control_twice_in_params(message), Some("continuation"));
        for message in [
            &br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"dialect":"a"}}}"#[..],
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#,
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"}}"#,
        ] {
            assert_eq!(first_control_twice_in_params(message), None);
        }
    }

    #[test]
    fn the_refusal_says_which_control_and_that_nothing_ran() {
        let refused = control_given_twice("dialect");
        assert_eq!(refused.code(), Some(INVALID_CONTROL));
        assert!(refused.did_not_run());
        assert_eq!(refused.data(), Some(&json!({ "control": "dialect" })));
    }
}

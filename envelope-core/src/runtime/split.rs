//! The per-call controls split from a call's arguments: the one function that reads them.
//!
//! A server's door calls it once per call, before the tool runs, and hands the result to every
//! later stage (the tool's entry, the budget stage, the refusals); a tool called directly,
//! outside a server, has its entry call it instead. Either way a control is read out of the
//! arguments here and nowhere else.

use serde::Deserialize as _;
use serde_json::{Map, Value, json};

use crate::control_names::ControlNames;
use crate::controls::Controls;
use crate::dialect::{DIALECT_CONTROL, Dialect};
use crate::expressible::Dialects;
use crate::fields::code;
use crate::notice::Notice;
use crate::paging_core::INVALID_ARGUMENT;
use crate::tool_error::ToolError;
use serde::de::DeserializeOwned;

/// A call's arguments with its per-call controls split off.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ControlSplit {
    /// The tool's own arguments: every control removed, but one the tool declares itself (a
    /// paged tool's `continuation`), which it keeps as well.
    pub arguments: Map<String, Value>,
    /// The controls, decoded and checked against the answer's dialect.
    pub controls: Controls,
    /// The controls exactly as given, by name: for a transport that judges a value before it
    /// is decoded (the HTTP API, which answers in one dialect only).
    pub given: Map<String, Value>,
    /// What the answer warns of (`continuation` given to a tool that does not page).
    pub notices: Vec<Notice>,
}

/// Why a call's controls refuse it before its tool runs, and the controls its answer is shaped
/// by: none for a value that could not be read, the decoded ones for a dialect that cannot
/// express one of them.
#[derive(Debug, Clone, PartialEq)]
pub struct ControlRefusal {
    /// The `validation` error the call answers.
    pub error: ToolError,
    /// The controls the refusal's answer is shaped by.
    pub controls: Controls,
    /// What the answer warns of besides, found before the refusal.
    pub notices: Vec<Notice>,
    /// The controls as given, by name, as far as they were split off (none when the arguments
    /// are not an object).
    pub given: Map<String, Value>,
}

impl From<ToolError> for ControlRefusal {
    fn from(error: ToolError) -> Self {
        ControlRefusal {
            error,
            controls: Controls::default(),
            notices: Vec::new(),
            given: Map::new(),
        }
    }
}

/// Splits the per-call controls ([`Controls::KEYS`]) from the `arguments` of a call of the tool
/// `tool`, which declares the argument names `declared` (`None`: its schema cannot list them,
/// and every control is taken off).
///
/// `dialects` says which dialect the call answers in unless it asks, which it may ask for and
/// what each can write: a `dialect` control naming none of those offered, or a control the
/// answer's dialect cannot write, refuses the call, as does arguments that are not an object (`null` reads as `{}`) or
/// a control of the wrong type.
///
/// Each control is read under the name `names` gives it for this tool: its own, or, where the
/// tool's arguments use that name, the one it was renamed to; the tool's own argument is then
/// left to the tool.
// A refusal is built once per refused call, and read once: boxing it would cost every caller
// a deref for no gain.
#[allow(clippy::result_large_err)]
pub fn split_controls(
    tool: &str,
    arguments: Value,
    declared: Option<&[String]>,
    names: &ControlNames,
    dialects: Dialects,
) -> Result<ControlSplit, ControlRefusal> {
    let Dialects {
        dialect,
        offered,
        expressible,
    } = dialects;
    let mut object = match arguments {
        Value::Object(object) => object,
        Value::Null => Map::new(),
        other => {
            return Err(ToolError::validation(format!(
                "arguments must be a JSON object, got {}",
                json_kind(&other)
            ))
            .with_code(code::ARGUMENTS_NOT_OBJECT)
            .into());
        }
    };
    let declares = |key: &str| declared.is_some_and(|keys| keys.iter().any(|k| k == key));

    let mut given = Map::new();
    for key in Controls::KEYS {
        let wire = names.wire(key);
        let value = if declares(wire) {
            object.get(wire).cloned()
        } else {
            object.remove(wire)
        };
        if let Some(value) = value {
            given.insert(key.to_owned(), value);
        }
    }
    let mut notices = Vec::new();
    // Every tool accepts `continuation`, but only a tool that declares it pages: anywhere else
    // it would be dropped without a word, and the agent would think it paged.
    // wire: the paging argument
    let paging = names.wire("continuation");
    if given.contains_key("continuation") && declared.is_some() && !declares(paging) {
        notices.push(Notice::warning(
            code::CONTINUATION_IGNORED,
            format!("`{tool}` does not page; `{paging}` was ignored"),
        ));
    }
    // A refusal keeps what was found before it.
    let unshaped =
        |error: ToolError, notices: &mut Vec<Notice>, given: &Map<String, Value>| ControlRefusal {
            error,
            controls: Controls::default(),
            notices: std::mem::take(notices),
            given: given.clone(),
        };
    if let Some(asked) = given.get(DIALECT_CONTROL)
        && Dialect::deserialize(asked).is_err()
    {
        let error = Dialect::unknown(asked, names.wire(DIALECT_CONTROL));
        return Err(unshaped(error, &mut notices, &given));
    }
    let mut controls = Controls {
        names: names.clone(),
        ..Controls::default()
    };
    if !given.is_empty() {
        controls = decode_named::<Controls>(Value::Object(given.clone()), &|field| {
            names.wire(field).to_owned()
        })
        .map_err(|error| unshaped(error, &mut notices, &given))?;
        controls.names = names.clone();
        if let Some(asked) = controls.dialect
            && !offered.contains(asked)
        {
            let error = asked.not_offered(offered, names.wire(DIALECT_CONTROL));
            return Err(unshaped(error, &mut notices, &given));
        }
        // What the answer's dialect cannot write is refused before the tool runs, never
        // dropped from the answer without a word.
        let dialect = controls.dialect.unwrap_or(dialect);
        if let Some((control, value)) = given
            .iter()
            .find(|(control, value)| !expressible.expresses(dialect, control, value))
        {
            return Err(ControlRefusal {
                error: expressible.cannot_express(dialect, control, value, names),
                controls,
                notices,
                given,
            });
        }
    }
    Ok(ControlSplit {
        arguments: object,
        controls,
        given,
        notices,
    })
}

/// What a JSON value is, for a message.
pub(super) fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Decodes with the failing field named: `invalid argument `limit`: invalid type: …`.
pub(super) fn decode_value<T: DeserializeOwned>(value: Value) -> Result<T, ToolError> {
    decode_named(value, &str::to_owned)
}

/// [`decode_value`], the failing field named as `name` has it (a control renamed on its
/// tool is refused under the name the caller sent it as).
fn decode_named<T: DeserializeOwned>(
    value: Value,
    name: &dyn Fn(&str) -> String,
) -> Result<T, ToolError> {
    serde_path_to_error::deserialize(value).map_err(|error| {
        let field = error.path().to_string();
        // The path's first segment is the control; what follows it (`.key`, `[0]`) is inside
        // its value.
        let field = if field == "." {
            field
        } else {
            let end = field.find(['.', '[']).unwrap_or(field.len());
            format!("{}{}", name(&field[..end]), &field[end..])
        };
        let inner = error.into_inner();
        if field == "." {
            ToolError::validation(format!("invalid arguments: {inner}"))
                .with_code(code::INVALID_ARGUMENTS)
        } else {
            ToolError::validation(format!("invalid argument `{field}`: {inner}"))
                .with_code(INVALID_ARGUMENT)
                .with_data(json!({ "field": field }))
        }
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::controls::ResponseMode;

    #[allow(clippy::result_large_err)] // As `split_controls`'s own.
    fn split(
        arguments: Value,
        declared: Option<&[String]>,
    ) -> Result<ControlSplit, ControlRefusal> {
        split_controls(
            "t",
            arguments,
            declared,
            &ControlNames::STANDARD,
            Dialects::default(),
        )
    }

    #[test]
    fn controls_leave_the_arguments_but_a_declared_one_stays() {
        let declared = ["query".to_owned(), "continuation".to_owned()];
        let split = split(
            json!({"query": "x", "response_mode": "full", "continuation": "tok"}),
            Some(&declared),
        )
        .expect("as the test built it");
        assert_eq!(
            Value::Object(split.arguments),
            json!({"query": "x", "continuation": "tok"})
        );
        assert_eq!(split.controls.response_mode, ResponseMode::Full);
        assert_eq!(split.controls.continuation.as_deref(), Some("tok"));
        assert!(split.notices.is_empty());
    }

    #[test]
    fn a_renamed_control_is_refused_under_the_name_it_was_sent_as() {
        let own = ["dialect".to_owned(), "response_mode".to_owned()];
        let names = ControlNames::avoiding(&own);
        let refused = |arguments: Value| {
            let refusal = split_controls("t", arguments, Some(&own), &names, Dialects::default())
                .expect_err("refused");
            serde_json::to_value(&refusal.error).expect("serializes")
        };
        // The tool's own `dialect` and `response_mode` are its arguments, never refused here.
        let split = split_controls(
            "t",
            json!({"dialect": "postgres", "response_mode": 3}),
            Some(&own),
            &names,
            Dialects::default(),
        )
        .expect("the tool's own arguments");
        assert_eq!(split.arguments.len(), 2);
        for (arguments, field) in [
            (json!({"envelope_dialect": "nope"}), "envelope_dialect"),
            (
                json!({"envelope_response_mode": 3}),
                "envelope_response_mode",
            ),
        ] {
            let error = refused(arguments);
            assert_eq!(error["data"]["field"], field, "{error}");
            let message = error["message"].as_str().expect("a message");
            assert!(message.contains(&format!("`{field}`")), "{message}");
        }
    }

    #[test]
    fn a_continuation_for_a_tool_that_does_not_page_is_warned_of() {
        let split = split(json!({"continuation": "tok"}), Some(&[])).expect("as the test built it");
        assert!(split.arguments.is_empty());
        assert_eq!(split.notices.len(), 1);
        assert_eq!(split.notices[0].code, code::CONTINUATION_IGNORED);
    }

    #[test]
    fn unreadable_controls_refuse_unshaped() {
        for (arguments, expected) in [
            (json!([1]), code::ARGUMENTS_NOT_OBJECT),
            (json!({"response_mode": 3}), code::INVALID_ARGUMENT),
        ] {
            let refusal = split(arguments, Some(&[])).expect_err("refused");
            assert_eq!(refusal.error.code(), Some(expected));
            assert_eq!(refusal.controls, Controls::default());
        }
        let refusal = split(json!({"dialect": "bogus"}), Some(&[])).expect_err("refused");
        assert_eq!(refusal.controls, Controls::default());
    }

    #[test]
    fn null_arguments_read_as_none() {
        assert_eq!(
            split(Value::Null, None).expect("as the test built it"),
            ControlSplit::default()
        );
    }
}

//! The per-call controls as query parameters and headers, merged into a call's arguments, and
//! the budget opt-out that only the gateway takes.

use envelope_core::stage::{ControlNames, Controls};
use envelope_core::{DIALECT_CONTROL, Dialect};
use serde_json::Value;

/// The query parameter that opts a call out of budget trimming: `apply_budget=false`. The
/// response is then trimmed only to the gateway's ceiling
/// ([`RestConfig::with_unbudgeted_ceiling`](super::RestConfig::with_unbudgeted_ceiling)).
pub const APPLY_BUDGET: &str = "apply_budget";

/// The header form of [`APPLY_BUDGET`]: `Envelope-Apply-Budget: false`.
pub const APPLY_BUDGET_HEADER: &str = "envelope-apply-budget";

/// The prefix of a control's header: `Envelope-` and the control's name with `-` for `_`
/// (`Envelope-Response-Mode: full`).
pub const CONTROL_HEADER_PREFIX: &str = "envelope-";

/// The header that carries the control `key`, lowercase.
pub fn control_header(key: &str) -> String {
    format!("{CONTROL_HEADER_PREFIX}{}", key.replace('_', "-"))
}

/// Every header the gateway reads besides the standard ones, lowercase: the controls' and the
/// budget opt-out's (a CORS preflight must allow them).
pub fn headers() -> Vec<String> {
    Controls::KEYS
        .iter()
        .map(|key| control_header(key))
        .chain([APPLY_BUDGET_HEADER.to_owned()])
        .collect()
}

/// What the gateway takes besides the tool's arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct GatewayControls {
    /// Whether the response is trimmed to the server's budget (`true` unless opted out).
    pub(crate) apply_budget: bool,
}

/// Merges the controls given as query parameters or headers into `arguments`, under the names
/// the called tool reads them by (`names`: a tool whose own arguments use a control's name
/// reads it renamed), and reads the budget opt-out. A control given in more than one place
/// must have one value; a query parameter must be a control. The error is the message of an
/// `invalid_control` refusal.
pub(crate) fn merge(
    arguments: &mut Value,
    query: Option<&str>,
    headers: &http::HeaderMap,
    names: &ControlNames,
) -> Result<GatewayControls, String> {
    let mut given: Vec<(String, String, &'static str)> = Vec::new();
    for (key, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        if key != APPLY_BUDGET && !Controls::KEYS.contains(&key.as_ref()) {
            return Err(format!(
                "unknown query parameter `{}`; the query takes only the controls {} and `{APPLY_BUDGET}`",
                cut(&key),
                Controls::KEYS.map(|key| format!("`{key}`")).join(", "),
            ));
        }
        given.push((key.into_owned(), value.into_owned(), "query parameter"));
    }
    for key in Controls::KEYS.into_iter().chain([APPLY_BUDGET]) {
        let name = match key {
            APPLY_BUDGET => APPLY_BUDGET_HEADER.to_owned(),
            control => control_header(control),
        };
        for value in headers.get_all(&name) {
            let value = value
                .to_str()
                .map_err(|_| format!("the `{name}` header is not visible ASCII"))?;
            given.push((key.to_owned(), value.to_owned(), "header"));
        }
    }
    let mut apply_budget: Option<bool> = None;
    for (key, raw, place) in given {
        if key == APPLY_BUDGET {
            let value = match raw.as_str() {
                "true" => true,
                "false" => false,
                other => {
                    return Err(format!(
                        "`{APPLY_BUDGET}` must be `true` or `false`, not `{}`",
                        cut(other)
                    ));
                }
            };
            if apply_budget.is_some_and(|earlier| earlier != value) {
                return Err(format!(
                    "`{APPLY_BUDGET}` is given twice with different values"
                ));
            }
            apply_budget = Some(value);
            continue;
        }
        // A non-object body is the tool's to refuse; there is nothing to merge into.
        let Some(object) = arguments.as_object_mut() else {
            continue;
        };
        let value = typed(&key, raw);
        let key = names.wire(&key).to_owned();
        match object.get(&key) {
            Some(existing) if *existing != value => {
                return Err(format!(
                    "the control `{key}` is given twice with different values (the {place} \
                     disagrees with the body or another parameter)"
                ));
            }
            Some(_) => {}
            None => {
                object.insert(key, value);
            }
        }
    }
    Ok(GatewayControls {
        apply_budget: apply_budget.unwrap_or(true),
    })
}

/// Why the call cannot be answered here, when the controls it gave (by name, as the door split
/// them) ask for a dialect other than the envelope's: the gateway's statuses and RFC 9457
/// problems are the envelope's own fields, mapped, so it speaks no other contract's wire (MCP
/// answers in every dialect).
pub(crate) fn other_dialect(given: &serde_json::Map<String, Value>) -> Option<String> {
    let asked = given.get(DIALECT_CONTROL)?;
    if asked.as_str() == Some(Dialect::Envelope.name()) {
        return None;
    }
    Some(format!(
        "the control `{DIALECT_CONTROL}` may only be `{}` here: the HTTP API answers in the \
         envelope's wire, with RFC 9457 problems; the other dialects ({}) are served over MCP",
        Dialect::Envelope.name(),
        Dialect::names()
    ))
}

/// A control's value as the body would carry it: the string given when the control reads it
/// so, else the JSON it spells when the control reads that (`compact_only=true`), else the
/// string, which the door refuses as a `validation` error naming the control.
fn typed(key: &str, raw: String) -> Value {
    let text = Value::String(raw);
    if Controls::reads(key, &text) {
        return text;
    }
    match text.as_str().map(serde_json::from_str::<Value>) {
        Some(Ok(spelled)) if Controls::reads(key, &spelled) => spelled,
        _ => text,
    }
}

/// `text` cut to 64 characters, for an error message.
fn cut(text: &str) -> String {
    text.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> http::HeaderMap {
        pairs
            .iter()
            .map(|(name, value)| {
                (
                    http::HeaderName::from_static(name),
                    http::HeaderValue::from_static(value),
                )
            })
            .collect()
    }

    #[test]
    fn query_and_headers_become_arguments() {
        let mut arguments = json!({ "path": "a.rs" });
        let controls = merge(
            &mut arguments,
            Some("response_mode=full&compact_only=true"),
            &headers(&[("envelope-output-format", "toon")]),
            &ControlNames::STANDARD,
        )
        .expect("merged");
        assert_eq!(
            arguments,
            json!({
                "path": "a.rs",
                "response_mode": "full",
                "compact_only": true,
                "output_format": "toon",
            })
        );
        assert!(controls.apply_budget);
    }

    #[test]
    fn the_same_value_twice_is_fine_a_different_one_is_refused() {
        let mut arguments = json!({ "response_mode": "full" });
        merge(
            &mut arguments,
            Some("response_mode=full"),
            &headers(&[]),
            &ControlNames::STANDARD,
        )
        .expect("agrees");
        let error = merge(
            &mut arguments,
            None,
            &headers(&[("envelope-response-mode", "compact")]),
            &ControlNames::STANDARD,
        )
        .expect_err("disagrees");
        assert!(error.contains("`response_mode`"), "{error}");
    }

    #[test]
    fn apply_budget_is_read_from_either_place_and_checked() {
        let mut arguments = json!({});
        let controls = merge(
            &mut arguments,
            Some("apply_budget=false"),
            &headers(&[]),
            &ControlNames::STANDARD,
        )
        .expect("read");
        assert!(!controls.apply_budget);
        assert_eq!(arguments, json!({}), "not an argument of the tool");
        let controls = merge(
            &mut arguments,
            None,
            &headers(&[("envelope-apply-budget", "false")]),
            &ControlNames::STANDARD,
        )
        .expect("read");
        assert!(!controls.apply_budget);
        assert!(
            merge(
                &mut arguments,
                Some("apply_budget=no"),
                &headers(&[]),
                &ControlNames::STANDARD
            )
            .is_err()
        );
        assert!(
            merge(
                &mut arguments,
                Some("apply_budget=true"),
                &headers(&[("envelope-apply-budget", "false")]),
                &ControlNames::STANDARD,
            )
            .is_err()
        );
    }

    #[test]
    fn an_unknown_query_parameter_is_refused() {
        let error = merge(
            &mut json!({}),
            Some("path=a.rs"),
            &headers(&[]),
            &ControlNames::STANDARD,
        )
        .expect_err("refused");
        assert!(error.contains("`path`"), "{error}");
    }
}

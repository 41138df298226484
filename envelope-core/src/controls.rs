//! The per-call controls every tool accepts besides its own arguments: their names, their
//! types, their schema, their defaults, which of them the actions a call suggests carry, and
//! how a refused call reads them. Everything a control is, it is here: adding one is adding a
//! field to [`Controls`], its name to [`Controls::KEYS`] and its schema to
//! [`controls_properties`]; the door, the schemas, the dialects, the HTTP API and the docs read
//! them from here.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

/// `response_mode`: how much detail the structured payload carries.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// `compact` (default): bulky metadata left out; never a field an agent branches on.
    #[default]
    Compact,
    /// `full`: everything the tool produced.
    Full,
}

impl ResponseMode {
    /// Every mode, in wire order.
    pub const ALL: [ResponseMode; 2] = [ResponseMode::Compact, ResponseMode::Full];
}

/// `output_format`: how the text content mirrors the envelope.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// `json` (default): compact JSON.
    #[default]
    Json,
    /// `toon`: Token-Oriented Object Notation.
    Toon,
}

impl OutputFormat {
    /// Every format, in wire order.
    pub const ALL: [OutputFormat; 2] = [OutputFormat::Json, OutputFormat::Toon];
}

/// The per-call controls every tool accepts besides its own arguments.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Controls {
    /// `compact` (default) or `full`.
    #[serde(default)]
    pub response_mode: ResponseMode,
    /// `json` (default) or `toon`.
    #[serde(default)]
    pub output_format: OutputFormat,
    /// Reduce the response to its control surface.
    #[serde(default)]
    pub compact_only: bool,
    /// The next page's token, as the `next-page` action's arguments carry it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<String>,
    /// The wire this one answer is written in; absent means the server's own choice.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dialect: Option<crate::dialect::Dialect>,
    /// The names the called tool reads these under, and the actions its answer offers write
    /// them under: the controls' own unless the tool's arguments use one
    /// ([`ControlNames`](crate::stage::ControlNames)). Not a control itself.
    #[serde(skip)]
    #[schemars(skip)]
    pub names: crate::control_names::ControlNames,
}

impl Controls {
    /// The argument names the controls take, accepted by every tool.
    pub const KEYS: [&'static str; 5] = crate::control_names::CONTROL_KEYS;

    /// Whether the response keeps everything `meta` holds: `response_mode: full` without
    /// `compact_only`. Otherwise the observability-only fields are left out.
    pub fn keeps_full_meta(&self) -> bool {
        self.response_mode == ResponseMode::Full && !self.compact_only
    }

    /// Whether the call asked for a compact form (`compact_only`, or `output_format: toon`), in
    /// which a tool may show long row fields in part: a declared cut
    /// ([`PageCount::shortened`](crate::paging::PageCount::shortened) says it in
    /// `completeness.shortened` and offers the page whole), never a silent one.
    pub fn compacts_rows(&self) -> bool {
        self.compact_only || self.output_format == OutputFormat::Toon
    }

    /// The controls every action the answer suggests carries, by name: the `dialect` a call
    /// asked for, so that following one answers in the same wire (and a continuation, bound to
    /// its dialect, resumes). Empty when the call asked for none.
    pub fn carried(&self) -> serde_json::Map<String, serde_json::Value> {
        let mut carried = serde_json::Map::new();
        if let Some(asked) = self.dialect {
            carried.insert(
                self.names.wire(crate::dialect::DIALECT_CONTROL).to_owned(),
                serde_json::Value::String(asked.name().to_owned()),
            );
        }
        carried
    }

    /// Reads the controls `given` (by name, as a call gave them) leniently: a missing or
    /// invalid value reads as its default. For an answer refused before its controls are
    /// checked (a caller without the tool's scopes), which is still shaped as the call asked;
    /// the door's own reading ([`split_controls`](crate::stage::split_controls)) refuses an
    /// invalid control as a `validation` error.
    pub fn lenient(given: &Map<String, Value>) -> Controls {
        // Each control alone, as the type reads it; then those that read, together.
        let readable: Map<String, Value> = given
            .iter()
            .filter(|(key, value)| Controls::reads(key, value))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect();
        serde_json::from_value(Value::Object(readable)).unwrap_or_default()
    }

    /// Whether the control named `control` reads `value` (`false` for a name that is no
    /// control).
    pub fn reads(control: &str, value: &Value) -> bool {
        let alone = Map::from_iter([(control.to_owned(), value.clone())]);
        Controls::KEYS.contains(&control)
            && serde_json::from_value::<Controls>(Value::Object(alone)).is_ok()
    }

    /// Whether `value` is the default of the control named `control`: what every dialect
    /// writes, as it writes an absent control. A control without a default value (`dialect`,
    /// `continuation`) or a name that is no control never is.
    pub fn is_default(control: &str, value: &Value) -> bool {
        serde_json::to_value(Controls::default())
            .ok()
            .and_then(|defaults| defaults.get(control).cloned())
            .is_some_and(|default| default == *value)
    }
}

/// The shaping controls' property schemas, in the compact form every tool's input schema
/// carries: self-contained (no `$ref` into definitions the tool's schema may not have), one
/// line of description each, wire values from the enums themselves.
///
/// `continuation` is not among them: a tool that pages declares it in its own arguments, and a
/// tool that does not page must not advertise it.
///
/// Built once: every listing, every schema and the server's instructions (which a stateless
/// HTTP server states on every request) read the same table.
pub(crate) fn controls_properties() -> &'static Map<String, Value> {
    static PROPERTIES: std::sync::LazyLock<Map<String, Value>> =
        std::sync::LazyLock::new(build_controls_properties);
    &PROPERTIES
}

fn build_controls_properties() -> Map<String, Value> {
    fn names<T: Serialize>(values: &[T]) -> Vec<Value> {
        values
            .iter()
            .filter_map(|value| serde_json::to_value(value).ok())
            .collect()
    }
    let properties = json!({
        "response_mode": {
            "description": "`compact` (default) leaves observability fields out of `meta`; `full` keeps them.",
            "enum": names(&ResponseMode::ALL),
        },
        "output_format": {
            "description": "How the text content mirrors the result: `json` (default) or `toon` (a compact form: long row fields may be shown in part, as `completeness.shortened` says).",
            "enum": names(&OutputFormat::ALL),
        },
        "compact_only": {
            "description": "Keep only the fields an agent branches on (a compact form: long row fields may be shown in part, as `completeness.shortened` says).",
            "type": "boolean",
        },
        crate::dialect::DIALECT_CONTROL: {
            "description": "The contract the answer is written in: `envelope`, `pincher`, `cos`, `tsa` or `frigg`; the server's own when absent.",
            "enum": names(&crate::dialect::Dialect::ALL),
        },
    });
    match properties {
        Value::Object(properties) => properties,
        _ => Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_read_leniently() {
        let given = json!({"response_mode": "full", "output_format": "yaml", "compact_only": true});
        let controls = Controls::lenient(given.as_object().expect("as the test built it"));
        assert_eq!(controls.response_mode, ResponseMode::Full);
        assert_eq!(
            controls.output_format,
            OutputFormat::Json,
            "invalid reads as the default"
        );
        assert!(controls.compact_only);
        assert_eq!(controls.continuation, None);
    }

    #[test]
    fn a_default_is_what_the_type_defaults_to() {
        assert!(Controls::is_default("response_mode", &json!("compact")));
        assert!(Controls::is_default("compact_only", &json!(false)));
        assert!(!Controls::is_default("compact_only", &json!(true)));
        assert!(!Controls::is_default("dialect", &json!("envelope")));
        assert!(!Controls::is_default("query", &json!("x")));
    }

    #[test]
    fn every_control_is_a_field_and_a_field_is_a_control() {
        // Set every control: each serializes under its name, and only the names KEYS lists.
        let all = Controls {
            response_mode: ResponseMode::Full,
            output_format: OutputFormat::Toon,
            compact_only: true,
            continuation: Some("t".to_owned()),
            dialect: Some(crate::dialect::Dialect::Cos),
            names: crate::control_names::ControlNames::STANDARD,
        };
        let Value::Object(fields) = serde_json::to_value(&all).expect("as the test built it")
        else {
            panic!("an object");
        };
        let mut names: Vec<&str> = fields.keys().map(String::as_str).collect();
        let mut keys = Controls::KEYS.to_vec();
        names.sort_unstable();
        keys.sort_unstable();
        assert_eq!(names, keys);
        // Each has a schema in every tool's input, but the paging argument, which a paged
        // tool declares itself.
        let properties = controls_properties();
        for key in Controls::KEYS
            .into_iter()
            .filter(|key| *key != "continuation")
        {
            assert!(properties.contains_key(key), "{key}");
        }
    }
}

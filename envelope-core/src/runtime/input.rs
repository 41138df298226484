//! A tool's input schema: its arguments' schema with the per-call controls added, and the
//! argument names it declares.

use std::sync::OnceLock;

use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};

use super::typing::ToolArgs;
use crate::control_names::ControlNames;
use crate::controls::controls_properties;

/// The argument names one tool accepts, computed once per tool.
#[derive(Debug)]
pub struct KeyCache(pub(super) OnceLock<Vec<String>>);

impl KeyCache {
    /// An empty cache, for a `static`.
    pub const fn new() -> Self {
        KeyCache(OnceLock::new())
    }
}

impl Default for KeyCache {
    fn default() -> Self {
        Self::new()
    }
}

pub(super) fn schema_for<A: JsonSchema>() -> Value {
    crate::schema::input_generator()
        .into_root_schema_for::<A>()
        .to_value()
}

/// Property names declared by a schema: at the root, and in `allOf`/`anyOf`/`oneOf` members
/// (what `#[serde(flatten)]` produces), following local `$ref`s. `None` when the schema does not
/// describe an object's fields, so unknown keys cannot be judged.
pub(super) fn declared_properties(schema: &Value) -> Option<Vec<String>> {
    fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
        match node.get("$ref").and_then(Value::as_str) {
            Some(pointer) => pointer
                .strip_prefix('#')
                .and_then(|pointer| root.pointer(pointer))
                .unwrap_or(node),
            None => node,
        }
    }
    fn collect(root: &Value, node: &Value, out: &mut Vec<String>, depth: usize) -> bool {
        let node = resolve(root, node);
        let mut found = false;
        if let Some(properties) = node.get("properties").and_then(Value::as_object) {
            out.extend(properties.keys().cloned());
            found = true;
        }
        if depth < 4 {
            for key in ["allOf", "anyOf", "oneOf"] {
                for member in node
                    .get(key)
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    found |= collect(root, member, out, depth + 1);
                }
            }
        }
        found
    }
    let mut out = Vec::new();
    collect(schema, schema, &mut out, 0).then(|| {
        out.sort_unstable();
        out.dedup();
        out
    })
}

/// The input schema of a tool taking `A`: `A`'s schema with the per-call controls added.
pub fn input_schema<A: ToolArgs>() -> Schema {
    controls_added(schema_for::<A>(), &ControlNames::STANDARD)
}

/// A tool's own argument schema with the per-call controls added, as every envelope tool
/// lists them: beside its properties, or, for a schema without plain properties, beside the
/// whole of it. A tool built at run time (one a server fronts for another) lists this.
///
/// ```
/// use envelope_core::stage::add_controls;
///
/// let own = schemars::json_schema!({"type": "object", "properties": {"url": {"type": "string"}}});
/// let listed = add_controls(own).to_value();
/// assert!(listed["properties"]["url"].is_object());
/// assert!(listed["properties"]["response_mode"].is_object());
/// ```
pub fn add_controls(schema: Schema) -> Schema {
    controls_added(schema.to_value(), &ControlNames::STANDARD)
}

/// [`add_controls`] for a tool whose controls are read under `names`: a renamed control is
/// listed under its new name, its description saying which control it is and why it was
/// renamed, and the tool's own argument of the control's name stays as the tool lists it.
///
/// ```
/// use envelope_core::stage::{ControlNames, add_controls_named};
///
/// let own = schemars::json_schema!({
///     "type": "object",
///     "properties": {"dialect": {"type": "string", "description": "SQL dialect"}}
/// });
/// let names = ControlNames::avoiding(&["dialect".to_owned()]);
/// let listed = add_controls_named(own, &names).to_value();
/// assert_eq!(listed["properties"]["dialect"]["description"], "SQL dialect");
/// let control = listed["properties"]["envelope_dialect"]["description"].as_str().unwrap();
/// assert!(control.starts_with("The per-call control `dialect`"), "{control}");
/// ```
pub fn add_controls_named(schema: Schema, names: &ControlNames) -> Schema {
    controls_added(schema.to_value(), names)
}

fn controls_added(mut schema: Value, names: &ControlNames) -> Schema {
    let standard = controls_properties();
    let renamed;
    let controls = if names.is_standard() {
        standard
    } else {
        renamed = standard
            .iter()
            .map(|(control, property)| {
                let wire = names.wire(control);
                if wire == control {
                    return (control.clone(), property.clone());
                }
                let mut property = property.clone();
                let description = property
                    .get("description")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let described = names.describe(control, description).into_owned();
                property["description"] = Value::String(described);
                (wire.to_owned(), property)
            })
            .collect::<serde_json::Map<String, Value>>();
        &renamed
    };
    match schema.get_mut("properties").and_then(Value::as_object_mut) {
        Some(properties) => {
            for (key, value) in controls {
                properties
                    .entry(key.clone())
                    .or_insert_with(|| value.clone());
            }
        }
        None => {
            // An arguments type without plain properties (an enum, a flattened union): the
            // controls ride beside it.
            let inner = std::mem::take(&mut schema);
            let defs = inner.get("$defs").cloned();
            let mut wrapper = json!({
                "type": "object",
                "allOf": [inner],
                "properties": controls.clone(),
            });
            if let Some(defs) = defs {
                wrapper["$defs"] = defs;
            }
            schema = wrapper;
        }
    }
    Schema::try_from(schema).unwrap_or_else(|_| Schema::from(true))
}

/// The input schema of a tool without arguments: the per-call controls only.
pub fn empty_input_schema() -> Schema {
    let schema = json!({
        "type": "object",
        "properties": controls_properties(),
    });
    Schema::try_from(schema).unwrap_or_else(|_| Schema::from(true))
}

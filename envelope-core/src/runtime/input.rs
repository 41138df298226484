//! A tool's input schema: its arguments' schema with the per-call controls added, and the
//! argument names it declares.

use std::sync::OnceLock;

use schemars::{JsonSchema, Schema};
use serde_json::{Value, json};

use super::typing::ToolArgs;
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
    controls_added(schema_for::<A>())
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
    controls_added(schema.to_value())
}

fn controls_added(mut schema: Value) -> Schema {
    let controls = controls_properties();
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

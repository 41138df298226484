//! The lean listing: what a server lists of each tool unless told to list everything. A model
//! is shown the listing on every turn, so it carries the tool's own arguments and its typed
//! payload, and says what every tool shares once rather than once per tool:
//!
//! - [`lean_input_schema`]: the tool's own arguments, without the shaping controls every tool
//!   accepts (described once, by [`controls_instructions`], in the server's instructions) and
//!   without the root's `title` and the arguments type's own doc;
//! - [`terse_output_schema`]: the envelope's fields at the depth an agent branches on (`ok`,
//!   `verdict`, the error's `category` and `retryable`, that each next action has a `tool`
//!   and `arguments`), `data` typed exactly as in the full output schema.
//!
//! Every response still validates against both: nothing is tighter than the full schemas, and
//! `docs/envelope.schema.json` holds the envelope documented in full.

use std::collections::BTreeSet;

use schemars::Schema;
use serde::Serialize;
use serde_json::{Map, Value, json};

use crate::controls::controls_properties;
use crate::fields::envelope as field;
use crate::fields::error as error_field;
use crate::fields::next_action as action_field;
use crate::tool_error::Category;
use crate::verdict::Verdict;

/// `input` (a tool's input schema as `#[tool]` writes it, the shaping controls added) as the
/// lean listing lists it: without the controls the runtime added (a tool that declares an
/// argument of a control's name keeps its own, and a schema that refuses unnamed properties,
/// `additionalProperties: false`, keeps them all), and without the root's `title` and
/// `description` (the tool's description is what a model reads about the tool). Unchanged but
/// for that; a schema that is no object is returned as it is.
///
/// ```
/// use envelope_core::schema::lean_input_schema;
/// use envelope_core::{Tool, ToolResult, tool};
///
/// /// The arguments.
/// #[derive(serde::Deserialize, schemars::JsonSchema)]
/// struct Args {
///     /// What to look for.
///     query: String,
/// }
///
/// /// Search.
/// #[tool(tier = lite, read_only)]
/// fn search(args: Args) -> ToolResult<String> {
///     Ok(args.query)
/// }
///
/// let listed = lean_input_schema(&search {}.input_schema()).to_value();
/// assert_eq!(
///     listed,
///     serde_json::json!({
///         "type": "object",
///         "properties": {"query": {"type": "string", "description": "What to look for."}},
///         "required": ["query"]
///     })
/// );
/// ```
pub fn lean_input_schema(input: &Schema) -> Schema {
    let mut schema = input.clone();
    let Some(root) = schema.as_object_mut() else {
        return schema;
    };
    // A `$schema` stays: it is the author's (`#[tool]` writes none), and MCP asks a server to
    // list it as written.
    for key in ["title", "description"] {
        root.remove(key);
    }
    // A schema that refuses properties it does not name would refuse the controls every tool
    // accepts: it keeps them.
    let closed = |schema: &Map<String, Value>| {
        ["additionalProperties", "unevaluatedProperties"]
            .iter()
            .any(|key| schema.get(*key) == Some(&Value::Bool(false)))
    };
    let closed_member = root
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object)
        .any(closed);
    if closed(root) || closed_member {
        return schema;
    }
    let controls = controls_properties();
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        properties.retain(|name, property| controls.get(name) != Some(property));
    }
    // An arguments type without plain properties rides in an `allOf` beside the controls: with
    // them gone, the wrapper's empty `properties` goes too.
    if root
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
        && root.contains_key("allOf")
    {
        root.remove("properties");
    }
    schema
}

/// `output` (a tool's output schema as [`output_schema_for`](super::output_schema_for) writes
/// it) with the envelope's own fields terse: `ok`, `verdict`, the error's `category` and
/// `retryable` typed, each next action an object with a `tool` and `arguments`, `completeness`
/// and `meta` objects. `data` and the definitions it reaches stay exactly as they are.
/// A schema that is not an envelope's output schema (no ok branch) is returned as it is.
pub fn terse_output_schema(output: &Schema) -> Schema {
    let Some(root) = output.as_object() else {
        return output.clone();
    };
    let Some(Value::Array(branches)) = root.get("oneOf") else {
        return output.clone();
    };
    let Some(data) = branches
        .iter()
        .find(|branch| branch.pointer("/properties/ok/const") == Some(&Value::Bool(true)))
        .and_then(|branch| branch.pointer(&format!("/properties/{}", field::DATA)))
    else {
        return output.clone();
    };
    let mut terse = json!({
        "type": "object",
        "required": [field::OK, field::VERDICT, field::META],
        "properties": terse_properties(),
        "oneOf": branches,
    });
    if let Some(Value::Object(defs)) = root.get("$defs") {
        let reached = reached_definitions(data, defs);
        let kept: Map<String, Value> = defs
            .iter()
            .filter(|(name, _)| reached.contains(*name))
            .map(|(name, def)| (name.clone(), def.clone()))
            .collect();
        if !kept.is_empty() {
            terse["$defs"] = Value::Object(kept);
        }
    }
    Schema::try_from(terse).unwrap_or_else(|_| output.clone())
}

/// The envelope's fields as the terse output schema types them: those an agent branches on.
/// The others (`summary_line`, `next_step`, `empty_reason`, `diagnosis`, the notices) are
/// allowed, as every property is, and typed in the full schema.
fn terse_properties() -> Value {
    fn names<T: Serialize>(values: &[T]) -> Vec<Value> {
        values
            .iter()
            .filter_map(|value| serde_json::to_value(value).ok())
            .collect()
    }
    let object = json!({ "type": "object" });
    json!({
        (field::OK): { "type": "boolean" },
        (field::VERDICT): { "enum": names(Verdict::ALL) },
        (field::DATA): {},
        (field::ERROR): {
            "type": "object",
            "required": [error_field::CATEGORY, error_field::MESSAGE, error_field::RETRYABLE],
            "properties": {
                (error_field::CATEGORY): { "enum": names(Category::ALL) },
                (error_field::RETRYABLE): { "type": "boolean" },
            },
        },
        (field::COMPLETENESS): object,
        (field::NEXT_ACTIONS): {
            "type": "array",
            "items": {
                "type": "object",
                "required": [action_field::TOOL, action_field::ARGUMENTS],
            },
        },
        (field::META): object,
    })
}

/// The names of the definitions `schema` reaches through local `$ref`s, transitively.
fn reached_definitions(schema: &Value, defs: &Map<String, Value>) -> BTreeSet<String> {
    let mut reached = BTreeSet::new();
    let mut pending = BTreeSet::new();
    super::collect_refs(schema, &mut pending);
    while let Some(name) = pending.pop_first() {
        if !reached.contains(&name)
            && let Some(def) = defs.get(&name)
        {
            super::collect_refs(def, &mut pending);
            reached.insert(name);
        }
    }
    reached
}

/// What the lean listing leaves out of every tool's input schema, said once for a server's
/// instructions: the shaping controls, with the values each takes, from the same table the
/// full listing lists them from.
pub fn controls_instructions() -> String {
    // Said once: a stateless HTTP server states its instructions on every request.
    static SAID: std::sync::LazyLock<String> = std::sync::LazyLock::new(say_controls);
    SAID.clone()
}

fn say_controls() -> String {
    let mut said = String::from("Every tool also accepts these arguments:");
    for (name, property) in controls_properties() {
        let description = property
            .get("description")
            .and_then(Value::as_str)
            .unwrap_or_default();
        said.push_str(&format!("\n- `{name}`: {description}"));
    }
    said
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Hits {
        paths: Vec<String>,
        nested: Inner,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Inner {
        count: u32,
    }

    #[test]
    fn terse_output_keeps_the_payload_typed_and_only_its_definitions() {
        let schema = super::super::output_schema_for::<Hits>();
        let terse = terse_output_schema(&schema).to_value();
        let full = schema.to_value();
        let defs = terse["$defs"].as_object().expect("payload definitions");
        let names: Vec<&str> = defs.keys().map(String::as_str).collect();
        assert_eq!(names, ["Hits", "Inner"]);
        assert_eq!(defs["Hits"], full["$defs"]["Hits"]);
        assert_eq!(terse["oneOf"], full["oneOf"]);
        assert!(
            terse.to_string().len() * 3 < full.to_string().len(),
            "{terse}"
        );
    }

    #[test]
    fn terse_output_leaves_other_schemas_alone() {
        let other = schemars::json_schema!({ "type": "object" });
        assert_eq!(terse_output_schema(&other), other);
    }

    #[test]
    fn lean_input_keeps_a_control_the_tool_declares_itself() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        struct Args {
            /// The tool's own meaning.
            #[allow(dead_code)] // Read only through the schema.
            response_mode: Option<String>,
        }
        let listed = lean_input_schema(&crate::runtime::input_schema::<Args>()).to_value();
        let properties = listed["properties"].as_object().expect("properties");
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(names, ["response_mode"]);
        assert_eq!(
            properties["response_mode"]["description"],
            "The tool's own meaning."
        );
    }

    #[test]
    fn a_closed_schema_keeps_the_controls_it_would_refuse() {
        #[derive(serde::Deserialize, schemars::JsonSchema)]
        #[serde(deny_unknown_fields)]
        struct Args {
            #[allow(dead_code)] // Read only through the schema.
            query: String,
        }
        let listed = lean_input_schema(&crate::runtime::input_schema::<Args>()).to_value();
        assert_eq!(listed["additionalProperties"], false, "{listed}");
        for name in controls_properties().keys() {
            assert!(listed["properties"].get(name).is_some(), "{name}: {listed}");
        }
    }

    #[test]
    fn the_controls_are_said_once() {
        let said = controls_instructions();
        for name in controls_properties().keys() {
            assert_eq!(said.matches(&format!("`{name}`")).count(), 1, "{said}");
        }
    }
}

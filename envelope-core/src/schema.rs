//! The JSON Schemas a server publishes: the envelope's (as `docs/envelope.schema.json` holds
//! it), each tool's output schema with its payload typed, and the [`Portable`] transform every
//! listed schema goes through.

use std::collections::{BTreeMap, BTreeSet};

use schemars::generate::SchemaSettings;
use schemars::transform::{RecursiveTransform, Transform, transform_subschemas};
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::envelope::Envelope;

mod lean;

pub use lean::{controls_instructions, lean_input_schema, terse_output_schema};

/// Strings shorter than this many characters are never cut by a budget trimmer, so a payload
/// schema keeps its constraints on them (see [`output_schema_for`]).
pub const LONG_STRING_CHARS: usize = 200;

/// The settings every schema of this crate is generated with: draft 2020-12, made
/// [`Portable`].
pub(crate) fn settings() -> SchemaSettings {
    SchemaSettings::draft2020_12().with_transform(Portable)
}

/// The JSON Schema (draft 2020-12) of an envelope with any JSON payload.
///
/// Optional fields are described without a `null` alternative: absent fields are omitted on
/// the wire, never written as `null`.
pub fn envelope_schema() -> Schema {
    settings()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<Envelope<Value>>()
}

/// The output schema of a tool whose payload is a `T`: the envelope's, with `T`'s schema as
/// `data` in the ok branch.
///
/// `T`'s schema is loosened exactly where the budget trimmer may cut a payload, so every
/// trimmed response still validates: arrays may be shorter (no `minItems`), strings of
/// [`LONG_STRING_CHARS`] or more may be cut and end in `…[truncated]` (no `minLength`,
/// `pattern`, `format`, or `enum`/`const` of such strings), and an array or object of a
/// recursive type nested past the trimmer's depth limit may be a string marker. Nothing else changes: the trimmer never adds or removes an object's keys.
///
/// ```
/// use envelope_core::schema::output_schema_for;
///
/// #[derive(serde::Serialize, schemars::JsonSchema)]
/// struct Hits {
///     count: u32,
///     paths: Vec<String>,
/// }
///
/// let schema = output_schema_for::<Hits>().to_value();
/// let data = &schema["oneOf"][0]["properties"]["data"];
/// let hits = &schema["$defs"]["Hits"];
/// assert_eq!(data["$ref"], "#/$defs/Hits");
/// assert_eq!(hits["properties"]["count"]["type"], "integer");
/// // Portable: no `uint32` format, which ajv-based clients warn about.
/// assert!(hits["properties"]["count"].get("format").is_none());
/// ```
pub fn output_schema_for<T: JsonSchema + ?Sized>() -> Schema {
    // Generated as schemars writes it, so the loosening sees every keyword where schemars put
    // it (a nullable string is still `"type": ["string", "null"]`); made portable once, last.
    let mut generator = SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator();
    let mut data = generator.subschema_for::<T>();
    // The payload's definitions are loosened; the envelope's are what the library writes.
    let data_defs: BTreeSet<String> = generator.definitions().keys().cloned().collect();
    let mut schema = generator.root_schema_for::<Envelope<Value>>();
    compact_envelope(&mut schema, &data_defs);
    let deep = deep_definitions(schema.get("$defs"), &data_defs);
    Loosen.transform(&mut data);
    if let Some(Value::Object(defs)) = schema.get_mut("$defs") {
        for name in &data_defs {
            if let Some(def) = defs
                .get_mut(name)
                .and_then(|def| <&mut Schema>::try_from(def).ok())
            {
                Loosen.transform(def);
                if deep.contains(name) {
                    DepthMarkers.transform(def);
                }
            }
        }
    }
    // The ok branch is the one that says `ok: true`.
    let ok = schema
        .get_mut("oneOf")
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .find(|branch| branch.pointer("/properties/ok/const") == Some(&Value::Bool(true)));
    if let Some(Value::Object(ok)) = ok {
        let properties = ok
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            properties.insert(crate::fields::envelope::DATA.to_owned(), data.to_value());
        }
    }
    Portable.transform(&mut schema);
    schema
}

/// Drops the prose from the envelope's part of a listed output schema, which every tool of a
/// server repeats (a tool's schema must stand alone): descriptions go, and an enum written as
/// `oneOf` documented constants becomes a plain `enum`. The payload's own definitions, named in
/// `keep`, stay as their author documented them. `docs/envelope.schema.json` is the documented
/// envelope.
fn compact_envelope(schema: &mut Schema, keep: &BTreeSet<String>) {
    let mut terse = RecursiveTransform(|schema: &mut Schema| {
        schema.remove("description");
        schema.remove("examples");
        let constants: Option<Vec<Value>> =
            schema
                .get("oneOf")
                .and_then(Value::as_array)
                .and_then(|branches| {
                    branches
                        .iter()
                        .map(|branch| {
                            let branch = branch.as_object()?;
                            let only_const = branch.keys().all(|key| {
                                matches!(key.as_str(), "const" | "type" | "description")
                            });
                            only_const.then(|| branch.get("const").cloned()).flatten()
                        })
                        .collect()
                });
        if let Some(constants) = constants {
            schema.remove("oneOf");
            schema.insert("enum".to_owned(), Value::Array(constants));
        }
    });
    // The root is the envelope's; its `$defs` hold the payload's definitions too.
    let defs = schema.remove("$defs");
    terse.transform(schema);
    if let Some(mut defs) = defs {
        if let Value::Object(defs) = &mut defs {
            for (name, def) in defs.iter_mut() {
                if keep.contains(name) {
                    continue;
                }
                if let Ok(def) = <&mut Schema>::try_from(def) {
                    terse.transform(def);
                }
            }
        }
        schema.insert("$defs".to_owned(), defs);
    }
}

/// Makes a schema portable across the JSON Schema dialects MCP clients validate with:
///
/// - a `format` JSON Schema does not define (schemars' `uint32`, `int64`, `double`, …) is
///   removed; the numeric bounds schemars writes beside it (`minimum: 0`) stay;
/// - `"default": null` is removed;
/// - an optional property (one not in `required`) loses its `null` alternative: absent and
///   `null` mean the same to serde, and single-`type` dialects refuse `["string", "null"]`;
/// - any other `type` array becomes an `anyOf` of single types;
/// - a `true` subschema becomes `{}`, which validators built on an object-only schema type
///   (the TypeScript SDK's, which refuses `"data": true`) accept; `false` stays, as
///   `additionalProperties: false` is read everywhere.
///
/// Every schema this crate generates goes through it, and a transport applies it to every
/// schema it lists, hand-written tools' included. Applying it twice changes nothing.
///
/// ```
/// use envelope_core::schema::Portable;
/// use schemars::transform::Transform;
///
/// let mut schema = schemars::json_schema!({
///     "type": "object",
///     "properties": {
///         "limit": {"type": ["integer", "null"], "format": "uint32", "minimum": 0, "default": null}
///     }
/// });
/// Portable.transform(&mut schema);
/// assert_eq!(
///     schema.to_value(),
///     serde_json::json!({"type": "object", "properties": {"limit": {"type": "integer", "minimum": 0}}})
/// );
/// ```
#[derive(Debug, Clone, Copy, Default)]
pub struct Portable;

/// The `format` values JSON Schema (draft 2020-12) defines.
pub const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

impl Transform for Portable {
    fn transform(&mut self, schema: &mut Schema) {
        if schema.as_bool() == Some(true) {
            *schema = Schema::default();
        }
        if let Some(map) = schema.as_object_mut() {
            if map
                .get("format")
                .and_then(Value::as_str)
                .is_some_and(|format| !STANDARD_FORMATS.contains(&format))
            {
                map.remove("format");
            }
            if map.get("default") == Some(&Value::Null) {
                map.remove("default");
            }
            let required: BTreeSet<String> = map
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect();
            if let Some(Value::Object(properties)) = map.get_mut("properties") {
                for (name, property) in properties.iter_mut() {
                    if !required.contains(name) {
                        strip_null(property);
                    }
                }
            }
            split_type_union(map);
        }
        transform_subschemas(self, schema);
    }
}

/// Removes the `null` alternative of an optional property, in either form schemars writes it:
/// `"type": ["T", "null"]` or `"anyOf": [{…}, {"type": "null"}]`.
fn strip_null(property: &mut Value) {
    let Value::Object(map) = property else { return };
    if let Some(Value::Array(types)) = map.get("type") {
        let kept: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
        // A property that can only be `null` stays as it is: nothing else would be left.
        let replacement = match kept.as_slice() {
            [] => return,
            [single] => single.clone(),
            _ => Value::Array(kept),
        };
        map.insert("type".into(), replacement);
    }
    if let Some(Value::Array(alternatives)) = map.get("anyOf") {
        let is_null = |alt: &Value| alt.get("type").is_some_and(|t| t == "null");
        let kept: Vec<Value> = alternatives
            .iter()
            .filter(|alt| !is_null(alt))
            .cloned()
            .collect();
        if kept.is_empty() {
            return;
        }
        if let [single] = kept.as_slice() {
            let single = single.clone();
            map.remove("anyOf");
            if let Value::Object(inner) = single {
                for (key, value) in inner {
                    map.entry(key).or_insert(value);
                }
            }
        } else {
            map.insert("anyOf".into(), Value::Array(kept));
        }
    }
}

/// `"type": ["string", "null"]` becomes `"anyOf": [{"type": "string"}, {"type": "null"}]`; the
/// other keywords stay beside it, where they apply to the instance types they name.
fn split_type_union(map: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = map.get("type") else {
        return;
    };
    let alternatives: Vec<Value> = types.iter().map(|t| json!({ "type": t })).collect();
    map.remove("type");
    add_any_of(map, Value::Array(alternatives));
}

/// Adds `alternatives` as the schema's `anyOf`; when it has one already, both must hold, so
/// the two go into `allOf`.
fn add_any_of(map: &mut Map<String, Value>, alternatives: Value) {
    match map.remove("anyOf") {
        Some(existing) => {
            let all = map
                .entry("allOf")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(all) = all {
                all.push(json!({ "anyOf": alternatives }));
                all.push(json!({ "anyOf": existing }));
            }
        }
        None => {
            map.insert("anyOf".to_owned(), alternatives);
        }
    }
}

/// Loosens a payload schema where the trimmer may cut (see [`output_schema_for`]). Visits only
/// subschemas, never a `properties` map or a value, and does not follow `$ref`s: their targets
/// are loosened where they are defined.
struct Loosen;

impl Transform for Loosen {
    fn transform(&mut self, schema: &mut Schema) {
        if let Some(map) = schema.as_object_mut() {
            // A list may be cut shorter, and two cut strings or two depth markers may be equal.
            for key in ["minItems", "minContains", "uniqueItems"] {
                map.remove(key);
            }
            // A depth marker or a loosened constant may match several alternatives: one is
            // enough.
            if let Some(alternatives) = map.remove("oneOf") {
                add_any_of(map, alternatives);
            }
            let names_string = match map.get("type") {
                Some(Value::String(t)) => t == "string",
                Some(Value::Array(types)) => types.iter().any(|t| t == "string"),
                None => map.get("const").is_some_and(Value::is_string),
                _ => false,
            };
            // A string whose `maxLength` is below the cut threshold is never cut.
            let cuttable = map
                .get("maxLength")
                .and_then(Value::as_u64)
                .is_none_or(|max| max >= LONG_STRING_CHARS as u64);
            if names_string && cuttable {
                // A cut string is a prefix plus the suffix: its length (either way: the suffix
                // can make it longer than a prefix cut close to the end), pattern and format
                // no longer hold.
                for key in ["minLength", "maxLength", "pattern", "format"] {
                    map.remove(key);
                }
                let long = |value: &Value| {
                    value
                        .as_str()
                        .is_some_and(|text| text.chars().count() >= LONG_STRING_CHARS)
                };
                if map.get("const").is_some_and(long) {
                    map.remove("const");
                    map.insert("type".to_owned(), json!("string"));
                }
                if map
                    .get("enum")
                    .and_then(Value::as_array)
                    .is_some_and(|values| values.iter().any(long))
                {
                    map.remove("enum");
                }
            }
        }
        transform_subschemas(self, schema);
    }
}

/// In a definition whose values can nest without bound, any array or object may be cut to a
/// string marker past the trimmer's depth limit. Subschemas first, then the schema itself, so a
/// wrapper it adds is not visited again. Alternatives are `anyOf` by then ([`Loosen`]), so a
/// marker matching several of them is fine.
struct DepthMarkers;

impl Transform for DepthMarkers {
    fn transform(&mut self, schema: &mut Schema) {
        transform_subschemas(self, schema);
        let names_container = |t: &Value| t == "array" || t == "object";
        let container = match schema.get("type") {
            Some(Value::Array(types)) => types.iter().any(names_container),
            Some(other) => names_container(other),
            None => false,
        };
        if container {
            let original = std::mem::replace(schema, Schema::from(true));
            *schema = Schema::try_from(json!({ "anyOf": [original, { "type": "string" }] }))
                .unwrap_or_else(|_| Schema::from(true));
        }
    }
}

/// The payload definitions whose values can nest without bound: those that reach themselves
/// through `$ref`s, and everything they refer to (which sits at any depth below them). Only
/// values of these can nest deep enough for the trimmer to cut them by depth.
fn deep_definitions(defs: Option<&Value>, data_defs: &BTreeSet<String>) -> BTreeSet<String> {
    let Some(Value::Object(defs)) = defs else {
        return BTreeSet::new();
    };
    let edges: BTreeMap<&str, BTreeSet<String>> = defs
        .iter()
        .filter(|(name, _)| data_defs.contains(*name))
        .map(|(name, def)| {
            let mut refs = BTreeSet::new();
            collect_refs(def, &mut refs);
            (name.as_str(), refs)
        })
        .collect();
    // Everything reachable from `start` through at least one reference.
    let reachable = |start: &str| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<&str> = edges
            .get(start)
            .into_iter()
            .flatten()
            .map(String::as_str)
            .collect();
        while let Some(name) = stack.pop() {
            if seen.insert(name.to_owned())
                && let Some(next) = edges.get(name)
            {
                stack.extend(next.iter().map(String::as_str));
            }
        }
        seen
    };
    let mut deep = BTreeSet::new();
    for start in edges.keys() {
        let below = reachable(start);
        if below.contains(*start) {
            deep.extend(below);
        }
    }
    deep
}

/// The definition names `node` refers to with `#/$defs/…`.
fn collect_refs(node: &Value, out: &mut BTreeSet<String>) {
    match node {
        Value::Object(map) => {
            if let Some(name) = map
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|pointer| pointer.strip_prefix("#/$defs/"))
            {
                out.insert(name.replace("~1", "/").replace("~0", "~"));
            }
            map.values().for_each(|child| collect_refs(child, out));
        }
        Value::Array(items) => items.iter().for_each(|item| collect_refs(item, out)),
        _ => {}
    }
}

/// A generator of draft 2020-12 schemas made [`Portable`], for the deserialize contract (what a
/// tool accepts).
pub(crate) fn input_generator() -> SchemaGenerator {
    let mut settings = settings();
    // MCP reads an input schema without `$schema` as draft 2020-12, the dialect it is written
    // in; the line would cost every tool's listing, on every turn a model reads it.
    settings.meta_schema = None;
    settings.into_generator()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Tree {
        name: String,
        children: Vec<Tree>,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Listing {
        /// The paths found.
        #[schemars(length(min = 1, max = 4))]
        paths: Vec<String>,
        #[schemars(length(min = 3), regex(pattern = r"^[a-z]+$"))]
        word: String,
        #[schemars(length(max = 8), regex(pattern = r"^[a-z]+$"))]
        short: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        note: Option<String>,
        maybe: Option<u64>,
        tree: Tree,
    }

    #[test]
    fn payload_schema_is_loosened_where_the_trimmer_cuts() {
        let schema = output_schema_for::<Listing>().to_value();
        let listing = &schema["$defs"]["Listing"];
        let properties = &listing["properties"];
        assert!(properties["paths"].get("minItems").is_none(), "{listing}");
        assert_eq!(
            properties["paths"]["maxItems"], 4,
            "shorter stays within it"
        );
        assert!(properties["word"].get("minLength").is_none(), "{listing}");
        assert!(properties["word"].get("pattern").is_none(), "{listing}");
        // Too short to be cut: kept as declared.
        assert_eq!(properties["short"]["pattern"], "^[a-z]+$", "{listing}");
        // Skipped when absent: optional, no null. Written as null: required, and null allowed.
        assert_eq!(properties["note"]["type"], "string");
        assert_eq!(
            properties["maybe"]["anyOf"],
            json!([{"type": "integer"}, {"type": "null"}])
        );
        assert!(
            listing["required"]
                .as_array()
                .is_some_and(|r| r.contains(&json!("maybe")))
        );
        // Only the recursive type, and each container in it, may become a depth marker.
        assert_eq!(
            schema["$defs"]["Tree"]["anyOf"][1],
            json!({"type": "string"})
        );
        assert_eq!(
            schema["$defs"]["Tree"]["anyOf"][0]["properties"]["children"]["anyOf"][1],
            json!({"type": "string"})
        );
        assert!(listing.get("anyOf").is_none());
        // The envelope's own definitions are not loosened, only made terse: its prose is in
        // the published envelope schema. The payload keeps its author's descriptions.
        let next_action = &schema["$defs"]["NextAction"];
        assert_eq!(next_action["properties"]["reason"]["minLength"], 1);
        assert!(next_action.get("description").is_none(), "{next_action}");
        assert_eq!(
            schema["$defs"]["Role"]["enum"][0], "proof_read",
            "documented constants become an enum"
        );
        assert_eq!(properties["paths"]["description"], "The paths found.");
    }

    #[test]
    fn portable_splits_unions_keeps_null_only_properties_and_is_idempotent() {
        let mut schema = schemars::json_schema!({
            "type": "object",
            "required": ["both"],
            "properties": {
                "both": {"type": ["string", "null"], "anyOf": [{"minLength": 1}, {"maxLength": 0}]},
                "nothing": {"type": "null"},
                "count": {"type": ["integer", "null"], "format": "int64", "default": null}
            }
        });
        Portable.transform(&mut schema);
        assert_eq!(
            schema.as_value(),
            &json!({
                "type": "object",
                "required": ["both"],
                "properties": {
                    // A union beside an `anyOf`: both must hold.
                    "both": {"allOf": [
                        {"anyOf": [{"type": "string"}, {"type": "null"}]},
                        {"anyOf": [{"minLength": 1}, {"maxLength": 0}]}
                    ]},
                    // Optional, but only ever `null`: left as it is rather than emptied.
                    "nothing": {"type": "null"},
                    "count": {"type": "integer"}
                }
            })
        );
        let mut twice = schema.clone();
        Portable.transform(&mut twice);
        assert_eq!(schema, twice);
    }
}

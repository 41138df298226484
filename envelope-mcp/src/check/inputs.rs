//! Arguments generated from a tool's `inputSchema`: valid calls (the required fields, every
//! field, and seeded random variations), invalid ones (a wrong type, a missing required field,
//! an unknown argument), and edge values for fields that look like paths or queries.
//!
//! Only what JSON Schema says is used: types, `enum`/`const`, numeric bounds (exclusive ones
//! too), lengths and item counts, `required`, `anyOf`/`oneOf`/`allOf` and local `$ref`s.
//! `pattern`, `format` and `multipleOf` are not honoured: a field it cannot satisfy gets its
//! best guess, and the server's answer to that is checked like any other.

use serde_json::{Map, Value, json};

/// A seeded source of choices (SplitMix64): the same seed makes the same calls, on every
/// platform and release, so a printed seed replays a run.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// A number in `0..n` (`0` when `n` is 0).
    pub(crate) fn below(&mut self, n: u64) -> u64 {
        if n == 0 { 0 } else { self.next() % n }
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

/// Why a generated call was made, and so what its answer is checked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Intent {
    /// Valid by the schema: any envelope will do.
    Valid,
    /// `field` has a value of the wrong type: a `validation` envelope naming it.
    WrongType { field: String },
    /// The required `field` is missing: a `validation` envelope naming it.
    Missing { field: String },
    /// An argument no schema property names: an envelope naming it (a warning or an error).
    Unknown { field: String },
    /// An edge value (empty, very long, non-ASCII) in `field`: any envelope will do.
    Edge { field: String },
}

impl Intent {
    /// The field an answer to this call must name: the invalid or unknown one.
    pub(crate) fn field_to_name(&self) -> Option<&str> {
        match self {
            Intent::WrongType { field } | Intent::Missing { field } | Intent::Unknown { field } => {
                Some(field)
            }
            Intent::Valid | Intent::Edge { .. } => None,
        }
    }
}

/// One generated call.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub(crate) arguments: Map<String, Value>,
    pub(crate) intent: Intent,
}

/// How deep nested objects, arrays and unions are filled in.
const MAX_DEPTH: usize = 4;

/// The most characters or items a generated value holds, whatever the schema's minimum: a
/// schema asking for more is answered with this many, and the server's answer checked.
const MAX_GENERATED: usize = 10_000;

/// The argument name an unknown-argument call sends: no real tool takes it.
pub(crate) const UNKNOWN_ARGUMENT: &str = "envelope_check_unknown_argument";

/// The calls made of one tool: valid ones first (the required fields; every field;
/// `variations` random ones), then the invalid ones and the edge values.
pub(crate) fn calls(schema: &Value, variations: usize, rng: &mut Rng) -> Vec<Call> {
    let object = Object::of(schema, schema);
    let mut calls = vec![Call {
        arguments: object.fill(schema, false, None, 0),
        intent: Intent::Valid,
    }];
    if object.properties.len() > object.required.len() {
        calls.push(Call {
            arguments: object.fill(schema, true, None, 0),
            intent: Intent::Valid,
        });
    }
    for _ in 0..variations {
        calls.push(Call {
            arguments: object.fill(schema, false, Some(rng), 0),
            intent: Intent::Valid,
        });
    }
    let base = object.fill(schema, false, None, 0);
    for (field, property) in &object.properties {
        let Some(wrong) = wrong_type(schema, property) else {
            continue;
        };
        let mut arguments = base.clone();
        arguments.insert(field.clone(), wrong);
        calls.push(Call {
            arguments,
            intent: Intent::WrongType {
                field: field.clone(),
            },
        });
    }
    for field in &object.required {
        let mut arguments = base.clone();
        arguments.remove(field);
        calls.push(Call {
            arguments,
            intent: Intent::Missing {
                field: field.clone(),
            },
        });
    }
    let mut unknown = base.clone();
    unknown.insert(UNKNOWN_ARGUMENT.to_owned(), json!(1));
    calls.push(Call {
        arguments: unknown,
        intent: Intent::Unknown {
            field: UNKNOWN_ARGUMENT.to_owned(),
        },
    });
    for (field, property) in &object.properties {
        if !takes_text(schema, property) || !(is_path_like(field) || is_query_like(field)) {
            continue;
        }
        for edge in edge_values() {
            let mut arguments = base.clone();
            arguments.insert(field.clone(), edge);
            calls.push(Call {
                arguments,
                intent: Intent::Edge {
                    field: field.clone(),
                },
            });
        }
    }
    calls
}

/// The integer argument that bounds a page (`limit`, `page_size`, …), with its least value.
pub(crate) fn page_size(schema: &Value) -> Option<(String, i64, Option<i64>)> {
    let object = Object::of(schema, schema);
    object.properties.iter().find_map(|(name, property)| {
        let property = resolve(schema, property);
        let integer = types(schema, property).iter().any(|kind| kind == "integer");
        let named = matches!(
            name.as_str(),
            "limit" | "page_size" | "per_page" | "max_results" | "top_k" | "count" | "first"
        );
        (integer && named).then(|| {
            let min = property["minimum"].as_i64().unwrap_or(1).max(1);
            (name.clone(), min, property["maximum"].as_i64())
        })
    })
}

/// Whether the tool's arguments take a `continuation` token.
pub(crate) fn takes_continuation(schema: &Value) -> bool {
    Object::of(schema, schema)
        .properties
        .iter()
        .any(|(name, _)| name == "continuation")
}

/// Empty, very long, non-ASCII.
fn edge_values() -> [Value; 3] {
    [
        json!(""),
        json!("a".repeat(10_000)),
        json!("naïve/файл/日本語 ☃.txt"),
    ]
}

fn is_path_like(name: &str) -> bool {
    ["path", "file", "dir", "glob", "root", "uri", "url"]
        .iter()
        .any(|part| name.contains(part))
}

fn is_query_like(name: &str) -> bool {
    ["query", "pattern", "search", "term", "q", "text", "name"]
        .iter()
        .any(|part| name == *part || name.contains(part) && part.len() > 1)
}

/// An object schema's properties and required names, those of its `allOf` branches and of the
/// first branch of an `anyOf`/`oneOf` (a valid choice) included.
struct Object {
    properties: Vec<(String, Value)>,
    required: Vec<String>,
}

impl Object {
    fn of(root: &Value, schema: &Value) -> Object {
        let schema = resolve(root, schema);
        let mut object = Object {
            properties: Vec::new(),
            required: Vec::new(),
        };
        object.add(schema);
        for branch in schema["allOf"].as_array().into_iter().flatten() {
            object.add(resolve(root, branch));
        }
        for key in ["anyOf", "oneOf"] {
            if let Some(first) = schema[key].as_array().and_then(|branches| branches.first()) {
                object.add(resolve(root, first));
            }
        }
        object
    }

    fn add(&mut self, schema: &Value) {
        if let Some(properties) = schema["properties"].as_object() {
            for (name, property) in properties {
                if !self.properties.iter().any(|(known, _)| known == name) {
                    self.properties.push((name.clone(), property.clone()));
                }
            }
        }
        for name in schema["required"].as_array().into_iter().flatten() {
            if let Some(name) = name.as_str()
                && !self.required.iter().any(|known| known == name)
            {
                self.required.push(name.to_owned());
            }
        }
    }

    /// Arguments: the required fields, the optional ones too when `all`, and with `rng`, a
    /// random half of the optional ones, each with a random valid value.
    fn fill(
        &self,
        root: &Value,
        all: bool,
        mut rng: Option<&mut Rng>,
        depth: usize,
    ) -> Map<String, Value> {
        let mut arguments = Map::new();
        for (name, property) in &self.properties {
            let required = self.required.contains(name);
            let include = required || all || rng.as_deref_mut().is_some_and(Rng::coin);
            // A token from nowhere only earns a refusal; paging is checked on its own.
            if !include || (!required && name == "continuation") {
                continue;
            }
            arguments.insert(
                name.clone(),
                valid(root, property, name, rng.as_deref_mut(), depth),
            );
        }
        arguments
    }
}

/// `schema`, its local `$ref` followed (to any depth, at most 16 hops).
fn resolve<'a>(root: &'a Value, mut schema: &'a Value) -> &'a Value {
    for _ in 0..16 {
        let Some(reference) = schema["$ref"].as_str() else {
            return schema;
        };
        let Some(pointer) = reference.strip_prefix('#') else {
            return schema;
        };
        match root.pointer(pointer) {
            Some(target) => schema = target,
            None => return schema,
        }
    }
    schema
}

/// The types `schema` allows, `null` last.
fn types(root: &Value, schema: &Value) -> Vec<String> {
    types_within(root, schema, 0)
}

/// [`types`], following unions at most [`MAX_DEPTH`] deep (a union may name itself).
fn types_within(root: &Value, schema: &Value, depth: usize) -> Vec<String> {
    let schema = resolve(root, schema);
    if depth > MAX_DEPTH {
        return Vec::new();
    }
    let mut kinds: Vec<String> = match &schema["type"] {
        Value::String(kind) => vec![kind.clone()],
        Value::Array(kinds) => kinds
            .iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect(),
        _ => Vec::new(),
    };
    if kinds.is_empty() {
        for key in ["anyOf", "oneOf"] {
            for branch in schema[key].as_array().into_iter().flatten() {
                kinds.extend(types_within(root, branch, depth + 1));
            }
        }
        if let Some(value) = schema["enum"].as_array().and_then(|values| values.first()) {
            kinds.push(json_type(value).to_owned());
        }
        if let Some(value) = schema.get("const") {
            kinds.push(json_type(value).to_owned());
        }
    }
    kinds.sort_by_key(|kind| kind == "null");
    kinds.dedup();
    kinds
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(number) if number.is_i64() || number.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn takes_text(root: &Value, schema: &Value) -> bool {
    types(root, schema).iter().any(|kind| kind == "string")
}

/// A value `schema` accepts: the typical one, or with `rng` a random one.
fn valid(root: &Value, schema: &Value, name: &str, rng: Option<&mut Rng>, depth: usize) -> Value {
    let schema = resolve(root, schema);
    // A schema that refers back to itself is filled this deep, then left empty.
    if depth > MAX_DEPTH {
        return Value::Null;
    }
    if let Some(value) = schema.get("const") {
        return value.clone();
    }
    if let Some(values) = schema["enum"]
        .as_array()
        .filter(|values| !values.is_empty())
    {
        let pick = rng.map_or(0, |rng| rng.below(values.len() as u64) as usize);
        return values[pick].clone();
    }
    if let Some(default) = schema.get("default")
        && rng.is_none()
    {
        return default.clone();
    }
    if types(root, schema).is_empty() {
        // No type: the first branch of a union, else anything.
        for key in ["anyOf", "oneOf"] {
            if let Some(first) = schema[key].as_array().and_then(|branches| branches.first()) {
                return valid(root, first, name, rng, depth + 1);
            }
        }
    }
    let kind = types(root, schema).into_iter().next().unwrap_or_default();
    match kind.as_str() {
        "string" => text(schema, name, rng),
        "integer" => {
            // Bounds may be written as floats (`1.0`); exclusive ones move in by one.
            let bound = |key: &str| schema[key].as_f64().map(|bound| bound as i64);
            let min = bound("minimum")
                .or_else(|| bound("exclusiveMinimum").map(|bound| bound.saturating_add(1)))
                .unwrap_or(0);
            let max = bound("maximum")
                .or_else(|| bound("exclusiveMaximum").map(|bound| bound.saturating_sub(1)))
                .unwrap_or(min.saturating_add(100));
            let typical = 1.clamp(min, max.max(min));
            json!(rng.map_or(typical, |rng| {
                let span = (max.saturating_sub(min)).clamp(0, 100) as u64;
                min.saturating_add(rng.below(span + 1) as i64)
            }))
        }
        "number" => {
            let min = schema["minimum"].as_f64().unwrap_or(0.0);
            let max = schema["maximum"].as_f64().unwrap_or(min + 10.0).max(min);
            json!((min + rng.map_or(1.0, |rng| rng.below(100) as f64 / 10.0)).min(max))
        }
        "boolean" => json!(rng.is_some_and(Rng::coin)),
        "array" if depth < MAX_DEPTH => {
            let count = schema["minItems"]
                .as_u64()
                .unwrap_or(1)
                .clamp(1, MAX_GENERATED as u64) as usize;
            let items = &schema["items"];
            let mut rng = rng;
            Value::Array(
                (0..count)
                    .map(|_| valid(root, items, name, rng.as_deref_mut(), depth + 1))
                    .collect(),
            )
        }
        "object" if depth < MAX_DEPTH => {
            Value::Object(Object::of(root, schema).fill(root, false, rng, depth + 1))
        }
        "array" => json!([]),
        "null" => Value::Null,
        _ => json!({}),
    }
}

/// A string for the field `name`: a letter common in any text for a query, `.` for a path,
/// else a short word; within the schema's length bounds.
fn text(schema: &Value, name: &str, rng: Option<&mut Rng>) -> Value {
    let mut text = if is_query_like(name) {
        "e".to_owned()
    } else if is_path_like(name) {
        ".".to_owned()
    } else {
        "example".to_owned()
    };
    if let Some(rng) = rng {
        const WORDS: [&str; 6] = ["main", "test", "data", "src", "readme", "x"];
        text = WORDS[rng.below(WORDS.len() as u64) as usize].to_owned();
    }
    let min = schema["minLength"]
        .as_u64()
        .unwrap_or(0)
        .min(MAX_GENERATED as u64) as usize;
    let short = min.saturating_sub(text.chars().count());
    text.push_str(&"a".repeat(short));
    if let Some(max) = schema["maxLength"].as_u64() {
        text = text.chars().take(max as usize).collect();
    }
    Value::String(text)
}

/// A value of a type `schema` does not allow, if there is one.
fn wrong_type(root: &Value, schema: &Value) -> Option<Value> {
    let kinds = types(root, schema);
    if kinds.is_empty() {
        return None;
    }
    let allows = |kind: &str| kinds.iter().any(|allowed| allowed == kind);
    if !allows("object") {
        return Some(json!({ "not": "this type" }));
    }
    if !allows("string") {
        return Some(json!("not this type"));
    }
    if !allows("integer") && !allows("number") {
        return Some(json!(7));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "query": { "type": "string" },
                "limit": { "type": "integer", "minimum": 1, "maximum": 1000 },
                "mode": { "enum": ["fast", "slow"] },
                "path": { "type": ["string", "null"] },
                "continuation": { "type": "string" },
            },
            "required": ["query"],
        })
    }

    #[test]
    fn the_first_call_holds_the_required_fields_and_valid_values() {
        let calls = calls(&schema(), 3, &mut Rng::new(7));
        assert_eq!(
            calls[0].arguments,
            *json!({ "query": "e" }).as_object().unwrap_or(&Map::new())
        );
        assert_eq!(calls[1].arguments["limit"], 1);
        assert_eq!(calls[1].arguments["mode"], "fast");
        assert!(!calls[1].arguments.contains_key("continuation"));
        let validator = jsonschema::validator_for(&schema()).expect("compiles");
        for call in calls.iter().filter(|call| call.intent == Intent::Valid) {
            assert!(
                validator.is_valid(&Value::Object(call.arguments.clone())),
                "{:?}",
                call.arguments
            );
        }
    }

    #[test]
    fn invalid_calls_break_one_rule_each() {
        let calls = calls(&schema(), 0, &mut Rng::new(7));
        let validator = jsonschema::validator_for(&schema()).expect("compiles");
        for call in &calls {
            let valid = validator.is_valid(&Value::Object(call.arguments.clone()));
            match &call.intent {
                Intent::WrongType { .. } | Intent::Missing { .. } => assert!(!valid, "{call:?}"),
                _ => {}
            }
        }
        assert!(calls.iter().any(|call| call.intent
            == Intent::Missing {
                field: "query".into()
            }));
        assert!(
            calls
                .iter()
                .any(|call| matches!(&call.intent, Intent::Edge { field } if field == "path"))
        );
        assert!(
            calls
                .iter()
                .any(|call| matches!(&call.intent, Intent::Unknown { .. }))
        );
    }

    #[test]
    fn a_seed_replays_its_calls() {
        let arguments = |seed| {
            calls(&schema(), 5, &mut Rng::new(seed))
                .into_iter()
                .map(|call| call.arguments)
                .collect::<Vec<_>>()
        };
        assert_eq!(arguments(42), arguments(42));
        assert_ne!(arguments(42), arguments(43));
    }

    #[test]
    fn a_schema_that_refers_to_itself_is_filled_to_a_depth() {
        let schema = json!({
            "type": "object",
            "properties": { "filter": { "$ref": "#/$defs/Filter" } },
            "required": ["filter"],
            "$defs": {
                "Filter": {
                    "type": "object",
                    "properties": {
                        "not": { "$ref": "#/$defs/Filter" },
                        "any": { "anyOf": [{ "$ref": "#/$defs/Loop" }] },
                    },
                    "required": ["not"],
                },
                "Loop": { "anyOf": [{ "$ref": "#/$defs/Loop" }] },
            },
        });
        let calls = calls(&schema, 5, &mut Rng::new(3));
        assert!(calls[0].arguments["filter"]["not"].is_object());
        let huge = json!({
            "type": "object",
            "properties": { "name": { "type": "string", "minLength": 1_000_000_000u64 } },
            "required": ["name"],
        });
        let calls = super::calls(&huge, 0, &mut Rng::new(3));
        assert_eq!(
            calls[0].arguments["name"].as_str().map(str::len),
            Some(MAX_GENERATED)
        );
    }

    #[test]
    fn the_page_size_is_found_with_its_least_value() {
        assert_eq!(
            page_size(&schema()),
            Some(("limit".to_owned(), 1, Some(1000)))
        );
        assert!(takes_continuation(&schema()));
    }
}

//! The check beside the `jsonschema` crate (draft 2020-12), the reference it must agree with:
//! the schemas are the ones tools list (the example server's, and schemars' output for the
//! shapes of Rust types arguments take), plus hand-written ones for the keywords schemars does
//! not write; the instances are drawn at random, steered by each schema so that both fitting
//! and failing ones come up, from a seeded generator, so a disagreement is reproducible. Every
//! instance must get the same verdict from both.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::{Value, json};

use super::SchemaCheck;

/// Instances drawn per schema.
const DRAWS: usize = 3_000;

#[test]
fn agrees_with_jsonschema_on_the_example_servers_tool_inputs() {
    use workspace_server::tools::{
        ChangeImpactArgs, GraphExportArgs, ListFilesArgs, ReadFileArgs, SearchTextArgs,
    };
    let schemas = [
        (
            "search_text",
            envelope_core::stage::add_controls(schemars::schema_for!(SearchTextArgs)),
        ),
        (
            "read_file",
            envelope_core::stage::add_controls(schemars::schema_for!(ReadFileArgs)),
        ),
        (
            "list_files",
            envelope_core::stage::add_controls(schemars::schema_for!(ListFilesArgs)),
        ),
        (
            "graph_export",
            envelope_core::stage::add_controls(schemars::schema_for!(GraphExportArgs)),
        ),
        (
            "change_impact",
            envelope_core::stage::add_controls(schemars::schema_for!(ChangeImpactArgs)),
        ),
    ];
    for (name, schema) in schemas {
        let schema = schema.to_value();
        agree(name, &schema);
        // As a strict tool's schema is checked.
        let mut strict = schema.clone();
        strict["unevaluatedProperties"] = json!(false);
        agree(&format!("{name} (strict)"), &strict);
    }
}

#[allow(dead_code)]
mod shapes {
    use super::*;

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Plain {
        name: String,
        count: Option<u32>,
        ratio: f64,
        tags: Vec<String>,
        enabled: bool,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Bounded {
        #[schemars(length(min = 1, max = 5))]
        code: String,
        #[schemars(range(min = -3, max = 40))]
        level: i32,
        #[schemars(regex(pattern = r"^[a-z]+(-[a-z]+)*$"))]
        slug: Option<String>,
        #[schemars(length(min = 1, max = 3))]
        picks: Vec<u8>,
        letter: Option<char>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) enum External {
        Unit,
        Wrapped(String),
        Pair(u8, bool),
        Shaped { width: u16, height: u16 },
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "kind", rename_all = "snake_case")]
    pub(super) enum Internal {
        Circle { radius: f64 },
        Square { side: f64, filled: Option<bool> },
        Empty,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(tag = "t", content = "c")]
    pub(super) enum Adjacent {
        Text(String),
        Numbers(Vec<i64>),
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(untagged)]
    pub(super) enum Untagged {
        Number(i64),
        Words { words: Vec<String> },
        Flag(bool),
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Inner {
        path: String,
        depth: Option<u8>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(deny_unknown_fields)]
    pub(super) struct Nested {
        inner: Inner,
        more: Vec<Inner>,
        choice: Option<External>,
        shape: Internal,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Flattened {
        id: u64,
        #[serde(flatten)]
        inner: Inner,
        #[serde(flatten)]
        rest: BTreeMap<String, u32>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Collections {
        set: BTreeSet<String>,
        map: HashMap<String, Vec<bool>>,
        tuple: (u8, String, Option<f32>),
        matrix: Vec<Vec<i8>>,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Tree {
        label: String,
        children: Vec<Tree>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub(super) enum Mode {
        Fast,
        Careful,
    }

    #[derive(Deserialize, JsonSchema)]
    pub(super) struct Defaults {
        #[serde(default)]
        mode: Option<Mode>,
        #[serde(default = "ten")]
        limit: usize,
        offset: Option<i64>,
    }

    fn ten() -> usize {
        10
    }
}

#[test]
fn agrees_with_jsonschema_on_what_schemars_writes_for_argument_shapes() {
    use shapes::*;
    let schemas = [
        ("Plain", schemars::schema_for!(Plain)),
        ("Bounded", schemars::schema_for!(Bounded)),
        ("External", schemars::schema_for!(External)),
        ("Internal", schemars::schema_for!(Internal)),
        ("Adjacent", schemars::schema_for!(Adjacent)),
        ("Untagged", schemars::schema_for!(Untagged)),
        ("Nested", schemars::schema_for!(Nested)),
        ("Flattened", schemars::schema_for!(Flattened)),
        ("Collections", schemars::schema_for!(Collections)),
        ("Tree", schemars::schema_for!(Tree)),
        ("Defaults", schemars::schema_for!(Defaults)),
        (
            "Nested with controls",
            envelope_core::stage::add_controls(schemars::schema_for!(Nested)),
        ),
        (
            "Untagged with controls",
            envelope_core::stage::add_controls(schemars::schema_for!(Untagged)),
        ),
    ];
    for (name, schema) in schemas {
        agree(name, &schema.to_value());
    }
}

#[test]
fn agrees_with_jsonschema_on_the_keywords_schemars_does_not_write() {
    let schemas = [
        json!({"if": {"properties": {"kind": {"const": "file"}}}, "then": {"required": ["path"]},
               "else": {"required": ["name"]}, "properties": {"path": {"type": "string"}}}),
        json!({"type": "object", "not": {"required": ["a", "b"]}, "minProperties": 1, "maxProperties": 3}),
        json!({"dependentRequired": {"a": ["b"]}, "dependentSchemas": {"c": {"properties": {"d": {"type": "integer"}}}}}),
        json!({"type": "array", "contains": {"type": "integer", "minimum": 2}, "minContains": 2, "maxContains": 3}),
        json!({"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}], "items": false}),
        json!({"propertyNames": {"maxLength": 2}, "patternProperties": {"^x": {"type": "number"}},
               "additionalProperties": {"type": "string"}}),
        json!({"type": ["number", "string"], "multipleOf": 0.5, "exclusiveMinimum": -1, "exclusiveMaximum": 4,
               "minLength": 2}),
        json!({"type": "integer", "multipleOf": 3, "enum": [0, 3, 4, 9.0, "3"]}),
        json!({"properties": {"a": {"type": "integer"}}, "anyOf": [{"properties": {"b": true}}, {"properties": {"c": true}}],
               "unevaluatedProperties": false}),
        json!({"oneOf": [{"properties": {"b": {"type": "string"}}, "required": ["b"]},
                         {"properties": {"c": {"type": "string"}}, "required": ["c"]}],
               "unevaluatedProperties": {"type": "boolean"}}),
        json!({"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"const": [1, {"a": null}]}}}},
               "$ref": "#/$defs/node", "required": ["v"]}),
        json!({"type": "array", "uniqueItems": true, "items": {"type": ["integer", "object", "array"]}}),
        json!({"allOf": [{"$ref": "#/$defs/a"}, {"properties": {"z": {"type": "null"}}}],
               "$defs": {"a": {"properties": {"y": {"type": "boolean"}}}}, "unevaluatedProperties": false}),
        // An inner `unevaluatedProperties` evaluates what it admits, for the outer one too.
        json!({"allOf": [{"properties": {"a": true}, "unevaluatedProperties": {"type": "integer"}}],
               "unevaluatedProperties": false}),
        json!(false),
        json!(true),
    ];
    for (index, schema) in schemas.iter().enumerate() {
        agree(&format!("hand-written #{index}"), schema);
    }
}

#[test]
fn refuses_what_it_would_not_check() {
    for schema in [
        json!({"$ref": "https://example.com/schema.json"}),
        json!({"$ref": "#/$defs/missing"}),
        json!({"properties": {"a": {"$dynamicRef": "#node"}}}),
        json!({"unevaluatedItems": false}),
        json!({"properties": {"a": {"$id": "other", "type": "string"}}}),
        json!({"pattern": "(?=a)b"}),
        json!({"type": "text"}),
        json!({"allOf": {"type": "string"}}),
        json!(3),
    ] {
        let error = SchemaCheck::new(&schema).expect_err(&schema.to_string());
        assert!(!error.to_string().is_empty());
    }
}

#[test]
fn a_violation_says_where() {
    let check = SchemaCheck::new(&json!({
        "type": "object",
        "properties": {"people": {"type": "array", "items": {"properties": {"age": {"type": "integer"}}}}},
        "additionalProperties": false,
    }))
    .expect("compiles");
    let violation = check
        .check(&json!({"people": [{"age": 3}, {"age": "x"}]}))
        .expect_err("an age is not a number");
    assert_eq!(violation.at, "/people/1/age");
    assert_eq!(violation.to_string(), r#""x" is not of type "integer""#);
    let violation = check
        .check(&json!({"people": [], "pets": 1}))
        .expect_err("pets are not allowed");
    assert_eq!(
        violation.to_string(),
        r#""pets" is not an allowed property"#
    );
}

#[test]
fn a_ref_that_loops_is_refused_not_followed_forever() {
    let check =
        SchemaCheck::new(&json!({"$defs": {"a": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}))
            .expect("compiles: the loop shows only when followed");
    assert!(!check.is_valid(&json!(1)));
}

/// Both checks give every drawn instance the same verdict, and the draws include instances
/// each verdict is given to (or the schema admits only one verdict).
fn agree(name: &str, schema: &Value) {
    let reference = jsonschema::draft202012::new(schema)
        .unwrap_or_else(|error| panic!("{name}: the reference refuses the schema: {error}"));
    let check = SchemaCheck::new(schema).unwrap_or_else(|error| panic!("{name}: {error}"));
    let mut draw = Draw::new(name);
    let (mut fitting, mut failing) = (0, 0);
    for _ in 0..DRAWS {
        let instance = draw.value_for(schema, schema, 0);
        let expected = reference.is_valid(&instance);
        assert_eq!(
            check.is_valid(&instance),
            expected,
            "{name}: the reference says {expected} for {instance} against {schema}"
        );
        if expected {
            fitting += 1;
        } else {
            failing += 1;
        }
    }
    if *schema != json!(false) {
        assert!(fitting > 0, "{name}: no instance drawn fits {schema}");
    }
    if *schema != json!(true) {
        assert!(failing > 0, "{name}: every instance drawn fits {schema}");
    }
}

/// Instances drawn for a schema: mostly what it asks for, often a little off, sometimes
/// anything at all.
struct Draw {
    state: u64,
}

impl Draw {
    /// A generator seeded from `name`, so that each schema's draws are the same every run.
    fn new(name: &str) -> Draw {
        let state = name.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3)
        });
        Draw { state: state | 1 }
    }

    fn next(&mut self) -> u64 {
        // xorshift64*
        self.state ^= self.state >> 12;
        self.state ^= self.state << 25;
        self.state ^= self.state >> 27;
        self.state.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, bound: usize) -> usize {
        (self.next() % bound.max(1) as u64) as usize
    }

    fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// A value steered by `schema` (in `root`).
    fn value_for(&mut self, root: &Value, schema: &Value, depth: usize) -> Value {
        if depth > 6 || self.chance(6) {
            return self.anything(depth);
        }
        let Value::Object(keywords) = schema else {
            return self.anything(depth);
        };
        if let Some(Value::String(reference)) = keywords.get("$ref")
            && let Some(target) = super::resolve(root, reference)
            && self.chance(80)
        {
            let mut value = self.value_for(root, target, depth + 1);
            self.add_own_properties(root, keywords, &mut value, depth);
            return value;
        }
        if let Some(Value::Array(allowed)) = keywords.get("enum")
            && self.chance(85)
        {
            return self.pick(allowed).clone();
        }
        if let Some(constant) = keywords.get("const")
            && self.chance(85)
        {
            return constant.clone();
        }
        for keyword in ["oneOf", "anyOf"] {
            if let Some(Value::Array(branches)) = keywords.get(keyword)
                && !branches.is_empty()
                && self.chance(80)
            {
                let branch = self.pick(branches).clone();
                let mut value = self.value_for(root, &branch, depth + 1);
                self.add_own_properties(root, keywords, &mut value, depth);
                return value;
            }
        }
        if let Some(Value::Array(all)) = keywords.get("allOf")
            && self.chance(80)
        {
            let mut merged = serde_json::Map::new();
            for branch in all {
                match self.value_for(root, branch, depth + 1) {
                    Value::Object(part) => merged.extend(part),
                    other => return other,
                }
            }
            let mut value = Value::Object(merged);
            self.add_own_properties(root, keywords, &mut value, depth);
            return value;
        }
        let kind = match keywords.get("type") {
            Some(Value::String(kind)) => kind.clone(),
            Some(Value::Array(kinds)) if !kinds.is_empty() => {
                self.pick(kinds).as_str().unwrap_or("null").to_owned()
            }
            _ if keywords.contains_key("properties") => "object".to_owned(),
            _ if keywords.contains_key("items") || keywords.contains_key("prefixItems") => {
                "array".to_owned()
            }
            _ => return self.anything(depth),
        };
        match kind.as_str() {
            "object" => {
                let mut value = Value::Object(serde_json::Map::new());
                self.add_own_properties(root, keywords, &mut value, depth);
                value
            }
            "array" => self.array_for(root, keywords, depth),
            "string" => self.string(),
            "integer" => self.integer(),
            "number" => self.number(),
            "boolean" => Value::Bool(self.chance(50)),
            _ => Value::Null,
        }
    }

    /// `schema`'s own `properties` (the required ones mostly, the others now and then) and,
    /// sometimes, properties it does not name, into `value` when it is an object.
    fn add_own_properties(
        &mut self,
        root: &Value,
        keywords: &serde_json::Map<String, Value>,
        value: &mut Value,
        depth: usize,
    ) {
        let Value::Object(object) = value else { return };
        let required: Vec<&str> = keywords
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        if let Some(Value::Object(properties)) = keywords.get("properties") {
            for (name, property) in properties {
                let wanted = if required.contains(&name.as_str()) {
                    95
                } else {
                    40
                };
                if self.chance(wanted) {
                    let property = self.value_for(root, property, depth + 1);
                    object.insert(name.clone(), property);
                }
            }
        }
        if let Some(additional) = keywords
            .get("additionalProperties")
            .filter(|schema| schema.is_object())
        {
            for _ in 0..self.below(3) {
                let name = self.pick(&["k", "key2", "x1", "zz"]).to_string();
                let property = self.value_for(root, additional, depth + 1);
                object.insert(name, property);
            }
        }
        if self.chance(12) {
            let name = self
                .pick(&["extra", "x9", "continuation", "b", "c", "d"])
                .to_string();
            let property = self.anything(depth + 1);
            object.insert(name, property);
        }
        if !object.is_empty() && self.chance(8) {
            let drop = object.keys().nth(self.below(object.len())).cloned();
            if let Some(name) = drop {
                object.remove(&name);
            }
        }
    }

    fn array_for(
        &mut self,
        root: &Value,
        keywords: &serde_json::Map<String, Value>,
        depth: usize,
    ) -> Value {
        let prefix = keywords
            .get("prefixItems")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let least = keywords
            .get("minItems")
            .and_then(Value::as_u64)
            .unwrap_or(0) as usize;
        let most = keywords
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or(4)
            .min(5) as usize;
        let length = if self.chance(85) {
            least.max(prefix.len().min(most)) + self.below(most.saturating_sub(least) + 1)
        } else {
            self.below(6)
        };
        let items = keywords.get("items").cloned();
        (0..length)
            .map(|index| match prefix.get(index).or(items.as_ref()) {
                Some(schema) => self.value_for(root, schema, depth + 1),
                None => self.anything(depth + 1),
            })
            .collect()
    }

    fn string(&mut self) -> Value {
        json!(*self.pick(&[
            "", "a", "ab", "abc", "abcdef", "x-y", "Hello", "é", "a/b", "12", "zz-top-", "ABC",
            "--"
        ]))
    }

    fn integer(&mut self) -> Value {
        json!(*self.pick(&[
            -5_i64,
            -3,
            -1,
            0,
            1,
            2,
            3,
            4,
            9,
            40,
            41,
            255,
            256,
            65_536,
            1 << 40,
            -(1 << 40)
        ]))
    }

    fn number(&mut self) -> Value {
        if self.chance(50) {
            self.integer()
        } else {
            json!(*self.pick(&[-2.25_f64, -1.0, -0.5, 0.5, 1.0, 1.5, 3.0, 3.75, 4.0, 1e300]))
        }
    }

    /// Any JSON value, small.
    fn anything(&mut self, depth: usize) -> Value {
        match self.below(if depth > 4 { 5 } else { 7 }) {
            0 => Value::Null,
            1 => Value::Bool(self.chance(50)),
            2 => self.integer(),
            3 => self.number(),
            4 => self.string(),
            5 => (0..self.below(4))
                .map(|_| self.anything(depth + 1))
                .collect(),
            _ => (0..self.below(4))
                .map(|_| {
                    (
                        self.pick(&["a", "b", "c", "d", "x1", "name", "kind"])
                            .to_string(),
                        self.anything(depth + 1),
                    )
                })
                .collect::<serde_json::Map<_, _>>()
                .into(),
        }
    }
}

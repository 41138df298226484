//! Arguments generated from a tool's `inputSchema`: valid calls (the required fields, every
//! field, and seeded random variations), invalid ones (a wrong type, a missing required field,
//! an unknown argument), and edge values for fields that look like paths or queries.
//!
//! Only what JSON Schema says is used: types, `enum`/`const`, numeric bounds (exclusive ones
//! too), lengths and item counts, `required`, `anyOf`/`oneOf`/`allOf` and local `$ref`s.
//! `pattern`, `format` and `multipleOf` are not honoured: a field it cannot satisfy gets its
//! best guess, and the server's answer to that is checked like any other.
//!
//! Generation is bounded whatever the schema: one call holds at most [`MAX_VALUES`] values and
//! [`MAX_TEXT`] characters, looks at a bounded number of schema members, and is made only when
//! it is about to be sent ([`Plan`]); invalid calls and edge values are tried on at most
//! [`MAX_FIELD_CALLS`] fields each. A schema whose valid calls need more is [`TooLarge`].

use envelope_core::paging::DEFAULT_CONTINUATION_FIELD;
use std::collections::BTreeSet;

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

/// The most JSON values (members, items, scalars) one generated call holds. A valid call needs
/// more only when the schema demands it (`minItems` within `minItems`, thousands of required
/// fields): no agent can fill such a schema either, and [`TooLarge`] says so.
pub(crate) const MAX_VALUES: usize = 100_000;

/// The most characters of text one generated call holds.
pub(crate) const MAX_TEXT: usize = 1 << 20;

/// The most schema members and union branches looked at while generating one call: however
/// large the schema, generating from it takes bounded time.
const MAX_STEPS: usize = 1_000_000;

/// The most fields each kind of invalid call (a wrong type, a missing field) and edge value is
/// tried on, in the schema's order: a tool with thousands of fields gets a bounded run.
pub(crate) const MAX_FIELD_CALLS: usize = 16;

/// The most branches of one `anyOf`/`oneOf` looked at for its types.
const MAX_BRANCHES: usize = 64;

/// The most schemas looked at to tell one schema's types, unions followed.
const MAX_TYPE_SCHEMAS: usize = 256;

/// A valid call of the schema would be larger than the checker generates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct TooLarge;

/// What one call may still use.
struct Budget {
    values: usize,
    text: usize,
    steps: usize,
}

impl Budget {
    fn new() -> Self {
        Budget {
            values: MAX_VALUES,
            text: MAX_TEXT,
            steps: MAX_STEPS,
        }
    }

    fn value(&mut self) -> Result<(), TooLarge> {
        self.values = self.values.checked_sub(1).ok_or(TooLarge)?;
        self.step()
    }

    fn step(&mut self) -> Result<(), TooLarge> {
        self.steps(1)
    }

    fn steps(&mut self, count: usize) -> Result<(), TooLarge> {
        self.steps = self.steps.checked_sub(count).ok_or(TooLarge)?;
        Ok(())
    }

    fn text(&mut self, chars: usize) -> Result<(), TooLarge> {
        self.text = self.text.checked_sub(chars).ok_or(TooLarge)?;
        Ok(())
    }
}

/// The argument name an unknown-argument call sends: no real tool takes it.
pub(crate) const UNKNOWN_ARGUMENT: &str = "envelope_check_unknown_argument";

/// One call the plan makes, before its arguments are generated.
#[derive(Debug, Clone)]
enum Step {
    /// The required fields.
    Required,
    /// Every field.
    Every,
    /// The required fields and a random half of the others, random values.
    Random,
    /// A value of the wrong type in the field.
    WrongType(String, Value),
    /// The required field left out.
    Missing(String),
    /// An argument no property names.
    Unknown,
    /// An edge value in the field.
    Edge(String, Value),
}

/// The calls made of one tool, generated one at a time, so that the time budget is checked
/// between them and only one call's arguments are held at once: valid ones first (the required
/// fields; every field; `variations` random ones), then the invalid ones and the edge values.
pub(crate) struct Plan<'a> {
    root: &'a Value,
    object: Object<'a>,
    steps: std::vec::IntoIter<Step>,
    rng: Rng,
    /// The required-fields call, the base of the invalid ones, once generated.
    base: Option<Result<Map<String, Value>, TooLarge>>,
}

impl<'a> Plan<'a> {
    pub(crate) fn new(schema: &'a Value, variations: usize, rng: Rng) -> Self {
        let object = Object::of(schema, schema);
        let mut steps = vec![Step::Required];
        if object.properties.len() > object.required.len() {
            steps.push(Step::Every);
        }
        steps.extend(std::iter::repeat_n(Step::Random, variations));
        steps.extend(
            object
                .properties
                .iter()
                .filter_map(|(field, property)| {
                    wrong_type(schema, property)
                        .map(|wrong| Step::WrongType((*field).to_owned(), wrong))
                })
                .take(MAX_FIELD_CALLS),
        );
        steps.extend(
            object
                .required
                .iter()
                .take(MAX_FIELD_CALLS)
                .map(|field| Step::Missing((*field).to_owned())),
        );
        steps.push(Step::Unknown);
        let edged = object.properties.iter().filter(|(field, property)| {
            takes_text(schema, property) && (is_path_like(field) || is_query_like(field))
        });
        for (field, _) in edged.take(MAX_FIELD_CALLS) {
            steps.extend(edge_values().map(|edge| Step::Edge((*field).to_owned(), edge)));
        }
        Plan {
            root: schema,
            object,
            steps: steps.into_iter(),
            rng,
            base: None,
        }
    }

    /// The required-fields call, generated once.
    fn base(&mut self) -> Result<Map<String, Value>, TooLarge> {
        let (root, object) = (self.root, &self.object);
        self.base
            .get_or_insert_with(|| object.fill(root, false, None, 0, &mut Budget::new()))
            .clone()
    }
}

impl Iterator for Plan<'_> {
    type Item = Result<Call, TooLarge>;

    fn next(&mut self) -> Option<Self::Item> {
        let step = self.steps.next()?;
        let (root, mut budget) = (self.root, Budget::new());
        let valid = |arguments| Call {
            arguments,
            intent: Intent::Valid,
        };
        let call = match step {
            Step::Required => self.base().map(valid),
            Step::Every => self
                .object
                .fill(root, true, None, 0, &mut budget)
                .map(valid),
            Step::Random => {
                let rng = &mut self.rng;
                self.object
                    .fill(root, false, Some(rng), 0, &mut budget)
                    .map(valid)
            }
            Step::WrongType(field, wrong) => self.base().map(|mut arguments| {
                arguments.insert(field.clone(), wrong);
                Call {
                    arguments,
                    intent: Intent::WrongType { field },
                }
            }),
            Step::Missing(field) => self.base().map(|mut arguments| {
                arguments.remove(&field);
                Call {
                    arguments,
                    intent: Intent::Missing { field },
                }
            }),
            Step::Unknown => self.base().map(|mut arguments| {
                arguments.insert(UNKNOWN_ARGUMENT.to_owned(), json!(1));
                Call {
                    arguments,
                    intent: Intent::Unknown {
                        field: UNKNOWN_ARGUMENT.to_owned(),
                    },
                }
            }),
            Step::Edge(field, edge) => self.base().map(|mut arguments| {
                arguments.insert(field.clone(), edge);
                Call {
                    arguments,
                    intent: Intent::Edge { field },
                }
            }),
        };
        Some(call)
    }
}

/// The required-fields call of `schema`, the base the paging check builds on.
pub(crate) fn required_call(schema: &Value) -> Result<Map<String, Value>, TooLarge> {
    Object::of(schema, schema).fill(schema, false, None, 0, &mut Budget::new())
}

/// The integer argument that bounds a page (`limit`, `page_size`, …), with its least value.
pub(crate) fn page_size(schema: &Value) -> Option<(String, i64, Option<i64>)> {
    let object = Object::of(schema, schema);
    object.properties.iter().find_map(|(name, property)| {
        let property = resolve(schema, property);
        let integer = types(schema, property).iter().any(|kind| kind == "integer");
        let named = matches!(
            *name,
            "limit" | "page_size" | "per_page" | "max_results" | "top_k" | "count" | "first"
        );
        (integer && named).then(|| {
            let min = property["minimum"].as_i64().unwrap_or(1).max(1);
            ((*name).to_owned(), min, property["maximum"].as_i64())
        })
    })
}

/// Whether the tool's arguments take a `continuation` token.
pub(crate) fn takes_continuation(schema: &Value) -> bool {
    Object::of(schema, schema)
        .properties
        .iter()
        .any(|(name, _)| *name == DEFAULT_CONTINUATION_FIELD)
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
/// first branch of an `anyOf`/`oneOf` (a valid choice) included; borrowed from the schema, each
/// name once (a set keeps merging linear however many there are).
struct Object<'a> {
    properties: Vec<(&'a str, &'a Value)>,
    required: Vec<&'a str>,
    names: BTreeSet<&'a str>,
    required_names: BTreeSet<&'a str>,
    /// The schema members looked at to gather them, charged to a call's budget.
    looked_at: usize,
}

impl<'a> Object<'a> {
    fn of(root: &'a Value, schema: &'a Value) -> Object<'a> {
        let schema = resolve(root, schema);
        let mut object = Object {
            properties: Vec::new(),
            required: Vec::new(),
            names: BTreeSet::new(),
            required_names: BTreeSet::new(),
            looked_at: 0,
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

    fn add(&mut self, schema: &'a Value) {
        if let Some(properties) = schema["properties"].as_object() {
            self.looked_at += properties.len();
            for (name, property) in properties {
                if self.names.insert(name) {
                    self.properties.push((name, property));
                }
            }
        }
        let required = schema["required"].as_array().map_or(&[][..], Vec::as_slice);
        self.looked_at += required.len();
        for name in required {
            if let Some(name) = name.as_str()
                && self.required_names.insert(name)
            {
                self.required.push(name);
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
        budget: &mut Budget,
    ) -> Result<Map<String, Value>, TooLarge> {
        let mut arguments = Map::new();
        for (name, property) in &self.properties {
            budget.step()?;
            let required = self.required_names.contains(name);
            let include = required || all || rng.as_deref_mut().is_some_and(Rng::coin);
            // A token from nowhere only earns a refusal; paging is checked on its own.
            if !include || (!required && *name == DEFAULT_CONTINUATION_FIELD) {
                continue;
            }
            let value = valid(root, property, name, rng.as_deref_mut(), depth, budget)?;
            arguments.insert((*name).to_owned(), value);
        }
        Ok(arguments)
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
    let mut left = MAX_TYPE_SCHEMAS;
    types_within(root, schema, 0, &mut left)
}

/// [`types`], following unions at most [`MAX_DEPTH`] deep (a union may name itself) and
/// looking at no more than `left` schemas in all: a union of unions of itself, 64 wide, is
/// read in bounded time.
fn types_within(root: &Value, schema: &Value, depth: usize, left: &mut usize) -> Vec<String> {
    let schema = resolve(root, schema);
    if depth > MAX_DEPTH || *left == 0 {
        return Vec::new();
    }
    *left -= 1;
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
            for branch in schema[key]
                .as_array()
                .into_iter()
                .flatten()
                .take(MAX_BRANCHES)
            {
                kinds.extend(types_within(root, branch, depth + 1, left));
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

/// A value `schema` accepts: the typical one, or with `rng` a random one; [`TooLarge`] when
/// it takes more than `budget` has left.
fn valid(
    root: &Value,
    schema: &Value,
    name: &str,
    rng: Option<&mut Rng>,
    depth: usize,
    budget: &mut Budget,
) -> Result<Value, TooLarge> {
    let schema = resolve(root, schema);
    budget.value()?;
    // A schema that refers back to itself is filled this deep, then left empty.
    if depth > MAX_DEPTH {
        return Ok(Value::Null);
    }
    if let Some(value) = schema.get("const") {
        return Ok(value.clone());
    }
    if let Some(values) = schema["enum"]
        .as_array()
        .filter(|values| !values.is_empty())
    {
        let pick = rng.map_or(0, |rng| rng.below(values.len() as u64) as usize);
        return Ok(values[pick].clone());
    }
    if let Some(default) = schema.get("default")
        && rng.is_none()
    {
        return Ok(default.clone());
    }
    let kinds = types(root, schema);
    if kinds.is_empty() {
        // No type: the first branch of a union, else anything.
        for key in ["anyOf", "oneOf"] {
            if let Some(first) = schema[key].as_array().and_then(|branches| branches.first()) {
                return valid(root, first, name, rng, depth + 1, budget);
            }
        }
    }
    let kind = kinds.into_iter().next().unwrap_or_default();
    Ok(match kind.as_str() {
        "string" => text(schema, name, rng, budget)?,
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
            let least = schema["minItems"].as_u64().unwrap_or(1).max(1);
            let most = schema["maxItems"].as_u64().unwrap_or(u64::MAX);
            // More items than the budget holds: no call of this schema is generated.
            let count = usize::try_from(least.min(most)).map_err(|_| TooLarge)?;
            if count > budget.values {
                return Err(TooLarge);
            }
            let items = &schema["items"];
            let mut rng = rng;
            let mut array = Vec::with_capacity(count);
            for _ in 0..count {
                array.push(valid(
                    root,
                    items,
                    name,
                    rng.as_deref_mut(),
                    depth + 1,
                    budget,
                )?);
            }
            Value::Array(array)
        }
        "object" if depth < MAX_DEPTH => {
            let object = Object::of(root, schema);
            // Gathering an object's members is work too: an array of objects of a million
            // required names each runs out of budget after the first.
            budget.steps(object.looked_at)?;
            Value::Object(object.fill(root, false, rng, depth + 1, budget)?)
        }
        "array" => json!([]),
        "null" => Value::Null,
        _ => json!({}),
    })
}

/// A string for the field `name`: a letter common in any text for a query, `.` for a path,
/// else a short word; within the schema's length bounds.
fn text(
    schema: &Value,
    name: &str,
    rng: Option<&mut Rng>,
    budget: &mut Budget,
) -> Result<Value, TooLarge> {
    let mut text = if is_query_like(name) {
        "e".to_owned()
    } else if is_path_like(name) {
        ".".to_owned()
    } else {
        "example".to_owned()
    };
    if let Some(rng) = rng {
        // wire: words to search for, not envelope fields
        const WORDS: [&str; 6] = ["main", "test", "data", "src", "readme", "x"];
        text = WORDS[rng.below(WORDS.len() as u64) as usize].to_owned();
    }
    let min = usize::try_from(schema["minLength"].as_u64().unwrap_or(0)).map_err(|_| TooLarge)?;
    // Checked before the text is made: a `minLength` of a billion allocates nothing.
    budget.text(min.max(text.chars().count()))?;
    let short = min.saturating_sub(text.chars().count());
    text.push_str(&"a".repeat(short));
    if let Some(max) = schema["maxLength"].as_u64() {
        text = text.chars().take(max as usize).collect();
    }
    Ok(Value::String(text))
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

    fn calls(schema: &Value, variations: usize, rng: &mut Rng) -> Vec<Call> {
        Plan::new(schema, variations, rng.clone())
            .map(|call| call.expect("within the bounds"))
            .collect()
    }

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
    }

    #[test]
    fn a_schema_that_asks_for_more_than_the_bounds_is_too_large_at_once() {
        let too_large = |schema: Value| {
            let plan: Vec<_> = Plan::new(&schema, 3, Rng::new(3)).collect();
            assert!(plan.len() <= 3 + 3 + 3 * MAX_FIELD_CALLS + 1 + 3 * MAX_FIELD_CALLS);
            plan.iter().filter(|call| call.is_err()).count()
        };
        // A billion characters: refused before any is made.
        let long = json!({
            "type": "object",
            "properties": { "name": { "type": "string", "minLength": 1_000_000_000u64 } },
            "required": ["name"],
        });
        assert!(too_large(long) > 0);
        // 127 bytes of recursive array, ten thousand items a level.
        let recursive = json!({
            "type": "object", "required": ["a"],
            "properties": { "a": { "$ref": "#/$defs/A" } },
            "$defs": { "A": { "type": "array", "minItems": 10_000, "items": { "$ref": "#/$defs/A" } } },
        });
        assert!(too_large(recursive) > 0);
        // Two thousand required fields, four deep.
        let names: Vec<String> = (0..2_000).map(|index| format!("f{index}")).collect();
        let mut defs = Map::new();
        for depth in 1..=4 {
            let inner = if depth == 1 {
                json!({ "type": "string" })
            } else {
                json!({ "$ref": format!("#/$defs/L{}", depth - 1) })
            };
            let properties: Map<String, Value> = names
                .iter()
                .map(|name| (name.clone(), inner.clone()))
                .collect();
            let level = json!({ "type": "object", "properties": properties, "required": names });
            defs.insert(format!("L{depth}"), level);
        }
        let deep = json!({ "$ref": "#/$defs/L4", "$defs": defs });
        assert!(too_large(deep) > 0);
        // A union of unions of itself, 64 wide: its types are read in bounded time.
        let branches: Vec<Value> = (0..64).map(|_| json!({ "$ref": "#/$defs/U" })).collect();
        let bomb = json!({
            "type": "object", "required": ["u"],
            "properties": { "u": { "$ref": "#/$defs/U" } },
            "$defs": { "U": { "anyOf": branches, "oneOf": branches } },
        });
        let _ = Plan::new(&bomb, 3, Rng::new(1)).count();
        // An array of objects with a million required names: out of budget after the first.
        let names: Vec<String> = (0..1_000_000).map(|index| format!("r{index}")).collect();
        let heavy = json!({
            "type": "object", "required": ["a"],
            "properties": { "a": {
                "type": "array", "minItems": 99_999,
                "items": { "type": "object", "required": names },
            } },
        });
        assert!(too_large(heavy) > 0);
        // Two hundred thousand optional fields: the required call is empty, the full one too
        // large, and the plan stays short.
        let properties: Map<String, Value> = (0..200_000)
            .map(|index| (format!("p{index}"), json!({ "type": "integer" })))
            .collect();
        let wide = json!({ "type": "object", "properties": properties });
        let plan: Vec<_> = Plan::new(&wide, 0, Rng::new(1)).collect();
        assert_eq!(plan[0].as_ref().map(|call| call.arguments.len()), Ok(0));
        assert_eq!(plan[1].as_ref().err(), Some(&TooLarge));
        assert!(plan.len() <= 2 + MAX_FIELD_CALLS + 1);
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

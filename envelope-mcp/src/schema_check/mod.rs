//! Instances checked against a JSON Schema (draft 2020-12): a suggested next action's arguments
//! against the input schema its tool lists, an elicited answer against the form it was asked
//! with.
//!
//! Written here rather than taken from the `jsonschema` crate, which every server on envelope
//! would then build: with its regex engines, number tower, URI resolver and Unicode tables it
//! is some forty crates, more than the rest of a plain rmcp server's graph beside it, for a
//! check that reads schemas schemars writes and MCP's flat forms. What is here is draft
//! 2020-12's applicator, validation and unevaluated vocabularies, checked against that crate
//! over generated schemas and instances by this module's tests. Refused when the schema is
//! compiled, so that a tool never passes a check nobody made: `$ref` beyond the document
//! (anything but `#` and `#/…` pointers), `$dynamicRef`, `$recursiveRef`, an `$id` below the
//! root (which would move what `#` means), `unevaluatedItems`, and a `pattern` the regex engine
//! cannot compile (`regex-lite`: no look-around, no back-references, ASCII classes). `format`
//! is an annotation, as the draft's default has it.

use std::collections::{BTreeSet, HashMap};
use std::fmt;

use regex_lite::Regex;
use serde_json::{Map, Number, Value};

/// How deep a check may go in schemas before it is refused: deeper than any schema a tool
/// lists, and a bound on a `$ref` that leads back to itself without reading further into the
/// instance.
const MAX_DEPTH: usize = 128;

/// Keywords whose value is one subschema.
const ONE_SUBSCHEMA: &[&str] = &[
    "additionalProperties",
    "unevaluatedProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
];

/// Keywords whose value is a list of subschemas.
const LIST_OF_SUBSCHEMAS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];

/// Keywords whose value maps names to subschemas.
const MAP_OF_SUBSCHEMAS: &[&str] = &[
    "properties",
    "patternProperties",
    "dependentSchemas",
    "$defs",
    "definitions",
];

/// Keywords of draft 2020-12 this check does not carry out: a schema that uses one is refused
/// rather than passed unchecked.
const UNSUPPORTED: &[&str] = &["$dynamicRef", "$recursiveRef", "unevaluatedItems"];

/// A schema, compiled: its `$ref`s resolve and its patterns compile.
#[derive(Debug, Clone)]
pub(crate) struct SchemaCheck {
    root: Value,
    patterns: HashMap<String, Regex>,
}

/// Why a schema cannot be compiled, with where in it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SchemaError {
    /// A JSON Pointer into the schema.
    at: String,
    reason: String,
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (at `{}` in the schema)", self.reason, self.at)
    }
}

impl std::error::Error for SchemaError {}

/// The first way an instance fails its schema found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Violation {
    /// A JSON Pointer into the instance: where it fails.
    pub(crate) at: String,
    message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl SchemaCheck {
    /// `schema` compiled, or why it cannot be.
    pub(crate) fn new(schema: &Value) -> Result<SchemaCheck, SchemaError> {
        let mut patterns = HashMap::new();
        compile(schema, schema, &Where::Root, true, &mut patterns)?;
        Ok(SchemaCheck {
            root: schema.clone(),
            patterns,
        })
    }

    /// Whether `instance` passes.
    pub(crate) fn is_valid(&self, instance: &Value) -> bool {
        self.check(instance).is_ok()
    }

    /// The first way `instance` fails, if it does.
    pub(crate) fn check(&self, instance: &Value) -> Result<(), Violation> {
        self.validate(&self.root, instance, &Where::Root, 0)
            .map(drop)
    }

    /// `instance` (at `at`) against `schema`: on success, the properties of an object instance
    /// it evaluated, which `unevaluatedProperties` around it reads.
    fn validate<'i>(
        &self,
        schema: &Value,
        instance: &'i Value,
        at: &Where<'_>,
        depth: usize,
    ) -> Result<BTreeSet<&'i str>, Violation> {
        if depth > MAX_DEPTH {
            return Err(at.fails("the schema nests too deep to check (a `$ref` that loops?)"));
        }
        let schema = match schema {
            Value::Bool(true) => return Ok(BTreeSet::new()),
            Value::Bool(false) => return Err(at.fails("no value is allowed here")),
            Value::Object(schema) => schema,
            // Compiling refused it.
            _ => return Ok(BTreeSet::new()),
        };
        let mut evaluated = BTreeSet::new();
        let depth = depth + 1;
        if let Some(Value::String(reference)) = schema.get("$ref") {
            let target = resolve(&self.root, reference)
                .ok_or_else(|| at.fails(format!("`$ref` {reference} does not resolve")))?;
            evaluated.extend(self.validate(target, instance, at, depth)?);
        }
        check_type(schema, instance, at)?;
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.iter().any(|value| equal(value, instance))
        {
            return Err(at.fails(format!(
                "{instance} is not one of {}",
                Value::Array(allowed.clone())
            )));
        }
        if let Some(expected) = schema.get("const")
            && !equal(expected, instance)
        {
            return Err(at.fails(format!("{expected} was expected")));
        }
        match instance {
            Value::Number(number) => check_number(schema, number, at)?,
            Value::String(text) => self.check_string(schema, text, at)?,
            Value::Array(items) => self.check_array(schema, items, at, depth)?,
            Value::Object(object) => {
                self.check_object(schema, object, at, depth, &mut evaluated)?;
            }
            Value::Null | Value::Bool(_) => {}
        }
        self.check_combinations(schema, instance, at, depth, &mut evaluated)?;
        if let (Some(unevaluated), Value::Object(object)) =
            (schema.get("unevaluatedProperties"), instance)
        {
            for (name, value) in object {
                if !evaluated.contains(name.as_str()) {
                    self.validate(unevaluated, value, &at.key(name), depth)
                        .map_err(|failure| failure.for_unevaluated(name, unevaluated))?;
                }
            }
            evaluated.extend(object.keys().map(String::as_str));
        }
        Ok(evaluated)
    }

    fn check_string(
        &self,
        schema: &Map<String, Value>,
        text: &str,
        at: &Where<'_>,
    ) -> Result<(), Violation> {
        let length = text.chars().count() as u64;
        if let Some(least) = limit(schema, "minLength")
            && length < least
        {
            return Err(at.fails(format!("{text:?} is shorter than {least} characters")));
        }
        if let Some(most) = limit(schema, "maxLength")
            && length > most
        {
            return Err(at.fails(format!("{text:?} is longer than {most} characters")));
        }
        if let Some(Value::String(pattern)) = schema.get("pattern")
            && self
                .patterns
                .get(pattern)
                .is_some_and(|regex| !regex.is_match(text))
        {
            return Err(at.fails(format!("{text:?} does not match {pattern:?}")));
        }
        Ok(())
    }

    fn check_array(
        &self,
        schema: &Map<String, Value>,
        items: &[Value],
        at: &Where<'_>,
        depth: usize,
    ) -> Result<(), Violation> {
        let count = items.len() as u64;
        check_count(schema, count, ("minItems", 0), "maxItems", "items", at)?;
        if schema.get("uniqueItems") == Some(&Value::Bool(true)) {
            for (index, item) in items.iter().enumerate() {
                if items[..index].iter().any(|earlier| equal(earlier, item)) {
                    return Err(at.fails(format!("{item} appears more than once")));
                }
            }
        }
        let prefix = match schema.get("prefixItems") {
            Some(Value::Array(prefix)) => prefix.as_slice(),
            _ => &[],
        };
        for (index, item) in items.iter().enumerate() {
            let item_schema = prefix.get(index).or_else(|| schema.get("items"));
            if let Some(item_schema) = item_schema {
                self.validate(item_schema, item, &at.index(index), depth)?;
            }
        }
        if let Some(contains) = schema.get("contains") {
            let matching = items
                .iter()
                .enumerate()
                .filter(|(index, item)| {
                    self.validate(contains, item, &at.index(*index), depth)
                        .is_ok()
                })
                .count() as u64;
            let noun = "items that fit `contains`";
            check_count(
                schema,
                matching,
                ("minContains", 1),
                "maxContains",
                noun,
                at,
            )?;
        }
        Ok(())
    }

    fn check_object<'i>(
        &self,
        schema: &Map<String, Value>,
        object: &'i Map<String, Value>,
        at: &Where<'_>,
        depth: usize,
        evaluated: &mut BTreeSet<&'i str>,
    ) -> Result<(), Violation> {
        let count = object.len() as u64;
        check_count(
            schema,
            count,
            ("minProperties", 0),
            "maxProperties",
            "properties",
            at,
        )?;
        if let Some(Value::Array(required)) = schema.get("required") {
            for name in required.iter().filter_map(Value::as_str) {
                if !object.contains_key(name) {
                    return Err(at.fails(format!("{name:?} is a required property")));
                }
            }
        }
        if let Some(Value::Object(dependent)) = schema.get("dependentRequired") {
            for (name, needed) in dependent
                .iter()
                .filter(|(name, _)| object.contains_key(*name))
            {
                for other in needed
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    if !object.contains_key(other) {
                        return Err(
                            at.fails(format!("{other:?} is required when {name:?} is given"))
                        );
                    }
                }
            }
        }
        if let Some(names) = schema.get("propertyNames") {
            for name in object.keys() {
                let name_value = Value::String(name.clone());
                self.validate(names, &name_value, at, depth)
                    .map_err(|failure| {
                        at.fails(format!(
                            "the property name {name:?} does not fit: {}",
                            failure.message
                        ))
                    })?;
            }
        }
        let properties = schema.get("properties").and_then(Value::as_object);
        let patterns = schema.get("patternProperties").and_then(Value::as_object);
        for (name, value) in object {
            let mut matched = false;
            if let Some(property) = properties.and_then(|properties| properties.get(name)) {
                matched = true;
                self.validate(property, value, &at.key(name), depth)?;
            }
            for (pattern, property) in patterns.into_iter().flatten() {
                if self
                    .patterns
                    .get(pattern)
                    .is_some_and(|regex| regex.is_match(name))
                {
                    matched = true;
                    self.validate(property, value, &at.key(name), depth)?;
                }
            }
            if !matched && let Some(additional) = schema.get("additionalProperties") {
                self.validate(additional, value, &at.key(name), depth)
                    .map_err(|failure| failure.for_unevaluated(name, additional))?;
                matched = true;
            }
            if matched {
                evaluated.insert(name.as_str());
            }
        }
        Ok(())
    }

    /// `allOf`, `anyOf`, `oneOf`, `not`, `if`/`then`/`else` and `dependentSchemas`: the
    /// keywords that apply subschemas to the instance itself.
    fn check_combinations<'i>(
        &self,
        schema: &Map<String, Value>,
        instance: &'i Value,
        at: &Where<'_>,
        depth: usize,
        evaluated: &mut BTreeSet<&'i str>,
    ) -> Result<(), Violation> {
        if let Some(Value::Array(all)) = schema.get("allOf") {
            for sub in all {
                evaluated.extend(self.validate(sub, instance, at, depth)?);
            }
        }
        if let Some(Value::Array(any)) = schema.get("anyOf") {
            // Every branch, not the first that fits: each one that fits evaluates properties.
            let mut first_failure = None;
            let mut fits = false;
            for sub in any {
                match self.validate(sub, instance, at, depth) {
                    Ok(names) => {
                        fits = true;
                        evaluated.extend(names);
                    }
                    Err(failure) => {
                        first_failure.get_or_insert(failure);
                    }
                }
            }
            if !fits {
                return Err(at.fails(format!(
                    "{instance} fits none of `anyOf`{}",
                    because(first_failure)
                )));
            }
        }
        if let Some(Value::Array(one)) = schema.get("oneOf") {
            let mut fitting = None;
            let mut first_failure = None;
            for (index, sub) in one.iter().enumerate() {
                match self.validate(sub, instance, at, depth) {
                    Ok(names) => {
                        if let Some((earlier, _)) = fitting {
                            return Err(at.fails(format!(
                                "{instance} fits both {earlier} and {index} of `oneOf`"
                            )));
                        }
                        fitting = Some((index, names));
                    }
                    Err(failure) => {
                        first_failure.get_or_insert(failure);
                    }
                }
            }
            match fitting {
                Some((_, names)) => evaluated.extend(names),
                None => {
                    return Err(at.fails(format!(
                        "{instance} fits none of `oneOf`{}",
                        because(first_failure)
                    )));
                }
            }
        }
        if let Some(not) = schema.get("not")
            && self.validate(not, instance, at, depth).is_ok()
        {
            return Err(at.fails(format!("{instance} fits what `not` forbids")));
        }
        if let (Some(Value::Object(dependent)), Value::Object(object)) =
            (schema.get("dependentSchemas"), instance)
        {
            for (_, sub) in dependent
                .iter()
                .filter(|(name, _)| object.contains_key(*name))
            {
                evaluated.extend(self.validate(sub, instance, at, depth)?);
            }
        }
        if let Some(condition) = schema.get("if") {
            match self.validate(condition, instance, at, depth) {
                Ok(names) => {
                    evaluated.extend(names);
                    if let Some(then) = schema.get("then") {
                        evaluated.extend(self.validate(then, instance, at, depth)?);
                    }
                }
                Err(_) => {
                    if let Some(otherwise) = schema.get("else") {
                        evaluated.extend(self.validate(otherwise, instance, at, depth)?);
                    }
                }
            }
        }
        Ok(())
    }
}

/// Where in the instance a check is: built as the check descends, written out only when it
/// fails.
enum Where<'a> {
    Root,
    Key(&'a Where<'a>, &'a str),
    Index(&'a Where<'a>, usize),
}

impl<'a> Where<'a> {
    fn key(&'a self, name: &'a str) -> Where<'a> {
        Where::Key(self, name)
    }

    fn index(&'a self, index: usize) -> Where<'a> {
        Where::Index(self, index)
    }

    fn fails(&self, message: impl Into<String>) -> Violation {
        Violation {
            at: self.pointer(),
            message: message.into(),
        }
    }

    /// This place as a JSON Pointer (RFC 6901): `""` for the root.
    fn pointer(&self) -> String {
        match self {
            Where::Root => String::new(),
            Where::Key(parent, name) => {
                format!(
                    "{}/{}",
                    parent.pointer(),
                    name.replace('~', "~0").replace('/', "~1")
                )
            }
            Where::Index(parent, index) => format!("{}/{index}", parent.pointer()),
        }
    }
}

impl Violation {
    /// A property refused by `additionalProperties` or `unevaluatedProperties: false` says so
    /// by name, rather than that no value is allowed.
    fn for_unevaluated(self, name: &str, schema: &Value) -> Violation {
        if *schema == Value::Bool(false) {
            Violation {
                message: format!("{name:?} is not an allowed property"),
                ..self
            }
        } else {
            self
        }
    }
}

/// `: <the first branch's failure>`, when there is one.
fn because(failure: Option<Violation>) -> String {
    failure.map_or_else(String::new, |failure| format!(": {}", failure.message))
}

fn check_type(
    schema: &Map<String, Value>,
    instance: &Value,
    at: &Where<'_>,
) -> Result<(), Violation> {
    let fits = |name: &Value| name.as_str().is_some_and(|name| is_of_type(instance, name));
    let (fitting, expected) = match schema.get("type") {
        None => return Ok(()),
        Some(Value::Array(names)) => (names.iter().any(fits), Value::Array(names.clone())),
        Some(name) => (fits(name), name.clone()),
    };
    if fitting {
        Ok(())
    } else {
        Err(at.fails(format!("{instance} is not of type {expected}")))
    }
}

fn is_of_type(instance: &Value, name: &str) -> bool {
    match (name, instance) {
        ("null", Value::Null)
        | ("boolean", Value::Bool(_))
        | ("string", Value::String(_))
        | ("array", Value::Array(_))
        | ("object", Value::Object(_))
        | ("number", Value::Number(_)) => true,
        ("integer", Value::Number(number)) => is_integer(number),
        _ => false,
    }
}

/// An integer in JSON Schema's sense: a number without a fraction, `1.0` included.
fn is_integer(number: &Number) -> bool {
    number.is_i64() || number.is_u64() || number.as_f64().is_some_and(|value| value.fract() == 0.0)
}

fn check_number(
    schema: &Map<String, Value>,
    number: &Number,
    at: &Where<'_>,
) -> Result<(), Violation> {
    use std::cmp::Ordering::{Greater, Less};
    let bound = |keyword: &str| schema.get(keyword).and_then(Value::as_number);
    let failing = [
        ("minimum", [Less].as_slice(), "less than"),
        (
            "exclusiveMinimum",
            &[Less, std::cmp::Ordering::Equal],
            "not more than",
        ),
        ("maximum", &[Greater], "more than"),
        (
            "exclusiveMaximum",
            &[Greater, std::cmp::Ordering::Equal],
            "not less than",
        ),
    ];
    for (keyword, orderings, words) in failing {
        if let Some(limit) = bound(keyword)
            && orderings.contains(&compare(number, limit))
        {
            return Err(at.fails(format!("{number} is {words} {limit}")));
        }
    }
    if let Some(divisor) = bound("multipleOf")
        && !is_multiple(number, divisor)
    {
        return Err(at.fails(format!("{number} is not a multiple of {divisor}")));
    }
    Ok(())
}

/// Two JSON numbers in order: exactly when both are integers, as `f64` otherwise.
fn compare(left: &Number, right: &Number) -> std::cmp::Ordering {
    match (as_integer(left), as_integer(right)) {
        (Some(left), Some(right)) => left.cmp(&right),
        _ => {
            let (left, right) = (
                left.as_f64().unwrap_or(f64::NAN),
                right.as_f64().unwrap_or(f64::NAN),
            );
            left.partial_cmp(&right)
                .unwrap_or(std::cmp::Ordering::Equal)
        }
    }
}

/// A number held as an integer (not `1.0`, which `f64` compares exactly anyway).
fn as_integer(number: &Number) -> Option<i128> {
    number
        .as_i64()
        .map(i128::from)
        .or_else(|| number.as_u64().map(i128::from))
}

fn is_multiple(number: &Number, divisor: &Number) -> bool {
    match (as_integer(number), as_integer(divisor)) {
        (Some(number), Some(divisor)) if divisor != 0 => number % divisor == 0,
        _ => {
            let (number, divisor) = (
                number.as_f64().unwrap_or(f64::NAN),
                divisor.as_f64().unwrap_or(f64::NAN),
            );
            let quotient = number / divisor;
            quotient.is_finite() && quotient.fract() == 0.0
        }
    }
}

/// JSON equality, as `enum`, `const` and `uniqueItems` mean it: numbers by value (`1` is
/// `1.0`), objects whatever their keys' order.
fn equal(left: &Value, right: &Value) -> bool {
    match (left, right) {
        (Value::Number(left), Value::Number(right)) => compare(left, right).is_eq(),
        (Value::Array(left), Value::Array(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .zip(right)
                    .all(|(left, right)| equal(left, right))
        }
        (Value::Object(left), Value::Object(right)) => {
            left.len() == right.len()
                && left
                    .iter()
                    .all(|(name, value)| right.get(name).is_some_and(|other| equal(value, other)))
        }
        _ => left == right,
    }
}

/// `count` (of `noun`) between `schema`'s bounds: the `least` keyword (`floor` when absent)
/// and the `most` keyword.
fn check_count(
    schema: &Map<String, Value>,
    count: u64,
    (least, floor): (&str, u64),
    most: &str,
    noun: &str,
    at: &Where<'_>,
) -> Result<(), Violation> {
    let least = limit(schema, least).unwrap_or(floor);
    if count < least {
        return Err(at.fails(format!("has {count} {noun}, fewer than {least}")));
    }
    if let Some(most) = limit(schema, most)
        && count > most
    {
        return Err(at.fails(format!("has {count} {noun}, more than {most}")));
    }
    Ok(())
}

/// A count keyword's value (`minLength`, `maxItems`, …).
fn limit(schema: &Map<String, Value>, keyword: &str) -> Option<u64> {
    let value = schema.get(keyword)?;
    value.as_u64().or_else(|| {
        value
            .as_f64()
            .filter(|value| value.fract() == 0.0 && *value >= 0.0)
            .map(|value| value as u64)
    })
}

/// The subschema a local `$ref` (`#`, or `#/…`, a JSON Pointer, percent-encoded as a URI
/// fragment) names in `root`.
fn resolve<'s>(root: &'s Value, reference: &str) -> Option<&'s Value> {
    let pointer = reference.strip_prefix('#')?;
    if pointer.is_empty() {
        return Some(root);
    }
    if !pointer.starts_with('/') {
        return None;
    }
    let decoded = percent_decode(pointer)?;
    let mut target = root;
    for token in decoded[1..].split('/') {
        let token = token.replace("~1", "/").replace("~0", "~");
        target = match target {
            Value::Object(object) => object.get(&token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(target)
}

/// A URI fragment's `%XX` escapes decoded; `None` when they do not decode to UTF-8.
fn percent_decode(fragment: &str) -> Option<String> {
    let bytes = fragment.as_bytes();
    let mut decoded = Vec::with_capacity(bytes.len());
    let mut index = 0;
    while index < bytes.len() {
        if bytes[index] == b'%' {
            let hex = fragment.get(index + 1..index + 3)?;
            decoded.push(u8::from_str_radix(hex, 16).ok()?);
            index += 3;
        } else {
            decoded.push(bytes[index]);
            index += 1;
        }
    }
    String::from_utf8(decoded).ok()
}

/// Walks `schema` (at `at` in `root`), refusing what the check would not carry out and
/// compiling each `pattern` and `patternProperties` name into `patterns`.
fn compile(
    root: &Value,
    schema: &Value,
    at: &Where<'_>,
    is_root: bool,
    patterns: &mut HashMap<String, Regex>,
) -> Result<(), SchemaError> {
    let refuse = |at: &Where<'_>, reason: String| SchemaError {
        at: at.pointer(),
        reason,
    };
    let schema = match schema {
        Value::Bool(_) => return Ok(()),
        Value::Object(schema) => schema,
        other => {
            return Err(refuse(
                at,
                format!("a schema is an object or a boolean, not {other}"),
            ));
        }
    };
    if let Some(keyword) = UNSUPPORTED
        .iter()
        .find(|keyword| schema.contains_key(**keyword))
    {
        return Err(refuse(at, format!("`{keyword}` is not supported")));
    }
    if !is_root && schema.contains_key("$id") {
        return Err(refuse(
            at,
            "`$id` below the root is not supported".to_owned(),
        ));
    }
    if let Some(reference) = schema.get("$ref") {
        let resolves = reference
            .as_str()
            .is_some_and(|reference| resolve(root, reference).is_some());
        if !resolves {
            return Err(refuse(
                at,
                format!("`$ref` {reference} is not a pointer into this schema that resolves"),
            ));
        }
    }
    if let Some(kind) = schema.get("type") {
        let names = match kind {
            Value::Array(names) => names.iter().collect(),
            name => vec![name],
        };
        const TYPES: &[&str] = &[
            "null", "boolean", "object", "array", "number", "integer", "string",
        ];
        if let Some(bad) = names
            .iter()
            .find(|name| !name.as_str().is_some_and(|name| TYPES.contains(&name)))
        {
            return Err(refuse(at, format!("{bad} is not a JSON Schema type")));
        }
    }
    let mut compile_pattern = |pattern: &str, at: &Where<'_>| match Regex::new(pattern) {
        Ok(regex) => {
            patterns.insert(pattern.to_owned(), regex);
            Ok(())
        }
        Err(error) => Err(refuse(
            at,
            format!("the pattern {pattern:?} does not compile: {error}"),
        )),
    };
    if let Some(pattern) = schema.get("pattern") {
        let pattern = pattern
            .as_str()
            .ok_or_else(|| refuse(at, "`pattern` is not a string".to_owned()))?;
        compile_pattern(pattern, at)?;
    }
    if let Some(Value::Object(properties)) = schema.get("patternProperties") {
        for pattern in properties.keys() {
            compile_pattern(pattern, at)?;
        }
    }
    for (keyword, value) in schema {
        let keyword = keyword.as_str();
        if ONE_SUBSCHEMA.contains(&keyword) {
            compile(root, value, &at.key(keyword), false, patterns)?;
        } else if LIST_OF_SUBSCHEMAS.contains(&keyword) {
            let Value::Array(subschemas) = value else {
                return Err(refuse(at, format!("`{keyword}` is not a list of schemas")));
            };
            let at = at.key(keyword);
            for (index, sub) in subschemas.iter().enumerate() {
                compile(root, sub, &at.index(index), false, patterns)?;
            }
        } else if MAP_OF_SUBSCHEMAS.contains(&keyword) {
            let Value::Object(subschemas) = value else {
                return Err(refuse(
                    at,
                    format!("`{keyword}` is not an object of schemas"),
                ));
            };
            let at = at.key(keyword);
            for (name, sub) in subschemas {
                compile(root, sub, &at.key(name), false, patterns)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

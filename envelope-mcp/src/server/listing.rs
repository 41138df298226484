//! The tools as MCP lists them: each tool's schemas made portable, lean or in full (see
//! [`Listing`]), its hints and `_meta`.

use std::sync::Arc;

use envelope_core::schema::{Portable, lean_input_schema, terse_output_schema};
use envelope_core::{Dialect, DialectSet, Tool};
use rmcp::model::{MetaObject, ToolAnnotations};
use schemars::Schema;
use schemars::transform::Transform;
use serde_json::{Map, Value, json};

use super::mcp::MetaKeys;

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        // Schemas are objects; a boolean schema becomes its object form.
        Value::Bool(true) => Map::new(),
        other => Map::from_iter([("const".to_owned(), other)]),
    }
}

/// A schema as listed: made [`Portable`] (a no-op for the schemas `#[tool]` writes, which
/// already are), so a hand-written tool's schemas are as portable.
fn listed_schema(mut schema: Schema) -> Map<String, Value> {
    Portable.transform(&mut schema);
    object(schema.to_value())
}

/// One schema admitting what any of `schemas` admits: their `anyOf`, their `$defs` (the same
/// payload's, and the envelope's) hoisted to the root once. Every dialect answers with an
/// object, and the root says so: MCP before 2026-07-28 lists only an object-rooted output
/// schema (rmcp drops any other for those peers), so bare alternatives would leave older
/// clients none.
fn any_of(schemas: impl Iterator<Item = Map<String, Value>>) -> Map<String, Value> {
    let mut defs = Map::new();
    let mut alternatives = Vec::new();
    for mut schema in schemas {
        if let Some(Value::Object(own)) = schema.remove("$defs") {
            for (name, def) in own {
                defs.entry(name).or_insert(def);
            }
        }
        schema.remove("$schema");
        alternatives.push(Value::Object(schema));
    }
    let mut root = Map::new();
    root.insert(
        "$schema".to_owned(),
        Value::from("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert("type".to_owned(), Value::from("object"));
    root.insert("anyOf".to_owned(), Value::Array(alternatives));
    if !defs.is_empty() {
        root.insert("$defs".to_owned(), Value::Object(defs));
    }
    root
}

/// How much of each tool `tools/list` spells out. A model is shown the listing on every turn of
/// every conversation, so the default lists what is particular to each tool and says what they
/// all share once.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum Listing {
    /// Each input schema holds the tool's own arguments; the shaping controls every tool
    /// accepts (`response_mode`, `output_format`, `compact_only`) are described once, in the
    /// server's instructions. Each output schema types `data` in full and the envelope's own
    /// fields at the depth an agent branches on (`ok`, `verdict`, the error's `category` and
    /// `retryable`, that each next action has a `tool` and `arguments`).
    #[default]
    Lean,
    /// Every input schema also lists the controls, and every output schema holds the
    /// envelope's whole schema (as `docs/envelope.schema.json` does, less its prose).
    Full,
}

pub(super) fn listing(
    tool: &dyn Tool,
    keys: &MetaKeys,
    detail: Listing,
    offered: DialectSet,
    dialect: Dialect,
) -> rmcp::model::Tool {
    let spec = tool.spec();
    let (input, output) = match detail {
        Listing::Lean => (
            lean_input_schema(&tool.input_schema()),
            terse_output_schema(&tool.output_schema()),
        ),
        Listing::Full => (tool.input_schema(), tool.output_schema()),
    };
    let input = listed_schema(input);
    // A server answering in another contract's wire lists that wire's schema, `data` typed
    // from the tool's result as in the envelope's; a call may ask for any offered dialect, so
    // each is an alternative.
    let envelope = listed_schema(output);
    // The dialects are written from the envelope's whole schema, whatever the listing's detail.
    let whole = || listed_schema(tool.output_schema()).into();
    let in_dialect = |dialect: Dialect| match dialect {
        Dialect::Envelope => envelope.clone(),
        dialect => match Schema::try_from(envelope_dialect::output_schema(dialect, &whole())) {
            Ok(schema) => listed_schema(schema),
            Err(_) => Map::new(),
        },
    };
    let output = if offered == DialectSet::only(dialect) {
        in_dialect(dialect)
    } else {
        any_of(
            std::iter::once(dialect)
                .chain(offered.iter().filter(|other| *other != dialect))
                .map(in_dialect),
        )
    };
    let mut meta = MetaObject::new();
    meta.insert(keys.tier.clone(), json!(spec.tier));
    if let Some(layer) = &spec.layer {
        meta.insert(keys.layer.clone(), json!(layer));
    }
    // What a caller's token must grant: read before the first call, so an agent can ask for it.
    if !spec.scopes.is_empty() {
        meta.insert(keys.scopes.clone(), json!(spec.scopes));
    }
    // Only the hints the author declared: an absent hint takes MCP's cautious default.
    let annotations = ToolAnnotations::from_raw(
        tool.annotations_title().map(str::to_owned),
        spec.read_only,
        spec.destructive,
        spec.idempotent,
        spec.open_world,
    );
    let mut listed =
        rmcp::model::Tool::new(spec.name.clone(), spec.description.clone(), Arc::new(input))
            .with_raw_output_schema(Arc::new(output))
            .with_meta(meta);
    // Nothing declared, nothing listed: an empty `annotations` says no more than none.
    if annotations != ToolAnnotations::default() {
        listed = listed.with_annotations(annotations);
    }
    if let Some(title) = &spec.title {
        listed = listed.with_title(title.clone());
    }
    listed
}

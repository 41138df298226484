//! The OpenAPI 3.1 document of the gateway, and its tool listing, generated from the toolset.
//!
//! A tool's schemas are JSON Schema 2020-12, OpenAPI 3.1's own dialect, so they are embedded as
//! they are listed over MCP, except that their `$defs` move to `components/schemas` (a
//! `#/$defs/…` reference would otherwise resolve against the document's root). Definitions of
//! one name and one content are shared by every tool; a name two tools define differently is
//! kept apart under `{tool}.{name}`.

use std::collections::BTreeSet;

#[cfg(feature = "auth")]
use envelope_core::SpecText;
use envelope_core::stage::Controls;
use envelope_core::{Tool, ToolSpec};
use serde_json::{Map, Value, json};

use super::super::HttpConfig;
use super::controls::{APPLY_BUDGET, APPLY_BUDGET_HEADER, control_header};
use super::status::{CATEGORY_STATUS, GATEWAY_STATUS, OK_STATUS, error_statuses};
use super::{OPENAPI_PATH, TOOLS_PATH};
use crate::EnvelopeServer;
use crate::server::{Served, Shown};

/// The OpenAPI version the document is written in.
const OPENAPI_VERSION: &str = "3.1.0";

/// `GET /tools`: every tool `shown` with its schemas and flags, sorted by name.
pub(super) fn listing(server: &EnvelopeServer, shown: Shown<'_>) -> Value {
    let served = server.served();
    let tools: Vec<Value> = served
        .tools
        .iter()
        .filter(|tool| shown.includes(tool.spec()))
        .map(|tool| {
            let spec = tool.spec();
            let mut entry = json!({
                "name": spec.name,
                "description": spec.description,
                "path": format!("{TOOLS_PATH}/{}", spec.name),
                "tier": spec.tier,
                "read_only": spec.read_only.unwrap_or(false),
                // wire: the REST listing's own member: the tool's annotation
                "idempotent": spec.is_idempotent(),
                "input_schema": input_schema(&served, &spec.name),
                "output_schema": output_schema(&served, &spec.name),
            });
            let flags = [
                ("title", spec.title.clone().map(Value::from)),
                ("destructive", spec.destructive.map(Value::from)),
                ("open_world", spec.open_world.map(Value::from)),
                // wire: the REST listing's own member: the tool's declared layer
                ("layer", spec.layer.clone().map(Value::from)),
                ("module", spec.module.clone().map(Value::from)),
                // What a caller's access token must grant for the call to run.
                (
                    "scopes",
                    (!spec.scopes.is_empty()).then(|| json!(spec.scopes)),
                ),
            ];
            for (key, value) in flags {
                if let Some(value) = value {
                    entry[key] = value;
                }
            }
            entry
        })
        .collect();
    json!({ "tools": tools })
}

/// The tool `name` as MCP lists it, its schemas made portable.
fn listed<'a>(served: &'a Served, name: &str) -> Option<&'a rmcp::model::Tool> {
    served.listing.iter().find(|tool| tool.name == name)
}

/// The input schema of the tool `name`, as MCP lists it.
fn input_schema(served: &Served, name: &str) -> Value {
    listed(served, name).map_or_else(
        || json!({ "type": "object" }),
        |tool| Value::Object(tool.input_schema.as_ref().clone()),
    )
}

/// The output schema of the tool `name`, as MCP lists it: the envelope, `data` typed (any
/// envelope for a tool listed without one).
fn output_schema(served: &Served, name: &str) -> Value {
    listed(served, name)
        .and_then(|tool| tool.output_schema.as_ref())
        .map_or_else(
            || envelope_core::schema::output_schema_for::<Value>().to_value(),
            |schema| Value::Object(schema.as_ref().clone()),
        )
}

/// The whole document, of the tools `shown`: a tool hidden from the caller has no operation,
/// and its schemas no components.
pub(super) fn document(server: &EnvelopeServer, http: &HttpConfig, shown: Shown<'_>) -> Value {
    let (name, version, instructions) = server.identity();
    let mut components = Components::default();
    let envelope = components.hoist(
        "Envelope",
        envelope_core::schema::output_schema_for::<Value>().to_value(),
    );
    components.schemas.insert("Envelope".to_owned(), envelope);
    components
        .schemas
        .insert("Problem".to_owned(), problem_schema());
    components
        .schemas
        .insert("ToolList".to_owned(), tool_list_schema());
    let mut paths = Map::new();
    paths.insert(
        TOOLS_PATH.to_owned(),
        json!({ "get": get_operation("envelope:listTools", "Every tool, with its schemas and flags", "ToolList") }),
    );
    paths.insert(
        OPENAPI_PATH.to_owned(),
        json!({ "get": get_operation("envelope:openapi", "This document", "OpenApiDocument") }),
    );
    components.schemas.insert(
        "OpenApiDocument".to_owned(),
        json!({
            "type": "object",
            "required": ["openapi", "info", "paths"],
            "properties": { "openapi": { "type": "string" } },
        }),
    );
    let served = server.served();
    for tool in served
        .tools
        .iter()
        .filter(|tool| shown.includes(tool.spec()))
    {
        #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
        let mut operation = operation(&served, tool, &mut components);
        #[cfg(feature = "auth")]
        if http.auth.is_some() {
            secured(&mut operation, &tool.spec().scopes);
        }
        paths.insert(
            format!("{TOOLS_PATH}/{}", tool.spec().name),
            json!({ "post": operation }),
        );
    }
    let description = instructions.map_or_else(
        || {
            format!(
                "The tools of `{name}` as a plain HTTP API: each answers the same envelope as \
                 over MCP (at `{}`).",
                http.path
            )
        },
        |instructions| {
            crate::server::prose_shown(
                instructions,
                shown,
                served.tools.iter().map(|tool| tool.spec()),
            )
        },
    );
    #[cfg_attr(not(feature = "auth"), allow(unused_mut))]
    let mut document = json!({
        "openapi": OPENAPI_VERSION,
        "jsonSchemaDialect": "https://json-schema.org/draft/2020-12/schema",
        "info": { "title": name, "version": version, "description": description },
        "paths": paths,
        "components": {
            "schemas": components.schemas,
            "responses": error_responses(),
            "parameters": parameters(),
        },
    });
    #[cfg(feature = "auth")]
    if let Some(auth) = &http.auth {
        security_scheme(&mut document, auth);
    }
    document
}

/// The name of the document's one security scheme: a bearer access token.
#[cfg(feature = "auth")]
const SECURITY_SCHEME: &str = "oauth";

/// The scheme every route is held to, and what a `401` is, for a resource server `auth`.
#[cfg(feature = "auth")]
fn security_scheme(document: &mut Value, auth: &crate::http::auth::ResourceServer) {
    document["components"]["securitySchemes"] = json!({
        SECURITY_SCHEME: {
            "type": "http",
            "scheme": "bearer",
            "description": format!(
                "An OAuth 2.1 access token issued for `{}` (RFC 8707's `resource`), sent as \
                 `Authorization: Bearer …`. Where to get one, and the scopes there are: the \
                 protected-resource metadata at {}.",
                auth.resource(),
                auth.metadata_url()
            ),
        }
    });
    document["security"] = json!([{ SECURITY_SCHEME: [] }]);
    document["components"]["responses"]["401"] = json!({
        "description": "No access token, or one that is not accepted (expired, for another \
                        resource or issuer, or not signed by the issuer): `WWW-Authenticate` \
                        says why and where the resource's metadata is.",
        "content": { super::problem::PROBLEM_JSON: { "schema": { "$ref": "#/components/schemas/Problem" } } },
    });
    let Some(paths) = document["paths"].as_object_mut() else {
        return;
    };
    for operations in paths.values_mut() {
        let Some(operations) = operations.as_object_mut() else {
            continue;
        };
        for operation in operations.values_mut() {
            operation["responses"]["401"] = json!({ "$ref": "#/components/responses/401" });
        }
    }
}

/// A tool's operation held to its scopes: OpenAPI 3.1 lets a bearer scheme's requirement list
/// them; a `403` then also answers a token that lacks one (`insufficient_scope`).
#[cfg(feature = "auth")]
fn secured(operation: &mut Value, scopes: &[SpecText]) {
    operation["security"] = json!([{ SECURITY_SCHEME: scopes }]);
    if !scopes.is_empty() {
        operation["x-scopes"] = json!(scopes);
    }
}

/// A `GET` route's operation: `200` with `schema`, or `403` for a host not allowed.
fn get_operation(id: &str, summary: &str, schema: &str) -> Value {
    json!({
        "operationId": id,
        "summary": summary,
        "responses": {
            "200": {
                "description": summary,
                "content": { "application/json": { "schema": { "$ref": format!("#/components/schemas/{schema}") } } },
            },
            "403": { "$ref": "#/components/responses/403" },
        },
    })
}

/// A tool's operation: its arguments as the body, the controls as query parameters and
/// headers, its envelope for `200`, a problem for each error status.
fn operation(served: &Served, tool: &dyn Tool, components: &mut Components) -> Value {
    let spec = tool.spec();
    let input = input_schema(served, &spec.name);
    let output = output_schema(served, &spec.name);
    // The controls this tool's schema takes, each as a query parameter and a header.
    // The dialect is MCP's: the HTTP API answers in the envelope's wire.
    // A control the tool reads renamed (its own arguments use the control's name) is still
    // given by its own name here: the query and the headers hold controls only.
    let controls: Vec<&str> = Controls::KEYS
        .into_iter()
        .filter(|key| *key != envelope_core::DIALECT_CONTROL)
        .filter(|key| input["properties"].get(spec.controls.wire(key)).is_some())
        .collect();
    let required = input["required"]
        .as_array()
        .is_some_and(|required| !required.is_empty());
    let input = components.hoist(&format!("{}.input", spec.name), input);
    let output = components.hoist(&format!("{}.output", spec.name), output);
    let mut parameters: Vec<Value> = Vec::new();
    for key in &controls {
        parameters.push(json!({ "$ref": format!("#/components/parameters/query.{key}") }));
        parameters.push(json!({ "$ref": format!("#/components/parameters/header.{key}") }));
    }
    parameters.push(json!({ "$ref": format!("#/components/parameters/query.{APPLY_BUDGET}") }));
    parameters.push(json!({ "$ref": format!("#/components/parameters/header.{APPLY_BUDGET}") }));
    let mut responses = Map::new();
    responses.insert(
        OK_STATUS.to_string(),
        json!({
            "description": "The envelope: `ok`, truncated and empty results included.",
            "content": { "application/json": { "schema": output } },
        }),
    );
    for status in error_statuses() {
        responses.insert(
            status.to_string(),
            json!({ "$ref": format!("#/components/responses/{status}") }),
        );
    }
    let mut operation = json!({
        "operationId": spec.name,
        "summary": spec.title.as_ref().unwrap_or(&spec.name),
        "description": spec.description,
        "parameters": parameters,
        "requestBody": {
            "required": required,
            "description": "The tool's arguments; an empty body is `{}`.",
            "content": { "application/json": { "schema": input } },
        },
        "responses": responses,
        "x-tier": spec.tier,
        "x-idempotent": spec.is_idempotent(),
        "x-read-only": spec.read_only.unwrap_or(false),
    });
    extensions(spec, &mut operation);
    operation
}

/// The extensions a tool declares only sometimes.
fn extensions(spec: &ToolSpec, operation: &mut Value) {
    if let Some(layer) = &spec.layer {
        operation["x-layer"] = json!(layer);
    }
    if let Some(module) = &spec.module {
        operation["x-module"] = json!(module);
    }
    if let Some(destructive) = spec.destructive {
        operation["x-destructive"] = json!(destructive);
    }
}

/// One response a status, each a problem: what answers it, from the status table.
fn error_responses() -> Map<String, Value> {
    let mut responses = Map::new();
    for status in error_statuses() {
        let categories: Vec<String> = CATEGORY_STATUS
            .iter()
            .filter(|row| row.status == status)
            .map(|row| format!("`{}`", row.category))
            .collect();
        let refusals: Vec<String> = GATEWAY_STATUS
            .iter()
            .filter(|refusal| refusal.status == status)
            .map(|refusal| format!("`{}` ({})", refusal.code, refusal.when))
            .collect();
        let mut description = String::new();
        if !categories.is_empty() {
            description = format!("An envelope whose error is {}.", categories.join(" or "));
        }
        if !refusals.is_empty() {
            description.push_str(&format!(
                "{}Refused by the gateway: {}",
                if description.is_empty() { "" } else { " " },
                refusals.join("; ")
            ));
        }
        let mut response = json!({
            "description": description,
            "content": { super::PROBLEM_JSON: { "schema": { "$ref": "#/components/schemas/Problem" } } },
        });
        if status == 503 {
            response["headers"] = json!({
                "Retry-After": {
                    "description": "Seconds to wait: the envelope's `retry_after_ms`, rounded up, else 1.",
                    "required": true,
                    "schema": { "type": "integer", "minimum": 1 },
                },
            });
        }
        responses.insert(status.to_string(), response);
    }
    responses
}

/// Each control as a query parameter and as a header, and the budget opt-out.
fn parameters() -> Map<String, Value> {
    let schema = |key: &str| match key {
        "response_mode" => json!({ "type": "string", "enum": ["compact", "full"] }),
        "output_format" => json!({ "type": "string", "enum": ["json", "toon"] }),
        "compact_only" => json!({ "type": "boolean" }),
        _ => json!({ "type": "string" }),
    };
    let mut parameters = Map::new();
    for key in Controls::KEYS
        .into_iter()
        .filter(|key| *key != envelope_core::DIALECT_CONTROL)
    {
        let description =
            format!("The per-call control `{key}`, as in the body; it must agree with the body's.");
        parameters.insert(
            format!("query.{key}"),
            json!({ "name": key, "in": "query", "required": false, "description": description, "schema": schema(key) }),
        );
        // A header carries text: a boolean is spelled `true` or `false`.
        let header_schema = match key {
            "compact_only" => json!({ "type": "string", "enum": ["true", "false"] }),
            _ => schema(key),
        };
        parameters.insert(
            format!("header.{key}"),
            json!({ "name": control_header(key), "in": "header", "required": false, "description": description, "schema": header_schema }),
        );
    }
    let description = "`false` opts the call out of trimming to the agent budget (for callers \
                       that are not context-limited); the response is still cut to the server's \
                       ceiling.";
    parameters.insert(
        format!("query.{APPLY_BUDGET}"),
        json!({ "name": APPLY_BUDGET, "in": "query", "required": false, "description": description, "schema": { "type": "boolean" } }),
    );
    parameters.insert(
        format!("header.{APPLY_BUDGET}"),
        json!({ "name": APPLY_BUDGET_HEADER, "in": "header", "required": false, "description": description, "schema": { "type": "string", "enum": ["true", "false"] } }),
    );
    parameters
}

/// RFC 9457's members, and the envelope.
fn problem_schema() -> Value {
    json!({
        "type": "object",
        "description": "An RFC 9457 problem: `type`, `title`, `status` and `detail` come from the envelope it carries.",
        "required": ["type", "title", "status", "detail", "envelope"],
        "properties": {
            "type": { "type": "string", "format": "uri", "description": "The error category, as a tag URI." },
            "title": { "type": "string", "description": "The category's title." },
            "status": { "type": "integer", "description": "The HTTP status." },
            "detail": { "type": "string", "description": "The envelope's `error.message`." },
            "envelope": { "$ref": "#/components/schemas/Envelope" },
        },
    })
}

/// `GET /tools`'s body.
fn tool_list_schema() -> Value {
    let flag = json!({ "type": "boolean" });
    json!({
        "type": "object",
        "required": ["tools"],
        "properties": {
            "tools": {
                "type": "array",
                "items": {
                    "type": "object",
                    // wire: OpenAPI properties of the REST listing, which describe tool annotations
                    "required": ["name", "description", "path", "tier", "read_only", "idempotent", "input_schema", "output_schema"],
                    "properties": {
                        "name": { "type": "string" },
                        "title": { "type": "string" },
                        "description": { "type": "string" },
                        "path": { "type": "string" },
                        "tier": { "$ref": "#/components/schemas/Tier" },
                        "read_only": flag,
                        // wire: the listing's tool annotation, not an envelope's meta
                        "idempotent": flag,
                        "destructive": flag,
                        "open_world": flag,
                        // wire: the listing's declared layer, not an envelope's meta
                        "layer": { "type": "string" },
                        "module": { "type": "string" },
                        "scopes": { "type": "array", "items": { "type": "string" } },
                        "input_schema": { "type": "object" },
                        "output_schema": { "type": "object" },
                    },
                },
            },
        },
    })
}

/// The document's shared schemas, filled as tools' schemas give up their `$defs`.
#[derive(Default)]
struct Components {
    schemas: Map<String, Value>,
}

impl Components {
    /// `schema` without its `$defs`, which join the components, and with its references
    /// pointing there. A definition whose name is taken by a different one is kept apart as
    /// `{owner}.{name}`; each schema hoisted has an owner of its own.
    fn hoist(&mut self, owner: &str, mut schema: Value) -> Value {
        let defs = match schema.as_object_mut() {
            Some(object) => {
                object.remove("$schema");
                match object.remove("$defs") {
                    Some(Value::Object(defs)) => defs,
                    _ => Map::new(),
                }
            }
            None => Map::new(),
        };
        // The names kept apart grow until every shared name holds the same content (a
        // definition pointing at one kept apart differs too); each round only adds, so this
        // ends.
        let mut apart = BTreeSet::new();
        loop {
            let renamed: Vec<(String, Value)> = defs
                .iter()
                .map(|(name, def)| {
                    let component = component_name(owner, &apart, name);
                    (component, rewritten(def.clone(), owner, &apart))
                })
                .collect();
            let clashes: Vec<String> = defs
                .keys()
                .zip(&renamed)
                .filter(|(name, (component, def))| {
                    !apart.contains(name.as_str())
                        && self.schemas.get(component).is_some_and(|held| held != def)
                })
                .map(|(name, _)| name.clone())
                .collect();
            if clashes.is_empty() {
                self.schemas.extend(renamed);
                return rewritten(schema, owner, &apart);
            }
            apart.extend(clashes);
        }
    }
}

/// The component a definition `name` of `owner`'s becomes.
fn component_name(owner: &str, apart: &BTreeSet<String>, name: &str) -> String {
    if apart.contains(name) {
        format!("{owner}.{name}")
    } else {
        name.to_owned()
    }
}

/// `schema` with every `#/$defs/{name}` reference pointing at its component.
fn rewritten(mut schema: Value, owner: &str, apart: &BTreeSet<String>) -> Value {
    fn walk(value: &mut Value, owner: &str, apart: &BTreeSet<String>) {
        match value {
            Value::Object(object) => {
                if let Some(Value::String(reference)) = object.get_mut("$ref")
                    && let Some(name) = reference.strip_prefix("#/$defs/")
                {
                    *reference = format!(
                        "#/components/schemas/{}",
                        component_name(owner, apart, name)
                    );
                }
                for child in object.values_mut() {
                    walk(child, owner, apart);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|item| walk(item, owner, apart)),
            _ => {}
        }
    }
    walk(&mut schema, owner, apart);
    schema
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defs_are_shared_when_equal_and_kept_apart_when_not() {
        let mut components = Components::default();
        let first = json!({
            "$defs": { "A": { "type": "string" }, "B": { "$ref": "#/$defs/A" } },
            "$ref": "#/$defs/B",
        });
        let second = json!({
            "$defs": { "A": { "type": "integer" }, "B": { "$ref": "#/$defs/A" } },
            "$ref": "#/$defs/B",
        });
        assert_eq!(
            components.hoist("one", first),
            json!({ "$ref": "#/components/schemas/B" })
        );
        // `A` differs, so `B`, which points at it, differs too: both are kept apart.
        assert_eq!(
            components.hoist("two", second),
            json!({ "$ref": "#/components/schemas/two.B" })
        );
        assert_eq!(
            components.schemas["two.B"],
            json!({ "$ref": "#/components/schemas/two.A" })
        );
        assert_eq!(components.schemas["two.A"], json!({ "type": "integer" }));
        assert_eq!(components.schemas["A"], json!({ "type": "string" }));
    }
}

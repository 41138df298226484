//! The checks on one response: is it an envelope, a sound one, and what its call asked for.

use envelope_core::fields::envelope as field;
use envelope_core::fields::meta as meta_field;
use envelope_core::fields::next_action as action_field;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use envelope_core::{AttachmentKind, AttachmentNote, Completeness, Delivery, Dialect, RequestId};
use jsonschema::Validator;
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value};

use super::inputs::Intent;
use super::{Check, ToolReport};

/// What responses are judged against: the envelope's schema, each tool's schemas (compiled
/// when first needed: a server may list thousands), and the request ids seen so far.
pub(super) struct Judge {
    envelope: Validator,
    /// The wire the server answers in: what `envelope` validates, and how an answer is read
    /// back as an envelope.
    dialect: Dialect,
    tools: BTreeMap<String, Arc<Tool>>,
    inputs: BTreeMap<String, Compiled>,
    /// `None` for a tool listed without an output schema.
    outputs: BTreeMap<String, Option<Compiled>>,
    request_ids: BTreeSet<String>,
    enabled: BTreeSet<Check>,
}

/// A tool's schema compiled, or why it does not compile.
type Compiled = Result<Validator, String>;

fn compile(schema: &Map<String, Value>) -> Compiled {
    jsonschema::validator_for(&Value::Object(schema.clone())).map_err(|error| error.to_string())
}

impl Judge {
    pub(super) fn new(tools: &[Arc<Tool>], enabled: BTreeSet<Check>, dialect: Dialect) -> Judge {
        let envelope = envelope_dialect::schema(dialect, &Value::Bool(true), None);
        let envelope = jsonschema::validator_for(&envelope)
            .expect("every dialect's schema compiles (a unit test says so)");
        Judge {
            envelope,
            dialect,
            tools: tools
                .iter()
                .map(|tool| (tool.name.to_string(), Arc::clone(tool)))
                .collect(),
            inputs: BTreeMap::new(),
            outputs: BTreeMap::new(),
            request_ids: BTreeSet::new(),
            enabled,
        }
    }

    /// Judges by a new listing from now on (the request ids seen stay seen).
    pub(super) fn relist(&mut self, tools: &[Arc<Tool>]) {
        self.tools = tools
            .iter()
            .map(|tool| (tool.name.to_string(), Arc::clone(tool)))
            .collect();
        self.inputs.clear();
        self.outputs.clear();
    }

    /// The input schema of the listed tool `name`, compiled; `None` when none is listed.
    fn input(&mut self, name: &str) -> Option<&Compiled> {
        if !self.inputs.contains_key(name) {
            let compiled = compile(&self.tools.get(name)?.input_schema);
            self.inputs.insert(name.to_owned(), compiled);
        }
        self.inputs.get(name)
    }

    /// The output schema of the listed tool `name`, compiled; `None` without one.
    fn output(&mut self, name: &str) -> Option<&Compiled> {
        if !self.outputs.contains_key(name) {
            let compiled = self
                .tools
                .get(name)
                .and_then(|tool| tool.output_schema.as_ref())
                .map(|schema| compile(schema));
            self.outputs.insert(name.to_owned(), compiled);
        }
        self.outputs.get(name).and_then(Option::as_ref)
    }

    /// The checks this run makes.
    pub(super) fn enabled(&self) -> &BTreeSet<Check> {
        &self.enabled
    }

    /// The listed tool `name`.
    pub(super) fn tool(&self, name: &str) -> Option<Arc<Tool>> {
        self.tools.get(name).cloned()
    }

    /// Judges `result`, the answer of `tool` to `arguments`; its envelope, if it has one.
    pub(super) fn response(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        arguments: &Map<String, Value>,
        result: &CallToolResult,
    ) -> Option<Value> {
        let text = result
            .content
            .iter()
            .find_map(|block| block.as_text())
            .map(|text| text.text.as_str());
        // Read as any client of the kit reads it: one reader of the wire.
        let structured = match envelope_client::read::structured(result) {
            Ok(structured) => structured,
            Err(error) => {
                let shown =
                    text.map(|text| Value::from(text.chars().take(300).collect::<String>()));
                report.fail(
                    Check::CallAnswered,
                    arguments,
                    &error.to_string(),
                    shown.as_ref(),
                );
                for check in Check::ALL
                    .into_iter()
                    .filter(|check| check.is_per_response())
                {
                    report.skip(check);
                }
                return None;
            }
        };
        report.pass(Check::CallAnswered);
        let output = match self.output(&tool.name) {
            Some(Ok(output)) => first_error(output, structured),
            Some(Err(error)) => Err(format!(
                "the tool's `outputSchema` does not compile: {error}"
            )),
            None => Err(String::new()),
        };
        // The wire as sent is validated and mirrored; everything else is read off the envelope
        // it carries (the answer itself, in the envelope's own dialect).
        let schema = first_error(&self.envelope, structured);
        let mirror = text_mirror(text, structured);
        let envelope = envelope_dialect::view(self.dialect, structured);
        let (known, valid) = self.next_actions(&envelope);
        let shown = structured;
        let mut verdict = |check: Check, outcome: Result<(), String>| match outcome {
            Ok(()) => report.pass(check),
            Err(detail) if detail.is_empty() => report.skip(check),
            Err(detail) => report.fail(check, arguments, &detail, Some(shown)),
        };
        verdict(Check::EnvelopeSchema, schema);
        verdict(Check::OutputSchema, output);
        verdict(Check::IsError, is_error(result, self.dialect, structured));
        verdict(Check::TextMirror, mirror);
        verdict(Check::Completeness, completeness(&envelope));
        verdict(Check::Attachments, attachments(result, &envelope));
        verdict(Check::NextActionTools, known);
        verdict(Check::NextActionArguments, valid);
        let id = envelope[field::META][meta_field::REQUEST_ID].as_str();
        // A dialect with no place for a request id (cos, TSA) carries none: nothing to check.
        let carries_id = self.dialect == Dialect::Envelope || id.is_some();
        verdict(
            Check::RequestId,
            match id {
                Some(id) => RequestId::parse(id)
                    .map(|_| ())
                    .map_err(|error| error.to_string()),
                None if carries_id => Err("`meta.request_id` is missing".to_owned()),
                None => Err(String::new()),
            },
        );
        verdict(
            Check::RequestIdUnique,
            match id {
                Some(id) if !self.request_ids.insert(id.to_owned()) => {
                    Err(format!("`{id}` answered an earlier call too"))
                }
                Some(_) => Ok(()),
                None => Err(String::new()),
            },
        );
        verdict(Check::TokensPlausible, tokens(&envelope));
        Some(envelope)
    }

    /// Whether `envelope` refuses its call as invalid: `ok` false, category `validation`; in a
    /// dialect that writes an error's code in place of its category (TSA, Frigg), any refusal
    /// without a category.
    pub(super) fn refuses_as_validation(&self, envelope: &Value) -> bool {
        let category = &envelope[field::ERROR]["category"];
        envelope[field::OK] == false
            && (category == "validation" || category.is_null() && self.dialect != Dialect::Envelope)
    }

    /// Judges what `intent` asked of the call's envelope.
    pub(super) fn intent(
        &self,
        report: &mut ToolReport,
        intent: &Intent,
        arguments: &Map<String, Value>,
        envelope: &Value,
    ) {
        let check = Check::InvalidValidation;
        let outcome = match intent {
            Intent::Valid | Intent::Edge { .. } => return,
            Intent::WrongType { field } | Intent::Missing { field } => {
                let error = &envelope[field::ERROR];
                if envelope[field::OK] != false {
                    Err(format!(
                        "invalid `{field}` was accepted (`ok` is not false)"
                    ))
                } else if error["category"].is_null() && self.dialect != Dialect::Envelope {
                    // A dialect that writes the error's code in place of its category (TSA's
                    // `error_type`, Frigg's `error_code`) leaves only the naming to check.
                    if names(error, field) {
                        Ok(())
                    } else {
                        Err(format!("the error does not name `{field}`"))
                    }
                } else if error["category"] != "validation" {
                    Err(format!(
                        "invalid `{field}` answered category {} instead of `validation`",
                        error["category"]
                    ))
                } else if !names(error, field) {
                    Err(format!("the `validation` error does not name `{field}`"))
                } else {
                    Ok(())
                }
            }
            Intent::Unknown { field } => {
                let named = |key: &str| names(&envelope[key], field);
                if named(field::ERROR) || named(field::WARNINGS) || named(field::DIAGNOSTICS) {
                    Ok(())
                } else if envelope[field::OK] == false
                    && envelope.get(field::WARNINGS).is_none()
                    && self.dialect != Dialect::Envelope
                {
                    // A failure in a dialect that carries nothing beside the error (cos) has no
                    // place for the warning: nothing to check.
                    Err(String::new())
                } else {
                    Err(format!(
                        "the unknown argument `{field}` was neither warned about nor refused"
                    ))
                }
            }
        };
        match outcome {
            Ok(()) => report.pass(check),
            Err(detail) if detail.is_empty() => report.skip(check),
            Err(detail) => report.fail(check, arguments, &detail, Some(envelope)),
        }
    }

    /// `next_actions.known_tools` and `next_actions.arguments`; `Err("")` when there is none.
    fn next_actions(&mut self, envelope: &Value) -> (Result<(), String>, Result<(), String>) {
        let Some(actions) = envelope[field::NEXT_ACTIONS]
            .as_array()
            .filter(|a| !a.is_empty())
        else {
            return (Err(String::new()), Err(String::new()));
        };
        let mut known = Ok(());
        let mut valid = Ok(());
        for action in actions {
            let tool = action[action_field::TOOL].as_str().unwrap_or_default();
            match self.input(tool) {
                None => {
                    known = Err(format!(
                        "next action `{}` names `{tool}`, which is not listed",
                        action["id"]
                    ));
                }
                Some(Ok(input)) => {
                    if let Err(error) = first_error(input, &action[action_field::ARGUMENTS]) {
                        valid = Err(format!(
                            "next action `{}` has arguments `{tool}` refuses: {error}",
                            action["id"]
                        ));
                    }
                }
                Some(Err(error)) => {
                    valid = Err(format!(
                        "next action `{}` names `{tool}`, whose `inputSchema` does not compile: {error}",
                        action["id"]
                    ));
                }
            }
        }
        (known, valid)
    }
}

/// Whether `value` (an error, the warnings) names `field` as a word of its own: not inside
/// another word (a field `a` is not named by `category`).
fn names(value: &Value, field: &str) -> bool {
    if value.is_null() || field.is_empty() {
        return false;
    }
    let text = value.to_string();
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(field).any(|(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + field.len()..].chars().next();
        !before.is_some_and(is_word) && !after.is_some_and(is_word)
    })
}

/// The first way `value` fails `validator`.
fn first_error(validator: &Validator, value: &Value) -> Result<(), String> {
    match validator.iter_errors(value).next() {
        None => Ok(()),
        Some(error) => Err(format!("at `{}`: {error}", error.instance_path())),
    }
}

/// `isError` is the negation of the answer's own success field: the envelope's `ok`, or the
/// dialect's (`success` in tsa, whose `NOT_FOUND` is a success; no error in pincher's
/// `diagnosis_v2` or Frigg's `error_code`).
fn is_error(result: &CallToolResult, dialect: Dialect, answer: &Value) -> Result<(), String> {
    if dialect == Dialect::Envelope && !answer[field::OK].is_boolean() {
        return Err("the envelope has no boolean `ok`".to_owned());
    }
    let succeeded = envelope_dialect::contract(dialect).succeeded(answer);
    let is_error = result.is_error.unwrap_or(false);
    if is_error != succeeded {
        Ok(())
    } else {
        Err(format!(
            "`isError` is {is_error} but the answer's own success field says {succeeded}"
        ))
    }
}

fn text_mirror(text: Option<&str>, envelope: &Value) -> Result<(), String> {
    let Some(text) = text else {
        return Err("the result has no text content".to_owned());
    };
    if serde_json::from_str::<Value>(text).is_ok_and(|mirrored| mirrored == *envelope) {
        return Ok(());
    }
    if envelope_budget::encode_toon(envelope).is_ok_and(|toon| toon == text) {
        return Ok(());
    }
    let shown: String = text.chars().take(120).collect();
    Err(format!(
        "the text content is neither the envelope's JSON nor its TOON: `{shown}`"
    ))
}

fn completeness(envelope: &Value) -> Result<(), String> {
    let Some(completeness) = envelope.get(field::COMPLETENESS) else {
        return Err(String::new());
    };
    serde_json::from_value::<Completeness>(completeness.clone())
        .map(|_| ())
        .map_err(|error| error.to_string())
}

/// The fewest bytes of JSON one token stands for, at most: English runs 4 to 5 a token, and a
/// long run of one letter (an edge value) some 18 by a heuristic count.
pub(super) const MAX_BYTES_PER_TOKEN: u64 = 24;

/// Between one token per [`MAX_BYTES_PER_TOKEN`] bytes and one per byte of the compact JSON,
/// where the answer carries a count: the compact modes leave it out, as a model cannot act on
/// it.
fn tokens(envelope: &Value) -> Result<(), String> {
    let Some(tokens) = envelope[field::META][meta_field::TOKENS_ESTIMATED].as_u64() else {
        return match envelope[field::META].get(meta_field::TOKENS_ESTIMATED) {
            None => Ok(()),
            Some(other) => Err(format!("`meta.tokens_estimated` is {other}, not a count")),
        };
    };
    let bytes = envelope.to_string().len() as u64;
    let least = bytes / MAX_BYTES_PER_TOKEN;
    if (least..=bytes).contains(&tokens) {
        Ok(())
    } else {
        Err(format!(
            "{tokens} tokens estimated for {bytes} bytes of JSON (expected {least} to {bytes})"
        ))
    }
}

/// Whether `meta.attachments` tells the media blocks after the first text block: each note
/// `sent` or `linked` is the next block, of its kind (`linked` as a `resource_link`), and no
/// block is left over. `Err("")` (skipped) when there are neither notes nor media.
fn attachments(result: &CallToolResult, structured: &Value) -> Result<(), String> {
    // wire: the content block types MCP defines
    let block_type = |block: &Value| block["type"].as_str().unwrap_or_default().to_owned();
    let blocks: Vec<String> = result
        .content
        .iter()
        .filter_map(|block| serde_json::to_value(block).ok())
        .map(|block| block_type(&block))
        .collect();
    // Media follow the first text block, the mirror.
    let mirror = blocks.iter().position(|kind| kind == "text"); // wire: MCP's text block
    let media: Vec<&String> = match mirror {
        Some(at) => blocks[at + 1..].iter().collect(),
        None => blocks.iter().collect(),
    };
    let notes = &structured[field::META][meta_field::ATTACHMENTS];
    let notes: Vec<AttachmentNote> = match notes {
        Value::Null => Vec::new(),
        notes => serde_json::from_value(notes.clone())
            .map_err(|error| format!("`meta.attachments` is not a list of notes: {error}"))?,
    };
    if notes.is_empty() {
        return if media.is_empty() {
            Err(String::new())
        } else {
            Err(format!(
                "{} media block(s) follow the mirror and `meta.attachments` notes none",
                media.len()
            ))
        };
    }
    // The block each note promises, spelled as the note spells its kind (MCP's block types).
    let block_of = |kind: AttachmentKind| {
        serde_json::to_value(kind)
            .ok()
            .and_then(|kind| kind.as_str().map(str::to_owned))
            .unwrap_or_default()
    };
    let expected: Vec<String> = notes
        .iter()
        .filter_map(|note| match note.delivery {
            Delivery::Sent => Some(block_of(note.kind)),
            Delivery::Linked => Some(block_of(AttachmentKind::ResourceLink)),
            _ => None,
        })
        .collect();
    let sent: Vec<String> = media.into_iter().cloned().collect();
    if expected == sent {
        Ok(())
    } else {
        Err(format!(
            "`meta.attachments` says {expected:?} were sent after the mirror; the content holds {sent:?}"
        ))
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{CallToolResult, ContentBlock};
    use serde_json::json;

    use super::{attachments, names};

    fn result(blocks: Vec<ContentBlock>) -> CallToolResult {
        CallToolResult::success(blocks)
    }

    #[test]
    fn the_notes_must_tell_the_media_sent() {
        let envelope =
            |notes: serde_json::Value| json!({ "ok": true, "meta": { "attachments": notes } });
        let noted = envelope(json!([
            { "kind": "image", "mime_type": "image/png", "bytes": 3, "delivery": "sent" },
            { "kind": "image", "mime_type": "image/png", "bytes": 9000, "delivery": "dropped" },
            { "kind": "resource", "uri": "file:///a", "bytes": 9000, "delivery": "linked" },
        ]));
        let resource_link = serde_json::from_value::<ContentBlock>(
            json!({ "type": "resource_link", "uri": "file:///a", "name": "a" }),
        )
        .expect("a link");
        let image = ContentBlock::image("AAAA", "image/png");
        let mirror = ContentBlock::text("{}");
        let sent = result(vec![mirror.clone(), image.clone(), resource_link.clone()]);
        assert_eq!(attachments(&sent, &noted), Ok(()));
        // Out of order, or one missing, or one unnoted: each is a failure with a detail.
        let swapped = result(vec![mirror.clone(), resource_link, image.clone()]);
        assert!(attachments(&swapped, &noted).is_err_and(|detail| !detail.is_empty()));
        let missing = result(vec![mirror.clone(), image.clone()]);
        assert!(attachments(&missing, &noted).is_err_and(|detail| !detail.is_empty()));
        let unnoted = result(vec![mirror.clone(), image]);
        let bare = json!({ "ok": true, "meta": {} });
        assert!(attachments(&unnoted, &bare).is_err_and(|detail| !detail.is_empty()));
        // Neither notes nor media: nothing to check.
        assert_eq!(
            attachments(&result(vec![mirror]), &bare),
            Err(String::new())
        );
    }

    #[test]
    fn a_field_is_named_as_a_word_of_its_own() {
        let error = json!({ "category": "validation", "message": "invalid argument `a`", "data": { "field": "limit" } });
        assert!(names(&error, "a"));
        assert!(names(&error, "limit"));
        assert!(!names(&error, "id"), "not inside `invalid`");
        assert!(!names(&json!({ "category": "validation" }), "a"));
        assert!(!names(&serde_json::Value::Null, "a"));
    }

    #[test]
    fn the_envelope_schema_compiles() {
        let schema = envelope_core::schema::envelope_schema().to_value();
        assert!(jsonschema::validator_for(&schema).is_ok());
    }
}

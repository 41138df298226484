//! Generation of `docs/DIALECTS.md` and `docs/dialects/<name>.schema.json`: the wire dialects,
//! what each control needs, and per source contract what one side cannot say of the other, from
//! the dialect stage's own tables.

use std::fmt::Write as _;

use envelope_core::{DIALECT_CONTROL, Dialect, Expressible};
use envelope_dialect::{Clause, EXPRESSIBLE, Gap, Held};
use serde_json::json;

/// The schema files, as `(path under docs/, contents)`, one per dialect but the envelope's own
/// (`envelope.schema.json`).
pub(crate) fn schema_files() -> Result<Vec<(String, String)>, String> {
    Dialect::ALL
        .into_iter()
        .filter(|dialect| *dialect != Dialect::Envelope)
        .map(|dialect| {
            let mut schema = envelope_dialect::schema(dialect, &json!(true), None);
            crate::codegen::titled(
                &mut schema,
                format!(
                    "envelope in the `{dialect}` dialect: {}",
                    dialect.contract()
                ),
            );
            serde_json::to_string_pretty(&schema)
                .map(|text| (format!("dialects/{dialect}.schema.json"), text + "\n"))
                .map_err(|error| format!("cannot serialize the {dialect} schema: {error}"))
        })
        .collect()
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

fn gaps(out: &mut String, heading: &str, gaps: &[Gap]) {
    let _ = writeln!(out, "{heading}\n");
    if gaps.is_empty() {
        out.push_str("Nothing.\n\n");
        return;
    }
    out.push_str("| field | why |\n|---|---|\n");
    for gap in gaps {
        let _ = writeln!(out, "| `{}` | {} |", cell(gap.field), cell(gap.why));
    }
    out.push('\n');
}

/// A table of clauses, each with the test that holds it (file and name) or the gap that says
/// why it is not held.
fn clauses(out: &mut String, heading: &str, clauses: &[Clause]) {
    let _ = writeln!(out, "{heading}\n");
    out.push_str("| clause | held by |\n|---|---|\n");
    for clause in clauses {
        let held = match clause.held {
            Held::Test { file, test } => format!("`{test}` in [`{file}`](../{file})"),
            Held::Gap(field) => format!("not held; the gap tables below say why ({})", cell(field)),
        };
        let _ = writeln!(out, "| {} | {held} |", cell(clause.says));
    }
    out.push('\n');
}

/// `docs/DIALECTS.md`, under `header` (the generated-file note).
pub(crate) fn markdown(header: &str) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push_str("\n\n# Wire dialects\n\n");
    let _ = write!(
        out,
        "An envelope server can answer in the wire of one of the four contracts the envelope \
         unifies, so that agents and host UIs written against one of them work unchanged. The \
         server picks its dialect (`EnvelopeConfig::with_dialect`; the example's `--dialect`), \
         `envelope` by default, and the listing's output schemas follow it. A call may ask for \
         another with the `{DIALECT_CONTROL}` argument among those the server offers \
         (`EnvelopeConfig::with_call_dialects`; the example's `--call-dialects`; none by \
         default): MCP clients check an answer against the tool's listed output schema, and the \
         official SDKs refuse one that does not match, so each dialect offered is an \
         alternative (`anyOf`) of every output schema, paid for in the listing. Every dialect \
         renders the same typed envelope after the budget stage has trimmed it: trimming, \
         continuations, target refs and next actions work in each. A call that chose its \
         dialect finds `{DIALECT_CONTROL}` in the arguments of every next action it is offered, \
         so following one (the `next-page` action included) answers in the same wire; a \
         continuation is bound to the dialect it was issued in, and presenting it in another \
         is refused. The plain HTTP API answers in the envelope's wire only (its statuses and \
         RFC 9457 problems are the envelope's fields, mapped).\n\n"
    );
    out.push_str("| dialect | contract | schema |\n|---|---|---|\n");
    for dialect in Dialect::ALL {
        let schema = match dialect {
            Dialect::Envelope => "[`envelope.schema.json`](envelope.schema.json)".to_owned(),
            other => format!("[`dialects/{other}.schema.json`](dialects/{other}.schema.json)"),
        };
        let _ = writeln!(out, "| `{dialect}` | {} | {schema} |", dialect.contract());
    }
    out.push_str(
        "\n## Controls\n\nA control at its default value (`response_mode: compact`, \
         `output_format: json`, `compact_only: false`) is accepted in every dialect. Any other \
         value is accepted only by the dialects that can write it; elsewhere the call is refused \
         before the tool runs, as `validation` with code `invalid_argument`, naming the dialects \
         and what each supports, never answered with the control silently dropped.\n\n",
    );
    out.push_str("| control | value | dialects |\n|---|---|---|\n");
    for control in Expressible::GATED {
        let values = Dialect::ALL
            .iter()
            .flat_map(|dialect| EXPRESSIBLE.of(*dialect))
            .find(|expressed| expressed.control == control)
            .map_or("", |expressed| expressed.values);
        let dialects: Vec<String> = EXPRESSIBLE
            .able(control)
            .iter()
            .map(|dialect| format!("`{dialect}`"))
            .collect();
        let _ = writeln!(out, "| `{control}` | {values} | {} |", dialects.join(", "));
    }
    let every: Vec<String> = Dialect::ALL.iter().map(|d| format!("`{d}`")).collect();
    // wire: the paging argument
    let _ = writeln!(out, "| `continuation` | a token | {} |", every.join(", "));
    out.push_str(
        "\n## Bad input\n\n\
         - A `dialect` the server does not offer: `validation`, code `invalid_argument`, \
         `data.offered` naming the dialects it does.\n\
         - A `dialect` that names no dialect: `validation`, code `invalid_argument`, `data.field` \
         `dialect`, `data.dialects` listing every dialect with its contract.\n\
         - A control the call's dialect cannot express: the same code, naming the control and \
         the dialects that can, `data.dialects` listing what each supports.\n\
         - A continuation issued in one dialect presented in another: the same code, \
         `data.issued_in` naming the dialect to resume in (the `next-page` action as given \
         carries it).\n\n",
    );
    out.push_str("## Clauses held\n\n");
    clauses(
        &mut out,
        "Each source contract was read as its own client would read it, and every statement an \
         answer can be checked against is held by a test, or named in the dialect's gap tables \
         with why. What every dialect holds alike:",
        envelope_dialect::EVERY_DIALECT,
    );
    for dialect in Dialect::ALL
        .into_iter()
        .filter(|dialect| *dialect != Dialect::Envelope)
    {
        let _ = writeln!(out, "## `{dialect}`: {}\n", dialect.contract());
        let _ = writeln!(out, "{}\n", envelope_dialect::placement(dialect));
        clauses(
            &mut out,
            "The contract's clauses, and what holds each:",
            envelope_dialect::contract(dialect).clauses(),
        );
        gaps(
            &mut out,
            "What the contract has that an envelope cannot express:",
            envelope_dialect::unexpressed(dialect),
        );
        gaps(
            &mut out,
            "What an envelope has that this dialect cannot carry, and the rule that drops it:",
            envelope_dialect::dropped(dialect),
        );
    }
    out
}

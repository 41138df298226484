//! The budget holds on the bytes sent, in every dialect: a source contract's wire renames,
//! moves and adds fields, so an envelope trimmed to the budget can be written larger than it.
//! The server measures what it sends, as the contract defines the size (token-normalized:
//! `max(chars, tokens × 4)` of the whole JSON), and trims again when the dialect's form is over.
//! Checked at the boundary, budget by budget, where the envelope alone fits and its rendering
//! would not; and a budget too small for anything answers with the trimmer's unshrinkable flag
//! in the dialect's own place, never unbounded.

use envelope_core::{Completeness, Dialect, Envelope, ToolResult, Unit, tool, toolset};
use envelope_mcp::{BudgetPolicy, EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// How many rows.
    rows: usize,
}

/// Lists `rows` rows, each a path, a line number and a line of text, described by its
/// completeness.
#[tool(tier = lite, read_only)]
async fn rows(args: RowsArgs) -> ToolResult<Envelope<Value>> {
    let rows: Vec<Value> = (0..args.rows)
        .map(|i| json!({ "path": format!("src/module_{i}.rs"), "line": i + 1, "text": "fn handler() -> Result<(), Error> {" }))
        .collect();
    let completeness = Completeness::complete(Unit::OCCURRENCE, rows.len());
    Ok(Envelope::ok(json!({ "occurrences": rows })).with_completeness(completeness))
}

fn server(dialect: Dialect, budget: usize) -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![rows],
        EnvelopeConfig::new("budgeted", "0.0.0")
            .with_dialect(dialect)
            .with_budget(BudgetPolicy::default().with_agent_chars(Some(budget))),
    )
}

/// The size a budget is compared with: characters or four per estimated token, whichever is
/// more, of the JSON sent.
fn size(json: &str) -> usize {
    let tokens = BudgetPolicy::default().estimator.estimate(json) as usize;
    json.chars().count().max(tokens * 4)
}

const DIALECTS: [Dialect; 4] = [Dialect::Pincher, Dialect::Cos, Dialect::Tsa, Dialect::Frigg];

#[tokio::test]
async fn every_dialect_answers_within_the_budget_at_every_size() {
    for dialect in DIALECTS {
        for budget in (1_500..=6_000).step_by(250) {
            let server = server(dialect, budget);
            let sent = server
                .call("rows", json!({ "rows": 400 }))
                .await
                .expect("the tool is served");
            let measured = size(&sent.json);
            assert!(
                measured <= budget,
                "{dialect} at {budget}: {measured} characters sent: {}",
                sent.json
            );
            // Still an answer with rows in it, not an empty shell.
            assert!(
                sent.json.contains("src/module_0.rs"),
                "{dialect} at {budget}"
            );
        }
    }
}

#[tokio::test]
async fn an_answer_that_fits_whole_is_sent_whole_in_every_dialect() {
    for dialect in DIALECTS {
        let sent = server(dialect, 32_000)
            .call("rows", json!({ "rows": 5 }))
            .await
            .expect("the tool is served");
        for i in 0..5 {
            assert!(
                sent.json.contains(&format!("src/module_{i}.rs")),
                "{dialect}"
            );
        }
    }
}

#[tokio::test]
async fn a_budget_too_small_for_anything_says_so_in_the_dialects_own_place() {
    // Where each dialect writes the envelope's `envelope_unshrinkable`.
    let flag = |dialect: Dialect, answer: &Value| -> Option<Value> {
        match dialect {
            Dialect::Pincher => answer
                .pointer("/_meta/warnings_v2")
                .and_then(Value::as_array)
                .and_then(|entries| {
                    entries
                        .iter()
                        .find_map(|entry| entry.pointer("/data/envelope_unshrinkable").cloned())
                }),
            Dialect::Cos => answer.pointer("/data/meta/envelope_unshrinkable").cloned(),
            Dialect::Tsa => answer["warnings"].as_array().and_then(|lines| {
                lines
                    .iter()
                    .any(|line| {
                        line.as_str()
                            .is_some_and(|line| line.starts_with("envelope_unshrinkable: "))
                    })
                    .then_some(json!(true))
            }),
            Dialect::Frigg => answer
                .get("diagnostics")
                .and_then(Value::as_array)
                .and_then(|entries| {
                    entries
                        .iter()
                        .find_map(|entry| entry.pointer("/data/envelope_unshrinkable").cloned())
                }),
            _ => None,
        }
    };
    for dialect in DIALECTS {
        let sent = server(dialect, 200)
            .call("rows", json!({ "rows": 400 }))
            .await
            .expect("the tool is served");
        assert!(sent.json.len() < 4_000, "{dialect}: {}", sent.json);
        assert_eq!(
            flag(dialect, &sent.structured),
            Some(json!(true)),
            "{dialect}: {}",
            sent.json
        );
    }
}

//! Paging through the server under a response budget, the way an agent pages: it follows the
//! `next-page` action verbatim until there is none. Whatever the page size and the budget, no
//! row is stranded and none repeats.

use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool, toolset};
use envelope_mcp::{BudgetPolicy, EnvelopeConfig, EnvelopeServer};
use proptest::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// How many rows there are.
    count: usize,
    /// Varies the rows' lengths.
    seed: usize,
    /// Rows per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(RowsArgs);

/// Row `index` of a collection: its number, then filler of a length the seed varies.
fn row(index: usize, seed: usize) -> String {
    let filler = (index * 7919 + seed * 104_729) % 240;
    format!("row {index:05} {}", "lorem ipsum ".repeat(filler / 12 + 1))
}

#[derive(Serialize)]
struct Rows {
    rows: Vec<String>,
}

/// Rows of varied length, a page at a time.
#[tool(tier = lite, read_only)]
fn rows(ctx: &ToolContext, args: RowsArgs) -> ToolResult<Reply<Rows>> {
    let pager = Pager::<rows>::open(ctx, &args, Paging::new(Unit::ITEM, 20))?;
    let page: Vec<String> = (0..args.count)
        .filter(|index| pager.takes(*index))
        .map(|index| row(index, args.seed))
        .collect();
    let count = PageCount::new(page.len(), args.count);
    pager.finish(ctx, &args, Reply::new(Rows { rows: page }), count)
}

fn server(budget: usize) -> EnvelopeServer {
    let key = ContinuationKey::new(1, [7; 32]);
    EnvelopeServer::new(
        toolset![rows],
        EnvelopeConfig::new("paging", "1")
            .with_budget(BudgetPolicy::default().with_agent_chars(Some(budget)))
            .with_continuations(Continuations::new(key)),
    )
}

/// Every row an agent receives by following `next-page` from the first call, and how many
/// pages the budget cut.
async fn walk(server: &EnvelopeServer, first: Value) -> (Vec<String>, usize) {
    let (mut received, mut cut_pages) = (Vec::new(), 0);
    let mut arguments = first;
    for _ in 0..10_000 {
        let prepared = server.call("rows", arguments).await.expect("served");
        let envelope = prepared.structured;
        assert_eq!(envelope["ok"], true, "{envelope}");
        let page = envelope["data"]["rows"].as_array().expect("rows");
        received.extend(
            page.iter()
                .map(|row| row.as_str().unwrap_or_default().to_owned()),
        );
        let reasons = &envelope["completeness"]["truncation_reasons"];
        if reasons
            .as_array()
            .is_some_and(|r| r.contains(&json!("budget_limit")))
        {
            cut_pages += 1;
        }
        let next = envelope["next_actions"]
            .as_array()
            .and_then(|actions| actions.iter().find(|action| action["id"] == "next-page"));
        let Some(next) = next else {
            // The last page offers no next page.
            return (received, cut_pages);
        };
        // The token rides in the action's arguments, once, and nowhere else: the action is
        // called exactly as given.
        assert!(
            envelope["completeness"].get("continuation").is_none(),
            "{envelope}"
        );
        let token = next["arguments"]["continuation"]
            .as_str()
            .expect("the next page's token");
        assert_eq!(envelope.to_string().matches(token).count(), 1, "{envelope}");
        arguments = next["arguments"].clone();
    }
    panic!("paging did not end");
}

#[tokio::test]
async fn a_page_the_budget_cuts_resumes_after_its_last_row() {
    // Regression test for #14: a cut page lost its continuation, stranding the rest.
    let server = server(4_000);
    let first = server
        .call("rows", json!({"count": 300, "seed": 1, "limit": 200}))
        .await
        .expect("served")
        .structured;
    let completeness = &first["completeness"];
    let sent = first["data"]["rows"].as_array().map_or(0, Vec::len);
    assert!(sent > 0 && sent < 200, "{first}");
    assert_eq!(completeness["returned"], sent);
    assert!(
        completeness["truncation_reasons"]
            .as_array()
            .is_some_and(|reasons| reasons.contains(&json!("budget_limit")))
    );
    assert!(completeness.get("continuation").is_none(), "{first}");
    assert!(
        first["next_step"]
            .as_str()
            .is_some_and(|step| step.contains("`next-page`")),
        "{first}"
    );
    // The next page, the action called exactly as given, starts with the first row not sent.
    let next = first["next_actions"][0]["arguments"].clone();
    assert!(next["continuation"].is_string(), "{first}");
    let second = server.call("rows", next).await.expect("served").structured;
    assert_eq!(second["data"]["rows"][0], row(sent, 1), "{second}");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    #[test]
    fn following_next_page_yields_every_row_once_in_order(
        count in 0usize..400,
        seed in 0usize..1_000,
        limit in 1usize..300,
        budget in 2_500usize..40_000,
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a runtime");
        let first = json!({"count": count, "seed": seed, "limit": limit});
        let (received, _) = runtime.block_on(walk(&server(budget), first));
        let expected: Vec<String> = (0..count).map(|index| row(index, seed)).collect();
        prop_assert_eq!(received, expected);
    }
}

#[test]
fn the_walk_does_meet_the_budget() {
    // The property above must exercise cut pages, not only pages that fit.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let first = json!({"count": 300, "seed": 3, "limit": 250});
    let (received, cut_pages) = runtime.block_on(walk(&server(3_000), first));
    assert_eq!(received.len(), 300);
    assert!(cut_pages >= 3, "{cut_pages}");
}

#[test]
fn the_server_holds_its_key_as_state() {
    // A server without `Continuations` answers the standard `not_configured` error.
    let server = EnvelopeServer::new(toolset![rows], EnvelopeConfig::new("paging", "1"));
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let answer = runtime
        .block_on(server.call("rows", json!({"count": 3, "seed": 0})))
        .expect("served")
        .structured;
    assert_eq!(answer["error"]["code"], "not_configured", "{answer}");
}

//! `envelope_core::NOT_RUN_CODES` holds only codes the library emits for a call whose tool body
//! did nothing: each one this test can provoke is answered without the body running (for the
//! paging codes, without it getting past opening its pager).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use envelope_client::Client;
use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::{
    NOT_RUN_CODES, Reply, Tool as _, ToolContext, ToolResult, Unit, tool, toolset,
};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::ServiceExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// How often a body got past its refusals.
#[derive(Default)]
struct Ran(AtomicUsize);

impl Ran {
    fn mark(ctx: &ToolContext) -> ToolResult<()> {
        ctx.state::<Ran>()?.0.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct StrictArgs {
    /// A number.
    n: u32,
}

/// Takes one number, and nothing else.
#[tool(tier = lite, strict_args)]
async fn strict(ctx: &ToolContext, args: StrictArgs) -> ToolResult<u32> {
    Ran::mark(ctx)?;
    Ok(args.n)
}

/// In a module the server switches off.
#[tool(tier = lite, module = "extra")]
async fn gated(ctx: &ToolContext) -> ToolResult<()> {
    Ran::mark(ctx)
}

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct PagedArgs {
    /// Rows start with it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    prefix: Option<String>,
    /// Rows per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(PagedArgs);

/// Twenty rows, five a page.
#[tool(tier = lite)]
fn paged(ctx: &ToolContext, args: PagedArgs) -> ToolResult<Reply<Vec<String>>> {
    let pager = Pager::<paged>::open(ctx, &args, Paging::new(Unit::ITEM, 5))?;
    Ran::mark(ctx)?;
    let prefix = args.prefix.clone().unwrap_or_default();
    let page: Vec<String> = (0..20)
        .filter(|index| pager.takes(*index))
        .map(|index| format!("{prefix}{index}"))
        .collect();
    let count = PageCount::new(page.len(), 20);
    pager.finish(ctx, &args, Reply::new(page), count)
}

#[tokio::test]
async fn every_refusal_before_the_body_carries_a_not_run_code() {
    let ran = Arc::new(Ran::default());
    let config = EnvelopeConfig::new("not-run", "1")
        .with_continuations(Continuations::new(ContinuationKey::new(1, [3; 32])))
        .disable_module("extra")
        .with_state(Arc::clone(&ran));
    let server = EnvelopeServer::new(toolset![strict, gated, paged], config);
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = Client::new(().serve(client_io).await.expect("connects"))
        .await
        .expect("lists");

    let first = client
        .call_once::<Value>("paged", json!({"prefix": "a"}))
        .await
        .expect("a page");
    let token = first
        .next_actions()
        .iter()
        .find(|action| action.id == "next-page")
        .and_then(|action| action.arguments["continuation"].as_str())
        .expect("a token")
        .to_owned();
    let mut tampered: Vec<char> = token.chars().collect();
    let middle = tampered.len() / 2;
    tampered[middle] = if tampered[middle] == 'A' { 'B' } else { 'A' };
    let tampered: String = tampered.into_iter().collect();
    let before = ran.0.load(Ordering::SeqCst);
    assert_eq!(before, 1);

    let mut codes = Vec::new();
    for (tool, arguments) in [
        ("gated", json!({})),
        ("strict", json!({"n": 1, "surplus": true})),
        ("strict", json!({"n": "one"})),
        ("strict", json!({})),
        ("strict", json!({"n": 1, "dialect": "klingon"})),
        ("paged", json!({"limit": 0})),
        ("paged", json!({"prefix": "b", "continuation": token})),
        ("paged", json!({"prefix": "a", "continuation": tampered})),
        (
            "paged",
            json!({"prefix": "a", "continuation": "not a token"}),
        ),
        ("paged", json!({"cursor": token})),
    ] {
        let envelope = client
            .call_once::<Value>(tool, arguments.clone())
            .await
            .expect("reads");
        let error = envelope
            .error()
            .unwrap_or_else(|| panic!("{tool} {arguments}: ok"));
        let code = error.code().unwrap_or_default().to_owned();
        assert!(
            NOT_RUN_CODES.contains(&code.as_str()),
            "{tool} {arguments}: {code} is not a not-run code"
        );
        assert!(error.did_not_run());
        codes.push(code);
    }
    assert_eq!(
        ran.0.load(Ordering::SeqCst),
        before,
        "no body ran: {codes:?}"
    );
    for code in [
        "MODULE_DISABLED",
        "unknown_arg",
        "invalid_argument",
        "invalid_arguments",
        "INVALID_LIMIT",
        "CONTINUATION_SCOPE_MISMATCH",
        "INVALID_CONTINUATION",
    ] {
        assert!(codes.iter().any(|seen| seen == code), "{code}: {codes:?}");
    }

    // Arguments that are not an object never travel over MCP; called in process, they are
    // refused before the body too.
    let output = strict {}.call(json!(5), ToolContext::new()).await;
    let error = output.envelope.error().expect("refused");
    assert_eq!(error.code(), Some("arguments_not_object"));
    assert!(error.did_not_run());
}

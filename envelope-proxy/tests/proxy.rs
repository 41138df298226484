//! The proxy in front of an upstream that misbehaves on request (`fixtures/upstream.py`, plain
//! JSON-RPC lines written by hand): every answer read as an agent reads it, from the envelope,
//! and every page reached by following `next-page` exactly as given.

mod common;

use std::time::Duration;

use envelope_core::paging::{
    CONTINUATION_SCOPE_MISMATCH, ContinuationKey, Continuations, INVALID_CONTINUATION,
    STALE_CONTINUATION,
};
use envelope_mcp::EnvelopeConfig;
use envelope_proxy::{Proxy, ProxyConfig};
use serde_json::{Value, json};

/// The proxy in front of the fixture, configured by `extra` (TOML appended to the upstream's).
async fn proxy(extra: &str) -> Proxy {
    start(&common::fronting_the_fixture_with(extra)).await
}

/// The proxy configured by `text`.
async fn start(text: &str) -> Proxy {
    let config = ProxyConfig::parse(text).expect("the configuration parses");
    let serving = EnvelopeConfig::new("proxy-test", "1.0.0")
        .with_continuations(Continuations::new(ContinuationKey::new(1, [9; 32])));
    Proxy::start(config, serving)
        .await
        .expect("the proxy starts")
}

/// Calls `tool` through the proxy: the envelope as `structuredContent` carries it, and the
/// bytes sent.
async fn call(proxy: &Proxy, tool: &str, arguments: Value) -> (Value, String) {
    let prepared = proxy
        .server()
        .call(tool, arguments)
        .await
        .unwrap_or_else(|| panic!("the proxy serves `{tool}`"));
    (prepared.structured, prepared.json)
}

/// The action of `id` the envelope offers, as `(tool, arguments)`.
fn action(envelope: &Value, id: &str) -> Option<(String, Value)> {
    let actions = envelope.get("next_actions")?.as_array()?;
    let found = actions.iter().find(|action| action["id"] == id)?;
    Some((
        found["tool"].as_str()?.to_owned(),
        found["arguments"].clone(),
    ))
}

/// Every row of an answer paged by `next-page`, followed verbatim, and how many pages it took;
/// each page's bytes within `budget`.
async fn follow(proxy: &Proxy, tool: &str, arguments: Value, budget: usize) -> (Vec<Value>, usize) {
    let (mut envelope, mut sent) = call(proxy, tool, arguments).await;
    let mut rows = Vec::new();
    let mut pages = 1;
    loop {
        assert_eq!(envelope["ok"], true, "{envelope}");
        assert!(
            sent.chars().count() <= budget,
            "page {pages} is {} characters, over the budget of {budget}",
            sent.chars().count()
        );
        rows.extend(
            envelope["data"]
                .as_array()
                .expect("a page of rows")
                .iter()
                .cloned(),
        );
        let Some((tool, arguments)) = action(&envelope, "next-page") else {
            break;
        };
        assert_eq!(envelope["completeness"]["truncated"], true, "{envelope}");
        // The upstream's tool takes no page size: the advice is to follow the next page.
        let step = envelope["next_step"].as_str().unwrap_or_default();
        assert!(!step.contains("page size"), "{envelope}");
        (envelope, sent) = call(proxy, &tool, arguments).await;
        pages += 1;
        assert!(pages < 1_000, "paging does not end");
    }
    (rows, pages)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_listing_keeps_the_upstreams_annotations_and_adds_the_controls() {
    let proxy = proxy("[tools.lines]\ntier = \"lite\"\nscopes = [\"docs:read\"]\n").await;
    let tools = proxy.server().tools();
    let listed = |name: &str| {
        tools
            .iter()
            .find(|tool| tool.name == name)
            .unwrap_or_else(|| panic!("`{name}` is listed"))
            .clone()
    };
    let lines = serde_json::to_value(listed("lines")).expect("serializes");
    assert_eq!(lines["annotations"]["readOnlyHint"], true, "{lines}");
    // What the upstream did not declare is not made up.
    assert!(
        lines["annotations"].get("destructiveHint").is_none(),
        "{lines}"
    );
    assert!(
        lines["inputSchema"]["properties"]["count"].is_object(),
        "{lines}"
    );
    assert!(
        lines["inputSchema"]["properties"]["continuation"].is_object(),
        "{lines}"
    );
    assert_eq!(lines["_meta"]["rs.envelope/tier"], "lite", "{lines}");
    let append = serde_json::to_value(listed("append")).expect("serializes");
    assert_eq!(append["annotations"]["destructiveHint"], false, "{append}");
    assert_eq!(append["annotations"]["idempotentHint"], false, "{append}");
    assert!(
        append["annotations"].get("readOnlyHint").is_none(),
        "{append}"
    );
    let structured = serde_json::to_value(listed("structured")).expect("serializes");
    // A title the upstream put in its annotations stays there, and only there.
    assert_eq!(
        structured["annotations"]["title"], "Structured",
        "{structured}"
    );
    assert!(structured.get("title").is_none(), "{structured}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_argument_named_like_a_control_keeps_its_name_and_the_control_is_renamed() {
    let proxy = proxy("").await;
    let tools = proxy.server().tools();
    let clashing = tools
        .iter()
        .find(|tool| tool.name == "clashing")
        .expect("`clashing` is listed");
    let listed = serde_json::to_value(clashing).expect("serializes");
    let properties = &listed["inputSchema"]["properties"];
    // The upstream's own arguments, exactly as it lists them.
    assert_eq!(
        properties["continuation"],
        json!({"type": "string", "description": "The upstream's own cursor."}),
        "{listed}"
    );
    assert_eq!(
        properties["dialect"],
        json!({"type": "string", "description": "An SQL dialect."}),
        "{listed}"
    );
    // The controls under new names, each saying which control it is.
    for control in ["continuation", "dialect"] {
        let renamed = format!("envelope_{control}");
        let description = properties[&renamed]["description"]
            .as_str()
            .unwrap_or_else(|| panic!("`{renamed}` is listed: {listed}"));
        assert!(
            description.starts_with(&format!("The per-call control `{control}`, renamed")),
            "{description}"
        );
    }
    assert!(
        properties["envelope_dialect"]["enum"]
            .as_array()
            .is_some_and(|dialects| dialects.contains(&json!("pincher"))),
        "{listed}"
    );

    // The upstream's `dialect` is not read as the control (no dialect is named `postgres`),
    // and reaches the upstream with its `continuation`, on every page.
    let asked = json!({
        "continuation": "mine",
        "dialect": "postgres",
        "count": 5_000,
        "envelope_dialect": "envelope",
    });
    let (first, _) = call(&proxy, "clashing", asked.clone()).await;
    assert_eq!(first["ok"], true, "{first}");
    let (tool, arguments) = action(&first, "next-page").expect("a next page");
    assert_eq!(tool, "clashing");
    assert_eq!(arguments["continuation"], "mine", "{arguments}");
    assert_eq!(arguments["dialect"], "postgres", "{arguments}");
    assert_eq!(arguments["envelope_dialect"], "envelope", "{arguments}");
    assert!(
        arguments["envelope_continuation"].is_string(),
        "{arguments}"
    );
    let budget = envelope_budget::AGENT_BUDGET_CHARS;
    let (rows, pages) = follow(&proxy, "clashing", asked, budget).await;
    assert!(pages > 3, "{pages}");
    assert_eq!(rows.len(), 5_000);
    assert_eq!(rows[0], "given continuation=mine dialect=postgres\n");
    assert_eq!(
        rows[4_999],
        format!("line {:06} {}\n", 4_999, "x".repeat(28))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn data_is_structured_content_else_json_text_else_text() {
    let proxy = proxy("").await;
    let (text, _) = call(&proxy, "lines", json!({"count": 2})).await;
    assert_eq!(
        text["data"],
        "line 000000 xxxxxxxxxxxxxxxxxxxxxxxxxxxx\nline 000001 xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"
    );
    let (numbers, _) = call(&proxy, "numbers", json!({"count": 2})).await;
    assert_eq!(
        numbers["data"],
        json!([{"n": 0, "word": "w0"}, {"n": 1, "word": "w1"}])
    );
    let (structured, _) = call(&proxy, "structured", json!({"count": 1})).await;
    assert_eq!(
        structured["data"],
        json!({"content": "line 000000 xxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"})
    );
    let (picture, _) = call(&proxy, "picture", json!({})).await;
    assert_eq!(picture["data"], "a picture");
    assert_eq!(
        picture["meta"]["attachments"][0]["kind"], "image",
        "{picture}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn tokens_saved_is_counted_against_the_upstreams_raw_answer() {
    let proxy = proxy("").await;
    let (envelope, _) = call(
        &proxy,
        "lines",
        json!({"count": 20_000, "response_mode": "full"}),
    )
    .await;
    let meta = &envelope["meta"];
    assert_eq!(
        meta["baseline_method"],
        envelope_proxy::BASELINE_METHOD,
        "{meta}"
    );
    assert!(
        meta["tokens_saved"].as_u64().unwrap_or(0) > 100_000,
        "{meta}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_megabyte_of_text_is_reached_whole_by_following_next_page() {
    let budget = envelope_budget::AGENT_BUDGET_CHARS;
    let proxy = proxy("").await;
    // 25,000 lines of 40 characters: a megabyte.
    let arguments = json!({"count": 25_000});
    let (rows, pages) = follow(&proxy, "lines", arguments, budget).await;
    let text: String = rows.iter().filter_map(Value::as_str).collect();
    let direct = (0..25_000)
        .map(|i| format!("line {i:06} {}\n", "x".repeat(28)))
        .collect::<String>();
    assert_eq!(text.len(), direct.len());
    assert!(text == direct, "the pages joined are the upstream's text");
    assert!(pages > 30, "{pages} pages");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_long_list_and_structured_text_page_too() {
    let proxy = proxy("[tools.numbers]\nbudget = 4000\n[tools.structured]\nbudget = 4000\n").await;
    let (rows, pages) = follow(&proxy, "numbers", json!({"count": 2_000}), 4_000).await;
    assert_eq!(rows.len(), 2_000);
    assert_eq!(rows[1_999], json!({"n": 1_999, "word": "w1999"}));
    assert!(pages > 10, "{pages}");
    let (rows, _) = follow(&proxy, "structured", json!({"count": 1_000}), 4_000).await;
    assert_eq!(rows.len(), 1_000);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_an_answer_that_changed_is_refused_as_stale_with_a_rerun() {
    let proxy = proxy("").await;
    let (first, _) = call(&proxy, "ticking", json!({"count": 5_000})).await;
    let (tool, arguments) = action(&first, "next-page").expect("a next page");
    let (stale, _) = call(&proxy, &tool, arguments).await;
    assert_eq!(stale["ok"], false, "{stale}");
    assert_eq!(stale["error"]["code"], STALE_CONTINUATION, "{stale}");
    let (tool, arguments) = action(&stale, "rerun").expect("a rerun action");
    let (rerun, _) = call(&proxy, &tool, arguments).await;
    assert_eq!(rerun["ok"], true, "{rerun}");
    assert!(
        rerun["data"][0]
            .as_str()
            .unwrap_or_default()
            .starts_with("called 3 times"),
        "{rerun}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tampered_continuation_is_refused() {
    let proxy = proxy("").await;
    let (first, _) = call(&proxy, "lines", json!({"count": 5_000})).await;
    let (tool, mut arguments) = action(&first, "next-page").expect("a next page");
    let token = arguments["continuation"]
        .as_str()
        .expect("a token")
        .to_owned();
    let mut bytes = token.into_bytes();
    let last = bytes.len() - 2;
    bytes[last] = if bytes[last] == b'A' { b'B' } else { b'A' };
    arguments["continuation"] = json!(String::from_utf8(bytes).expect("ASCII"));
    let (refused, _) = call(&proxy, &tool, arguments.clone()).await;
    assert_eq!(refused["error"]["code"], INVALID_CONTINUATION, "{refused}");
    // Another request's arguments: the token is bound to the call that got it.
    let (tool, mut arguments) = action(&first, "next-page").expect("a next page");
    arguments["count"] = json!(4_999);
    let (moved, _) = call(&proxy, &tool, arguments).await;
    assert_eq!(
        moved["error"]["code"], CONTINUATION_SCOPE_MISMATCH,
        "{moved}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_that_is_not_read_only_is_paged_from_the_store_and_never_called_twice() {
    let budget = envelope_budget::AGENT_BUDGET_CHARS;
    let proxy = proxy("").await;
    let (rows, pages) = follow(&proxy, "append", json!({"count": 5_000}), budget).await;
    assert_eq!(rows.len(), 5_000);
    assert!(pages > 3, "{pages}");
    assert_eq!(rows[0], "appended 1 times\n");
    assert_eq!(rows[4_999], format!("line 004999 {}\n", "x".repeat(28)));
    // The pages came from the store: the next call is the tool's second.
    let (again, _) = call(&proxy, "append", json!({"count": 1})).await;
    assert_eq!(again["data"], "appended 2 times\n", "{again}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_answer_over_the_stores_bound_says_the_rest_was_not_kept() {
    let proxy = proxy("[store]\nmax_answer_bytes = 20000\n").await;
    let (mut envelope, _) = call(&proxy, "append", json!({"count": 5_000})).await;
    let mut rows = 0;
    loop {
        rows += envelope["data"].as_array().map_or(0, Vec::len);
        match action(&envelope, "next-page") {
            Some((tool, arguments)) => (envelope, _) = call(&proxy, &tool, arguments).await,
            None => break,
        }
    }
    // The first row is 20 bytes of JSON, each after it 44: 455 fit in 20,000.
    assert_eq!(rows, 455);
    let completeness = &envelope["completeness"];
    assert_eq!(completeness["total"], 5_000, "{completeness}");
    assert_eq!(completeness["truncated"], true, "{completeness}");
    assert!(
        completeness["truncation_reasons"]
            .as_array()
            .is_some_and(|reasons| reasons.contains(&json!("store_limit"))),
        "{completeness}"
    );
    assert!(
        envelope["next_step"]
            .as_str()
            .unwrap_or_default()
            .contains("not kept"),
        "{}",
        envelope["next_step"]
    );
    assert!(
        envelope["warnings"]
            .as_array()
            .is_some_and(|warnings| warnings
                .iter()
                .any(|warning| warning["code"] == envelope_proxy::ANSWER_NOT_KEPT_WHOLE)),
        "{}",
        envelope["warnings"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_page_of_an_evicted_answer_is_stale_with_a_rerun_that_says_it_runs_again() {
    let proxy = proxy("[store]\nmax_bytes = 300000\n").await;
    let (first, _) = call(&proxy, "append", json!({"count": 5_000})).await;
    let (tool, arguments) = action(&first, "next-page").expect("a next page");
    // Other answers push the first out of the store.
    for count in [5_001, 5_002] {
        let (other, _) = call(&proxy, "append", json!({"count": count})).await;
        assert_eq!(other["ok"], true, "{other}");
    }
    let (evicted, _) = call(&proxy, &tool, arguments).await;
    assert_eq!(evicted["error"]["code"], STALE_CONTINUATION, "{evicted}");
    let rerun = evicted["next_actions"]
        .as_array()
        .and_then(|actions| actions.iter().find(|action| action["id"] == "rerun"))
        .expect("a rerun action");
    assert!(
        rerun["reason"]
            .as_str()
            .unwrap_or_default()
            .contains("runs the tool again"),
        "{rerun}"
    );
    assert_eq!(rerun["arguments"], json!({"count": 5_000}), "{rerun}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_failure_is_typed_and_retryable_only_where_it_says_so() {
    let proxy = proxy("").await;
    let (failed, _) = call(&proxy, "fail", json!({})).await;
    assert_eq!(failed["error"]["code"], "upstream_tool_error", "{failed}");
    assert_eq!(failed["error"]["category"], "not_found", "{failed}");
    assert_eq!(failed["error"]["retryable"], false, "{failed}");

    let (huge, _) = call(&proxy, "huge", json!({"megabytes": 100})).await;
    assert_eq!(huge["error"]["code"], "upstream_answer_too_large", "{huge}");
    assert_eq!(huge["error"]["retryable"], false, "{huge}");

    let (garbage, _) = call(&proxy, "garbage", json!({})).await;
    assert_eq!(garbage["error"]["code"], "upstream_malformed", "{garbage}");

    let (hung, _) = call(&proxy, "hang", json!({})).await;
    assert_eq!(hung["error"]["code"], "upstream_timeout", "{hung}");
    assert_eq!(hung["error"]["retryable"], true, "{hung}");
    // The upstream was told to stop each call the proxy gave up on: the one it left
    // hanging, and the two whose answers could not be read.
    let mut told = Vec::new();
    for _ in 0..50 {
        let (said, _) = call(&proxy, "cancellations", json!({})).await;
        told = said["data"].as_array().cloned().unwrap_or_default();
        if told.len() == 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(told.len(), 3, "{told:?}");
    for stopped in &told {
        assert_eq!(
            stopped["reason"], "the proxy stopped waiting for it",
            "{told:?}"
        );
    }

    // After each of those, the proxy still answers.
    let (fine, _) = call(&proxy, "lines", json!({"count": 1})).await;
    assert_eq!(fine["ok"], true, "{fine}");
}

#[tokio::test(flavor = "multi_thread")]
async fn what_the_upstream_asks_a_client_that_cannot_answer_is_refused_clearly() {
    let proxy = proxy("").await;
    // A call with no client behind it (this one's): the upstream's request is refused with
    // the reason, which the upstream reports as its tool's failure.
    for (what, feature) in [("sample", "sampling"), ("elicit", "elicitation")] {
        let (refused, _) = call(&proxy, "ask", json!({"what": what})).await;
        assert_eq!(refused["ok"], false, "{refused}");
        let message = refused["error"]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains(&format!("does not offer {feature}")),
            "{refused}"
        );
    }
    // Logging during a call goes to its client when there is one, and never fails the call.
    let (said, _) = call(&proxy, "chatty", json!({})).await;
    assert_eq!(said["data"], "said", "{said}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dead_upstream_is_unavailable_then_started_again() {
    let proxy = proxy("").await;
    let (died, _) = call(&proxy, "die", json!({})).await;
    assert_eq!(died["error"]["code"], "upstream_unavailable", "{died}");
    assert_eq!(died["error"]["category"], "unavailable", "{died}");
    assert_eq!(died["error"]["retryable"], true, "{died}");
    // Followed as the envelope says: retry after the wait it names.
    let mut answered = None;
    for _ in 0..20 {
        let (again, _) = call(&proxy, "lines", json!({"count": 1})).await;
        if again["ok"] == true {
            answered = Some(again);
            break;
        }
        assert_eq!(again["error"]["retryable"], true, "{again}");
        let wait = again["error"]["retry_after_ms"].as_u64().unwrap_or(100);
        tokio::time::sleep(Duration::from_millis(wait.max(50))).await;
    }
    assert!(answered.is_some(), "the upstream was started again");
}

#[tokio::test(flavor = "multi_thread")]
async fn tools_the_upstream_adds_at_run_time_are_listed() {
    let proxy = proxy("").await;
    assert!(
        proxy
            .server()
            .tools()
            .iter()
            .all(|tool| tool.name != "grown")
    );
    let (grew, _) = call(&proxy, "grow", json!({})).await;
    assert_eq!(grew["ok"], true, "{grew}");
    for _ in 0..100 {
        if proxy
            .server()
            .tools()
            .iter()
            .any(|tool| tool.name == "grown")
        {
            let (answer, _) = call(&proxy, "grown", json!({})).await;
            assert_eq!(answer["data"], "I was added at run time", "{answer}");
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the tool the upstream added was never listed");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tool_listed_with_an_invalid_schema_is_left_out_and_the_rest_served() {
    let proxy = proxy("").await;
    let tools = proxy.server().tools();
    for name in ["broken", "bad_properties"] {
        assert!(
            tools.iter().all(|tool| tool.name != name),
            "{name} is listed"
        );
        assert!(
            proxy.server().call(name, json!({})).await.is_none(),
            "{name} is served"
        );
    }
    let (fine, _) = call(&proxy, "lines", json!({"count": 1})).await;
    assert_eq!(fine["ok"], true, "{fine}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hidden_tool_is_neither_listed_nor_called() {
    let proxy = proxy("[tools.die]\nhidden = true\n").await;
    assert!(proxy.server().tools().iter().all(|tool| tool.name != "die"));
    assert!(proxy.server().call("die", json!({})).await.is_none());
}

/// A client that counts the prompts' and the resources' `list_changed` it is told, and the
/// resource updates.
#[derive(Clone, Default)]
struct Counting {
    prompts: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    resources: std::sync::Arc<std::sync::atomic::AtomicUsize>,
    updated: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl rmcp::ClientHandler for Counting {
    async fn on_resource_updated(
        &self,
        _params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.updated
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_prompt_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.prompts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }

    async fn on_resource_list_changed(
        &self,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        self.resources
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    }
}

/// A session of an rmcp client with `proxy`, over a pipe: what it was told, the client, and
/// the task serving it.
async fn session(
    proxy: &Proxy,
) -> (
    Counting,
    rmcp::service::RunningService<rmcp::RoleClient, Counting>,
    tokio::task::JoinHandle<Result<(), envelope_mcp::McpError>>,
) {
    use rmcp::ServiceExt as _;
    let (client_side, server_side) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_side);
    let serving = tokio::spawn(
        proxy
            .server()
            .clone()
            .serve_lines(server_read, server_write),
    );
    let counting = Counting::default();
    let client = counting
        .clone()
        .serve(tokio::io::split(client_side))
        .await
        .expect("the client initializes");
    (counting, client, serving)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_upstreams_prompts_and_resources_changing_is_told_to_the_client() {
    use std::sync::atomic::Ordering;

    let proxy = proxy("").await;
    let (counting, client, serving) = session(&proxy).await;
    let declared = client
        .peer_info()
        .expect("the proxy introduced itself")
        .capabilities
        .clone();
    assert_eq!(
        declared.prompts.and_then(|prompts| prompts.list_changed),
        Some(true),
        "the proxy declares what the upstream declared"
    );
    assert_eq!(
        declared
            .resources
            .and_then(|resources| resources.list_changed),
        Some(true)
    );
    assert!(client.list_all_prompts().await.expect("lists").is_empty());

    let answer = client
        .call_tool(rmcp::model::CallToolRequestParams::new("reshelve"))
        .await
        .expect("the call is answered");
    assert_ne!(answer.is_error, Some(true), "{answer:?}");
    for _ in 0..100 {
        if counting.prompts.load(Ordering::SeqCst) > 0
            && counting.resources.load(Ordering::SeqCst) > 0
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (prompts, resources) = (
        counting.prompts.load(Ordering::SeqCst),
        counting.resources.load(Ordering::SeqCst),
    );
    assert!(prompts > 0, "the prompts' change was never told");
    assert!(resources > 0, "the resources' change was never told");
    assert!(
        prompts <= 3 && resources <= 3,
        "told at most once per notice: {prompts} and {resources}"
    );
    // What was told is true: listed again, the new prompt and resource are there.
    let listed = client.list_all_prompts().await.expect("lists");
    assert_eq!(
        listed.first().map(|prompt| prompt.name.as_str()),
        Some("shelved")
    );
    let listed = client.list_all_resources().await.expect("lists");
    assert_eq!(
        listed.first().map(|resource| resource.uri.as_str()),
        Some("memo://shelved")
    );
    client.cancel().await.expect("the client closes");
    serving.abort();
}

/// What the upstream's process was told, as its `remembers` tool says: `None` while it is
/// down.
async fn remembered(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Counting>,
) -> Option<Value> {
    let answer = client
        .call_tool(rmcp::model::CallToolRequestParams::new("remembers"))
        .await
        .expect("the call is answered");
    let envelope = answer.structured_content?;
    (envelope["ok"] == true).then(|| envelope["data"].clone())
}

/// Makes the upstream die, then calls until it is started again: what the new process was
/// told, as its `remembers` tool says (`None` if it never came back).
async fn started_again(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Counting>,
) -> Option<Value> {
    let died = client
        .call_tool(rmcp::model::CallToolRequestParams::new("die"))
        .await
        .expect("the call is answered");
    assert_eq!(died.is_error, Some(true), "{died:?}");
    for _ in 0..100 {
        if let Some(told) = remembered(client).await {
            return Some(told);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    None
}

#[tokio::test(flavor = "multi_thread")]
async fn an_upstream_started_again_is_told_what_its_clients_asked_of_the_one_before() {
    use std::sync::atomic::Ordering;

    let proxy = proxy("").await;
    let (counting, client, serving) = session(&proxy).await;
    watch(&client, "memo://watched").await;
    #[allow(deprecated)] // logging (SEP-2577 deprecates it), which the 2025 revisions speak
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Debug,
        ))
        .await
        .expect("the level is set");
    let told = json!({ "subscribed": ["memo://watched"], "level": "debug", "answered": [] });
    assert_eq!(remembered(&client).await, Some(told.clone()));

    let again = started_again(&client).await;
    assert_eq!(
        again,
        Some(told),
        "the new process was told what the client asked"
    );

    // And the client hears of the resource it watches, from the new process.
    let touched = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new("touch").with_arguments(
                json!({ "uri": "memo://watched" })
                    .as_object()
                    .cloned()
                    .unwrap_or_default(),
            ),
        )
        .await
        .expect("the call is answered");
    assert_ne!(touched.is_error, Some(true), "{touched:?}");
    for _ in 0..100 {
        if counting.updated.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(counting.updated.load(Ordering::SeqCst), 1);
    client.cancel().await.expect("the client closes");
    serving.abort();
}

#[tokio::test(flavor = "multi_thread")]
async fn a_subscription_the_new_upstream_leaves_unanswered_costs_no_other() {
    // The first process answers every subscription; the one started after it never answers
    // those of a URI with `stalls` in it.
    let mark = std::env::temp_dir().join(format!(
        "envelope-proxy-stalls-{}-{:?}",
        std::process::id(),
        std::time::SystemTime::now()
    ));
    let proxy = start(&format!(
        "[upstream]\ncommand = [\"python3\", {:?}, \"--stall-when-started-again\", {:?}]\ncall_timeout_seconds = 2\n",
        common::fixture(),
        mark.display().to_string()
    ))
    .await;
    let (_counting, client, serving) = session(&proxy).await;
    // The proxy keeps the watched resources in no order: with nine unanswered, the one the
    // new process answers comes first one time in ten, when asking one after the other
    // would reach it too.
    for uri in (1..=9)
        .map(|stall| format!("memo://stalls-{stall}"))
        .chain(["memo://watched".to_owned()])
    {
        watch(&client, &uri).await;
    }

    let again = started_again(&client).await;
    let _ = std::fs::remove_file(&mark);
    let again = again.expect("the upstream started again");
    assert_eq!(
        again["subscribed"],
        json!(["memo://watched"]),
        "the subscription the new process answers is made, whatever it leaves unanswered: {again}"
    );
    client.cancel().await.expect("the client closes");
    serving.abort();
}

/// `client` subscribes to `uri`, the 2025 way.
async fn watch(client: &rmcp::service::RunningService<rmcp::RoleClient, Counting>, uri: &str) {
    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions speak
    client
        .subscribe(rmcp::model::SubscribeRequestParams::new(uri))
        .await
        .expect("subscribed");
}

/// Calls `tool` with `arguments` as `client`: the envelope.
async fn call_as(
    client: &rmcp::service::RunningService<rmcp::RoleClient, Counting>,
    tool: &'static str,
    arguments: Value,
) -> Value {
    let answer = client
        .call_tool(
            rmcp::model::CallToolRequestParams::new(tool)
                .with_arguments(arguments.as_object().cloned().unwrap_or_default()),
        )
        .await
        .expect("the call is answered");
    answer.structured_content.unwrap_or_default()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_resource_watched_through_an_upstream_on_2026_is_told_of_its_updates() {
    use std::sync::atomic::Ordering;

    // The upstream speaks 2026-07-28: another proxy (whose clients may), in front of the
    // fixture. A client of this one subscribes the 2025 way; the upstream is asked by a
    // subscription stream, which the other proxy serves by subscribing the fixture.
    let proxy = start(&format!(
        "[upstream]\ncommand = [{:?}, \"--\", \"python3\", {:?}]\nrevision = \"2026-07-28\"\ncall_timeout_seconds = 5\n",
        env!("CARGO_BIN_EXE_envelope-proxy"),
        common::fixture()
    ))
    .await;
    let (counting, client, serving) = session(&proxy).await;
    watch(&client, "memo://watched").await;
    // What the fixture was told, through both proxies (each answers an envelope: the inner
    // one is the outer one's data).
    let subscribed = || async {
        call_as(&client, "remembers", json!({})).await["data"]["data"]["subscribed"].clone()
    };
    assert_eq!(subscribed().await, json!(["memo://watched"]));

    let touched = call_as(&client, "touch", json!({ "uri": "memo://watched" })).await;
    assert_eq!(touched["ok"], true, "{touched}");
    for _ in 0..100 {
        if counting.updated.load(Ordering::SeqCst) > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(counting.updated.load(Ordering::SeqCst), 1, "told once");

    // The last watcher gone, the stream ends, and the fixture is unsubscribed.
    #[allow(deprecated)] // the legacy subscription, which the 2025 revisions speak
    client
        .unsubscribe(rmcp::model::UnsubscribeRequestParams::new("memo://watched"))
        .await
        .expect("unsubscribed");
    let mut left = json!(null);
    for _ in 0..50 {
        left = subscribed().await;
        if left == json!([]) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(left, json!([]));
    client.cancel().await.expect("the client closes");
    serving.abort();
}

//! Tools a server learns at run time: listed, announced with `notifications/tools/list_changed`,
//! called through the same door as `#[tool]`s, and let go, driven by rmcp's own client.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use envelope_core::stage::{ToolOutput, add_controls, meta_stamp, stamp_request_id};
use envelope_core::{BoxFuture, CoreError, Envelope, Tier, Tool, ToolContext, ToolSpec, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::model::{
    CallToolRequestParams, ErrorCode, ProtocolVersion, ServerNotification, SubscriptionFilter,
};
use rmcp::service::{
    ClientLifecycleMode, ClientServiceExt, NotificationContext, RunningService, Subscription,
};
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};

mod common;

use common::rmcp_client::connect_with;
use common::tools::echo;

/// A tool as a proxy learns it from another server: a name, a description and an input schema
/// known only at run time. It answers what it was called with.
struct Learned {
    spec: ToolSpec,
    input: Value,
}

impl Learned {
    fn new(name: &str, description: &str) -> Learned {
        let mut spec = ToolSpec::new(name.to_owned(), description.to_owned(), Tier::Standard);
        spec.read_only = Some(true);
        Learned {
            spec,
            input: json!({
                "type": "object",
                "properties": { "url": { "type": "string", "description": "What to fetch." } },
                "required": ["url"],
            }),
        }
    }
}

impl Tool for Learned {
    fn spec(&self) -> &ToolSpec {
        &self.spec
    }

    fn input_schema(&self) -> schemars::Schema {
        // Listed as every envelope tool is: its own arguments, and the per-call controls.
        add_controls(schemars::Schema::try_from(self.input.clone()).expect("an object schema"))
    }

    fn call(&self, arguments: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
        let name = self.spec.name.clone();
        let tier = self.spec.tier;
        Box::pin(async move {
            let mut envelope = Envelope::ok(json!({ "fetched": arguments["url"] }));
            stamp_request_id(&mut envelope, *ctx.request_id());
            meta_stamp(&mut envelope).tool(name, tier, true);
            let mut output = ToolOutput::from(envelope);
            output.controls = ctx.controls().clone();
            output
        })
    }
}

/// rmcp's client, counting the `notifications/tools/list_changed` it is sent.
#[derive(Clone, Default)]
struct Watcher {
    changes: Arc<AtomicUsize>,
}

impl rmcp::ClientHandler for Watcher {
    async fn on_tool_list_changed(&self, _: NotificationContext<RoleClient>) {
        self.changes.fetch_add(1, Ordering::SeqCst);
    }
}

impl Watcher {
    /// The changes seen, once there are `count` or 5 s have passed.
    async fn wait_for(&self, count: usize) -> usize {
        for _ in 0..500 {
            if self.changes.load(Ordering::SeqCst) >= count {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        self.changes.load(Ordering::SeqCst)
    }
}

async fn connect(server: EnvelopeServer) -> (RunningService<RoleClient, Watcher>, Watcher) {
    let watcher = Watcher::default();
    (connect_with(server, watcher.clone()).await, watcher)
}

async fn listed_names(client: &RunningService<RoleClient, Watcher>) -> Vec<String> {
    let listed = client.list_all_tools().await.expect("tools/list");
    listed
        .into_iter()
        .map(|tool| tool.name.into_owned())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_learned_at_run_time_is_announced_listed_called_and_let_go() {
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("front", "1.0.0"))
        .with_changing_tools();
    let (client, watcher) = connect(server.clone()).await;
    let info = client.peer_info().expect("initialized");
    let tools = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools.list_changed, Some(true));
    assert_eq!(listed_names(&client).await, ["echo"]);

    let learned = Learned::new("upstream.fetch", "Fetches a URL upstream.");
    assert!(
        server
            .add_tool(Arc::new(learned))
            .await
            .expect("a valid spec")
            .is_none()
    );
    assert_eq!(watcher.wait_for(1).await, 1, "told once of the change");
    let listed = client.list_all_tools().await.expect("tools/list");
    let fetch = listed
        .iter()
        .find(|tool| tool.name == "upstream.fetch")
        .expect("the learned tool is listed");
    assert_eq!(
        fetch.description.as_deref(),
        Some("Fetches a URL upstream.")
    );
    let properties = fetch.input_schema.get("properties").expect("properties");
    assert!(properties.get("url").is_some());

    // Called as the listing offers it, a control beside its argument: the door takes the
    // control off, the tool sees only its own argument.
    let arguments = json!({"url": "https://example.test/a", "response_mode": "compact"});
    let Value::Object(arguments) = arguments else {
        unreachable!()
    };
    let result = client
        .call_tool(CallToolRequestParams::new("upstream.fetch").with_arguments(arguments))
        .await
        .expect("tools/call");
    let envelope = result.structured_content.expect("an envelope");
    assert_eq!(envelope["ok"], json!(true), "{envelope}");
    assert_eq!(
        envelope["data"],
        json!({"fetched": "https://example.test/a"})
    );

    assert!(server.remove_tool("upstream.fetch").await.is_some());
    assert_eq!(watcher.wait_for(2).await, 2, "told again when it left");
    assert_eq!(listed_names(&client).await, ["echo"]);
    let gone = client
        .call_tool(CallToolRequestParams::new("upstream.fetch"))
        .await
        .expect_err("no tool has that name now");
    let rmcp::ServiceError::McpError(error) = gone else {
        panic!("an MCP error: {gone:?}")
    };
    assert_eq!(error.code, ErrorCode::INVALID_PARAMS);
    assert_eq!(error.data.expect("data")["available"], json!(["echo"]));
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_does_not_announce_changes_still_serves_them() {
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("front", "1.0.0"));
    let (client, watcher) = connect(server.clone()).await;
    let info = client.peer_info().expect("initialized");
    let tools = info.capabilities.tools.as_ref().expect("tools capability");
    assert_eq!(tools.list_changed, None);

    let learned = Learned::new("upstream.fetch", "Fetches a URL upstream.");
    server
        .add_tool(Arc::new(learned))
        .await
        .expect("a valid spec");
    // Listing again shows it; nothing was announced.
    assert_eq!(listed_names(&client).await, ["echo", "upstream.fetch"]);
    assert_eq!(watcher.changes.load(Ordering::SeqCst), 0);
    // The whole set replaced at once.
    server.set_tools(toolset![]).await;
    assert!(listed_names(&client).await.is_empty());
    client.cancel().await.expect("closes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spec_learned_wrong_is_refused_and_changes_nothing() {
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("front", "1.0.0"))
        .with_changing_tools();
    let (client, watcher) = connect(server.clone()).await;
    for (name, description) in [("has space", "Fine."), ("fine", "  ")] {
        let Err(refused) = server
            .add_tool(Arc::new(Learned::new(name, description)))
            .await
        else {
            panic!("`{name}` is refused")
        };
        assert!(
            matches!(refused, CoreError::InvalidToolSpec { .. }),
            "{refused}"
        );
    }
    let mut destructive = Learned::new("erase", "Erases.");
    destructive.spec.destructive = Some(true);
    assert!(server.add_tool(Arc::new(destructive)).await.is_err());
    // Taking out a tool nobody serves changes nothing either.
    assert!(server.remove_tool("nothing").await.is_none());
    assert_eq!(listed_names(&client).await, ["echo"]);
    assert_eq!(watcher.changes.load(Ordering::SeqCst), 0);
    client.cancel().await.expect("closes");
}

/// A call that started before its tool was replaced finishes with the tool it started with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_running_call_keeps_the_tool_it_started_with() {
    struct Slow(
        Arc<Mutex<Option<tokio::sync::oneshot::Receiver<()>>>>,
        ToolSpec,
    );
    impl Tool for Slow {
        fn spec(&self) -> &ToolSpec {
            &self.1
        }
        fn input_schema(&self) -> schemars::Schema {
            schemars::json_schema!({"type": "object"})
        }
        fn call(&self, _: Value, ctx: ToolContext) -> BoxFuture<'static, ToolOutput> {
            let release = self.0.lock().expect("no poisoning").take();
            Box::pin(async move {
                if let Some(release) = release {
                    let _ = release.await;
                }
                let mut envelope = Envelope::ok(json!("the first"));
                stamp_request_id(&mut envelope, *ctx.request_id());
                ToolOutput::from(envelope)
            })
        }
    }
    let (release, released) = tokio::sync::oneshot::channel();
    let spec = ToolSpec::new("work", "Works slowly.", Tier::Lite);
    let slow = Slow(Arc::new(Mutex::new(Some(released))), spec);
    let server = EnvelopeServer::new(toolset![], EnvelopeConfig::new("front", "1.0.0"));
    server.add_tool(Arc::new(slow)).await.expect("valid");
    let running = tokio::spawn({
        let server = server.clone();
        async move { server.call("work", json!({})).await }
    });
    tokio::time::sleep(Duration::from_millis(50)).await;
    server
        .add_tool(Arc::new(Learned::new("work", "Works at once.")))
        .await
        .expect("valid")
        .expect("replaced the slow one");
    let _ = release.send(());
    let prepared = running.await.expect("joins").expect("the tool was there");
    assert_eq!(prepared.structured["data"], json!("the first"));
    // The next call meets the new tool.
    let next = server
        .call("work", json!({"url": "u"}))
        .await
        .expect("served");
    assert_eq!(next.structured["data"], json!({"fetched": "u"}));
}

/// A 2026-07-28 client subscribes to the tools' changes and is told of each on its
/// subscription.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_to_the_tools_changes_is_told_of_each() {
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("front", "1.0.0"))
        .with_changing_tools();
    let client = discovering(&server).await;
    let filter = SubscriptionFilter::builder().tools_list_changed().build();
    let mut subscription = client.peer().listen(filter).await.expect("subscribed");
    assert_eq!(subscription.acknowledged().tools_list_changed, Some(true));
    learn_and_be_told(&server, &mut subscription).await;
    assert_eq!(listed_names(&client).await, ["echo", "upstream.fetch"]);
    client.cancel().await.expect("closes");
}

/// `server` learns `upstream.fetch`, and `subscription` is told its tools changed within 5 s.
async fn learn_and_be_told(server: &EnvelopeServer, subscription: &mut Subscription) {
    let learned = Learned::new("upstream.fetch", "Fetches a URL upstream.");
    server
        .add_tool(Arc::new(learned))
        .await
        .expect("a valid spec");
    let told = tokio::time::timeout(Duration::from_secs(5), subscription.next())
        .await
        .expect("told within 5 s")
        .expect("a notification");
    assert!(
        matches!(
            told,
            Some(ServerNotification::ToolListChangedNotification(_))
        ),
        "{told:?}"
    );
}

/// A 2026-07-28 client of `server` in a session of its own: `server/discover`, no
/// `initialize`, no session to tell.
async fn discovering(server: &EnvelopeServer) -> RunningService<RoleClient, Watcher> {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn({
        let server = server.clone();
        async move {
            if let Ok(running) = server.serve(server_io).await {
                let _ = running.waiting().await;
            }
        }
    });
    let lifecycle = ClientLifecycleMode::Discover {
        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
    };
    Watcher::default()
        .serve_with_lifecycle(client_io, lifecycle)
        .await
        .expect("client discovers")
}

/// Two sessions' subscriptions share a request id (each session numbers its own requests):
/// one that ends lets go of itself only, and the other is still told.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subscription_that_ends_lets_go_of_itself_only() {
    let server = EnvelopeServer::new(toolset![echo], EnvelopeConfig::new("front", "1.0.0"))
        .with_changing_tools();
    let filter = || SubscriptionFilter::builder().tools_list_changed().build();
    let leaving = discovering(&server).await;
    let staying = discovering(&server).await;
    let mut gone = leaving.peer().listen(filter()).await.expect("subscribed");
    let mut subscription = staying.peer().listen(filter()).await.expect("subscribed");
    gone.cancel().await.expect("cancelled");
    // The server lets go of the cancelled subscription as its listen ends.
    tokio::time::sleep(Duration::from_millis(200)).await;
    learn_and_be_told(&server, &mut subscription).await;
    leaving.cancel().await.expect("closes");
    staying.cancel().await.expect("closes");
}

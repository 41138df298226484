//! A blocking tool's calls take turns (`EnvelopeConfig::with_blocking_calls_per_tool`): past
//! the limit, a call of that tool waits until one of its calls ends, while another tool's call
//! runs at once; without a limit, every call runs at once.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Condvar, Mutex};
use std::time::Duration;

use envelope_core::{ToolResult, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use serde_json::{Value, json};

/// Calls of `hold` that have started.
static STARTED: AtomicUsize = AtomicUsize::new(0);
/// Whether the held calls may end.
static RELEASED: Mutex<bool> = Mutex::new(false);
static RELEASE: Condvar = Condvar::new();

/// Holds its thread until the test releases it.
#[tool(tier = lite, blocking)]
fn hold() -> ToolResult<Value> {
    STARTED.fetch_add(1, Ordering::SeqCst);
    let mut released = RELEASED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    while !*released {
        released = RELEASE
            .wait(released)
            .unwrap_or_else(|poisoned| poisoned.into_inner());
    }
    Ok(json!({"held": true}))
}

/// Answers at once.
#[tool(tier = lite, blocking)]
fn quick() -> ToolResult<Value> {
    Ok(json!({"quick": true}))
}

fn release(released: bool) {
    *RELEASED
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner()) = released;
    RELEASE.notify_all();
}

async fn until_started(count: usize) {
    tokio::time::timeout(Duration::from_secs(20), async {
        while STARTED.load(Ordering::SeqCst) < count {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await
    .expect("the calls started");
}

fn ok(answer: Option<envelope_budget::Prepared>) -> bool {
    answer.expect("a tool of this server").structured["ok"] == true
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_tool_takes_turns_and_another_tool_does_not_wait() {
    assert!(envelope_mcp::default_blocking_calls_per_tool() >= 2);

    // One turn: the second `hold` waits for the first; `quick` runs meanwhile.
    STARTED.store(0, Ordering::SeqCst);
    release(false);
    let server = EnvelopeServer::new(
        toolset![hold, quick],
        EnvelopeConfig::new("turns", "1.0.0").with_blocking_calls_per_tool(Some(1)),
    );
    let first = tokio::spawn({
        let server = server.clone();
        async move { server.call("hold", json!({})).await }
    });
    until_started(1).await;
    let second = tokio::spawn({
        let server = server.clone();
        async move { server.call("hold", json!({})).await }
    });
    let quick = tokio::time::timeout(Duration::from_secs(20), server.call("quick", json!({})))
        .await
        .expect("another tool's call is not queued behind the held one");
    assert!(ok(quick));
    // The second `hold` is still waiting for its turn: it has not started.
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(
        STARTED.load(Ordering::SeqCst),
        1,
        "one turn, one call running"
    );
    release(true);
    assert!(ok(first.await.expect("the first call")));
    assert!(ok(second.await.expect("the second call")));
    assert_eq!(STARTED.load(Ordering::SeqCst), 2);

    // No limit: both run at once.
    STARTED.store(0, Ordering::SeqCst);
    release(false);
    let server = EnvelopeServer::new(
        toolset![hold, quick],
        EnvelopeConfig::new("turns", "1.0.0").with_blocking_calls_per_tool(None),
    );
    let calls: Vec<_> = (0..2)
        .map(|_| {
            let server = server.clone();
            tokio::spawn(async move { server.call("hold", json!({})).await })
        })
        .collect();
    until_started(2).await;
    release(true);
    for call in calls {
        assert!(ok(call.await.expect("a call")));
    }
}

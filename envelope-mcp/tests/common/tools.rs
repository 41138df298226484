//! Small tools the tests serve: one that sleeps, one that echoes.

use std::time::Duration;

use envelope_core::{ToolResult, tool};
use serde_json::{Value, json};

#[derive(serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct NapArgs {
    /// How long to sleep, in milliseconds.
    ms: u64,
}

/// Sleeps, then answers how long it slept: a call that holds its place as long as a test
/// needs.
#[tool(tier = lite, read_only)]
pub(crate) async fn nap(args: NapArgs) -> ToolResult<u64> {
    tokio::time::sleep(Duration::from_millis(args.ms)).await;
    Ok(args.ms)
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
pub(crate) struct EchoArgs {
    /// What to echo.
    pub(crate) text: String,
    /// How many times.
    #[serde(default)]
    pub(crate) times: Option<u32>,
}

/// Echo a text.
#[tool(tier = lite, read_only, layer = "test")]
pub(crate) fn echo(args: EchoArgs) -> ToolResult<Value> {
    Ok(json!({ "echo": args.text.repeat(args.times.unwrap_or(1) as usize) }))
}

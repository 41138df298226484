//! A notes server, written as a downstream crate would write it: two tools over a typed state,
//! one of them paged by the [`Pager`] with sealed continuations, served by `envelope-mcp`. Its
//! manifest lists only `envelope-core` and `envelope-mcp`; `serde`, `schemars`, `serde_json` and
//! `tokio` come through their re-exports.
//!
//! A paged tool declares which arguments carry the page size and the token
//! ([`paged_args!`](envelope_core::paged_args) for the usual `limit` and `continuation`) and how
//! it pages ([`Paging`]); the pager reads the page, says which rows it takes, and finishes the
//! reply with a true `completeness` (`total` counts every note on every page, `offset` says
//! where the page starts), the honest `next_step` and the `next-page` action.

pub mod compose;

use std::sync::Arc;

use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::schemars::JsonSchema;
use envelope_core::serde::{Deserialize, Serialize};
use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};

/// The server's state: the notes it serves.
pub struct Notes(pub Vec<String>);

/// How many notes there are.
#[derive(Serialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct Count {
    /// Notes in all.
    pub notes: usize,
}

/// Count the notes.
#[tool(tier = lite, read_only)]
pub async fn count_notes(ctx: &ToolContext) -> ToolResult<Count> {
    Ok(Count {
        notes: ctx.state::<Notes>()?.0.len(),
    })
}

/// The arguments of `list_notes`.
#[derive(Clone, Deserialize, Serialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct ListArgs {
    /// Notes per page: 10 unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// Where the next page starts: set by the `next-page` action, which is called as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<String>,
}

// The page size is `limit` and the token `continuation`: the names the pager expects.
envelope_core::paged_args!(ListArgs);

/// One page of notes.
#[derive(Serialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct NotePage {
    /// The notes on this page, in order.
    pub notes: Vec<String>,
}

/// List the notes, a page at a time; follow the `next-page` action for the next page.
#[tool(tier = lite, read_only)]
pub async fn list_notes(ctx: &ToolContext, args: ListArgs) -> ToolResult<Reply<NotePage>> {
    let notes = &ctx.state::<Notes>()?.0;
    // The snapshot is what the notes are: a token of another list of notes is stale.
    let snapshot = notes.len().to_string();
    let paging = Paging::new(Unit::custom("note")?, 10)
        .with_max_limit(100)
        .with_snapshot(&snapshot);
    let pager = Pager::<list_notes>::open(ctx, &args, paging)?;
    let sent: Vec<String> = notes
        .iter()
        .enumerate()
        .filter(|(index, _)| pager.takes(*index))
        .map(|(_, note)| note.clone())
        .collect();
    let count = PageCount::new(sent.len(), notes.len());
    pager.finish(ctx, &args, Reply::new(NotePage { notes: sent }), count)
}

/// The server: both tools over `notes`, paging with `key`.
pub fn server(notes: Vec<String>, key: [u8; 32]) -> EnvelopeServer {
    EnvelopeServer::new(
        toolset![count_notes, list_notes],
        EnvelopeConfig::new("notes", "0.0.0")
            .with_state(Arc::new(Notes(notes)))
            .with_continuations(Continuations::new(ContinuationKey::new(1, key))),
    )
}

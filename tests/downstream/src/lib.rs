//! A notes server, written as a downstream crate would write it: two tools over a typed state,
//! one of them paged with sealed continuations, served by `envelope-mcp`. Its manifest lists
//! only `envelope-core` and `envelope-mcp`; `serde`, `schemars`, `serde_json` and `tokio` come
//! through their re-exports.

use std::sync::Arc;

use envelope_core::paging::{ContinuationKey, Continuations, PageArgs};
use envelope_core::schemars::JsonSchema;
use envelope_core::serde::{Deserialize, Serialize};
use envelope_core::{
    Completeness, Reply, ResultExt, ToolContext, ToolResult, TruncationReason, Unit, tool, toolset,
};
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
#[derive(Deserialize, Serialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct ListArgs {
    /// Notes per page: 10 unless set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<usize>,
    /// The previous page's `completeness.continuation`, for the next page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continuation: Option<String>,
}

/// One page of notes.
#[derive(Serialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct NotePage {
    /// The notes on this page, in order.
    pub notes: Vec<String>,
}

/// List the notes, a page at a time; follow `completeness.continuation` for the next page.
#[tool(tier = lite, read_only)]
pub async fn list_notes(ctx: &ToolContext, args: ListArgs) -> ToolResult<Reply<NotePage>> {
    let notes = &ctx.state::<Notes>()?.0;
    let continuations = ctx.state::<Continuations>()?;
    let request = envelope_core::serde_json::to_value(&args).internal()?;
    let binding = ctx.binding(&request);
    let page = continuations.page(
        &binding,
        PageArgs::new(10)
            .with_limit(args.limit)
            .with_continuation(args.continuation.as_deref()),
    )?;
    let sent = notes[page.range(notes.len())].to_vec();
    let token = continuations.next(&binding, page.start, sent.len(), notes.len())?;
    let unit = Unit::custom("note")?;
    let completeness = match token {
        Some(token) => Completeness::truncated_page(
            unit,
            sent.len(),
            Some(notes.len() - page.start),
            TruncationReason::PageLimit,
            Some(token),
        )?,
        None => Completeness::complete(unit, sent.len()),
    };
    Ok(Reply::new(NotePage { notes: sent }).completeness(completeness))
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

//! A paged tool beside the suite's fixtures: what the suite does not exercise but a checker
//! of envelope servers must, the `next-page` action followed exactly as given
//! (`envelope-check`'s `next_actions.verbatim` and `paging.follow`, run against this server in
//! `tests/interop/test_check.py`).

use envelope_core::paging::{PageCount, Pager, Paging};
use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How many numbers `envelope_count` pages through.
const COUNT_TO: u32 = 45;

/// The arguments of `envelope_count`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema)]
pub(crate) struct CountArgs {
    /// Numbers per page (default 10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    limit: Option<usize>,
    /// Where the next page starts: set by the `next-page` action, which is called as given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(CountArgs);

/// One page of numbers.
#[derive(Debug, Serialize, JsonSchema)]
pub(crate) struct Numbers {
    numbers: Vec<u32>,
}

/// Count from 1 to 45, a page at a time.
#[tool(tier = lite, read_only)]
pub(crate) fn envelope_count(ctx: &ToolContext, args: CountArgs) -> ToolResult<Reply<Numbers>> {
    let pager = Pager::<envelope_count>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
    let numbers: Vec<u32> = (1..=COUNT_TO)
        .filter(|n| pager.takes(*n as usize - 1))
        .collect();
    let count = PageCount::new(numbers.len(), COUNT_TO as usize);
    pager.finish(ctx, &args, Reply::new(Numbers { numbers }), count)
}

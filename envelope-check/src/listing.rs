//! `tools.listed`: the server's tools, read page by page within bounds a hostile listing
//! cannot stretch (pages, tools, bytes, time).

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool};
use rmcp::service::{RunningService, Service};
use serde_json::Map;

use super::clock::Clock;
use super::{Check, Faults, ToolReport};

/// The most pages of a listing read (a server may repeat a cursor forever).
pub const MAX_LISTING_PAGES: usize = 100;

/// The most tools checked: a server listing more has the first ones checked, and fails
/// `tools.listed`.
pub const MAX_TOOLS: usize = 10_000;

/// The most bytes of tool definitions kept, as JSON: past it, the tools of the pages read so
/// far are checked, and `tools.listed` fails.
pub const MAX_LISTING_BYTES: usize = 64 << 20;

/// Every tool the server lists, page by page, each page within the clock's wait; what is wrong
/// with the listing fails `tools.listed` in `report`. `Err` when no listing came at all.
pub(super) async fn list_tools<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    clock: &Clock,
    faults: &Faults,
    report: &mut ToolReport,
) -> Result<Vec<Arc<Tool>>, String> {
    let check = Check::ToolsListed;
    let no_arguments = Map::new();
    let mut tools: Vec<Arc<Tool>> = Vec::new();
    let mut bytes = 0;
    let mut cursor = None;
    let mut faulted = false;
    for _ in 0..MAX_LISTING_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        faults.clear();
        let wait = clock.wait();
        let listing = tokio::time::timeout(wait, client.list_tools(params));
        tokio::pin!(listing);
        // A line the client cannot read is a fault of the listing, but the page may still come.
        let page = loop {
            tokio::select! {
                biased;
                page = &mut listing => break page,
                fault = faults.next() => {
                    faulted = true;
                    report.fail(check, &no_arguments, &fault, None);
                }
            }
        };
        let page = match page {
            Ok(Ok(page)) => page,
            Ok(Err(error)) => {
                let detail = format!("the server did not list its tools: {error}");
                report.fail(check, &no_arguments, &detail, None);
                return Err(detail);
            }
            Err(_) => {
                let detail = format!(
                    "the server did not list its tools within {} s",
                    wait.as_secs_f64()
                );
                report.fail(check, &no_arguments, &detail, None);
                return Err(detail);
            }
        };
        for tool in page.tools {
            bytes += serde_json::to_vec(&tool).map_or(0, |json| json.len());
            if tools.len() >= MAX_TOOLS || bytes > MAX_LISTING_BYTES {
                let detail = format!(
                    "the server lists more than {MAX_TOOLS} tools or {} MiB of them: the first \
                     {} are checked",
                    MAX_LISTING_BYTES >> 20,
                    tools.len()
                );
                report.fail(check, &no_arguments, &detail, None);
                return Ok(tools);
            }
            tools.push(Arc::new(tool));
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => {
                if !faulted {
                    report.pass(check);
                }
                return Ok(tools);
            }
        }
    }
    let detail = format!(
        "the tool listing went on past {MAX_LISTING_PAGES} pages: the tools of those are checked"
    );
    report.fail(check, &no_arguments, &detail, None);
    Ok(tools)
}

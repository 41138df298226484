//! `tools.listed`: the server's tools, read page by page within bounds a hostile listing
//! cannot stretch (pages, tools, bytes, time), and judged once per name.
//!
//! Invariant: a name is one entry of [`Listed::tools`], however many times, on whichever pages,
//! the server lists it; a name listed with conflicting annotations is not read-only.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{PaginatedRequestParams, Tool, ToolAnnotations};
use rmcp::service::{RunningService, Service};
use serde_json::Map;

use super::clock::Clock;
use super::{Check, Faults, ToolReport, annotations_of};

/// The most pages of a listing read (a server may repeat a cursor forever).
pub const MAX_LISTING_PAGES: usize = 100;

/// The most tools checked: a server listing more has the first ones checked, and fails
/// `tools.listed`.
pub const MAX_TOOLS: usize = 10_000;

/// The most bytes of tool definitions kept, as JSON: past it, the tools of the pages read so
/// far are checked, and `tools.listed` fails.
pub const MAX_LISTING_BYTES: usize = 64 << 20;

/// A listing as the run judges it: one entry per name, in the order first listed.
#[derive(Debug, Default)]
pub(super) struct Listed {
    pub(super) tools: Vec<Arc<Tool>>,
    /// Each name listed with conflicting annotations, and what the report says of it.
    pub(super) conflicts: BTreeMap<String, String>,
}

impl Listed {
    /// The entry of `name`.
    pub(super) fn tool(&self, name: &str) -> Option<&Arc<Tool>> {
        self.tools.iter().find(|tool| tool.name == name)
    }
}

/// Every tool the server lists, page by page, each page within the clock's wait, one entry per
/// name; what is wrong with the listing fails `tools.listed` in `report`. `Err` when no
/// listing came at all.
pub(super) async fn list_tools<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    clock: &Clock,
    faults: &Faults,
    report: &mut ToolReport,
) -> Result<Listed, String> {
    let failed = |report: &ToolReport| {
        report
            .checks
            .get(Check::ToolsListed.as_str())
            .map_or(0, |tally| tally.failed)
    };
    let before = failed(report);
    let entries = list_entries(client, clock, faults, report).await?;
    let listed = one_per_name(entries, report);
    // This listing passes when nothing of it failed (an earlier listing's failures stand).
    if failed(report) == before {
        report.pass(Check::ToolsListed);
    }
    Ok(listed)
}

/// One entry per name: a name listed twice with the same annotations is the first entry (and
/// fails `tools.listed`, names being unique); with different ones, the first entry marked
/// neither read-only nor safe (`readOnlyHint: false`, `destructiveHint: true`), the conflict
/// named in `tools.listed` and kept for the report.
fn one_per_name(entries: Vec<Arc<Tool>>, report: &mut ToolReport) -> Listed {
    let no_arguments = Map::new();
    let mut order: Vec<String> = Vec::new();
    let mut by_name: HashMap<String, Vec<Arc<Tool>>> = HashMap::new();
    for tool in entries {
        let name = tool.name.to_string();
        by_name
            .entry(name.clone())
            .or_insert_with(|| {
                order.push(name);
                Vec::new()
            })
            .push(tool);
    }
    let mut listed = Listed::default();
    for name in order {
        let Some(entries) = by_name.remove(&name) else {
            continue;
        };
        let first = Arc::clone(&entries[0]);
        if entries.len() == 1 {
            listed.tools.push(first);
            continue;
        }
        let annotations: Vec<String> = entries
            .iter()
            .map(|tool| annotations_of(tool).to_string())
            .collect();
        if annotations.iter().all(|each| *each == annotations[0]) {
            let detail = format!(
                "`{name}` is listed {} times (a tool's name is unique): the first is checked",
                entries.len()
            );
            report.fail(Check::ToolsListed, &no_arguments, &detail, None);
            listed.tools.push(first);
            continue;
        }
        let detail = format!(
            "`{name}` is listed {} times with different annotations ({}): it is judged not \
             read-only, and called only with --allow-tool {name} or --allow-writes",
            entries.len(),
            annotations.join("; ")
        );
        report.fail(Check::ToolsListed, &no_arguments, &detail, None);
        let mut merged = (*first).clone();
        let mut marked = merged
            .annotations
            .take()
            .unwrap_or_else(ToolAnnotations::default);
        marked.read_only_hint = Some(false);
        marked.destructive_hint = Some(true);
        merged.annotations = Some(marked);
        listed.tools.push(Arc::new(merged));
        listed.conflicts.insert(name, detail);
    }
    listed
}

/// Every entry of every page, as listed; a line of the listing that cannot be read, and a
/// listing past the bounds, fail `tools.listed`.
async fn list_entries<S: Service<RoleClient>>(
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
            None => return Ok(tools),
        }
    }
    let detail = format!(
        "the tool listing went on past {MAX_LISTING_PAGES} pages: the tools of those are checked"
    );
    report.fail(check, &no_arguments, &detail, None);
    Ok(tools)
}

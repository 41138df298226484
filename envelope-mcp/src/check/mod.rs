//! `envelope-check`: whether an MCP server's tool responses are agent-grade (feature `check`).
//!
//! It connects to any MCP server with rmcp's client, whatever language the server is written
//! in, lists its tools and exercises each one: valid calls generated from the tool's
//! `inputSchema` (a seed, printed, replays them), invalid ones and edge values; it follows pages
//! to the end, tampers with a token, and runs each suggested next action once. Every response
//! is held to the checks of [`Check`], each with a stable id; the [`Report`] counts them per
//! tool and keeps an excerpt of every failing response.
//!
//! **It only reads, unless told otherwise.** A server's tools may delete data or send mail, and
//! MCP's own defaults take a tool without annotations for a destructive one. So by default the
//! checker calls only tools listed with `readOnlyHint: true`, and never runs a suggested next
//! action whose tool is not one of them: each such tool and action is reported as
//! [`Withheld`], with its annotations and the arguments it would have been sent.
//! [`CheckConfig::allow_tools`] (`--allow-tool NAME`) opts one tool in, and
//! [`CheckConfig::allow_writes`] (`--allow-writes`) every tool; the report's header says which.
//!
//! **It survives the server.** Each call waits at most the call timeout, and never past the
//! run's time budget; an answer is read up to a size limit, and an answer that no client can
//! read (too long, not JSON, nested too deep, invalid UTF-8) fails `call.answered` at once;
//! the listing is read up to 100 pages and 10,000 tools; arguments are generated within fixed
//! bounds ([`Check::InputBounded`]); pages are followed at most [`CheckConfig::max_pages`]
//! deep, and rows are remembered as digests. What the checker holds at once is one answer (at
//! most 16 MiB as sent unless configured, a few times that parsed), the listing, and one
//! call's arguments (at most 100,000 values): a few hundred MiB at the very most.
//!
//! The `envelope-check` binary (feature `check`) is the command line:
//!
//! ```text
//! envelope-check [OPTIONS] -- COMMAND [ARGS...]    a server on stdio
//! envelope-check [OPTIONS] --url URL               a streamable HTTP server
//! ```
//!
//! In a program or a test, [`run`] checks any connected client:
//!
//! ```no_run
//! # async fn check(client: rmcp::service::RunningService<rmcp::RoleClient, ()>) {
//! use envelope_mcp::check::{CheckConfig, run};
//!
//! let report = run(&client, &CheckConfig::default()).await;
//! assert_eq!(report.failed(), 0, "{}", report.render());
//! # }
//! ```

mod ids;
mod inputs;
mod report;
mod responses;
mod transport;

pub use ids::{Check, UnknownCheck};
pub use report::{Failure, Permissions, Report, Tally, ToolReport, Withheld};
pub use transport::{DEFAULT_MAX_ANSWER_BYTES, Faults, SendError, stdio_transport};

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::hash::{Hash as _, Hasher as _};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, PaginatedRequestParams, Tool};
use rmcp::service::{RunningService, Service};
use serde_json::{Map, Value};

use inputs::{Intent, Plan, Rng};
use responses::Judge;

/// The run's time budget unless configured otherwise: ten minutes.
pub const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(600);

/// The most tools checked: a server listing more has the first ones checked, and fails
/// `tools.listed`.
pub const MAX_TOOLS: usize = 10_000;

/// How a run goes: which checks and tools, how many random calls, which tools it may call,
/// and how long it may take.
#[derive(Debug, Clone)]
pub struct CheckConfig {
    /// The seed of the random calls; the report prints it, and the same seed replays them.
    pub seed: u64,
    /// Random valid calls per tool, beside the fixed ones.
    pub variations: usize,
    /// Only these checks (all when empty).
    pub only: BTreeSet<Check>,
    /// Not these checks.
    pub skip: BTreeSet<Check>,
    /// Only these tools (all when empty).
    pub tools: BTreeSet<String>,
    /// Tools called although not listed `readOnlyHint: true` (`--allow-tool`).
    pub allow_tools: BTreeSet<String>,
    /// Every tool is called, writes included (`--allow-writes`).
    pub allow_writes: bool,
    /// The whole run's time ([`DEFAULT_TIME_BUDGET`] unless set; `None` for none); past it no
    /// call is made, and the report says so.
    pub time_budget: Option<Duration>,
    /// One call's time; past it the call fails `call.answered`.
    pub call_timeout: Duration,
    /// The most pages followed (and next actions run) per tool.
    pub max_pages: usize,
}

impl Default for CheckConfig {
    fn default() -> Self {
        CheckConfig {
            seed: 1,
            variations: 3,
            only: BTreeSet::new(),
            skip: BTreeSet::new(),
            tools: BTreeSet::new(),
            allow_tools: BTreeSet::new(),
            allow_writes: false,
            time_budget: Some(DEFAULT_TIME_BUDGET),
            call_timeout: Duration::from_secs(30),
            max_pages: 50,
        }
    }
}

impl CheckConfig {
    /// Whether `check` is made in this run.
    pub fn enabled(&self, check: Check) -> bool {
        (self.only.is_empty() || self.only.contains(&check)) && !self.skip.contains(&check)
    }

    /// Which tools the run may call.
    pub fn permissions(&self) -> Permissions {
        Permissions {
            allow_writes: self.allow_writes,
            allowed_tools: self.allow_tools.clone(),
        }
    }
}

/// Whether `tool` is listed `readOnlyHint: true`: an unannotated tool is not.
fn is_read_only(tool: &Tool) -> bool {
    tool.annotations
        .as_ref()
        .and_then(|annotations| annotations.read_only_hint)
        == Some(true)
}

/// `tool`'s annotations as listed, `null` without any.
fn annotations_of(tool: &Tool) -> Value {
    tool.annotations
        .as_ref()
        .and_then(|annotations| serde_json::to_value(annotations).ok())
        .unwrap_or(Value::Null)
}

/// Checks every tool `client` lists (or those `config` names) and reports.
pub async fn run<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    config: &CheckConfig,
) -> Report {
    run_watching(client, config, &Faults::default()).await
}

/// [`run`], over a connection whose unreadable messages `faults` records (see
/// [`stdio_transport`]): a call during which one arrives fails `call.answered` at once.
pub async fn run_watching<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    config: &CheckConfig,
    faults: &Faults,
) -> Report {
    let started = Instant::now();
    let enabled: BTreeSet<Check> = Check::ALL
        .into_iter()
        .filter(|check| config.enabled(*check))
        .collect();
    let mut report = Report::new(config.seed, config.permissions(), &enabled);
    if let Some(info) = client.peer_info()
        && let Some(server) = &info.server_info
    {
        let named = format!("{} {}", server.name, server.version);
        report.server = Some(named.trim().to_owned());
    }
    let mut session = Session {
        client,
        config,
        started,
        faults,
        judge: None,
    };
    let tools = match session.list_tools(&mut report.listing).await {
        Ok(tools) => tools,
        Err(reason) => {
            report.stopped = Some(reason);
            return report;
        }
    };
    let mut judge = Judge::new(&tools, enabled);
    session.judge = Some(&mut judge);
    let permissions = config.permissions();
    for tool in &tools {
        if !config.tools.is_empty() && !config.tools.contains(tool.name.as_ref()) {
            continue;
        }
        if !permissions.may_call(&tool.name, is_read_only(tool)) {
            report.withheld.push(Withheld {
                tool: tool.name.to_string(),
                annotations: annotations_of(tool),
                suggested_by: None,
                arguments: None,
            });
            continue;
        }
        let (tool_report, withheld) = session.check_tool(tool).await;
        let lost = tool_report.stopped.clone();
        report.tools.push(tool_report);
        report.withheld.extend(withheld);
        if let Some(reason) = lost {
            report.stopped = Some(reason);
            break;
        }
    }
    for name in &config.tools {
        if !tools.iter().any(|tool| tool.name == name.as_str()) {
            report.unknown_tools.push(name.clone());
        }
    }
    report
}

/// Why a run stopped when its time budget ran out.
const OUT_OF_TIME: &str = "the time budget ran out";

/// How many pages of a tool listing are read at most (a server may repeat a cursor).
const MAX_LISTING_PAGES: usize = 100;

/// One run's connection and judge.
struct Session<'a, S: Service<RoleClient>> {
    client: &'a RunningService<RoleClient, S>,
    config: &'a CheckConfig,
    started: Instant,
    faults: &'a Faults,
    /// Set once the tools are listed.
    judge: Option<&'a mut Judge>,
}

/// How a call went.
enum Outcome {
    /// A result.
    Result(Box<CallToolResult>),
    /// A JSON-RPC error, a timeout, an unreadable answer: the call failed, the connection lives.
    Refused(String),
    /// The connection is gone, or the time budget: nothing more can be asked.
    Lost(String),
}

/// What a tool's check gathered beside its report: the calls it did not make.
type Gathered = (ToolReport, Vec<Withheld>);

impl<S: Service<RoleClient>> Session<'_, S> {
    /// The time left of the budget; `None` without one.
    fn time_left(&self) -> Option<Duration> {
        self.config
            .time_budget
            .map(|budget| budget.saturating_sub(self.started.elapsed()))
    }

    fn out_of_time(&self) -> bool {
        self.time_left().is_some_and(|left| left.is_zero())
    }

    /// How long the next request may wait: the call timeout, within the time left.
    fn wait(&self) -> Duration {
        self.time_left().map_or(self.config.call_timeout, |left| {
            left.min(self.config.call_timeout)
        })
    }

    fn judge(&mut self) -> &mut Judge {
        self.judge
            .as_deref_mut()
            .expect("tools are checked only once they are listed")
    }

    /// Every tool the server lists, page by page, each page within the call timeout; the
    /// listing's faults are `tools.listed` failures of `report`.
    async fn list_tools(&self, report: &mut ToolReport) -> Result<Vec<Tool>, String> {
        let check = Check::ToolsListed;
        let mut tools = Vec::new();
        let mut cursor = None;
        let no_arguments = Map::new();
        for _ in 0..MAX_LISTING_PAGES {
            let params =
                cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
            self.faults.clear();
            let wait = self.wait();
            let page = tokio::select! {
                page = tokio::time::timeout(wait, self.client.list_tools(params)) => page,
                fault = self.faults.next() => {
                    report.fail(check, &no_arguments, &fault, None);
                    return Err(format!("the server did not list its tools: {fault}"));
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
            tools.extend(page.tools);
            if tools.len() > MAX_TOOLS {
                tools.truncate(MAX_TOOLS);
                let detail = format!(
                    "the server lists more than {MAX_TOOLS} tools: the first {MAX_TOOLS} are \
                     checked"
                );
                report.fail(check, &no_arguments, &detail, None);
                return Ok(tools);
            }
            match page.next_cursor {
                Some(next) => cursor = Some(next),
                None => {
                    report.pass(check);
                    return Ok(tools);
                }
            }
        }
        let detail = format!(
            "the tool listing went on past {MAX_LISTING_PAGES} pages: the tools of those are \
             checked"
        );
        report.fail(check, &no_arguments, &detail, None);
        tools.truncate(MAX_TOOLS);
        Ok(tools)
    }

    /// Calls `tool`, the one door every call goes through: a tool that may not be called is
    /// never sent anything (its callers report it withheld before they get here).
    async fn call(&self, tool: &Tool, arguments: &Map<String, Value>) -> Outcome {
        if !self
            .config
            .permissions()
            .may_call(&tool.name, is_read_only(tool))
        {
            return Outcome::Refused(format!(
                "`{}` is not read-only, and was not allowed: not called",
                tool.name
            ));
        }
        if self.out_of_time() {
            return Outcome::Lost(OUT_OF_TIME.to_owned());
        }
        let params =
            CallToolRequestParams::new(tool.name.to_string()).with_arguments(arguments.clone());
        self.faults.clear();
        let wait = self.wait();
        let answered = tokio::select! {
            answered = tokio::time::timeout(wait, self.client.call_tool(params)) => answered,
            fault = self.faults.next() => return Outcome::Refused(fault),
        };
        match answered {
            Ok(Ok(result)) => Outcome::Result(Box::new(result)),
            Ok(Err(rmcp::ServiceError::McpError(error))) => Outcome::Refused(format!(
                "a JSON-RPC error ({}: {}) instead of a result",
                error.code.0,
                error.message.chars().take(300).collect::<String>()
            )),
            Ok(Err(error)) if self.client.is_closed() => {
                Outcome::Lost(format!("the connection was lost: {error}"))
            }
            Ok(Err(error)) => Outcome::Refused(format!("the call failed: {error}")),
            Err(_) if self.out_of_time() => Outcome::Lost(OUT_OF_TIME.to_owned()),
            Err(_) => Outcome::Refused(format!("no answer within {} s", wait.as_secs_f64())),
        }
    }

    async fn check_tool(&mut self, tool: &Tool) -> Gathered {
        let name = tool.name.to_string();
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        let mut report = ToolReport::new(&name, self.judge().enabled());
        let mut withheld = Vec::new();
        let rng = Rng::new(self.config.seed ^ fnv(&name));
        let mut first_valid: Option<(Map<String, Value>, Value)> = None;
        let mut actions: Vec<(String, Map<String, Value>)> = Vec::new();
        let mut bounded = true;
        for (index, call) in Plan::new(&schema, self.config.variations, rng).enumerate() {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return (report, withheld);
            }
            let call = match call {
                Ok(call) => call,
                Err(inputs::TooLarge) => {
                    if bounded {
                        bounded = false;
                        let detail = format!(
                            "a valid call takes more than the checker generates ({} values, \
                             {} characters of text): that call is not made",
                            inputs::MAX_VALUES,
                            inputs::MAX_TEXT
                        );
                        report.fail(Check::InputBounded, &Map::new(), &detail, None);
                    }
                    continue;
                }
            };
            if index == 0 {
                report.pass(Check::InputBounded);
            }
            let outcome = self.call(tool, &call.arguments).await;
            let structured = match outcome {
                Outcome::Lost(reason) => {
                    let check = match call.intent {
                        Intent::Valid | Intent::Edge { .. } => Check::CallAnswered,
                        _ => Check::InvalidValidation,
                    };
                    // A call the time budget cut short says nothing against the server.
                    if reason != OUT_OF_TIME {
                        report.fail(check, &call.arguments, &reason, None);
                    }
                    report.stopped = Some(reason);
                    return (report, withheld);
                }
                Outcome::Refused(reason) => {
                    let check = match call.intent {
                        Intent::Valid | Intent::Edge { .. } => Check::CallAnswered,
                        _ => Check::InvalidValidation,
                    };
                    report.fail(check, &call.arguments, &reason, None);
                    continue;
                }
                Outcome::Result(result) => {
                    let structured =
                        self.judge()
                            .response(&mut report, tool, &call.arguments, &result);
                    match &structured {
                        Some(structured) => {
                            self.judge().intent(
                                &mut report,
                                &call.intent,
                                &call.arguments,
                                structured,
                            );
                            collect_actions(structured, &mut actions);
                        }
                        None => {
                            if let Some(field) = call.intent.field_to_name() {
                                let detail = format!(
                                    "the call answered no envelope, so nothing names `{field}`"
                                );
                                report.fail(
                                    Check::InvalidValidation,
                                    &call.arguments,
                                    &detail,
                                    None,
                                );
                            }
                        }
                    }
                    structured
                }
            };
            if first_valid.is_none()
                && call.intent == Intent::Valid
                && let Some(structured) = structured
            {
                first_valid = Some((call.arguments, structured));
            }
        }
        if self.out_of_time() {
            report.stopped = Some(OUT_OF_TIME.to_owned());
            return (report, withheld);
        }
        self.read_only(&mut report, tool, first_valid.as_ref())
            .await;
        self.paging(&mut report, tool, &schema).await;
        self.next_actions(&mut report, &mut withheld, tool, &actions)
            .await;
        (report, withheld)
    }

    /// `annotations.read_only_idempotent`: the first valid call again, the same `ok` and
    /// `data`.
    async fn read_only(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        first: Option<&(Map<String, Value>, Value)>,
    ) {
        let check = Check::ReadOnlyIdempotent;
        if !self.config.enabled(check) {
            return;
        }
        let Some((arguments, before)) = first.filter(|_| is_read_only(tool)) else {
            report.skip(check);
            return;
        };
        match self.call(tool, arguments).await {
            Outcome::Result(result) => {
                match self.judge().response(report, tool, arguments, &result) {
                    Some(after) if alike(before, &after) => report.pass(check),
                    Some(after) => report.fail(
                        check,
                        arguments,
                        "the same call answered differently the second time",
                        Some(&after),
                    ),
                    None => report.fail(
                        check,
                        arguments,
                        "the second call answered no envelope",
                        None,
                    ),
                }
            }
            Outcome::Refused(reason) => {
                let detail = format!("the same call, again, was refused: {reason}");
                report.fail(check, arguments, &detail, None);
            }
            Outcome::Lost(reason) => report.stopped = Some(reason),
        }
    }

    /// `paging.follow` and `paging.tampered`: a call with a small page, followed to its end,
    /// against one call with the largest page.
    async fn paging(&mut self, report: &mut ToolReport, tool: &Tool, schema: &Value) {
        let (follow, tamper) = (Check::PagingFollow, Check::PagingTampered);
        if !self.config.enabled(follow) && !self.config.enabled(tamper) {
            return;
        }
        let pageable = inputs::page_size(schema).filter(|_| inputs::takes_continuation(schema));
        let (Some((size_field, least, most)), Ok(base)) = (pageable, inputs::required_call(schema))
        else {
            report.skip(follow);
            report.skip(tamper);
            return;
        };
        // The whole result in one page, when the largest page holds it.
        let mut whole = base.clone();
        whole.insert(size_field.clone(), Value::from(most.unwrap_or(1_000)));
        let one_page = match self.call(tool, &whole).await {
            Outcome::Result(result) => self.judge().response(report, tool, &whole, &result),
            Outcome::Refused(_) => None,
            Outcome::Lost(reason) => {
                report.stopped = Some(reason);
                return;
            }
        };
        // Only a whole answer that is an `ok` page of rows can be followed and compared.
        let Some(one_page) = one_page.filter(|page| {
            page["ok"] == true && page["completeness"].is_object() && !rows(page).is_empty()
        }) else {
            report.skip(follow);
            report.skip(tamper);
            return;
        };
        let tokens = Tokens::of(&one_page);
        let all_rows: Vec<u64> = rows(&one_page)
            .iter()
            .map(|row| digest(&tokens.masked(row)))
            .collect();
        let complete = one_page["completeness"]["continuation"].is_null()
            && one_page["completeness"]["complete"] != false;
        drop(one_page);
        // Some ten pages of it.
        let size = (all_rows.len() as u64).div_ceil(10).min(i64::MAX as u64) as i64;
        let size = size.max(least);
        let mut arguments = base;
        arguments.insert(size_field, Value::from(size));
        // The rows seen, as digests: a server that pages forever costs a bounded memory.
        let mut seen: Vec<u64> = Vec::new();
        let mut distinct: HashSet<u64> = HashSet::new();
        let mut repeated: Option<String> = None;
        // The first token given out, and the arguments it was given out with.
        let mut first_token: Option<(String, Map<String, Value>)> = None;
        let mut pages = 0;
        let reached_end = loop {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                break false;
            }
            if pages >= self.config.max_pages {
                break false;
            }
            pages += 1;
            let page = match self.call(tool, &arguments).await {
                Outcome::Result(result) => self.judge().response(report, tool, &arguments, &result),
                Outcome::Refused(reason) => {
                    let detail = format!("page {pages} was refused: {reason}");
                    report.fail(follow, &arguments, &detail, None);
                    return;
                }
                Outcome::Lost(reason) => {
                    report.stopped = Some(reason);
                    return;
                }
            };
            let Some(page) = page.filter(|page| page["ok"] == true) else {
                let detail = format!("page {pages} answered no `ok` envelope");
                report.fail(follow, &arguments, &detail, None);
                return;
            };
            let tokens = Tokens::of(&page);
            for row in rows(&page) {
                let row = tokens.masked(&row);
                let row_digest = digest(&row);
                if !distinct.insert(row_digest) && repeated.is_none() {
                    repeated = Some(excerpt(&row));
                }
                seen.push(row_digest);
            }
            let Some(token) = page["completeness"]["continuation"].as_str() else {
                break true;
            };
            let next = next_page(&page, &arguments, token);
            first_token.get_or_insert_with(|| (token.to_owned(), next.clone()));
            arguments = next;
        };
        if self.config.enabled(follow) {
            if let Some(row) = repeated {
                let detail = format!("a row came twice across pages: {row}");
                report.fail(follow, &arguments, &detail, None);
            } else if !reached_end && complete && report.stopped.is_none() {
                let detail = format!(
                    "the pages went on past {pages} pages, though one page held all {} rows",
                    all_rows.len()
                );
                report.fail(follow, &arguments, &detail, None);
            } else if !reached_end {
                // A part of the pages proves nothing about the whole.
                report.skip(follow);
            } else if complete && !same_rows(&seen, &all_rows) {
                let detail = format!(
                    "{} rows across {pages} pages, {} in one page: rows were skipped or added",
                    seen.len(),
                    all_rows.len()
                );
                report.fail(follow, &arguments, &detail, None);
            } else if !complete && !same_prefix(&seen, &all_rows) {
                // The one page holds only the first part: the pages must begin with it.
                let detail = format!(
                    "the pages do not begin with the rows of one larger page ({} rows)",
                    all_rows.len()
                );
                report.fail(follow, &arguments, &detail, None);
            } else if !complete && pages < 2 {
                // One page, and a larger one that was not whole: nothing to compare.
                report.skip(follow);
            } else {
                report.pass(follow);
            }
        }
        if self.config.enabled(tamper) && report.stopped.is_none() {
            match first_token {
                None => report.skip(tamper),
                Some((token, arguments)) => self.tampered(report, tool, arguments, &token).await,
            }
        }
    }

    /// `paging.tampered`: the second page's call, its token with one character changed.
    async fn tampered(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        mut arguments: Map<String, Value>,
        token: &str,
    ) {
        let check = Check::PagingTampered;
        // The argument that carried the token (a tool may name it other than `continuation`).
        let field = arguments
            .iter()
            .find(|(_, value)| value.as_str() == Some(token))
            .map_or_else(|| "continuation".to_owned(), |(key, _)| key.clone());
        arguments.insert(field, Value::from(tamper(token)));
        match self.call(tool, &arguments).await {
            Outcome::Result(result) => {
                match self.judge().response(report, tool, &arguments, &result) {
                    Some(answer)
                        if answer["ok"] == false && answer["error"]["category"] == "validation" =>
                    {
                        report.pass(check);
                    }
                    answer => report.fail(
                        check,
                        &arguments,
                        "a token with one character changed was not refused with a \
                         `validation` envelope",
                        answer.as_ref(),
                    ),
                }
            }
            Outcome::Refused(reason) => {
                let detail = format!(
                    "a token with one character changed was refused, but not with a \
                     `validation` envelope: {reason}"
                );
                report.fail(check, &arguments, &detail, None);
            }
            Outcome::Lost(reason) => report.stopped = Some(reason),
        }
    }

    /// `next_actions.run`: each distinct suggestion, once, when its tool may be called; the
    /// others go to `withheld`, with the arguments they would have been sent.
    async fn next_actions(
        &mut self,
        report: &mut ToolReport,
        withheld: &mut Vec<Withheld>,
        tool: &Tool,
        actions: &[(String, Map<String, Value>)],
    ) {
        let check = Check::NextActionRuns;
        if !self.config.enabled(check) {
            return;
        }
        if actions.is_empty() {
            report.skip(check);
            return;
        }
        let permissions = self.config.permissions();
        for (target, arguments) in actions.iter().take(self.config.max_pages) {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return;
            }
            let Some(listed) = self.judge().tool(target) else {
                // `next_actions.known_tools` has said so already.
                report.skip(check);
                continue;
            };
            if !permissions.may_call(target, is_read_only(&listed)) {
                withheld.push(Withheld {
                    tool: target.clone(),
                    annotations: annotations_of(&listed),
                    suggested_by: Some(tool.name.to_string()),
                    arguments: Some(excerpt(&Value::Object(arguments.clone()))),
                });
                report.skip(check);
                continue;
            }
            match self.call(&listed, arguments).await {
                Outcome::Result(result) => {
                    match self.judge().response(report, &listed, arguments, &result) {
                        Some(answer) if answer["ok"].is_boolean() => report.pass(check),
                        _ => report.fail(
                            check,
                            arguments,
                            &format!(
                                "`{target}`, as suggested by `{}`, answered no envelope",
                                tool.name
                            ),
                            None,
                        ),
                    }
                }
                Outcome::Refused(reason) => report.fail(check, arguments, &reason, None),
                Outcome::Lost(reason) => {
                    report.stopped = Some(reason);
                    return;
                }
            }
        }
    }
}

/// A row's digest: rows are compared and counted by it, and never held whole.
fn digest(row: &Value) -> u64 {
    // SipHash with fixed keys: the same row, the same digest, within a run.
    let mut hasher = std::hash::DefaultHasher::new();
    row.to_string().hash(&mut hasher);
    hasher.finish()
}

/// Whether two answers to one call agree: the same `ok`, and the same `data`; or, for pages
/// the response budget cut (where how many rows fit depends on the bytes of the request id
/// stamped in each), the same `total` and the same rows as far as the shorter goes.
fn alike(before: &Value, after: &Value) -> bool {
    let tokens = Tokens(
        Tokens::of(before)
            .0
            .into_iter()
            .chain(Tokens::of(after).0)
            .collect(),
    );
    let (before, after) = (&tokens.masked(before), &tokens.masked(after));
    if before["ok"] != after["ok"] {
        return false;
    }
    if before["data"] == after["data"] {
        return true;
    }
    let budget_cut = |envelope: &Value| {
        envelope["completeness"]["truncation_reasons"]
            .as_array()
            .is_some_and(|reasons| reasons.iter().any(|reason| reason == "budget_limit"))
    };
    if !budget_cut(before) && !budget_cut(after) {
        return false;
    }
    let (first, second) = (rows(before), rows(after));
    let shared = first.len().min(second.len());
    before["completeness"]["total"] == after["completeness"]["total"]
        && shared > 0
        && first[..shared] == second[..shared]
}

/// The opaque tokens of an answer, masked when answers are compared: a server may seal each
/// answer's tokens afresh. A token is a string the answer hands back as a continuation (in
/// `completeness` or a next action's arguments), or one that looks sealed: 20 or more
/// base64url characters mixing upper case, lower case and digits (a path has `/` or `.`, a
/// hash no upper case).
struct Tokens(BTreeSet<String>);

impl Tokens {
    fn of(envelope: &Value) -> Tokens {
        let mut tokens = BTreeSet::new();
        if let Some(token) = envelope["completeness"]["continuation"].as_str() {
            tokens.insert(token.to_owned());
        }
        // A page's target ref is sealed afresh on every answer too.
        if let Some(token) = envelope["data"]["target_ref"].as_str() {
            tokens.insert(token.to_owned());
        }
        for action in envelope["next_actions"].as_array().into_iter().flatten() {
            if let Some(token) = action["arguments"]["continuation"].as_str() {
                tokens.insert(token.to_owned());
            }
        }
        Tokens(tokens)
    }

    fn is_token(&self, text: &str) -> bool {
        let sealed = text.len() >= 20
            && text
                .bytes()
                .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
            && text.bytes().any(|byte| byte.is_ascii_uppercase())
            && text.bytes().any(|byte| byte.is_ascii_lowercase())
            && text.bytes().any(|byte| byte.is_ascii_digit());
        sealed || self.0.contains(text)
    }

    /// `value` with every token replaced by one placeholder.
    fn masked(&self, value: &Value) -> Value {
        match value {
            Value::String(text) if self.is_token(text) => Value::from("<token>"),
            Value::Array(items) => {
                Value::Array(items.iter().map(|item| self.masked(item)).collect())
            }
            Value::Object(object) => Value::Object(
                object
                    .iter()
                    .map(|(key, value)| (key.clone(), self.masked(value)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
}

/// The arguments an action is followed with: its own, plus the envelope's
/// `completeness.continuation` under the argument its `continuation_arg` names (a next-page
/// action leaves the token out, so that it appears once). `None` for an action without
/// arguments, or one that continues from an envelope without a continuation.
fn follow(action: &Value, envelope: &Value) -> Option<Map<String, Value>> {
    let mut arguments = action["arguments"].as_object()?.clone();
    if let Some(field) = action.get("continuation_arg") {
        let field = field.as_str()?;
        let token = envelope["completeness"]["continuation"].as_str()?;
        arguments.insert(field.to_owned(), Value::from(token));
    }
    Some(arguments)
}

/// The distinct next actions of `envelope`, added to `actions`, each with the arguments it is
/// followed with.
fn collect_actions(envelope: &Value, actions: &mut Vec<(String, Map<String, Value>)>) {
    for action in envelope["next_actions"].as_array().into_iter().flatten() {
        let (Some(tool), Some(arguments)) = (action["tool"].as_str(), follow(action, envelope))
        else {
            continue;
        };
        let action = (tool.to_owned(), arguments);
        if !actions.contains(&action) {
            actions.push(action);
        }
    }
}

/// The next page's arguments: the `next-page` action's as it is followed, when the page
/// suggests one that takes (or carries) the token; else the same arguments with the token.
fn next_page(page: &Value, arguments: &Map<String, Value>, token: &str) -> Map<String, Value> {
    let suggested = page["next_actions"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|action| action["id"] == "next-page")
        .filter_map(|action| follow(action, page))
        .find(|arguments| arguments.values().any(|value| value == token));
    match suggested {
        Some(arguments) => arguments,
        None => {
            let mut next = arguments.clone();
            next.insert("continuation".to_owned(), Value::from(token));
            next
        }
    }
}

/// The rows of a page: `data` when it is a list, else the list in `data` whose length is
/// `completeness.returned` (or the longest).
fn rows(envelope: &Value) -> Vec<Value> {
    let data = &envelope["data"];
    if let Some(rows) = data.as_array() {
        return rows.clone();
    }
    let returned = envelope["completeness"]["returned"].as_u64();
    let lists: Vec<&Vec<Value>> = data
        .as_object()
        .into_iter()
        .flat_map(|object| object.values())
        .filter_map(Value::as_array)
        .collect();
    lists
        .iter()
        .find(|list| Some(list.len() as u64) == returned)
        .or_else(|| lists.iter().max_by_key(|list| list.len()))
        .map(|list| (*list).clone())
        .unwrap_or_default()
}

/// Whether `a` and `b` hold the same rows (as digests), each as often.
fn same_rows(a: &[u64], b: &[u64]) -> bool {
    let count = |rows: &[u64]| {
        let mut counts: BTreeMap<u64, usize> = BTreeMap::new();
        for row in rows {
            *counts.entry(*row).or_default() += 1;
        }
        counts
    };
    count(a) == count(b)
}

/// Whether the shorter of `a` and `b` begins the longer.
fn same_prefix(a: &[u64], b: &[u64]) -> bool {
    let shared = a.len().min(b.len());
    a[..shared] == b[..shared]
}

/// `token` with its middle character changed to another of the same kind.
fn tamper(token: &str) -> String {
    let mut chars: Vec<char> = token.chars().collect();
    if chars.is_empty() {
        return "x".to_owned();
    }
    let middle = chars.len() / 2;
    chars[middle] = match chars[middle] {
        'A' => 'B',
        'a' => 'b',
        '0' => '1',
        c if c.is_ascii_digit() => '0',
        c if c.is_ascii_uppercase() => 'A',
        _ => 'a',
    };
    chars.into_iter().collect()
}

/// A JSON value cut to 300 characters, for a report.
pub(crate) fn excerpt(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() <= 300 {
        return text;
    }
    let cut: String = text.chars().take(300).collect();
    format!("{cut}…")
}

/// FNV-1a of `text`: each tool's calls get their own stream from one seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_tampered_token_differs_in_one_character() {
        for token in ["abcDEF012", "A", "zzzz", "----"] {
            let changed = tamper(token);
            let differing = token
                .chars()
                .zip(changed.chars())
                .filter(|(a, b)| a != b)
                .count();
            assert_eq!(differing, 1, "{token} → {changed}");
        }
    }

    #[test]
    fn rows_are_the_described_list() {
        let page = json!({
            "data": { "files": ["a", "b"], "skipped": ["c"] },
            "completeness": { "returned": 2 },
        });
        assert_eq!(rows(&page), [json!("a"), json!("b")]);
        assert_eq!(rows(&json!({ "data": [1, 2, 3] })).len(), 3);
        let (one, two) = (digest(&json!(1)), digest(&json!(2)));
        assert_ne!(one, two);
        assert!(same_rows(&[one, two], &[two, one]));
        assert!(!same_rows(&[one, one], &[one]));
        assert!(same_prefix(&[one, two], &[one]));
    }
}

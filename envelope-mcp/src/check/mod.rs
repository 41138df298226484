//! `envelope-check`: whether an MCP server's tool responses are agent-grade (feature `check`).
//!
//! It connects to any MCP server with rmcp's client, whatever language the server is written
//! in, lists its tools and exercises each one: valid calls generated from the tool's
//! `inputSchema` (a seed, printed, replays them), invalid ones and edge values; it follows pages
//! to the end, tampers with a token, and runs each suggested next action once. Every response
//! is held to the checks of [`Check`], each with a stable id; the [`Report`] counts them per
//! tool and keeps an excerpt of every failing response.
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

pub use ids::{Check, UnknownCheck};
pub use report::{Failure, Report, Tally, ToolReport};

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, PaginatedRequestParams, Tool};
use rmcp::service::{RunningService, Service};
use serde_json::{Map, Value};

use inputs::{Intent, Rng};
use responses::Judge;

/// How a run goes: which checks and tools, how many random calls, and how long it may take.
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
    /// The whole run's time; past it no call is made, and the report says so.
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
            time_budget: None,
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
}

/// Checks every tool `client` lists (or those `config` names) and reports.
pub async fn run<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    config: &CheckConfig,
) -> Report {
    let started = Instant::now();
    let mut report = Report::new(config.seed);
    if let Some(info) = client.peer_info()
        && let Some(server) = &info.server_info
    {
        let named = format!("{} {}", server.name, server.version);
        report.server = Some(named.trim().to_owned());
    }
    let tools = match list_tools(client, config.call_timeout).await {
        Ok(tools) => tools,
        Err(reason) => {
            report.stopped = Some(reason);
            return report;
        }
    };
    let mut judge = Judge::new(&tools, config);
    let mut session = Session {
        client,
        config,
        started,
        judge: &mut judge,
    };
    for tool in &tools {
        if !config.tools.is_empty() && !config.tools.contains(tool.name.as_ref()) {
            continue;
        }
        let tool_report = session.check_tool(tool).await;
        let lost = tool_report.stopped.clone();
        report.tools.push(tool_report);
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

/// Every tool the server lists, page by page, each page within `timeout`.
async fn list_tools<S: Service<RoleClient>>(
    client: &RunningService<RoleClient, S>,
    timeout: Duration,
) -> Result<Vec<Tool>, String> {
    let mut tools = Vec::new();
    let mut cursor = None;
    for _ in 0..MAX_LISTING_PAGES {
        let params =
            cursor.map(|cursor| PaginatedRequestParams::default().with_cursor(Some(cursor)));
        let page = match tokio::time::timeout(timeout, client.list_tools(params)).await {
            Ok(Ok(page)) => page,
            Ok(Err(error)) => return Err(format!("the server did not list its tools: {error}")),
            Err(_) => {
                return Err(format!(
                    "the server did not list its tools within {} s",
                    timeout.as_secs()
                ));
            }
        };
        tools.extend(page.tools);
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => return Ok(tools),
        }
    }
    Err(format!(
        "the tool listing went on past {MAX_LISTING_PAGES} pages"
    ))
}

/// One run's connection and judge.
struct Session<'a, S: Service<RoleClient>> {
    client: &'a RunningService<RoleClient, S>,
    config: &'a CheckConfig,
    started: Instant,
    judge: &'a mut Judge,
}

/// How a call went.
enum Outcome {
    /// A result.
    Result(Box<CallToolResult>),
    /// A JSON-RPC error, a timeout: the call failed, the connection lives.
    Refused(String),
    /// The connection is gone: nothing more can be asked.
    Lost(String),
}

impl<S: Service<RoleClient>> Session<'_, S> {
    fn out_of_time(&self) -> bool {
        self.config
            .time_budget
            .is_some_and(|budget| self.started.elapsed() > budget)
    }

    async fn call(&self, tool: &str, arguments: &Map<String, Value>) -> Outcome {
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments.clone());
        match tokio::time::timeout(self.config.call_timeout, self.client.call_tool(params)).await {
            Ok(Ok(result)) => Outcome::Result(Box::new(result)),
            Ok(Err(rmcp::ServiceError::McpError(error))) => Outcome::Refused(format!(
                "a JSON-RPC error ({}: {}) instead of a result",
                error.code.0, error.message
            )),
            Ok(Err(error)) if self.client.is_closed() => {
                Outcome::Lost(format!("the connection was lost: {error}"))
            }
            Ok(Err(error)) => Outcome::Refused(format!("the call failed: {error}")),
            Err(_) => Outcome::Refused(format!(
                "no answer within {} s",
                self.config.call_timeout.as_secs()
            )),
        }
    }

    async fn check_tool(&mut self, tool: &Tool) -> ToolReport {
        let name = tool.name.to_string();
        let schema = Value::Object(tool.input_schema.as_ref().clone());
        let mut report = ToolReport::new(&name, self.judge.enabled());
        let mut rng = Rng::new(self.config.seed ^ fnv(&name));
        let calls = inputs::calls(&schema, self.config.variations, &mut rng);
        let mut first_valid: Option<(Map<String, Value>, Value)> = None;
        let mut actions: Vec<(String, Map<String, Value>)> = Vec::new();
        for call in &calls {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return report;
            }
            let outcome = self.call(&name, &call.arguments).await;
            let structured = match outcome {
                Outcome::Lost(reason) => {
                    let check = match call.intent {
                        Intent::Valid | Intent::Edge { .. } => Check::CallAnswered,
                        _ => Check::InvalidValidation,
                    };
                    report.fail(check, &call.arguments, &reason, None);
                    report.stopped = Some(reason);
                    return report;
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
                        self.judge
                            .response(&mut report, tool, &call.arguments, &result);
                    match &structured {
                        Some(structured) => {
                            self.judge.intent(
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
                first_valid = Some((call.arguments.clone(), structured));
            }
        }
        if self.out_of_time() {
            report.stopped = Some(OUT_OF_TIME.to_owned());
            return report;
        }
        self.read_only(&mut report, tool, first_valid.as_ref())
            .await;
        self.paging(&mut report, tool, &schema).await;
        self.next_actions(&mut report, tool, &actions).await;
        report
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
        let read_only = tool
            .annotations
            .as_ref()
            .and_then(|annotations| annotations.read_only_hint)
            == Some(true);
        let Some((arguments, before)) = first.filter(|_| read_only) else {
            report.skip(check);
            return;
        };
        if self.out_of_time() {
            report.stopped = Some(OUT_OF_TIME.to_owned());
            return;
        }
        match self.call(&tool.name, arguments).await {
            Outcome::Result(result) => {
                match self.judge.response(report, tool, arguments, &result) {
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
        let Some((size_field, least, most)) = pageable else {
            report.skip(follow);
            report.skip(tamper);
            return;
        };
        let base = inputs::calls(schema, 0, &mut Rng::new(0))
            .into_iter()
            .next()
            .map(|call| call.arguments)
            .unwrap_or_default();
        // The whole result in one page, when the largest page holds it.
        let mut whole = base.clone();
        whole.insert(size_field.clone(), Value::from(most.unwrap_or(1_000)));
        let one_page = match self.call(&tool.name, &whole).await {
            Outcome::Result(result) => self.judge.response(report, tool, &whole, &result),
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
        let all_rows: Vec<Value> = rows(&one_page)
            .iter()
            .map(|row| tokens.masked(row))
            .collect();
        let complete = one_page["completeness"]["continuation"].is_null()
            && one_page["completeness"]["complete"] != false;
        // Some ten pages of it.
        let size = (all_rows.len() as u64).div_ceil(10).min(i64::MAX as u64) as i64;
        let size = size.max(least);
        let mut arguments = base.clone();
        arguments.insert(size_field, Value::from(size));
        let mut seen: Vec<Value> = Vec::new();
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
            let page = match self.call(&tool.name, &arguments).await {
                Outcome::Result(result) => self.judge.response(report, tool, &arguments, &result),
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
            seen.extend(rows(&page).iter().map(|row| tokens.masked(row)));
            let Some(token) = page["completeness"]["continuation"].as_str() else {
                break true;
            };
            let next = next_page(&page, &arguments, token);
            first_token.get_or_insert_with(|| (token.to_owned(), next.clone()));
            arguments = next;
        };
        if self.config.enabled(follow) {
            if !reached_end {
                // A part of the pages proves nothing about the whole.
                report.skip(follow);
            } else if let Some(row) = duplicates(&seen) {
                let detail = format!("a row came twice across pages: {}", excerpt(&row));
                report.fail(follow, &arguments, &detail, None);
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
        if self.config.enabled(tamper) {
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
        match self.call(&tool.name, &arguments).await {
            Outcome::Result(result) => match self.judge.response(report, tool, &arguments, &result)
            {
                Some(answer)
                    if answer["ok"] == false && answer["error"]["category"] == "validation" =>
                {
                    report.pass(check);
                }
                answer => report.fail(
                    check,
                    &arguments,
                    "a token with one character changed was not refused with a `validation` \
                     envelope",
                    answer.as_ref(),
                ),
            },
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

    /// `next_actions.run`: each distinct suggestion, once.
    async fn next_actions(
        &mut self,
        report: &mut ToolReport,
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
        for (target, arguments) in actions.iter().take(self.config.max_pages) {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return;
            }
            let Some(listed) = self.judge.tool(target) else {
                // `next_actions.known_tools` has said so already.
                report.skip(check);
                continue;
            };
            match self.call(target, arguments).await {
                Outcome::Result(result) => {
                    match self.judge.response(report, &listed, arguments, &result) {
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

/// The first row that comes twice.
fn duplicates(rows: &[Value]) -> Option<Value> {
    let mut seen = BTreeSet::new();
    rows.iter()
        .find(|row| !seen.insert(row.to_string()))
        .cloned()
}

/// Whether `a` and `b` hold the same rows, each as often.
fn same_rows(a: &[Value], b: &[Value]) -> bool {
    let count = |rows: &[Value]| {
        let mut counts: BTreeMap<String, usize> = BTreeMap::new();
        for row in rows {
            *counts.entry(row.to_string()).or_default() += 1;
        }
        counts
    };
    count(a) == count(b)
}

/// Whether the shorter of `a` and `b` begins the longer.
fn same_prefix(a: &[Value], b: &[Value]) -> bool {
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
        assert!(duplicates(&[json!(1), json!(2), json!(1)]).is_some());
        assert!(same_rows(&[json!(1), json!(2)], &[json!(2), json!(1)]));
        assert!(!same_rows(&[json!(1), json!(1)], &[json!(1)]));
    }
}

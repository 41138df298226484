//! `envelope-check`: whether an MCP server's tool responses are agent-grade.
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
//! A tool is judged once, by name: a name listed twice (on one page or across pages) with
//! different annotations is not read-only, whichever entry says it is, and the report names
//! the conflict. When the server says its listing changed (`notifications/tools/list_changed`,
//! heard by a client served with [`Watcher`]), nothing more is called until the tools are
//! listed again, and the new listing is judged the same way.
//!
//! **It survives the server.** Each call waits at most the call timeout, and never past the
//! run's time budget. An answer is read up to a size limit, 16 MiB unless configured. On stdio
//! (the checker's own framing, [`stdio_transport`]) an answer too long to read, not JSON,
//! nested past serde_json's depth, or not UTF-8 fails the call at once, saying so; over HTTP,
//! rmcp's client refuses an oversized answer at once, and drops an event it cannot read (the
//! call then waits out its timeout). The listing is read up to [`MAX_LISTING_PAGES`] pages,
//! [`MAX_TOOLS`] tools and [`MAX_LISTING_BYTES`]; arguments are generated within fixed bounds
//! ([`Check::InputBounded`]); pages are followed at most [`CheckConfig::max_pages`] deep and a
//! million rows far, remembered as digests; at most `max_pages` distinct next actions are kept.
//! What the checker holds at once is one answer (parsed, a few times its size), the listing,
//! one call's arguments (at most 100,000 values) and the digests: some hundreds of MiB at the
//! most, whatever the server sends.
//!
//! The `envelope-check` binary is the command line:
//!
//! ```text
//! envelope-check [OPTIONS] -- COMMAND [ARGS...]    a server on stdio
//! envelope-check [OPTIONS] --url URL               a streamable HTTP server
//! ```
//!
//! **It logs in to a protected server**, over HTTP ([`login`]): with a bearer token read from a
//! file, or with the OAuth client-credentials grant, the token asked for the checked URL as
//! its resource (RFC 8707) and renewed before it expires. No secret is ever printed: each is a
//! [`Secret`], redacted in `Debug` and `Display` and wiped when dropped.
//!
//! ```text
//! envelope-check --url http://127.0.0.1:8765/mcp --oauth-token-url http://127.0.0.1:9000/token \
//!     --client-id agent --client-secret-file agent.secret --scope workspace:read
//! envelope-check --url http://127.0.0.1:8765/mcp --bearer-token-file token.txt
//! ```
//!
//! In a program or a test, [`run`] checks any connected client:
//!
//! ```no_run
//! # async fn check(client: rmcp::service::RunningService<rmcp::RoleClient, envelope_check::Watcher>) {
//! use envelope_check::{CheckConfig, run};
//!
//! let report = run(&client, &CheckConfig::default()).await;
//! assert_eq!(report.failed(), 0, "{}", report.render());
//! # }
//! ```

mod actions;
mod clock;
mod error;
mod idempotent;
mod ids;
mod inputs;
mod listing;
pub mod login;
mod paging;
mod report;
mod responses;
mod tokens;
mod transport;
mod watch;

pub use error::{LoginError, error_chain};
pub use ids::{Check, UnknownCheck};
pub use listing::{MAX_LISTING_BYTES, MAX_LISTING_PAGES, MAX_TOOLS};
pub use login::{Login, MIN_TOKEN_USE, Secret, TokenSource};
pub use report::{Failure, Permissions, Report, Tally, ToolReport, Withheld};
pub use transport::{DEFAULT_MAX_ANSWER_BYTES, Faults, SendError, stdio_transport};
pub use watch::{ListingWatch, Watcher};

use std::collections::BTreeSet;
use std::ops::ControlFlow;
use std::sync::Arc;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{CallToolRequestParams, CallToolResult, Tool};
use rmcp::service::{RunningService, Service};
use serde_json::{Map, Value};

use actions::Actions;
use clock::Clock;
use inputs::{Intent, Plan, Rng};
use listing::Listed;
use responses::Judge;

/// The run's time budget unless configured otherwise: ten minutes.
pub const DEFAULT_TIME_BUDGET: Duration = Duration::from_secs(600);

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
    /// The wire the server answers in (`--dialect`): each answer is validated against that
    /// dialect's schema, then read back as the envelope it carries.
    pub dialect: envelope_core::Dialect,
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
            dialect: envelope_core::Dialect::Envelope,
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
pub async fn run<S: Service<RoleClient> + ListingWatch>(
    client: &RunningService<RoleClient, S>,
    config: &CheckConfig,
) -> Report {
    run_watching(client, config, &Faults::default()).await
}

/// [`run`], over a connection whose unreadable messages `faults` records (see
/// [`stdio_transport`]): a call during which one arrives fails `call.answered` at once.
pub async fn run_watching<S: Service<RoleClient> + ListingWatch>(
    client: &RunningService<RoleClient, S>,
    config: &CheckConfig,
    faults: &Faults,
) -> Report {
    let clock = Clock::start(config);
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
    client.service().relisted();
    let listed = match listing::list_tools(client, &clock, faults, &mut report.listing).await {
        Ok(listed) => listed,
        Err(reason) => {
            report.stopped = Some(reason);
            return report;
        }
    };
    let mut session = Session {
        client,
        config,
        clock,
        faults,
        judge: Judge::new(&listed.tools, enabled, config.dialect),
        listed,
    };
    let permissions = config.permissions();
    // Each name once, whichever listing it first appears in.
    let mut visited: BTreeSet<String> = BTreeSet::new();
    loop {
        // A listing said to have changed is read again, and judged anew, before anything more
        // is called.
        if client.service().listing_changed()
            && let Err(reason) = session.relist(&mut report.listing).await
        {
            report.stopped = Some(reason);
            break;
        }
        let next = session.listed.tools.iter().find(|tool| {
            !visited.contains(tool.name.as_ref())
                && (config.tools.is_empty() || config.tools.contains(tool.name.as_ref()))
        });
        let Some(tool) = next.map(Arc::clone) else {
            break;
        };
        visited.insert(tool.name.to_string());
        if !permissions.may_call(&tool.name, is_read_only(&tool)) {
            report.withheld.push(Withheld {
                tool: tool.name.to_string(),
                annotations: annotations_of(&tool),
                suggested_by: None,
                arguments: None,
                conflict: session.listed.conflicts.get(tool.name.as_ref()).cloned(),
            });
            continue;
        }
        let (tool_report, withheld) = session.check_tool(&tool).await;
        let lost = tool_report.stopped.clone();
        report.tools.push(tool_report);
        report.withheld.extend(withheld);
        match lost {
            // The rest of the run follows the new listing.
            Some(reason) if reason == LISTING_CHANGED => continue,
            Some(reason) => {
                report.stopped = Some(reason);
                break;
            }
            None => {}
        }
    }
    for name in &config.tools {
        if session.listed.tool(name).is_none() {
            report.unknown_tools.push(name.clone());
        }
    }
    report
}

/// Why a run stopped when its time budget ran out.
const OUT_OF_TIME: &str = "the time budget ran out";

/// Why a tool's check stopped when the server said its listing changed: the run lists again
/// and goes on with the new listing.
const LISTING_CHANGED: &str =
    "the server said its tool listing changed: nothing more is called before it is read again";

/// One run's connection, clock and judge, once the tools are listed.
struct Session<'a, S: Service<RoleClient>> {
    client: &'a RunningService<RoleClient, S>,
    config: &'a CheckConfig,
    clock: Clock,
    faults: &'a Faults,
    judge: Judge,
    /// The listing the run follows: the last one read.
    listed: Listed,
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

impl<S: Service<RoleClient> + ListingWatch> Session<'_, S> {
    fn out_of_time(&self) -> bool {
        self.clock.out_of_time()
    }

    /// Lists the tools again and judges the new listing; `Err` when it cannot be read.
    async fn relist(&mut self, report: &mut ToolReport) -> Result<(), String> {
        self.client.service().relisted();
        let listed = listing::list_tools(self.client, &self.clock, self.faults, report).await?;
        self.judge.relist(&listed.tools);
        self.listed = listed;
        Ok(())
    }

    /// Calls `tool`, the one door every call goes through: a tool that may not be called is
    /// never sent anything (its callers report it withheld before they get here).
    async fn call(&self, tool: &Tool, arguments: &Map<String, Value>) -> Outcome {
        // The listing a call is judged by must be the server's current one.
        if self.client.service().listing_changed() {
            return Outcome::Lost(LISTING_CHANGED.to_owned());
        }
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
        let wait = self.clock.wait();
        let answered = tokio::select! {
            // An answer that is ready is taken before a fault that came after it.
            biased;
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
        let mut report = ToolReport::new(&name, self.judge.enabled());
        let mut withheld = Vec::new();
        let rng = Rng::new(self.config.seed ^ fnv(&name));
        let mut first_valid: Option<(Map<String, Value>, Value)> = None;
        let mut actions = Actions::new(self.config.max_pages);
        for (index, call) in Plan::new(&schema, self.config.variations, rng).enumerate() {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return (report, withheld);
            }
            let Some(call) = bounded(&mut report, index, call) else {
                continue;
            };
            let ControlFlow::Continue(structured) = self
                .judged_call(&mut report, &mut actions, tool, &call)
                .await
            else {
                return (report, withheld);
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
        self.read_only_idempotent(&mut report, tool, first_valid.as_ref())
            .await;
        self.paging(&mut report, tool, &schema).await;
        self.next_actions(&mut report, &mut withheld, tool, actions.list())
            .await;
        (report, withheld)
    }

    /// Makes the generated `call` of `tool` and judges its answer: its envelope, if it has one
    /// (`None` too when the call was refused, which the report counts against it). `Break`
    /// when nothing more can be asked: the connection is lost, the time budget ran out or the
    /// listing changed (the report then says which).
    async fn judged_call(
        &mut self,
        report: &mut ToolReport,
        actions: &mut Actions,
        tool: &Tool,
        call: &inputs::Call,
    ) -> ControlFlow<(), Option<Value>> {
        let outcome = self.call(tool, &call.arguments).await;
        let structured = match outcome {
            Outcome::Lost(reason) => {
                let check = match call.intent {
                    Intent::Valid | Intent::Edge { .. } => Check::CallAnswered,
                    _ => Check::InvalidValidation,
                };
                // A call the time budget cut short, or one not made because the listing
                // changed, says nothing against the server.
                if reason != OUT_OF_TIME && reason != LISTING_CHANGED {
                    report.fail(check, &call.arguments, &reason, None);
                }
                report.stopped = Some(reason);
                return ControlFlow::Break(());
            }
            Outcome::Refused(reason) => {
                let check = match call.intent {
                    Intent::Valid | Intent::Edge { .. } => Check::CallAnswered,
                    _ => Check::InvalidValidation,
                };
                report.fail(check, &call.arguments, &reason, None);
                return ControlFlow::Continue(None);
            }
            Outcome::Result(result) => self.judged_result(report, actions, tool, call, &result),
        };
        ControlFlow::Continue(structured)
    }

    /// Judges `result`, the answer of `tool` to the generated `call`, against the call's intent,
    /// and keeps the next actions it suggests: its envelope, if it has one.
    fn judged_result(
        &mut self,
        report: &mut ToolReport,
        actions: &mut Actions,
        tool: &Tool,
        call: &inputs::Call,
        result: &CallToolResult,
    ) -> Option<Value> {
        let structured = self.judge.response(report, tool, &call.arguments, result);
        match &structured {
            Some(structured) => {
                self.judge
                    .intent(report, &call.intent, &call.arguments, structured);
                actions.collect(structured);
            }
            None => {
                if let Some(field) = call.intent.field_to_name() {
                    let detail =
                        format!("the call answered no envelope, so nothing names `{field}`");
                    report.fail(Check::InvalidValidation, &call.arguments, &detail, None);
                }
            }
        }
        structured
    }
}

/// The generated call numbered `index`, when it could be made. The first call holds the
/// required fields only: whether it can be made is whether the schema is one an agent can fill
/// (`input.bounded`). A later call too large to make (every one of 200,000 optional fields,
/// say) is left out quietly.
fn bounded(
    report: &mut ToolReport,
    index: usize,
    call: Result<inputs::Call, inputs::TooLarge>,
) -> Option<inputs::Call> {
    match (index, call) {
        (0, Err(inputs::TooLarge)) => {
            let detail = format!(
                "a call of the required fields takes more than the checker generates \
                 ({} values, {} characters of text): no valid call is made",
                inputs::MAX_VALUES,
                inputs::MAX_TEXT
            );
            report.fail(Check::InputBounded, &Map::new(), &detail, None);
            None
        }
        (_, Err(inputs::TooLarge)) => None,
        (index, Ok(call)) => {
            if index == 0 {
                report.pass(Check::InputBounded);
            }
            Some(call)
        }
    }
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

/// A value's digest: rows and next actions are compared and counted by it, and never held
/// whole.
pub(crate) fn digest(value: &Value) -> u64 {
    use std::hash::{Hash as _, Hasher as _};
    // SipHash with fixed keys: the same value, the same digest, within a run.
    let mut hasher = std::hash::DefaultHasher::new();
    value.to_string().hash(&mut hasher);
    hasher.finish()
}

/// FNV-1a of `text`: each tool's calls get their own stream from one seed.
fn fnv(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

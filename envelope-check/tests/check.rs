//! `envelope-check` against servers whose faults are known: an envelope
//! server it finds nothing wrong with; the same server with one fault put in at a time (a
//! wrong `isError`, a lying `completeness`, a next action to a missing tool, a row repeated
//! across pages, a tampered token accepted), each failing the check of that fault's id; and a
//! plain rmcp server, without envelopes, whose report names what it lacks.

use std::sync::{Arc, Mutex};

use envelope_check::{Check, CheckConfig, Report, run};
use envelope_core::paging::{ContinuationKey, Continuations, PageCount, Pager, Paging};
use envelope_core::{Reply, ToolContext, ToolResult, Unit, tool, toolset};
use envelope_mcp::{EnvelopeConfig, EnvelopeServer};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ListToolsResult,
    PaginatedRequestParams, ServerConfig,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

#[derive(Debug, Clone, Serialize, Deserialize, schemars::JsonSchema)]
struct RowsArgs {
    /// Rows per page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 100))]
    limit: Option<usize>,
    /// The next page's token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    continuation: Option<String>,
}

envelope_core::paged_args!(RowsArgs);

#[derive(Serialize, schemars::JsonSchema)]
struct Rows {
    rows: Vec<String>,
}

/// How many rows `rows` pages through.
const ROWS: usize = 30;

/// Thirty numbered rows, a page at a time.
#[tool(tier = lite, read_only)]
fn rows(ctx: &ToolContext, args: RowsArgs) -> ToolResult<Reply<Rows>> {
    let pager = Pager::<rows>::open(ctx, &args, Paging::new(Unit::ITEM, 10))?;
    let page: Vec<String> = (0..ROWS)
        .filter(|index| pager.takes(*index))
        .map(|index| format!("row {index:02}"))
        .collect();
    let count = PageCount::new(page.len(), ROWS);
    pager.finish(ctx, &args, Reply::new(Rows { rows: page }), count)
}

fn healthy() -> EnvelopeServer {
    let key = ContinuationKey::new(1, [9; 32]);
    EnvelopeServer::new(
        toolset![rows],
        EnvelopeConfig::new("healthy", "1").with_continuations(Continuations::new(key)),
    )
}

/// One fault the wrapper puts into the healthy server's answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    None,
    /// `isError` says the opposite of `ok`.
    WrongIsError,
    /// `completeness.returned` is past `total`.
    LyingCompleteness,
    /// A next action names a tool that is not listed.
    MissingTool,
    /// Each later page repeats the previous page's last row in place of its own first.
    DuplicateRows,
    /// A token the server never gave out is taken for the first page.
    TamperAccepted,
    /// An image follows the text mirror that `meta.attachments` does not note.
    UnnotedMedia,
    /// The next-page action leaves its token out (under `completeness.continuation`, named by a
    /// `continuation_arg`): called as given, it answers the first page again.
    LoopingNextPage,
}

/// The healthy server, with `fault` put into what it answers.
#[derive(Clone)]
struct Faulty {
    inner: EnvelopeServer,
    fault: Fault,
    /// The tokens given out, and the last row sent.
    given: Arc<Mutex<(Vec<String>, Option<Value>)>>,
}

impl Faulty {
    fn new(fault: Fault) -> Self {
        Faulty {
            inner: healthy(),
            fault,
            given: Arc::default(),
        }
    }

    fn spoil(&self, arguments: &Value, result: &mut CallToolResult) {
        let Some(envelope) = result.structured_content.as_mut() else {
            return;
        };
        let mut given = self
            .given
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        match self.fault {
            Fault::None | Fault::TamperAccepted | Fault::UnnotedMedia => {}
            Fault::LoopingNextPage => {
                // `get_mut`, not indexing: indexing would give every answer `next_actions`.
                let next_page = envelope
                    .get_mut("next_actions")
                    .and_then(Value::as_array_mut)
                    .into_iter()
                    .flatten()
                    .find(|action| action["id"] == "next-page");
                if let Some(action) = next_page
                    && let Some(token) = action["arguments"]
                        .as_object_mut()
                        .and_then(|arguments| arguments.remove("continuation"))
                {
                    action["continuation_arg"] = json!("continuation");
                    envelope["completeness"]["continuation"] = token;
                }
            }
            Fault::WrongIsError => result.is_error = Some(envelope["ok"] == true),
            Fault::LyingCompleteness => {
                if let Some(total) = envelope["completeness"]["total"].as_u64() {
                    envelope["completeness"]["returned"] = json!(total + 5);
                }
            }
            Fault::MissingTool => {
                let action = json!({
                    "id": "vanished", "tool": "no_such_tool", "arguments": {},
                    "role": "inspect", "order": 0, "reason": "a tool that is not there",
                });
                match envelope["next_actions"].as_array_mut() {
                    Some(actions) => actions.push(action),
                    None => envelope["next_actions"] = json!([action]),
                }
            }
            Fault::DuplicateRows => {
                // `get_mut`, not indexing: indexing would give an error envelope a `data`.
                let page = envelope
                    .get_mut("data")
                    .and_then(|data| data.get_mut("rows"))
                    .and_then(Value::as_array_mut);
                if let (Some(page), Some(previous)) = (page, given.1.take())
                    && arguments.get("continuation").is_some()
                    && !page.is_empty()
                {
                    page[0] = previous;
                }
                given.1 = envelope["data"]["rows"]
                    .as_array()
                    .and_then(|page| page.last().cloned());
            }
        }
        let tokens = envelope["next_actions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|action| &action["arguments"]["continuation"])
            .chain([&envelope["completeness"]["continuation"]])
            .filter_map(Value::as_str);
        given.0.extend(tokens.map(str::to_owned));
        // The text mirror follows, so that only the fault's own check can see it.
        result.content = vec![ContentBlock::text(envelope.to_string())];
        if self.fault == Fault::UnnotedMedia {
            result
                .content
                .push(ContentBlock::image("iVBORw0KGgo=", "image/png"));
        }
    }
}

impl ServerHandler for Faulty {
    fn get_info(&self) -> ServerConfig {
        self.inner.get_info()
    }

    async fn list_tools(
        &self,
        request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.inner.list_tools(request, context).await
    }

    async fn call_tool(
        &self,
        mut request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        if self.fault == Fault::TamperAccepted
            && let Some(arguments) = request.arguments.as_mut()
            && let Some(token) = arguments.get("continuation").and_then(Value::as_str)
        {
            let given = self
                .given
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner());
            if !given.0.iter().any(|known| known == token) {
                // Not a token it gave out: taken anyway, as the first page.
                drop(given);
                arguments.remove("continuation");
            }
        }
        let arguments = Value::Object(request.arguments.clone().unwrap_or_default());
        let response = self.inner.call_tool(request, context).await?;
        Ok(match response {
            CallToolResponse::Complete(mut result) => {
                self.spoil(&arguments, &mut result);
                result.into()
            }
            other => other,
        })
    }
}

/// `server` checked over an in-memory connection.
async fn check<S: ServerHandler>(server: S, config: &CheckConfig) -> Report {
    let (server_io, client_io) = tokio::io::duplex(1 << 20);
    tokio::spawn(async move {
        if let Ok(running) = server.serve(server_io).await {
            let _ = running.waiting().await;
        }
    });
    let client = ().serve(client_io).await.expect("connects");
    run(&client, config).await
}

fn config() -> CheckConfig {
    CheckConfig {
        seed: 11,
        ..CheckConfig::default()
    }
}

#[tokio::test]
async fn a_healthy_envelope_server_passes_every_check() {
    let report = check(Faulty::new(Fault::None), &config()).await;
    assert!(report.is_clean(), "{}", report.render());
    // The follow-through ran: it is not clean by skipping.
    let tool = &report.tools[0];
    for check in [
        Check::PagingFollow,
        Check::PagingTampered,
        Check::NextActionRuns,
        Check::ReadOnlyIdempotent,
    ] {
        assert!(
            tool.checks[check.as_str()].passed > 0,
            "{check}: {}",
            report.render()
        );
    }
    assert!(tool.checks[Check::InvalidValidation.as_str()].passed >= 2);
}

#[tokio::test]
async fn each_fault_fails_the_check_of_its_id() {
    for (fault, check_ids) in [
        (Fault::WrongIsError, &[Check::IsError][..]),
        (Fault::LyingCompleteness, &[Check::Completeness]),
        (Fault::MissingTool, &[Check::NextActionTools]),
        (Fault::DuplicateRows, &[Check::PagingFollow]),
        (Fault::TamperAccepted, &[Check::PagingTampered]),
        (Fault::UnnotedMedia, &[Check::Attachments]),
        // Regression test for #36: a model that copies the next-page action pages on the spot.
        // Followed as given, the pages repeat their rows too.
        (
            Fault::LoopingNextPage,
            &[Check::PagingFollow, Check::NextActionVerbatim],
        ),
    ] {
        let report = check(Faulty::new(fault), &config()).await;
        // Only those checks: the fault is found where it is, and nowhere else.
        let failing: Vec<Check> = Check::ALL
            .into_iter()
            .filter(|check| report.failures_of(*check) > 0)
            .collect();
        assert_eq!(failing, check_ids, "{fault:?}:\n{}", report.render());
        assert!(!report.is_clean());
        for check_id in check_ids {
            let failure = report.tools[0]
                .failures
                .iter()
                .find(|failure| failure.check == check_id.as_str())
                .expect("the failure is kept");
            assert!(!failure.detail.is_empty());
        }
    }
}

#[tokio::test]
async fn only_and_skip_select_checks() {
    let only = CheckConfig {
        only: [Check::IsError].into(),
        ..config()
    };
    let report = check(Faulty::new(Fault::WrongIsError), &only).await;
    assert_eq!(report.tools[0].checks.len(), 1, "{}", report.render());
    assert!(report.failures_of(Check::IsError) > 0);
    let skipped = CheckConfig {
        skip: [Check::IsError].into(),
        ..config()
    };
    let report = check(Faulty::new(Fault::WrongIsError), &skipped).await;
    assert!(report.is_clean(), "{}", report.render());
}

#[tokio::test]
async fn a_seed_replays_its_run_and_the_time_budget_bounds_it() {
    // Every answer's `isError` is wrong, so the failures list the random calls.
    let failing = |report: &Report| -> Vec<String> {
        report.tools[0]
            .failures
            .iter()
            .map(|failure| failure.arguments.clone())
            .collect()
    };
    let wide = |seed| CheckConfig {
        seed,
        variations: 8,
        only: [Check::IsError].into(),
        ..CheckConfig::default()
    };
    let first = check(Faulty::new(Fault::WrongIsError), &wide(21)).await;
    let again = check(Faulty::new(Fault::WrongIsError), &wide(21)).await;
    let other = check(Faulty::new(Fault::WrongIsError), &wide(22)).await;
    assert_eq!(first.seed, 21);
    assert_eq!(failing(&first), failing(&again));
    assert_ne!(
        failing(&first),
        failing(&other),
        "another seed, other calls"
    );

    let no_time = CheckConfig {
        time_budget: Some(std::time::Duration::ZERO),
        ..config()
    };
    let report = check(Faulty::new(Fault::None), &no_time).await;
    assert_eq!(report.stopped.as_deref(), Some("the time budget ran out"));
    assert!(!report.is_clean(), "a partial run is not a clean one");
}

mod plain {
    //! A server written with rmcp's own macros, no envelope: what an author sees before
    //! adopting envelope.

    use rmcp::handler::server::router::tool::ToolRouter;
    use rmcp::handler::server::wrapper::Parameters;
    use rmcp::{ServerHandler, tool, tool_handler, tool_router};
    use serde::Deserialize;

    #[derive(Deserialize, schemars::JsonSchema)]
    pub(super) struct EchoRequest {
        /// What to echo.
        text: String,
    }

    #[derive(Deserialize, schemars::JsonSchema)]
    pub(super) struct SumRequest {
        a: i64,
        b: i64,
    }

    #[derive(Clone)]
    pub(super) struct Plain {
        // Read by the code `#[tool_handler]` writes.
        #[allow(dead_code)]
        tool_router: ToolRouter<Self>,
    }

    #[tool_router]
    impl Plain {
        pub(super) fn new() -> Self {
            Plain {
                tool_router: Self::tool_router(),
            }
        }

        #[tool(description = "Echo the text back.")]
        async fn echo(&self, Parameters(request): Parameters<EchoRequest>) -> String {
            request.text
        }

        #[tool(description = "Add two numbers.")]
        async fn sum(&self, Parameters(request): Parameters<SumRequest>) -> String {
            (request.a + request.b).to_string()
        }
    }

    #[tool_handler]
    impl ServerHandler for Plain {}
}

#[tokio::test]
async fn a_plain_rmcp_server_is_told_what_it_lacks() {
    // Its tools carry no annotations, so none is read-only: without an opt-in none is called.
    let report = check(plain::Plain::new(), &config()).await;
    assert!(report.tools.is_empty(), "{}", report.render());
    assert_eq!(report.withheld.len(), 2, "{}", report.render());
    // Nothing checked is nothing passed: the run is not clean, and says why.
    assert!(!report.is_clean());
    assert!(report.render().contains("nothing was checked"));
    // Echo and sum change nothing: opted in, they are checked.
    let writes = CheckConfig {
        allow_writes: true,
        ..config()
    };
    let report = check(plain::Plain::new(), &writes).await;
    assert_eq!(report.tools.len(), 2, "{}", report.render());
    assert!(
        report.stopped.is_none(),
        "it ran to the end: {}",
        report.render()
    );
    // No envelope at all: every call fails `call.answered`, saying so.
    assert!(report.failures_of(Check::CallAnswered) > 0);
    let failure = report.tools[0]
        .failures
        .iter()
        .find(|failure| failure.check == Check::CallAnswered.as_str())
        .expect("kept");
    assert!(failure.detail.contains("no envelope"), "{}", failure.detail);
    // Bad arguments are a JSON-RPC error, not a `validation` envelope naming the field.
    assert!(
        report.failures_of(Check::InvalidValidation) > 0,
        "{}",
        report.render()
    );
    assert!(report.score() < 50.0);
    let json = report.to_json();
    assert!(
        json["failed_count"]
            .as_u64()
            .is_some_and(|failed| failed > 0)
    );
}

/// The command line against the healthy server over streamable HTTP: its exit status and
/// output.
async fn command_line(args: &[&str]) -> (i32, String, String) {
    let addr = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port");
    tokio::spawn(healthy().serve_http(addr));
    for _ in 0..100 {
        if tokio::net::TcpStream::connect(addr).await.is_ok() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let url = format!("http://{addr}/mcp");
    let args: Vec<String> = args.iter().map(|arg| arg.replace("{url}", &url)).collect();
    let output = tokio::process::Command::new(env!("CARGO_BIN_EXE_envelope-check"))
        .args(&args)
        .output()
        .await
        .expect("envelope-check runs");
    (
        output.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

#[tokio::test]
async fn the_command_line_exits_0_only_when_nothing_failed() {
    let (status, stdout, stderr) = command_line(&["--url", "{url}", "--seed", "5", "--json"]).await;
    assert_eq!(status, 0, "{stdout}{stderr}");
    let report: Value = serde_json::from_str(&stdout).expect("--json prints JSON");
    assert_eq!(report["seed"], 5);
    assert_eq!(report["failed_count"], 0);
    assert_eq!(report["tools"][0]["tool"], "rows");

    // The header says which tools the run may call; the JSON report too.
    let (_, stdout, _) = command_line(&["--url", "{url}", "--only", "call.answered"]).await;
    assert!(stdout.contains("calls: read-only tools only"), "{stdout}");
    let (_, stdout, _) = command_line(&["--url", "{url}", "--allow-writes"]).await;
    assert!(stdout.contains("calls: EVERY tool"), "{stdout}");
    let (_, stdout, _) = command_line(&[
        "--url",
        "{url}",
        "--allow-tool",
        "a,b",
        "--allow-tool",
        "c",
        "--json",
    ])
    .await;
    let report: Value = serde_json::from_str(&stdout).expect("--json prints JSON");
    assert_eq!(
        report["permissions"]["allowed_tools"],
        json!(["a", "b", "c"])
    );
    assert_eq!(report["permissions"]["allow_writes"], false);

    // A tool the server does not list: the run is not clean.
    let (status, stdout, _) = command_line(&["--url", "{url}", "--tool", "missing"]).await;
    assert_eq!(status, 1, "{stdout}");
    assert!(stdout.contains("no tool `missing` is listed"), "{stdout}");
    assert!(stdout.contains("replay with --seed"), "{stdout}");

    // Nothing to reach, or nothing named: 2, with a message.
    let (status, _, stderr) = command_line(&["--url", "http://127.0.0.1:1/mcp"]).await;
    assert_eq!(status, 2);
    assert!(stderr.contains("cannot connect"), "{stderr}");
    let (status, _, stderr) = command_line(&[]).await;
    assert_eq!(status, 2);
    assert!(stderr.contains("name a server"), "{stderr}");
    let (status, _, stderr) = command_line(&["--only", "envelope.nope", "--url", "{url}"]).await;
    assert_eq!(status, 2);
    assert!(stderr.contains("is no check"), "{stderr}");
}

//! What a run found: per tool, per check, how many responses passed, failed or were skipped,
//! with an excerpt of each failing response; as a table for people or JSON for programs.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use serde::Serialize;
use serde_json::{Map, Value};

use super::{Check, excerpt};

/// The most failures kept per tool and check: enough to see the pattern.
const KEPT_FAILURES: usize = 5;

/// How often one check passed, failed, or did not apply.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Tally {
    /// Responses (or follow-throughs) that met the check.
    pub passed: usize,
    /// Those that did not.
    pub failed: usize,
    /// Those the check did not apply to (no `completeness` to check, no pages to follow).
    pub skipped: usize,
}

/// One failure: the check, the call, what was wrong, and the response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Failure {
    /// The check's id.
    pub check: &'static str,
    /// The call's arguments, as JSON.
    pub arguments: String,
    /// What was wrong.
    pub detail: String,
    /// The response, cut to 300 characters, when there was one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub response: Option<String>,
}

/// A call the checker did not make because its tool may change the world: a tool listed
/// without `readOnlyHint: true` (an unannotated tool is not read-only), or a next action that
/// names one. `--allow-tool NAME` or `--allow-writes` lets it be made.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Withheld {
    /// The tool that was not called.
    pub tool: String,
    /// Its annotations as listed (`null` when it has none).
    pub annotations: Value,
    /// The tool whose answer suggested the call, for a next action; `None` for a listed tool
    /// that was not checked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggested_by: Option<String>,
    /// The arguments the call would have been sent, as JSON, for a next action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
    /// For a name the server listed more than once with different annotations, what they
    /// were: such a tool is not read-only, whichever entry says it is.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conflict: Option<String>,
}

/// Which tools a run calls: those listed `readOnlyHint: true`, and beside them the ones
/// `allowed_tools` names, or every tool with `allow_writes`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Permissions {
    /// Every tool may be called, writes included (`--allow-writes`).
    pub allow_writes: bool,
    /// Tools that may be called although not read-only (`--allow-tool`).
    pub allowed_tools: BTreeSet<String>,
}

impl Permissions {
    /// Whether `tool`, annotated `read_only`, may be called.
    pub fn may_call(&self, tool: &str, read_only: bool) -> bool {
        read_only || self.allow_writes || self.allowed_tools.contains(tool)
    }

    /// The report's line about it.
    fn describe(&self) -> String {
        if self.allow_writes {
            "calls: EVERY tool, writes included (--allow-writes)".to_owned()
        } else if self.allowed_tools.is_empty() {
            "calls: read-only tools only (`readOnlyHint: true`); --allow-tool NAME or \
             --allow-writes calls others"
                .to_owned()
        } else {
            let named: Vec<&str> = self.allowed_tools.iter().map(String::as_str).collect();
            format!(
                "calls: read-only tools, and {} (--allow-tool)",
                named.join(", ")
            )
        }
    }
}

/// One tool's results.
#[derive(Debug, Clone, Serialize)]
pub struct ToolReport {
    /// The tool's name.
    pub tool: String,
    /// Each check's tally, by id.
    pub checks: BTreeMap<&'static str, Tally>,
    /// The failures, at most five per check.
    pub failures: Vec<Failure>,
    /// Why checking this tool stopped early, if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    #[serde(skip)]
    enabled: BTreeSet<Check>,
}

impl ToolReport {
    /// An empty report of `tool` (or of the listing) making the checks `enabled`.
    pub(super) fn new(tool: &str, enabled: &BTreeSet<Check>) -> Self {
        ToolReport {
            tool: tool.to_owned(),
            checks: BTreeMap::new(),
            failures: Vec::new(),
            stopped: None,
            enabled: enabled.clone(),
        }
    }

    fn tally(&mut self, check: Check) -> Option<&mut Tally> {
        self.enabled
            .contains(&check)
            .then(|| self.checks.entry(check.as_str()).or_default())
    }

    pub(super) fn pass(&mut self, check: Check) {
        if let Some(tally) = self.tally(check) {
            tally.passed += 1;
        }
    }

    pub(super) fn skip(&mut self, check: Check) {
        if let Some(tally) = self.tally(check) {
            tally.skipped += 1;
        }
    }

    pub(super) fn fail(
        &mut self,
        check: Check,
        arguments: &Map<String, Value>,
        detail: &str,
        response: Option<&Value>,
    ) {
        let Some(tally) = self.tally(check) else {
            return;
        };
        tally.failed += 1;
        let kept = self
            .failures
            .iter()
            .filter(|failure| failure.check == check.as_str())
            .count();
        if kept < KEPT_FAILURES {
            self.failures.push(Failure {
                check: check.as_str(),
                arguments: excerpt(&Value::Object(arguments.clone())),
                detail: detail.to_owned(),
                response: response.map(excerpt),
            });
        }
    }

    /// This tool's totals.
    pub fn total(&self) -> Tally {
        self.checks
            .values()
            .fold(Tally::default(), |sum, tally| Tally {
                passed: sum.passed + tally.passed,
                failed: sum.failed + tally.failed,
                skipped: sum.skipped + tally.skipped,
            })
    }
}

/// A whole run.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The seed the random calls came from: `--seed` replays them.
    pub seed: u64,
    /// The server's name and version, as it introduced itself.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// Which tools the run may call.
    pub permissions: Permissions,
    /// The tool listing's own checks (`tools.listed`).
    pub listing: ToolReport,
    /// Each tool checked.
    pub tools: Vec<ToolReport>,
    /// The calls not made because their tool may change the world.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub withheld: Vec<Withheld>,
    /// Tools asked for that the server does not list.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unknown_tools: Vec<String>,
    /// Why the run stopped early (the time budget, a lost connection), if it did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

impl Report {
    pub(super) fn new(seed: u64, permissions: Permissions, enabled: &BTreeSet<Check>) -> Self {
        Report {
            seed,
            server: None,
            permissions,
            listing: ToolReport::new("tools/list", enabled),
            tools: Vec::new(),
            withheld: Vec::new(),
            unknown_tools: Vec::new(),
            stopped: None,
        }
    }

    /// The totals of every tool, and of the listing.
    pub fn total(&self) -> Tally {
        std::iter::once(&self.listing)
            .chain(&self.tools)
            .map(ToolReport::total)
            .fold(Tally::default(), |sum, tally| Tally {
                passed: sum.passed + tally.passed,
                failed: sum.failed + tally.failed,
                skipped: sum.skipped + tally.skipped,
            })
    }

    /// How many checks failed.
    pub fn failed(&self) -> usize {
        self.total().failed
    }

    /// Whether nothing failed, nothing stopped the run, and something was checked (a server
    /// whose every tool was withheld has not passed anything): the exit status is 0 only then.
    pub fn is_clean(&self) -> bool {
        self.failed() == 0
            && self.stopped.is_none()
            && self.unknown_tools.is_empty()
            && !self.nothing_checked()
    }

    /// Whether the server lists tools but none was checked: every one was withheld.
    pub fn nothing_checked(&self) -> bool {
        self.tools.is_empty() && !self.withheld.is_empty()
    }

    /// The share of passed checks among those that passed or failed, in percent.
    pub fn score(&self) -> f64 {
        let total = self.total();
        let judged = total.passed + total.failed;
        if judged == 0 {
            return 0.0;
        }
        100.0 * total.passed as f64 / judged as f64
    }

    /// The failures of `check` across tools.
    pub fn failures_of(&self, check: Check) -> usize {
        std::iter::once(&self.listing)
            .chain(&self.tools)
            .filter_map(|tool| tool.checks.get(check.as_str()))
            .map(|tally| tally.failed)
            .sum()
    }

    /// The report as JSON, with its `score` (one decimal) and `failed_count`.
    pub fn to_json(&self) -> Value {
        let mut report = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Some(object) = report.as_object_mut() {
            object.insert(
                "score".to_owned(),
                Value::from((self.score() * 10.0).round() / 10.0),
            );
            object.insert("failed_count".to_owned(), Value::from(self.failed()));
        }
        report
    }

    /// The report as people read it: a table per tool, the failures, the score.
    pub fn render(&self) -> String {
        let mut out = String::new();
        let server = self.server.as_deref().unwrap_or("the server");
        let _ = writeln!(
            out,
            "envelope-check: {server}, {} tools, seed {} (replay with --seed {})",
            self.tools.len(),
            self.seed,
            self.seed
        );
        let _ = writeln!(out, "{}", self.permissions.describe());
        let listed = std::iter::once(&self.listing).filter(|listing| !listing.checks.is_empty());
        for tool in listed.chain(&self.tools) {
            render_tool(&mut out, tool);
        }
        render_withheld(&mut out, &self.withheld);
        if self.nothing_checked() {
            let _ = writeln!(
                out,
                "\nnothing was checked: no tool is read-only (--allow-tool NAME calls one)"
            );
        }
        for tool in &self.unknown_tools {
            let _ = writeln!(out, "\nno tool `{tool}` is listed");
        }
        if let Some(reason) = &self.stopped {
            let _ = writeln!(out, "\nthe run stopped early: {reason}");
        }
        let total = self.total();
        let _ = writeln!(
            out,
            "\nscore {:.1}%: {} passed, {} failed, {} skipped",
            self.score(),
            total.passed,
            total.failed,
            total.skipped
        );
        out
    }
}

/// One tool's part of [`Report::render`]: its totals, a table of its checks (a failed one
/// marked), its failures and why its check stopped, if it did.
fn render_tool(out: &mut String, tool: &ToolReport) {
    let total = tool.total();
    let _ = writeln!(
        out,
        "\n{}: {} passed, {} failed, {} skipped",
        tool.tool, total.passed, total.failed, total.skipped
    );
    let _ = writeln!(
        out,
        "  {:<34} {:>6} {:>6} {:>7}",
        "check", "passed", "failed", "skipped"
    );
    for check in Check::ALL {
        if let Some(tally) = tool.checks.get(check.as_str()) {
            let mark = if tally.failed > 0 { "✗" } else { " " };
            let _ = writeln!(
                out,
                "{mark} {:<34} {:>6} {:>6} {:>7}",
                check.as_str(),
                tally.passed,
                tally.failed,
                tally.skipped
            );
        }
    }
    for failure in &tool.failures {
        let _ = writeln!(
            out,
            "  ✗ {} with {}: {}",
            failure.check, failure.arguments, failure.detail
        );
        if let Some(response) = &failure.response {
            let _ = writeln!(out, "      response: {response}");
        }
    }
    if let Some(reason) = &tool.stopped {
        let _ = writeln!(out, "  stopped: {reason}");
    }
}

/// The withheld tools' part of [`Report::render`]: each with its annotations, and the action
/// that suggested it or the conflict in its listing, if any.
fn render_withheld(out: &mut String, tools: &[Withheld]) {
    if !tools.is_empty() {
        let _ = writeln!(
            out,
            "\nwithheld: not read-only, so never called (--allow-tool NAME calls one)"
        );
    }
    for withheld in tools {
        let annotations = match &withheld.annotations {
            Value::Null => "unannotated".to_owned(),
            annotations => annotations.to_string(),
        };
        match (&withheld.suggested_by, &withheld.arguments) {
            (Some(by), Some(arguments)) => {
                let _ = writeln!(
                    out,
                    "  {} ({annotations}), suggested by `{by}` with {arguments}",
                    withheld.tool
                );
            }
            _ => {
                let _ = writeln!(out, "  {} ({annotations}): not checked", withheld.tool);
            }
        }
        if let Some(conflict) = &withheld.conflict {
            let _ = writeln!(out, "    {conflict}");
        }
    }
}

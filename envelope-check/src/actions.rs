//! Next actions: collected from a tool's answers, each distinct one run once, exactly as given,
//! when its tool may be called (`next_actions.run`), the others withheld; and whether each of a
//! read-only tool makes progress, as a model that copies it needs (`next_actions.verbatim`).

use envelope_core::fields::envelope as field;
use envelope_core::fields::error as error_field;
use envelope_core::fields::next_action as action_field;
use std::collections::HashSet;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::Service;

use serde_json::{Map, Value};

use super::paging::rows;
use super::tokens::Tokens;
use super::{
    Check, ListingWatch, OUT_OF_TIME, Outcome, Session, ToolReport, Withheld, annotations_of,
    digest, excerpt, is_read_only,
};

impl<S: Service<RoleClient> + ListingWatch> Session<'_, S> {
    /// `next_actions.run`: each distinct suggestion, once, when its tool may be called; the
    /// others go to `withheld`, with the arguments they would have been sent.
    pub(super) async fn next_actions(
        &mut self,
        report: &mut ToolReport,
        withheld: &mut Vec<Withheld>,
        tool: &Tool,
        actions: &[Suggested],
    ) {
        let (runs, verbatim) = (Check::NextActionRuns, Check::NextActionVerbatim);
        if !self.config.enabled(runs) && !self.config.enabled(verbatim) {
            return;
        }
        if actions.is_empty() {
            report.skip(runs);
            report.skip(verbatim);
            return;
        }
        let permissions = self.config.permissions();
        for action in actions {
            let (target, arguments) = (&action.tool, &action.arguments);
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return;
            }
            let Some(listed) = self.judge.tool(target) else {
                // `next_actions.known_tools` has said so already.
                report.skip(runs);
                report.skip(verbatim);
                continue;
            };
            let read_only = is_read_only(&listed);
            if !permissions.may_call(target, read_only) {
                withheld.push(Withheld {
                    tool: target.clone(),
                    annotations: annotations_of(&listed),
                    suggested_by: Some(tool.name.to_string()),
                    arguments: Some(excerpt(&Value::Object(arguments.clone()))),
                    conflict: self.listed.conflicts.get(target).cloned(),
                });
                report.skip(runs);
                report.skip(verbatim);
                continue;
            }
            let judged = |report: &mut ToolReport, check: Check, verdict: Result<(), String>| {
                match verdict {
                    Ok(()) => report.pass(check),
                    Err(detail) => report.fail(check, arguments, &detail, None),
                }
            };
            match self.call(&listed, arguments).await {
                Outcome::Result(result) => {
                    let answer = self.judge.response(report, &listed, arguments, &result);
                    let answered = match &answer {
                        Some(answer) if answer[field::OK].is_boolean() => Ok(()),
                        _ => Err(format!(
                            "`{target}`, as suggested by `{}`, answered no envelope",
                            tool.name
                        )),
                    };
                    judged(report, runs, answered);
                    if read_only && self.config.enabled(verbatim) {
                        judged(report, verbatim, progress(action, answer.as_ref()));
                    }
                }
                Outcome::Refused(reason) => {
                    report.fail(runs, arguments, &reason, None);
                    if read_only {
                        let detail = format!("called exactly as given, it was refused: {reason}");
                        report.fail(verbatim, arguments, &detail, None);
                    }
                }
                Outcome::Lost(reason) => {
                    report.stopped = Some(reason);
                    return;
                }
            }
        }
    }
}

/// Whether an action, called exactly as given, made progress: `Err` says how it did not.
fn progress(action: &Suggested, answer: Option<&Value>) -> Result<(), String> {
    let Some(answer) = answer else {
        // `next_actions.run` has said so already; nothing here to judge it by.
        return Ok(());
    };
    let error = &answer[field::ERROR];
    if answer[field::OK] == false && error[error_field::CATEGORY] == "validation" {
        return Err(format!(
            "called exactly as given, it was refused as invalid arguments: {}",
            error[error_field::MESSAGE].as_str().unwrap_or_default()
        ));
    }
    if let Some(source) = action.source_rows
        && rows_digest(answer) == Some(source)
    {
        return Err(
            "called exactly as given, it answered the very rows of the answer that offered it \
             (a next page that is the same page)"
                .to_owned(),
        );
    }
    // An error may offer the same call again (a retry, once the cause is gone); a page that
    // offers itself again loops.
    let again = answer[field::OK] == true
        && answer[field::NEXT_ACTIONS]
            .as_array()
            .into_iter()
            .flatten()
            .any(|offered| {
                offered[action_field::TOOL] == action.tool.as_str()
                    && offered[action_field::ARGUMENTS].as_object() == Some(&action.arguments)
            });
    if again {
        return Err(
            "called exactly as given, it offers the very same call again (the same cursor: \
             following it loops)"
                .to_owned(),
        );
    }
    Ok(())
}

/// The digest of an answer's rows (opaque tokens masked), when it has any.
fn rows_digest(envelope: &Value) -> Option<u64> {
    let rows = rows(envelope);
    if rows.is_empty() {
        return None;
    }
    let tokens = Tokens::of(envelope);
    let masked: Vec<Value> = rows.iter().map(|row| tokens.masked(row)).collect();
    Some(digest(&Value::Array(masked)))
}

/// The arguments an action is followed with: its own, exactly as given, as a model copies
/// them. `None` for an action without an arguments object.
fn follow(action: &Value) -> Option<Map<String, Value>> {
    action[action_field::ARGUMENTS].as_object().cloned()
}

/// A next action as it is followed: its tool and arguments, and the digest of the rows of the
/// answer that offered it (to tell a next page that is the same page).
pub(super) struct Suggested {
    pub(super) tool: String,
    pub(super) arguments: Map<String, Value>,
    source_rows: Option<u64>,
}

/// The distinct next actions of a tool's answers, each with the arguments it is followed
/// with, in the order they came: at most as many as are run, told apart by digest, so that an
/// answer of a hundred thousand actions costs a bounded time and memory.
pub(super) struct Actions {
    list: Vec<Suggested>,
    seen: HashSet<u64>,
    most: usize,
}

impl Actions {
    /// Keeps at most `most`.
    pub(super) fn new(most: usize) -> Self {
        Actions {
            list: Vec::new(),
            seen: HashSet::new(),
            most,
        }
    }

    /// Adds the distinct next actions of `envelope`.
    pub(super) fn collect(&mut self, envelope: &Value) {
        let mut source_rows = None;
        for action in envelope[field::NEXT_ACTIONS]
            .as_array()
            .into_iter()
            .flatten()
        {
            if self.list.len() >= self.most {
                return;
            }
            let (Some(tool), Some(arguments)) =
                (action[action_field::TOOL].as_str(), follow(action))
            else {
                continue;
            };
            let key = digest(&serde_json::json!([tool, arguments]));
            if self.seen.insert(key) {
                let source_rows = *source_rows.get_or_insert_with(|| rows_digest(envelope));
                self.list.push(Suggested {
                    tool: tool.to_owned(),
                    arguments,
                    source_rows,
                });
            }
        }
    }

    /// The actions kept, in order.
    pub(super) fn list(&self) -> &[Suggested] {
        &self.list
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::Actions;

    #[test]
    fn actions_are_kept_distinct_and_bounded() {
        let action = |n: u64| json!({ "id": "a", "tool": "t", "arguments": { "n": n } });
        let mut many: Vec<_> = (0..100).map(action).collect();
        many.extend((0..100).map(action));
        let mut actions = Actions::new(50);
        actions.collect(&json!({ "next_actions": many }));
        assert_eq!(actions.list().len(), 50);
        let mut twice = Actions::new(50);
        twice.collect(&json!({ "next_actions": [action(1), action(1), action(2)] }));
        assert_eq!(twice.list().len(), 2);
    }
}

//! Next actions: collected from a tool's answers, each distinct one run once when its tool may
//! be called (`next_actions.run`), the others withheld.

use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::envelope as field;
use envelope_core::fields::next_action as action_field;
use std::collections::HashSet;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::Service;
use serde_json::{Map, Value};

use super::{
    Check, OUT_OF_TIME, Outcome, Session, ToolReport, Withheld, annotations_of, digest, excerpt,
    is_read_only,
};

impl<S: Service<RoleClient>> Session<'_, S> {
    /// `next_actions.run`: each distinct suggestion, once, when its tool may be called; the
    /// others go to `withheld`, with the arguments they would have been sent.
    pub(super) async fn next_actions(
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
        for (target, arguments) in actions {
            if self.out_of_time() {
                report.stopped = Some(OUT_OF_TIME.to_owned());
                return;
            }
            let Some(listed) = self.judge.tool(target) else {
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
                    match self.judge.response(report, &listed, arguments, &result) {
                        Some(answer) if answer[field::OK].is_boolean() => report.pass(check),
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

/// The arguments an action is followed with: its own, plus the envelope's
/// `completeness.continuation` under the argument its `continuation_arg` names (a next-page
/// action leaves the token out, so that it appears once). `None` for an action without
/// arguments, or one that continues from an envelope without a continuation.
pub(super) fn follow(action: &Value, envelope: &Value) -> Option<Map<String, Value>> {
    let mut arguments = action[action_field::ARGUMENTS].as_object()?.clone();
    if let Some(field) = action.get(action_field::CONTINUATION_ARG) {
        let field = field.as_str()?;
        let token = envelope[field::COMPLETENESS][completeness_field::CONTINUATION].as_str()?;
        arguments.insert(field.to_owned(), Value::from(token));
    }
    Some(arguments)
}

/// The distinct next actions of a tool's answers, each with the arguments it is followed
/// with, in the order they came: at most as many as are run, told apart by digest, so that an
/// answer of a hundred thousand actions costs a bounded time and memory.
pub(super) struct Actions {
    list: Vec<(String, Map<String, Value>)>,
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
        for action in envelope[field::NEXT_ACTIONS]
            .as_array()
            .into_iter()
            .flatten()
        {
            if self.list.len() >= self.most {
                return;
            }
            let (Some(tool), Some(arguments)) = (
                action[action_field::TOOL].as_str(),
                follow(action, envelope),
            ) else {
                continue;
            };
            let key = digest(&serde_json::json!([tool, arguments]));
            if self.seen.insert(key) {
                self.list.push((tool.to_owned(), arguments));
            }
        }
    }

    /// The actions kept, in order.
    pub(super) fn list(&self) -> &[(String, Map<String, Value>)] {
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

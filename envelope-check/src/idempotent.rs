//! `annotations.read_only_idempotent`: a read-only tool answers the same call twice alike.

use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::envelope as field;
use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::Service;

use serde_json::{Map, Value};

use super::paging::rows;
use super::tokens::Tokens;
use super::{Check, ListingWatch, Outcome, Session, ToolReport, is_read_only};

impl<S: Service<RoleClient> + ListingWatch> Session<'_, S> {
    /// `annotations.read_only_idempotent`: the first valid call again, the same `ok` and
    /// `data`.
    pub(super) async fn read_only_idempotent(
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
    if before[field::OK] != after[field::OK] {
        return false;
    }
    if before[field::DATA] == after[field::DATA] {
        return true;
    }
    let budget_cut = |envelope: &Value| {
        envelope[field::COMPLETENESS][completeness_field::TRUNCATION_REASONS]
            .as_array()
            .is_some_and(|reasons| reasons.iter().any(|reason| reason == "budget_limit"))
    };
    if !budget_cut(before) && !budget_cut(after) {
        return false;
    }
    let (first, second) = (rows(before), rows(after));
    let shared = first.len().min(second.len());
    before[field::COMPLETENESS][completeness_field::TOTAL]
        == after[field::COMPLETENESS][completeness_field::TOTAL]
        && shared > 0
        && first[..shared] == second[..shared]
}

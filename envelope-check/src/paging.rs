//! `paging.follow` and `paging.tampered`: a tool's pages followed to their end against one
//! larger page, and a token with one character changed.

use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::envelope as field;
use envelope_core::fields::next_action as action_field;
use envelope_core::paging::{DEFAULT_CONTINUATION_FIELD, NEXT_PAGE};
use std::collections::{BTreeMap, HashSet};
use std::ops::ControlFlow;

use rmcp::RoleClient;
use rmcp::model::Tool;
use rmcp::service::Service;

use serde_json::{Map, Value};

use super::tokens::Tokens;
use super::{
    Check, ListingWatch, OUT_OF_TIME, Outcome, Session, ToolReport, digest, excerpt, inputs,
};

/// The most rows followed across a tool's pages: past it, following stops (and proves
/// nothing), so that pages of millions of tiny rows cost a bounded memory.
const MAX_ROWS_FOLLOWED: usize = 1_000_000;

/// What following a tool's pages found.
struct Followed {
    /// The rows seen, as digests: a server that pages forever costs a bounded memory.
    seen: Vec<u64>,
    /// The first row that came twice, as an excerpt.
    repeated: Option<String>,
    /// The first token given out, and the arguments it was given out with.
    first_token: Option<(String, Map<String, Value>)>,
    /// How many pages were called.
    pages: usize,
    /// Whether the pages were followed to their end (or to a row twice, or too many rows):
    /// else a limit or the time budget cut them short.
    reached_end: bool,
    /// The arguments of the last page's call.
    arguments: Map<String, Value>,
}

impl<S: Service<RoleClient> + ListingWatch> Session<'_, S> {
    /// `paging.follow` and `paging.tampered`: a call with a small page, followed to its end,
    /// against one call with the largest page.
    pub(super) async fn paging(&mut self, report: &mut ToolReport, tool: &Tool, schema: &Value) {
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
        let ControlFlow::Continue(one_page) = self.one_page(report, tool, &whole).await else {
            return;
        };
        // Only a whole answer that is an `ok` page of rows can be followed and compared. A
        // dialect may say nothing of a whole, uncut collection (pincher writes a cut only):
        // there the longest list of the payload is the page.
        let described = |page: &Value| {
            page[field::COMPLETENESS].is_object()
                || self.config.dialect != envelope_core::Dialect::Envelope
        };
        let Some(one_page) = one_page
            .filter(|page| page[field::OK] == true && described(page) && !rows(page).is_empty())
        else {
            report.skip(follow);
            report.skip(tamper);
            return;
        };
        let (all_rows, complete) = whole_rows(one_page, tool, &whole);
        // Some ten pages of it.
        let size = (all_rows.len() as u64).div_ceil(10).min(i64::MAX as u64) as i64;
        let size = size.max(least);
        let mut arguments = base;
        arguments.insert(size_field, Value::from(size));
        let Some(followed) = self
            .follow_pages(report, tool, arguments, &all_rows, complete)
            .await
        else {
            return;
        };
        if self.config.enabled(follow) {
            judge_following(report, &followed, &all_rows, complete);
        }
        if self.config.enabled(tamper) && report.stopped.is_none() {
            match followed.first_token {
                None => report.skip(tamper),
                Some((token, arguments)) => self.tampered(report, tool, arguments, &token).await,
            }
        }
    }

    /// The answer to `whole`, the call with the largest page, judged: `None` when it was
    /// refused or answered no envelope; `Break` when the connection was lost (the report then
    /// says why, and nothing more is checked).
    async fn one_page(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        whole: &Map<String, Value>,
    ) -> ControlFlow<(), Option<Value>> {
        ControlFlow::Continue(match self.call(tool, whole).await {
            Outcome::Result(result) => self.judge.response(report, tool, whole, &result),
            Outcome::Refused(_) => None,
            Outcome::Lost(reason) => {
                report.stopped = Some(reason);
                return ControlFlow::Break(());
            }
        })
    }

    /// Follows a tool's pages from `arguments`: to the last, to a row seen twice or to more
    /// rows than the one larger page (`all_rows`, when `complete`), else as far as the page
    /// limit, the row limit and the time budget allow. `None` when a page was refused, lost or
    /// not an `ok` envelope: the report then says so, and nothing more is checked.
    async fn follow_pages(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        mut arguments: Map<String, Value>,
        all_rows: &[u64],
        complete: bool,
    ) -> Option<Followed> {
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
            if pages >= self.config.max_pages || seen.len() >= MAX_ROWS_FOLLOWED {
                break false;
            }
            pages += 1;
            let page = self.followed_page(report, tool, &arguments, pages).await?;
            let tokens = Tokens::of(&page);
            for row in rows(&page) {
                let row = tokens.masked(&row);
                let row_digest = digest(&row);
                if !distinct.insert(row_digest) && repeated.is_none() {
                    repeated = Some(excerpt(&row));
                }
                seen.push(row_digest);
            }
            // A row twice, or more rows than the whole result: following on proves no more,
            // and a server that pages forever is caught here.
            if repeated.is_some() || (complete && seen.len() > all_rows.len()) {
                break true;
            }
            let Some((token, next)) = next_page(&page, tool, &arguments) else {
                break true;
            };
            if let Some(token) = token {
                first_token.get_or_insert_with(|| (token, next.clone()));
            }
            arguments = next;
        };
        Some(Followed {
            seen,
            repeated,
            first_token,
            pages,
            reached_end,
            arguments,
        })
    }

    /// Page number `pages` of a tool's, called with `arguments` and judged: `None` when it was
    /// refused, lost or not an `ok` envelope (the report then says which).
    async fn followed_page(
        &mut self,
        report: &mut ToolReport,
        tool: &Tool,
        arguments: &Map<String, Value>,
        pages: usize,
    ) -> Option<Value> {
        let follow = Check::PagingFollow;
        let page = match self.call(tool, arguments).await {
            Outcome::Result(result) => self.judge.response(report, tool, arguments, &result),
            Outcome::Refused(reason) => {
                let detail = format!("page {pages} was refused: {reason}");
                report.fail(follow, arguments, &detail, None);
                return None;
            }
            Outcome::Lost(reason) => {
                report.stopped = Some(reason);
                return None;
            }
        };
        let Some(page) = page.filter(|page| page[field::OK] == true) else {
            let detail = format!("page {pages} answered no `ok` envelope");
            report.fail(follow, arguments, &detail, None);
            return None;
        };
        Some(page)
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
            .map_or_else(
                || DEFAULT_CONTINUATION_FIELD.to_owned(),
                |(key, _)| key.clone(),
            );
        arguments.insert(field, Value::from(tamper(token)));
        match self.call(tool, &arguments).await {
            Outcome::Result(result) => {
                match self.judge.response(report, tool, &arguments, &result) {
                    Some(answer) if self.judge.refuses_as_validation(&answer) => {
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
}

/// The one larger page's rows, as digests (its tokens masked), and whether it is the whole
/// result: it offers no next page and does not say it was cut. The page is taken, and dropped
/// here, so that it is not held while the pages are followed.
fn whole_rows(one_page: Value, tool: &Tool, whole: &Map<String, Value>) -> (Vec<u64>, bool) {
    let tokens = Tokens::of(&one_page);
    let all_rows: Vec<u64> = rows(&one_page)
        .iter()
        .map(|row| digest(&tokens.masked(row)))
        .collect();
    let complete = next_page(&one_page, tool, whole).is_none()
        && one_page[field::COMPLETENESS][completeness_field::COMPLETE] != false;
    (all_rows, complete)
}

/// `paging.follow`'s verdict: the pages followed against the one larger page's rows
/// (`all_rows`, the whole result when `complete`).
fn judge_following(report: &mut ToolReport, followed: &Followed, all_rows: &[u64], complete: bool) {
    let follow = Check::PagingFollow;
    let Followed {
        seen,
        repeated,
        pages,
        reached_end,
        arguments,
        ..
    } = followed;
    if let Some(row) = repeated {
        let detail = format!("a row came twice across pages: {row}");
        report.fail(follow, arguments, &detail, None);
    } else if !reached_end {
        // A part of the pages proves nothing about the whole.
        report.skip(follow);
    } else if complete && !same_rows(seen, all_rows) {
        let detail = format!(
            "{} rows across {pages} pages, {} in one page: rows were skipped or added",
            seen.len(),
            all_rows.len()
        );
        report.fail(follow, arguments, &detail, None);
    } else if !complete && !same_prefix(seen, all_rows) {
        // The one page holds only the first part: the pages must begin with it.
        let detail = format!(
            "the pages do not begin with the rows of one larger page ({} rows)",
            all_rows.len()
        );
        report.fail(follow, arguments, &detail, None);
    } else if !complete && *pages < 2 {
        // One page, and a larger one that was not whole: nothing to compare.
        report.skip(follow);
    } else {
        report.pass(follow);
    }
}

/// The next page's call and its token: the `next-page` action's arguments exactly as given
/// (the token among them, under `continuation` or whichever argument holds the page's
/// `completeness.continuation`), when the page suggests its own next page; else, from a server
/// that writes the token only in `completeness.continuation`, the same arguments with it.
/// `None` when the page offers no next page.
fn next_page(
    page: &Value,
    tool: &Tool,
    arguments: &Map<String, Value>,
) -> Option<(Option<String>, Map<String, Value>)> {
    let written = page[field::COMPLETENESS][completeness_field::CONTINUATION].as_str();
    let suggested = page[field::NEXT_ACTIONS]
        .as_array()
        .into_iter()
        .flatten()
        // Its own next page: another tool's arguments are not this one's.
        .filter(|action| {
            action["id"] == NEXT_PAGE && action[action_field::TOOL] == tool.name.as_ref()
        })
        // Exactly as given, as a model copies it.
        .find_map(|action| action[action_field::ARGUMENTS].as_object().cloned());
    match (suggested, written) {
        (Some(next), written) => {
            // The token: the page's written one, the usual argument, or else the one string
            // argument the action changed (a tool may name its token otherwise).
            let changed = || {
                next.iter()
                    .find(|(key, value)| value.is_string() && arguments.get(*key) != Some(value))
                    .and_then(|(_, value)| value.as_str())
            };
            let token = written
                .filter(|token| next.values().any(|value| value == token))
                .or_else(|| next.get(DEFAULT_CONTINUATION_FIELD).and_then(Value::as_str))
                .or_else(changed)
                .map(str::to_owned);
            Some((token, next))
        }
        (None, Some(token)) => {
            let mut next = arguments.clone();
            next.insert(DEFAULT_CONTINUATION_FIELD.to_owned(), Value::from(token));
            Some((Some(token.to_owned()), next))
        }
        (None, None) => None,
    }
}

/// The rows of a page: `data` when it is a list, else the list in `data` whose length is
/// `completeness.returned` (or the longest).
pub(super) fn rows(envelope: &Value) -> Vec<Value> {
    let data = &envelope[field::DATA];
    if let Some(rows) = data.as_array() {
        return rows.clone();
    }
    let returned = envelope[field::COMPLETENESS][completeness_field::RETURNED].as_u64();
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

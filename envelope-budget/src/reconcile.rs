//! Keeping `completeness` and `next_step` true to the rows sent when the budget cut the list
//! they describe, and the room that takes.
//!
//! The envelope's own fields travel as a JSON map through the budget stage (they are sized and
//! cut as JSON); what this module decides it decides on the typed envelope the map was written
//! from ([`Described`]), and writes back into the map through the wire names of
//! [`envelope_core::fields`]. Nothing is read back out of the JSON into a core type.

use std::collections::HashSet;

use envelope_core::fields::completeness as completeness_field;
use envelope_core::fields::envelope as field;
use envelope_core::fields::next_action as action_field;
use envelope_core::paging::Resume;
use envelope_core::stage::normalize_next_actions;
use envelope_core::{Completeness, NextAction, ToolError, TruncationReason, Unit};
use serde_json::{Map, Value};

use crate::cut::{ListCut, ROOT_LIST_KEY};
use crate::size::rest_counts;
use crate::tokens::Counts;

/// `next_step`'s advice after the budget cut the described rows, without a way to resume.
const BUDGET_CUT: &str =
    "the response budget cut the rest; narrow the query or lower the page size";

/// `next_step`'s advice after the budget cut the described rows of a page that resumes.
const BUDGET_CUT_RESUMABLE: &str =
    "the response budget cut the rest; follow `next-page`, or lower the page size";

/// `next_step`'s advice after the budget cut the described rows of a page that resumes, for a
/// tool that takes no page size.
const BUDGET_CUT_FOLLOW: &str = "the response budget cut the rest; follow `next-page`";

/// What the typed envelope says of the rows, beside the JSON map written from it: its
/// `completeness` and its next actions, as the tool (and the runtime) made them.
#[derive(Clone, Copy)]
pub(crate) struct Described<'a> {
    pub(crate) completeness: Option<&'a Completeness>,
    pub(crate) actions: &'a [NextAction],
}

/// What becomes of a page's continuation when the budget cuts the rows it follows.
pub(crate) enum Continue<'a> {
    /// Sealed to resume right after the last row sent; the next-page action carries the new
    /// token (and is added when the page was the last and had none).
    After(&'a Resume),
    /// Dropped, with the actions carrying it: nothing can re-seal it.
    Drop,
}

impl<'a> Continue<'a> {
    pub(crate) fn after(resume: Option<&'a Resume>) -> Self {
        resume.map_or(Continue::Drop, Continue::After)
    }
}

/// Room for what [`reconcile_completeness`] may write if the described list is cut: the
/// completeness with `budget_limit` and the re-rendered `next_step`, at their widest (the kept
/// count has no more digits than the original). A re-sealed token is as long as the one it
/// replaces.
///
/// A payload that is a bare list of `bare_list` rows, without a `completeness`, gets one when
/// it is cut: its room is reserved too.
pub(crate) fn completeness_reserve(
    rest: &Map<String, Value>,
    described: Described<'_>,
    resume: Option<&Resume>,
    bare_list: Option<usize>,
) -> Counts {
    let cut = match (described.completeness, bare_list) {
        // The kept count has no more digits than the original.
        (Some(completeness), _) => ListCut {
            key: ROOT_LIST_KEY.to_owned(),
            from: completeness.returned(),
            to: completeness.returned(),
        },
        // A real cut (a list of N rows cut to N would be complete): one row fewer.
        (None, Some(rows)) if rows > 0 => ListCut {
            key: ROOT_LIST_KEY.to_owned(),
            from: rows,
            to: rows - 1,
        },
        (None, _) => return Counts::default(),
    };
    // Reconciling rewrites `completeness` and `next_step`, may drop actions (which only
    // shrinks the response) and may add a next-page action: size those members, not a copy
    // of the whole response. A re-sealed token is as long as the one it replaces.
    let mut before = Map::new();
    for key in [field::COMPLETENESS, field::NEXT_STEP] {
        if let Some(value) = rest.get(key) {
            before.insert(key.to_owned(), value.clone());
        }
    }
    let mut widest = before.clone();
    reconcile_completeness(
        &mut widest,
        described,
        std::slice::from_ref(&cut),
        Continue::after(resume),
    );
    // Each member added joins the response's others with a comma of its own.
    let separators = Counts {
        punct: widest.len().saturating_sub(before.len()) as u64,
        ..Counts::default()
    };
    crate::size::sub(rest_counts(&widest, false), rest_counts(&before, false)) + separators
}

/// When the list that `completeness` describes was cut, `returned` drops to what is sent,
/// `budget_limit` joins the reasons, the continuation (which pointed past the unsent rows) is
/// re-sealed after the last row sent (or, when it cannot be, dropped with the actions carrying
/// it), and `next_step` is re-rendered with the sent numbers.
///
/// The described list is the payload itself when it is an array, else the cut top-level list
/// whose original length equals `completeness.returned`.
pub(crate) fn reconcile_completeness(
    rest: &mut Map<String, Value>,
    described: Described<'_>,
    cuts: &[ListCut],
    next: Continue<'_>,
) {
    if cuts.is_empty() {
        return;
    }
    let Some(completeness) = described.completeness else {
        // A bare list the budget cut: `completeness` says so, never a silently shorter list.
        if let Some(cut) = cuts.iter().find(|cut| cut.key == ROOT_LIST_KEY) {
            describe_bare_cut(rest, cut);
        }
        return;
    };
    let returned = completeness.returned();
    let Some(cut) = cuts
        .iter()
        .find(|cut| cut.key == ROOT_LIST_KEY && cut.from == returned)
        .or_else(|| cuts.iter().find(|cut| cut.from == returned))
    else {
        return;
    };
    let mut parts = completeness.to_parts();
    parts.returned = cut.to;
    parts.complete = false;
    parts.truncated = true;
    if !parts
        .truncation_reasons
        .contains(&TruncationReason::BudgetLimit)
    {
        parts.truncation_reasons.push(TruncationReason::BudgetLimit);
    }
    let old = parts.continuation.take();
    let page_size = match &next {
        Continue::After(resume) => resume.takes_page_size(),
        Continue::Drop => true,
    };
    match (next, old) {
        (Continue::After(resume), old) => match resume.after(cut.to) {
            Ok(Some(fresh)) => {
                match &old {
                    // The next-page action carries the old token in its arguments: it gets
                    // the new one, and still resumes exactly as given.
                    Some(token) => replace_token(rest, token, &fresh),
                    // The last page had no next page; now it has one.
                    None => add_action(rest, resume.next_page(&fresh)),
                }
                parts.continuation = Some(fresh);
            }
            // Nothing sent, or sealing failed: the old token would skip rows.
            Ok(None) | Err(_) => {
                if let Some(token) = old {
                    drop_actions_carrying(rest, described.actions, &token);
                }
            }
        },
        (Continue::Drop, Some(token)) => drop_actions_carrying(rest, described.actions, &token),
        (Continue::Drop, None) => {}
    }
    let advice = match (parts.continuation.is_some(), page_size) {
        (true, true) => BUDGET_CUT_RESUMABLE,
        (true, false) => BUDGET_CUT_FOLLOW,
        (false, _) => BUDGET_CUT,
    };
    let Ok(updated) = Completeness::try_from_parts(parts) else {
        return;
    };
    describe(rest, &updated, advice);
    keep_orphan_token(rest, updated.continuation());
}

/// Writes `completeness.continuation` when no next action carries the page's token in its
/// arguments: a page finished without a next-page action (by hand, not by the `Pager`) still
/// says how to resume, once. A token an action carries is written nowhere else.
pub(crate) fn keep_orphan_token(rest: &mut Map<String, Value>, token: Option<&str>) {
    let Some(token) = token else {
        return;
    };
    let carried = rest
        .get(field::NEXT_ACTIONS)
        .and_then(Value::as_array)
        .is_some_and(|actions| {
            actions.iter().any(|action| {
                action[action_field::ARGUMENTS]
                    .as_object()
                    .is_some_and(|arguments| arguments.values().any(|value| value == token))
            })
        });
    if !carried && let Some(Value::Object(completeness)) = rest.get_mut(field::COMPLETENESS) {
        completeness.insert(
            completeness_field::CONTINUATION.to_owned(),
            Value::String(token.to_owned()),
        );
    }
}

/// The `completeness` and `next_step` of a payload that is a bare list the budget cut: `to` of
/// its `from` items, cut by the budget.
fn describe_bare_cut(rest: &mut Map<String, Value>, cut: &ListCut) {
    if let Ok(completeness) = Completeness::truncated_page(
        Unit::ITEM,
        cut.to,
        Some(cut.from),
        TruncationReason::BudgetLimit,
        None,
    ) {
        describe(rest, &completeness, BUDGET_CUT);
    }
}

/// Writes `completeness`, and the `next_step` it renders with `advice`.
fn describe(rest: &mut Map<String, Value>, completeness: &Completeness, advice: &str) {
    let step = completeness.next_step(advice);
    if let Ok(value) = serde_json::to_value(completeness) {
        rest.insert(field::COMPLETENESS.to_owned(), value);
    }
    if let Some(step) = step {
        rest.insert(field::NEXT_STEP.to_owned(), Value::String(step));
    }
}

/// Adds `action` (the next-page call the budget stage made possible) to the next actions.
fn add_action(rest: &mut Map<String, Value>, action: Result<NextAction, ToolError>) {
    let Ok(Ok(action)) = action.map(serde_json::to_value) else {
        return;
    };
    match rest.get_mut(field::NEXT_ACTIONS) {
        Some(Value::Array(actions)) => actions.push(action),
        _ => {
            rest.insert(field::NEXT_ACTIONS.to_owned(), Value::Array(vec![action]));
        }
    }
}

/// Puts `fresh` where the next actions pass `token` as an argument: the next-page call then
/// resumes where the budget cut the page.
fn replace_token(rest: &mut Map<String, Value>, token: &str, fresh: &str) {
    let Some(Value::Array(actions)) = rest.get_mut(field::NEXT_ACTIONS) else {
        return;
    };
    for action in actions {
        if let Some(Value::Object(arguments)) = action.get_mut(action_field::ARGUMENTS) {
            for value in arguments.values_mut() {
                if value == token {
                    *value = Value::String(fresh.to_owned());
                }
            }
        }
    }
}

/// Whether `action` continues from `token`: it passes `token` as one of its arguments.
fn carries(action: &NextAction, token: &str) -> bool {
    action.arguments.values().any(|value| value == token)
}

/// Drops the next actions that pass `token` as an argument (a next-page call), and those that
/// depended on them (the list normalized again, on the typed `actions` the JSON was written
/// from). The token points past rows the budget cut, so following it would skip them.
fn drop_actions_carrying(rest: &mut Map<String, Value>, actions: &[NextAction], token: &str) {
    let Some(Value::Array(written)) = rest.remove(field::NEXT_ACTIONS) else {
        return;
    };
    let id_of = |action: &Value| {
        action
            .get(action_field::ID)
            .and_then(Value::as_str)
            .map(str::to_owned)
    };
    // The actions still in the response (the own fields' cut may have dropped some), less
    // those carrying the token; normalizing drops the ones that depended on them.
    let present: HashSet<String> = written.iter().filter_map(id_of).collect();
    let kept = normalize_next_actions(
        actions
            .iter()
            .filter(|action| present.contains(&action.id) && !carries(action, token))
            .cloned(),
    );
    let kept: HashSet<&str> = kept.iter().map(|action| action.id.as_str()).collect();
    let written: Vec<Value> = written
        .into_iter()
        .filter(|action| id_of(action).is_some_and(|id| kept.contains(id.as_str())))
        .collect();
    if !written.is_empty() {
        rest.insert(field::NEXT_ACTIONS.to_owned(), Value::Array(written));
    }
}

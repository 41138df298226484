//! Size and paging: `completeness` in Frigg's shape, carrying the next page's token, and
//! `next_actions` in Frigg's explicit action shape.

use envelope_core::limits::MAX_NEXT_ACTIONS;
use envelope_core::{DependencyMode, NextAction};
use serde_json::Value;

use super::wire::{Action, Answer, Completeness};
use crate::Wire;

/// Writes `completeness` and `next_actions`.
pub(super) fn write(wire: &Wire<'_>, answer: &mut Answer) {
    answer.completeness = completeness(wire);
    answer.next_actions = actions(wire);
}

/// Frigg's `completeness` ([`Completeness`]) from the envelope's, with the next page's token
/// (the one the `next-page` action carries: Frigg's clients store only this). An odd envelope's
/// completeness that does not read as one is left out rather than sent contradictory.
fn completeness(wire: &Wire<'_>) -> Option<Completeness> {
    let envelope: envelope_core::Completeness =
        serde_json::from_value(Value::Object(wire.completeness()?.clone())).ok()?;
    Some(Completeness::of(&envelope, wire.continuation()))
}

/// The envelope's next actions, at most eight, each in Frigg's closed shape ([`Action`]):
/// `order` and `dependencies` written even at their defaults, `arguments` exactly as given. An
/// entry that is no next action (an odd envelope's) is left out rather than sent malformed.
fn actions(wire: &Wire<'_>) -> Vec<Action> {
    let mut actions: Vec<Action> = wire
        .next_actions()
        .iter()
        .filter_map(|action| serde_json::from_value::<NextAction>(action.clone()).ok())
        .take(MAX_NEXT_ACTIONS)
        .map(Action::from)
        .collect();
    // An action left out above may be one a kept action depends on. A group may only name
    // kept actions of a lower order, once each: an `any` group keeps those it has; an action
    // whose `all` group lost one, or whose `any` group lost every one, cannot be run as its
    // dependencies say and goes too, until what is left is whole.
    loop {
        let orders: Vec<(String, u16)> = actions
            .iter()
            .map(|action| (action.id.clone(), action.order))
            .collect();
        let before = actions.len();
        actions.retain_mut(|action| {
            let order = action.order;
            action.dependencies.iter_mut().all(|group| {
                let mut named: Vec<String> = Vec::new();
                for id in group.action_ids.drain(..) {
                    if !named.contains(&id) {
                        named.push(id);
                    }
                }
                let asked = named.len();
                named.retain(|id| orders.iter().any(|(known, at)| known == id && *at < order));
                let whole = match group.mode {
                    DependencyMode::All => named.len() == asked,
                    DependencyMode::Any => !named.is_empty(),
                };
                group.action_ids = named;
                whole
            })
        });
        if actions.len() == before {
            break;
        }
    }
    actions
}

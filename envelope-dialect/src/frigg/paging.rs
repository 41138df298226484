//! Size and paging: `completeness` in Frigg's shape, carrying the next page's token, and
//! `next_actions` in Frigg's explicit action shape.

use envelope_core::NextAction;
use envelope_core::limits::MAX_NEXT_ACTIONS;
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
    wire.next_actions()
        .iter()
        .filter_map(|action| serde_json::from_value::<NextAction>(action.clone()).ok())
        .take(MAX_NEXT_ACTIONS)
        .map(Action::from)
        .collect()
}

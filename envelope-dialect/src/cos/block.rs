//! The diagnostics block `data.meta`: the contract's own stamps, the trimmer's markers, and the
//! envelope's agent-facing signals the contract has no field for.

use envelope_budget::ROOT_LIST_KEY;
use envelope_core::Verdict;
use envelope_core::fields::{completeness, envelope as field, next_action};
use envelope_core::meta_keys;
use serde_json::{Map, Value};

use super::key;
use super::shape::Shape;

/// The JSON type a carried field must have to be carried (an odd envelope's ill-typed field
/// is left out rather than sent in a shape the contract's schema refuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A string.
    Text,
    /// An object.
    Object,
    /// A non-empty list; only its object items are carried.
    List,
}

/// The envelope's fields carried in the block under their own names, in the order written:
/// the signals an agent branches on that the contract has no field of its own for. The last
/// two are `meta` members, the rest top-level fields.
const CARRIED: [(&str, Kind); 11] = [
    (field::VERDICT, Kind::Text),
    (field::SUMMARY_LINE, Kind::Text),
    (field::NEXT_STEP, Kind::Text),
    (field::COMPLETENESS, Kind::Object),
    (field::EMPTY_REASON, Kind::Text),
    (field::DIAGNOSIS, Kind::Text),
    (field::NEXT_ACTIONS, Kind::List),
    (field::WARNINGS, Kind::List),
    (field::DIAGNOSTICS, Kind::List),
    (meta_keys::BINARY_DRIFT_WARNING, Kind::Object),
    (meta_keys::ATTACHMENTS, Kind::List),
];

/// Whether a carried field is a `meta` member rather than a top-level field.
fn in_meta(name: &str) -> bool {
    name == meta_keys::BINARY_DRIFT_WARNING || name == meta_keys::ATTACHMENTS
}

/// Whether `name` is a key only the library writes in the block (on this call or another): a
/// payload's own `meta` member of that name is not kept. `layer` is not one: the contract lets
/// a caller supply it, so a payload's own layer stands when the tool declares none.
pub(super) fn is_library_key(name: &str) -> bool {
    name.starts_with(meta_keys::MARKER_PREFIX)
        || [
            key::TOKENS_ESTIMATED,
            key::TRUNCATED,
            meta_keys::ENVELOPE_UNSHRINKABLE,
        ]
        .contains(&name)
        || CARRIED.iter().any(|(carried, _)| *carried == name)
}

/// The block for the envelope read by `wire`, its payload sent in `shape`. `tokens_estimated`
/// is a placeholder, stamped once the whole response is written.
pub(super) fn diagnostics(wire: &crate::Wire<'_>, shape: Shape) -> Map<String, Value> {
    let mut block = Map::new();
    if let Some(layer) = wire.meta_field(meta_keys::LAYER).filter(|l| l.is_string()) {
        block.insert(key::LAYER.to_owned(), layer.clone());
    }
    block.insert(key::TOKENS_ESTIMATED.to_owned(), Value::from(0u64));
    let ended = ended_by_budget(wire, shape);
    block.insert(
        key::TRUNCATED.to_owned(),
        Value::Bool(wire.budget_cut() || ended.is_some()),
    );
    for (name, value) in wire.trim_markers() {
        let (name, value) = marker(name, value, shape);
        block.insert(name, value);
    }
    // The page the budget ended, as the trimmer's markers say a cut: `<key>_from/_to`.
    if let Some(BudgetEnded { key, from, to }) = ended {
        block
            .entry(meta_keys::list_cut_from(&key))
            .or_insert_with(|| Value::from(from));
        block
            .entry(meta_keys::list_cut_to(&key))
            .or_insert_with(|| Value::from(to));
    }
    if let Some(unshrinkable) = wire
        .meta_field(meta_keys::ENVELOPE_UNSHRINKABLE)
        .filter(|flag| flag.is_boolean())
    {
        block.insert(
            meta_keys::ENVELOPE_UNSHRINKABLE.to_owned(),
            unshrinkable.clone(),
        );
    }
    carry(wire, &mut block);
    block
}

/// A page the response budget ended (`budget_limit` among its truncation reasons): the body
/// was shrunk to fit the budget, which is what this contract's `truncated` says, whether the
/// tool stopped early or the trimmer cut. `key` is the list it describes (the payload's one
/// top-level list of the page's length, or the wrapped list), `from` the rows the page would
/// have held (the rest of the known total), `to` the rows sent.
struct BudgetEnded {
    key: String,
    from: u64,
    to: u64,
}

/// The budget-ended page of the envelope read by `wire`, when it has one; `None` also when the
/// list or the total is not known (then `truncated` alone says it, with no marker guessed).
fn ended_by_budget(wire: &crate::Wire<'_>, shape: Shape) -> Option<BudgetEnded> {
    if !wire.budget_ended_page() {
        return None;
    }
    let count = |name| wire.completeness_field(name).and_then(Value::as_u64);
    let to = count(completeness::RETURNED)?;
    let from = count(completeness::TOTAL)?.saturating_sub(count(completeness::OFFSET).unwrap_or(0));
    let key = match (shape, wire.data()?) {
        (Shape::Wrapped(under), Value::Array(_)) => under.to_owned(),
        (Shape::Object, Value::Object(members)) => {
            let mut lists = members
                .iter()
                .filter(|(_, value)| value.as_array().is_some_and(|rows| rows.len() as u64 == to));
            let (key, _) = lists.next()?;
            // Two lists of the page's length: which one the page is, is not guessed.
            if lists.next().is_some() {
                return None;
            }
            key.clone()
        }
        _ => return None,
    };
    Some(BudgetEnded { key, from, to })
}

/// The envelope's agent-facing signals, under their own names, when present and well typed: a
/// verdict only when it says more than `ok: true` (one of the alphabet but `INFO`), lists only
/// when not empty, and a next action only when it can be followed verbatim (a `tool` and an
/// object of `arguments`).
fn carry(wire: &crate::Wire<'_>, block: &mut Map<String, Value>) {
    for (name, kind) in CARRIED {
        let value = if in_meta(name) {
            wire.meta_field(name)
        } else {
            wire.envelope().get(name)
        };
        if let Some(value) = value.and_then(|value| carried(name, kind, value)) {
            block.insert(name.to_owned(), value);
        }
    }
}

/// `value` as the block carries it under `name`, or `None` when it has nothing to say.
fn carried(name: &str, kind: Kind, value: &Value) -> Option<Value> {
    match (kind, value) {
        (Kind::Text, Value::String(verdict)) if name == field::VERDICT => {
            let said = Verdict::ALL
                .iter()
                .any(|known| known.as_str() == verdict && *known != Verdict::Info);
            said.then(|| value.clone())
        }
        (Kind::Text, Value::String(_)) | (Kind::Object, Value::Object(_)) => Some(value.clone()),
        (Kind::List, Value::Array(items)) => {
            let kept: Vec<Value> = items
                .iter()
                .filter(|item| item.is_object())
                .filter(|item| name != field::NEXT_ACTIONS || followable(item))
                .cloned()
                .collect();
            (!kept.is_empty()).then_some(Value::Array(kept))
        }
        _ => None,
    }
}

/// Whether a next action names a tool and an object of arguments: what calling it verbatim
/// needs.
fn followable(action: &Value) -> bool {
    action.get(next_action::TOOL).is_some_and(Value::is_string)
        && action
            .get(next_action::ARGUMENTS)
            .is_some_and(Value::is_object)
}

/// A trimmer marker as the block names it. Markers about a wrapped payload's root (a list the
/// envelope calls `data`) are renamed to the key it is wrapped under, and the JSON pointers and
/// labels they hold are moved under it, so that they point into `data` as sent.
fn marker(name: &str, value: &Value, shape: Shape) -> (String, Value) {
    let Shape::Wrapped(under) = shape else {
        return (name.to_owned(), value.clone());
    };
    if name == meta_keys::list_cut_from(ROOT_LIST_KEY) {
        return (meta_keys::list_cut_from(under), value.clone());
    }
    if name == meta_keys::list_cut_to(ROOT_LIST_KEY) {
        return (meta_keys::list_cut_to(under), value.clone());
    }
    let value = match name {
        meta_keys::TRUNCATED_STRING_FIELDS => pointers_under(value, under),
        meta_keys::TRUNCATED_NESTED_LISTS | meta_keys::TRUNCATED_NESTED_BUCKETS => {
            labels_under(value, under)
        }
        _ => value.clone(),
    };
    (name.to_owned(), value)
}

/// JSON pointers into the payload, moved under `under` (`/3/text` becomes
/// `/results/3/text`); an item that is no string points nowhere and is left out.
fn pointers_under(value: &Value, under: &str) -> Value {
    let Value::Array(pointers) = value else {
        return value.clone();
    };
    let moved = pointers
        .iter()
        .filter_map(Value::as_str)
        .map(|pointer| Value::String(format!("/{under}{pointer}")));
    Value::Array(moved.collect())
}

/// Nested-list labels of the root list (`data[].refs`), renamed for `under`
/// (`results[].refs`); other labels are kept.
fn labels_under(value: &Value, under: &str) -> Value {
    let Value::Object(labels) = value else {
        return value.clone();
    };
    let renamed = labels.iter().map(|(label, detail)| {
        let label = match label.strip_prefix(ROOT_LIST_KEY) {
            Some(rest) if rest.starts_with("[]") => format!("{under}{rest}"),
            _ => label.clone(),
        };
        (label, detail.clone())
    });
    Value::Object(renamed.collect())
}

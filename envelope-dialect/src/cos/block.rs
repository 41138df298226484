//! The diagnostics block `data.meta`: the contract's own stamps, the trimmer's markers, and the
//! envelope's agent-facing signals the contract has no field for.

use envelope_budget::ROOT_LIST_KEY;
use envelope_core::Verdict;
use envelope_core::fields::{completeness, envelope as field};
use envelope_core::meta_keys;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::key;
use super::shape::Shape;
use super::wire::Block;

/// The contract's one dict of lists whose buckets the trimmer caps.
const EDGES_BY_TYPE: &str = "edges_by_type";

/// The envelope's fields carried in the block under their own names: the signals an agent
/// branches on that the contract has no field of its own for. The last two are `meta`
/// members, the rest top-level fields.
const CARRIED: [&str; 11] = [
    field::VERDICT,
    field::SUMMARY_LINE,
    field::NEXT_STEP,
    field::COMPLETENESS,
    field::EMPTY_REASON,
    field::DIAGNOSIS,
    field::NEXT_ACTIONS,
    field::WARNINGS,
    field::DIAGNOSTICS,
    meta_keys::BINARY_DRIFT_WARNING,
    meta_keys::ATTACHMENTS,
];

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
        || CARRIED.contains(&name)
}

/// The block for the envelope read by `wire`, its payload sent in `shape`. `tokens_estimated`
/// is a placeholder, stamped once the whole response is written.
pub(super) fn diagnostics(wire: &crate::Wire<'_>, shape: Shape) -> Block {
    let ended = ended_by_budget(wire, shape);
    let mut block = Block {
        layer: text(wire.meta_field(meta_keys::LAYER)),
        tokens_estimated: 0,
        truncated: wire.budget_cut() || ended.is_some(),
        truncated_string_fields: None,
        truncated_edges_by_type: None,
        truncated_subgraph: None,
        envelope_unshrinkable: wire
            .meta_field(meta_keys::ENVELOPE_UNSHRINKABLE)
            .and_then(Value::as_bool),
        verdict: None,
        summary_line: None,
        next_step: None,
        completeness: None,
        empty_reason: None,
        diagnosis: None,
        next_actions: Vec::new(),
        warnings: Vec::new(),
        diagnostics: Vec::new(),
        binary_drift_warning: None,
        attachments: Vec::new(),
        more: Map::new(),
    };
    for (name, value) in wire.trim_markers() {
        let (name, value) = marker(name, value, shape);
        match name.as_str() {
            meta_keys::TRUNCATED_STRING_FIELDS => {
                block.truncated_string_fields = typed(&value);
            }
            meta_keys::TRUNCATED_SUBGRAPH => block.truncated_subgraph = value.as_bool(),
            edges if edges == meta_keys::buckets(EDGES_BY_TYPE) => {
                block.truncated_edges_by_type = typed(&value);
            }
            _ => {
                block.more.insert(name, value);
            }
        }
    }
    // The page the budget ended, as the trimmer's markers say a cut: `<key>_from/_to`.
    if let Some(BudgetEnded { key, from, to }) = ended {
        block
            .more
            .entry(meta_keys::list_cut_from(&key))
            .or_insert_with(|| Value::from(from));
        block
            .more
            .entry(meta_keys::list_cut_to(&key))
            .or_insert_with(|| Value::from(to));
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

/// The envelope's agent-facing signals, under their own names, when present and well typed (an
/// odd envelope's ill-typed field is left out rather than sent in a shape the contract's
/// schema refuses): a verdict only when it says more than `ok: true` (one of the alphabet but
/// `INFO`), lists only when not empty, and a next action only when it can be followed verbatim
/// (a `tool` and an object of `arguments`).
fn carry(wire: &crate::Wire<'_>, block: &mut Block) {
    let top = |name: &str| wire.envelope().get(name);
    block.verdict = wire
        .verdict()
        .and_then(|verdict| Verdict::ALL.iter().find(|known| known.as_str() == verdict))
        .copied()
        .filter(|verdict| *verdict != Verdict::Info);
    block.summary_line = text(top(field::SUMMARY_LINE));
    block.next_step = text(top(field::NEXT_STEP));
    block.completeness = top(field::COMPLETENESS).and_then(typed);
    block.empty_reason = text(top(field::EMPTY_REASON));
    block.diagnosis = text(top(field::DIAGNOSIS));
    block.next_actions = items(top(field::NEXT_ACTIONS));
    block.warnings = items(top(field::WARNINGS));
    block.diagnostics = items(top(field::DIAGNOSTICS));
    block.binary_drift_warning = wire
        .meta_field(meta_keys::BINARY_DRIFT_WARNING)
        .and_then(typed);
    block.attachments = items(wire.meta_field(meta_keys::ATTACHMENTS));
}

/// A string field's text.
fn text(value: Option<&Value>) -> Option<String> {
    value.and_then(Value::as_str).map(str::to_owned)
}

/// `value` read as `T`, when it is one.
fn typed<T: DeserializeOwned>(value: &Value) -> Option<T> {
    T::deserialize(value).ok()
}

/// The items of a list that read as `T`; the others are left out.
fn items<T: DeserializeOwned>(value: Option<&Value>) -> Vec<T> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(typed)
        .collect()
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

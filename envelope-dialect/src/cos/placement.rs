//! Where the payload goes in `data`, and the diagnostics block beside it.
//!
//! The contract puts `meta` inside `data`, which only an object can hold: an object payload
//! gets it as a member, a list is sent under `results` and a scalar or null under `value`, each
//! beside `meta`. A payload's own `meta` object is kept, the library's keys winning.

use serde_json::{Map, Value};

use super::key;
use super::shape::Shape;
use super::wire::Block;

/// `data` as the contract sends it: the payload placed in `shape` (its [`Shape::of`]), with
/// `block` as its `meta`.
pub(super) fn place(data: Option<&Value>, shape: Shape, block: Block) -> Value {
    match (shape, data) {
        (Shape::Object, Some(Value::Object(payload))) => with_meta(payload, block),
        (Shape::Wrapped(under), payload) => {
            let mut wrapped = Map::new();
            wrapped.insert(under.to_owned(), payload.cloned().unwrap_or(Value::Null));
            wrapped.insert(key::META.to_owned(), object(&block));
            Value::Object(wrapped)
        }
        // Only an object payload is `Object`; an empty object keeps this total.
        (Shape::Object, _) => with_meta(&Map::new(), block),
    }
}

/// `payload` with `block` as its `meta`: the payload's own `meta` members are kept after the
/// library's, except those named like a key only the library writes (a caller may add keys,
/// never spoof the library's, even one the library left out on this call), and a `layer` that
/// is no name.
fn with_meta(payload: &Map<String, Value>, mut block: Block) -> Value {
    if let Some(Value::Object(own)) = payload.get(key::META) {
        for (name, value) in own {
            if name == key::LAYER {
                // A caller may supply the layer when the tool declares none.
                if block.layer.is_none() {
                    block.layer = value.as_str().map(str::to_owned);
                }
                continue;
            }
            if !super::block::is_library_key(name) && !block.more.contains_key(name) {
                block.more.insert(name.clone(), value.clone());
            }
        }
    }
    let mut data = payload.clone();
    data.insert(key::META.to_owned(), object(&block));
    Value::Object(data)
}

/// The block as the JSON object it is sent as.
fn object(block: &Block) -> Value {
    // A struct of strings, numbers and JSON values always serializes.
    serde_json::to_value(block).unwrap_or(Value::Null)
}

//! A payload to JSON without unbounded recursion: [`to_value_within`].
//!
//! Contract: however deeply a payload nests (a recursive struct four thousand levels deep, a
//! `serde_json::Value` of eight thousand), turning it into JSON recurses at most a fixed number
//! of levels, so a payload never overflows the stack of the thread that serializes it.

use std::cell::{Cell, RefCell};

use serde::ser::{self, Serialize};
use serde_json::{Map, Value};

/// Containers (arrays and objects) nested deeper than this inside a payload are cut by the
/// budget stage, within budget or not. Most JSON parsers refuse more than 128 levels, and the
/// payload sits a few levels down in the envelope and the JSON-RPC message.
pub const MAX_PAYLOAD_DEPTH: usize = 64;

/// How many wrappers that add no JSON level (`Some`, newtypes) may nest in a row before the
/// value is cut: far more than any real type uses, few enough for any stack.
const MAX_TRANSPARENT: usize = 256;

/// `value` as JSON, with every container that would sit more than
/// [`MAX_PAYLOAD_DEPTH`]` + 1` levels below the payload's root replaced by `null`, without
/// serializing it. `depth` is where `value` sits below that root (0 for the root itself).
///
/// Nothing the budget stage keeps is lost: it cuts every container at [`MAX_PAYLOAD_DEPTH`]
/// whole, with a `truncated_depth` marker, and what this function leaves out is below those.
///
/// ```
/// use envelope_core::limits::MAX_PAYLOAD_DEPTH;
/// use envelope_core::stage::to_value_within;
///
/// #[derive(serde::Serialize)]
/// struct Node {
///     next: Option<Box<Node>>,
/// }
///
/// // Ten thousand levels: serializing it recursively would overflow a small stack.
/// let mut node = Node { next: None };
/// for _ in 0..10_000 {
///     node = Node { next: Some(Box::new(node)) };
/// }
/// let value = to_value_within(&node, 0)?;
/// let mut depth = 0;
/// let mut at = &value;
/// while let Some(next) = at.get("next") {
///     depth += 1;
///     at = next;
/// }
/// assert_eq!(depth, MAX_PAYLOAD_DEPTH + 1);
/// # std::mem::forget(node); // Dropping it would recurse too; a real tool drops it on a big stack.
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn to_value_within<T: Serialize + ?Sized>(
    value: &T,
    depth: usize,
) -> Result<Value, serde_json::Error> {
    value.serialize(Bounded::at_depth(depth, None, None))
}

/// [`to_value_within`], or `None` as soon as the JSON would take more than about `max_bytes`
/// (string contents and keys count their bytes, numbers a fixed width; escapes are not
/// counted). An encoder converts a small payload whole with it, and falls back to converting
/// row by row only when the payload is large, without ever building more than `max_bytes` of
/// it first.
///
/// ```
/// use envelope_core::stage::to_value_capped;
///
/// let rows: Vec<u32> = (0..10).collect();
/// assert_eq!(to_value_capped(&rows, 0, 1_000)?, Some(serde_json::json!(rows)));
/// let rows: Vec<u32> = (0..10_000).collect();
/// assert_eq!(to_value_capped(&rows, 0, 1_000)?, None);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn to_value_capped<T: Serialize + ?Sized>(
    value: &T,
    depth: usize,
    max_bytes: usize,
) -> Result<Option<Value>, serde_json::Error> {
    let room = Cell::new(Some(max_bytes));
    let converted = value.serialize(Bounded::at_depth(depth, Some(&room), None));
    match (converted, room.get()) {
        (Ok(value), Some(_)) => Ok(Some(value)),
        // Past the cap: the error is the stop, not the payload's.
        (_, None) => Ok(None),
        (Err(error), Some(_)) => Err(error),
    }
}

/// [`to_value_within`] of a whole payload (depth 0), handing `watch` the rows of the lists at
/// its top, the root array's or a root object member's, as they are converted: the one walk
/// through which an encoder sizes rows and stops converting those it could never send.
///
/// A list is at the top when it is the payload itself or a member's value of the payload's
/// root object, through any wrapper that adds no JSON level (`Some`, a newtype); an enum
/// variant's list is not. Every other value is converted as [`to_value_within`] converts it.
///
/// ```
/// use std::cell::RefCell;
///
/// use envelope_core::stage::{TopList, TopListWatch, to_value_watched};
/// use serde_json::{Value, json};
///
/// /// Keeps the first two rows of each top list, and counts the rest.
/// #[derive(Default)]
/// struct FirstTwo {
///     kept: usize,
///     lengths: Vec<usize>,
/// }
///
/// impl TopListWatch for FirstTwo {
///     fn member_starts(&mut self, _key: &str) {}
///     fn list_opens(&mut self, _at: TopList) -> bool {
///         self.kept = 0;
///         true
///     }
///     fn row(&mut self, _row: &Value) -> Result<bool, serde_json::Error> {
///         self.kept += 1;
///         Ok(self.kept <= 2)
///     }
///     fn list_ends(&mut self, full: usize) {
///         self.lengths.push(full);
///     }
///     fn member_ends(&mut self, _value: &Value) -> Result<(), serde_json::Error> {
///         Ok(())
///     }
/// }
///
/// let watch = RefCell::new(FirstTwo::default());
/// let payload = json!({"hits": [1, 2, 3, 4], "total": 4});
/// let value = to_value_watched(&payload, &watch)?;
/// assert_eq!(value, json!({"hits": [1, 2], "total": 4}));
/// assert_eq!(watch.into_inner().lengths, [4]);
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn to_value_watched<T: Serialize + ?Sized>(
    value: &T,
    watch: &RefCell<dyn TopListWatch + '_>,
) -> Result<Value, serde_json::Error> {
    value.serialize(Bounded::at_depth(0, None, Some(watch)))
}

/// Where a list at the top of a payload stands: see [`to_value_watched`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopList {
    /// The payload is the list.
    Root,
    /// The list is the value of the root object's member that started last.
    Member,
}

/// What [`to_value_watched`] tells as it converts a payload's top lists, in this order: for
/// each root object member, [`member_starts`](Self::member_starts), then, if its value is a
/// list, [`list_opens`](Self::list_opens) and its rows, then
/// [`member_ends`](Self::member_ends); for a root list, `list_opens(TopList::Root)` and its
/// rows. Rows are converted as [`to_value_within`] converts a value one or two levels down.
pub trait TopListWatch {
    /// A member of the payload's root object, named `key`, is about to be converted.
    fn member_starts(&mut self, key: &str);
    /// A list opens at the top, `at`: whether to hand its rows to [`row`](Self::row). An
    /// unwatched list is converted whole, as any other value.
    fn list_opens(&mut self, at: TopList) -> bool;
    /// The next row of the watched list, converted: `Ok(true)` keeps it; `Ok(false)` leaves it
    /// out, and every later row of the list is then counted, not converted.
    fn row(&mut self, row: &Value) -> Result<bool, serde_json::Error>;
    /// The watched list ended; it was `full` rows long, converted or not.
    fn list_ends(&mut self, full: usize);
    /// The member that started last, converted to `value` (its list as kept).
    fn member_ends(&mut self, value: &Value) -> Result<(), serde_json::Error>;
}

/// What a scalar costs against the cap: its bytes, or a fixed width for numbers.
const SCALAR_BYTES: usize = 8;

/// Where a value stands relative to a watched payload's top.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Place {
    /// The payload itself.
    Root,
    /// A member's value of the root object.
    RootMember,
    /// Anywhere below, or in a payload nobody watches.
    Below,
}

/// A `serde_json::Value` serializer that stops descending where the budget stage would cut.
#[derive(Clone, Copy)]
struct Bounded<'a> {
    /// How many more containers may open, this value's own included.
    containers_left: usize,
    /// Wrappers that add no JSON level, in a row.
    transparent: usize,
    /// The bytes left under [`to_value_capped`]'s cap; `None` inside once it is passed.
    room: Option<&'a Cell<Option<usize>>>,
    /// [`to_value_watched`]'s watch, and where this value stands relative to the top.
    watch: Option<&'a RefCell<dyn TopListWatch + 'a>>,
    place: Place,
}

impl<'a> Bounded<'a> {
    /// The serializer for a value `depth` levels below the payload's root.
    fn at_depth(
        depth: usize,
        room: Option<&'a Cell<Option<usize>>>,
        watch: Option<&'a RefCell<dyn TopListWatch + 'a>>,
    ) -> Bounded<'a> {
        Bounded {
            containers_left: (MAX_PAYLOAD_DEPTH + 1).saturating_sub(depth),
            transparent: 0,
            room,
            watch,
            place: Place::Root,
        }
    }

    /// The serializer for a member of a container this one opens.
    fn member(self) -> Bounded<'a> {
        Bounded {
            containers_left: self.containers_left - 1,
            transparent: 0,
            place: Place::Below,
            ..self
        }
    }

    /// This serializer, standing below the top of a watched payload.
    fn below(self) -> Bounded<'a> {
        Bounded {
            place: Place::Below,
            ..self
        }
    }

    /// The serializer for the container inside a variant's `{variant: …}`: one level below
    /// this one where there is room, and never a top list.
    fn variant_inner(self) -> Bounded<'a> {
        if self.room() {
            self.member()
        } else {
            self.below()
        }
    }

    /// The watch, when this value is at the top of a watched payload.
    fn top_watch(self) -> Option<(&'a RefCell<dyn TopListWatch + 'a>, TopList)> {
        let at = match self.place {
            Place::Root => TopList::Root,
            Place::RootMember => TopList::Member,
            Place::Below => return None,
        };
        self.watch.map(|watch| (watch, at))
    }

    /// Takes `bytes` from the cap, if there is one; past it, stops the conversion.
    fn spend(self, bytes: usize) -> Result<(), serde_json::Error> {
        let Some(room) = self.room else {
            return Ok(());
        };
        match room.get().and_then(|left| left.checked_sub(bytes)) {
            Some(left) => {
                room.set(Some(left));
                Ok(())
            }
            None => {
                room.set(None);
                Err(ser::Error::custom("past the conversion cap"))
            }
        }
    }

    /// A wrapper that adds no JSON level: the same depth, one more in the row.
    fn wrapped<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, serde_json::Error> {
        if self.transparent >= MAX_TRANSPARENT {
            return Ok(Value::Null);
        }
        value.serialize(Bounded {
            transparent: self.transparent + 1,
            ..self
        })
    }

    /// Whether a container may open here.
    fn room(self) -> bool {
        self.containers_left > 0
    }
}

fn plain<T: Serialize + ?Sized>(value: &T) -> Result<Value, serde_json::Error> {
    value.serialize(serde_json::value::Serializer)
}

/// A map key as `serde_json` writes it: strings as they are, numbers and booleans as text.
fn key_of<T: Serialize + ?Sized>(key: &T) -> Result<String, serde_json::Error> {
    match plain(key)? {
        Value::String(text) => Ok(text),
        Value::Number(number) => Ok(number.to_string()),
        Value::Bool(flag) => Ok(flag.to_string()),
        _ => Err(ser::Error::custom(
            "a map key must be a string, a number or a boolean",
        )),
    }
}

/// What a container being built holds: its content, or `None` past the depth limit (what it
/// would hold is then counted out without being serialized, and it becomes `null`); and the
/// variant whose value it is (`{variant: …}`), if any.
struct Held<C> {
    content: Option<C>,
    variant: Option<&'static str>,
}

impl<C> Held<C> {
    /// What a container holds when it opens: `content` where there is room for it.
    fn open(room: bool, content: impl FnOnce() -> C) -> Held<C> {
        Held {
            content: room.then(content),
            variant: None,
        }
    }

    /// The container as the value of `variant`'s object; `None`, when that object could not
    /// open, counts the container out too.
    fn in_variant(&mut self, variant: Option<&'static str>) {
        if variant.is_none() {
            self.content = None;
        }
        self.variant = variant;
    }

    /// The container as written, its content made a value by `into`.
    fn finish(self, into: impl FnOnce(C) -> Value) -> Value {
        let container = self.content.map_or(Value::Null, into);
        match self.variant {
            Some(variant) => Value::Object(Map::from_iter([(variant.to_owned(), container)])),
            None => container,
        }
    }
}

/// The elements of an array being built.
struct Seq<'a> {
    items: Held<Vec<Value>>,
    member: Bounded<'a>,
    /// A top list's watch, its rows handed over as they are converted.
    watched: Option<Watched<'a>>,
}

/// A watched top list's progress.
struct Watched<'a> {
    watch: &'a RefCell<dyn TopListWatch + 'a>,
    /// Its rows so far, converted or not.
    full: usize,
    /// Whether the watch left a row out: later rows are counted, not converted.
    stopped: bool,
}

impl Seq<'_> {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), serde_json::Error> {
        let Some(items) = &mut self.items.content else {
            return Ok(());
        };
        let Some(watched) = &mut self.watched else {
            // The separating comma.
            self.member.spend(1)?;
            items.push(value.serialize(self.member)?);
            return Ok(());
        };
        watched.full += 1;
        if watched.stopped {
            return Ok(());
        }
        let row = value.serialize(self.member)?;
        if watched.watch.borrow_mut().row(&row)? {
            items.push(row);
        } else {
            watched.stopped = true;
        }
        Ok(())
    }

    fn finish(self) -> Value {
        if let Some(watched) = &self.watched {
            watched.watch.borrow_mut().list_ends(watched.full);
        }
        self.items.finish(Value::Array)
    }
}

/// The members of an object being built.
struct Obj<'a> {
    members: Held<Map<String, Value>>,
    member: Bounded<'a>,
    next_key: Option<String>,
    /// The watch, when this is a watched payload's root object.
    watch: Option<&'a RefCell<dyn TopListWatch + 'a>>,
}

impl Obj<'_> {
    fn insert<T: Serialize + ?Sized>(
        &mut self,
        key: String,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        let Some(members) = &mut self.members.content else {
            return Ok(());
        };
        // The key, its quotes, the colon and the separating comma.
        self.member.spend(key.len() + 4)?;
        let Some(watch) = self.watch else {
            members.insert(key, value.serialize(self.member)?);
            return Ok(());
        };
        watch.borrow_mut().member_starts(&key);
        let converted = value.serialize(Bounded {
            place: Place::RootMember,
            ..self.member
        })?;
        watch.borrow_mut().member_ends(&converted)?;
        members.insert(key, converted);
        Ok(())
    }

    fn finish(self) -> Value {
        self.members.finish(Value::Object)
    }
}

macro_rules! plain_scalars {
    ($($method:ident: $ty:ty),* $(,)?) => {
        $(fn $method(self, value: $ty) -> Result<Value, serde_json::Error> {
            self.spend(SCALAR_BYTES)?;
            ser::Serializer::$method(serde_json::value::Serializer, value)
        })*
    };
}

impl<'a> ser::Serializer for Bounded<'a> {
    type Ok = Value;
    type Error = serde_json::Error;
    type SerializeSeq = Seq<'a>;
    type SerializeTuple = Seq<'a>;
    type SerializeTupleStruct = Seq<'a>;
    type SerializeTupleVariant = Seq<'a>;
    type SerializeMap = Obj<'a>;
    type SerializeStruct = Obj<'a>;
    type SerializeStructVariant = Obj<'a>;

    plain_scalars! {
        serialize_bool: bool, serialize_i8: i8, serialize_i16: i16, serialize_i32: i32,
        serialize_i64: i64, serialize_i128: i128, serialize_u8: u8, serialize_u16: u16,
        serialize_u32: u32, serialize_u64: u64, serialize_u128: u128, serialize_f32: f32,
        serialize_f64: f64, serialize_char: char,
    }

    fn serialize_str(self, value: &str) -> Result<Value, serde_json::Error> {
        self.spend(value.len() + 2)?;
        Ok(Value::String(value.to_owned()))
    }

    fn serialize_bytes(self, value: &[u8]) -> Result<Value, serde_json::Error> {
        // An array of numbers, up to three digits and a comma each.
        self.spend(value.len() * 4 + 2)?;
        ser::Serializer::serialize_bytes(serde_json::value::Serializer, value)
    }

    fn serialize_none(self) -> Result<Value, serde_json::Error> {
        Ok(Value::Null)
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, serde_json::Error> {
        self.wrapped(value)
    }

    fn serialize_unit(self) -> Result<Value, serde_json::Error> {
        Ok(Value::Null)
    }

    fn serialize_unit_struct(self, _: &'static str) -> Result<Value, serde_json::Error> {
        Ok(Value::Null)
    }

    fn serialize_unit_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
    ) -> Result<Value, serde_json::Error> {
        self.spend(variant.len() + 2)?;
        Ok(Value::String(variant.to_owned()))
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value, serde_json::Error> {
        self.wrapped(value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, serde_json::Error> {
        if !self.room() {
            return Ok(Value::Null);
        }
        let inner = value.serialize(self.member())?;
        Ok(Value::Object(Map::from_iter([(variant.to_owned(), inner)])))
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Seq<'a>, serde_json::Error> {
        self.spend(2)?;
        let watched = self.top_watch().and_then(|(watch, at)| {
            watch.borrow_mut().list_opens(at).then_some(Watched {
                watch,
                full: 0,
                stopped: false,
            })
        });
        Ok(Seq {
            items: Held::open(self.room(), || {
                Vec::with_capacity(len.unwrap_or(0).min(4096))
            }),
            member: if self.room() { self.member() } else { self },
            watched,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Seq<'a>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Seq<'a>, serde_json::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Seq<'a>, serde_json::Error> {
        // `{variant: [...]}`: the object is one level, the array another.
        let mut seq = self.variant_inner().serialize_seq(Some(len))?;
        seq.items.in_variant(self.room().then_some(variant));
        Ok(seq)
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Obj<'a>, serde_json::Error> {
        self.spend(2)?;
        Ok(Obj {
            members: Held::open(self.room(), Map::new),
            member: if self.room() { self.member() } else { self },
            next_key: None,
            watch: self.watch.filter(|_| self.place == Place::Root),
        })
    }

    fn serialize_struct(self, _: &'static str, len: usize) -> Result<Obj<'a>, serde_json::Error> {
        self.serialize_map(Some(len))
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Obj<'a>, serde_json::Error> {
        let mut object = self.variant_inner().serialize_map(Some(len))?;
        object.members.in_variant(self.room().then_some(variant));
        Ok(object)
    }
}

/// The array compounds: each element is pushed; the end builds the array.
macro_rules! seq_compounds {
    ($($trait:ident :: $method:ident),* $(,)?) => {
        $(impl ser::$trait for Seq<'_> {
            type Ok = Value;
            type Error = serde_json::Error;

            fn $method<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
                self.push(value)
            }

            fn end(self) -> Result<Value, Self::Error> {
                Ok(self.finish())
            }
        })*
    };
}

seq_compounds! {
    SerializeSeq::serialize_element,
    SerializeTuple::serialize_element,
    SerializeTupleStruct::serialize_field,
    SerializeTupleVariant::serialize_field,
}

impl ser::SerializeMap for Obj<'_> {
    type Ok = Value;
    type Error = serde_json::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.next_key = Some(key_of(key)?);
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        let key = self
            .next_key
            .take()
            .ok_or_else(|| ser::Error::custom("a map value came before its key"))?;
        self.insert(key, value)
    }

    fn end(self) -> Result<Value, Self::Error> {
        Ok(self.finish())
    }
}

/// The struct compounds: each field is a member; the end builds the object.
macro_rules! struct_compounds {
    ($($trait:ident),* $(,)?) => {
        $(impl ser::$trait for Obj<'_> {
            type Ok = Value;
            type Error = serde_json::Error;

            fn serialize_field<T: Serialize + ?Sized>(
                &mut self,
                key: &'static str,
                value: &T,
            ) -> Result<(), Self::Error> {
                self.insert(key.to_owned(), value)
            }

            fn end(self) -> Result<Value, Self::Error> {
                Ok(self.finish())
            }
        })*
    };
}

struct_compounds!(SerializeStruct, SerializeStructVariant);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Serialize)]
    #[serde(rename_all = "snake_case")]
    enum Shape {
        Dot,
        Wrap(Box<Shape>),
        Pair(Box<Shape>, u8),
        Group { members: Vec<Shape> },
    }

    #[derive(serde::Serialize)]
    struct Row {
        id: u32,
        tags: Vec<&'static str>,
        note: Option<String>,
        shape: Shape,
        by_key: std::collections::BTreeMap<u8, bool>,
    }

    #[test]
    fn shallow_values_match_serde_json() {
        let row = Row {
            id: 7,
            tags: vec!["a", "b"],
            note: None,
            shape: Shape::Group {
                members: vec![
                    Shape::Dot,
                    Shape::Wrap(Box::new(Shape::Dot)),
                    Shape::Pair(Box::new(Shape::Dot), 3),
                ],
            },
            by_key: [(1, true), (2, false)].into_iter().collect(),
        };
        let expected = serde_json::to_value(&row).expect("serializes");
        assert_eq!(to_value_within(&row, 0).expect("serializes"), expected);
        assert_eq!(
            to_value_within(&json!({"a": [1, {"b": null}]}), 0).expect("serializes"),
            json!({"a": [1, {"b": null}]})
        );
    }

    #[test]
    fn deep_values_stop_below_the_cut_on_a_small_stack() {
        std::thread::Builder::new()
            .stack_size(256 * 1024)
            .spawn(|| {
                let mut value = json!(1);
                for _ in 0..8_000 {
                    value = Value::Array(vec![value]);
                }
                let bounded = to_value_within(&value, 0).expect("serializes");
                let mut depth = 0;
                let mut at = &bounded;
                while let Some(inner) = at.get(0) {
                    depth += 1;
                    at = inner;
                }
                // The outermost 65 arrays are kept; the 66th is `null`.
                assert_eq!(depth, MAX_PAYLOAD_DEPTH + 1);
                assert_eq!(*at, Value::Null);
                // Neither value may be dropped recursively on this stack.
                std::mem::forget(value);
                std::mem::forget(bounded);
            })
            .expect("a thread")
            .join()
            .expect("no overflow, no panic");
    }

    #[test]
    fn a_value_deeper_down_has_less_room() {
        let value = json!([[[[1]]]]);
        let bounded = to_value_within(&value, MAX_PAYLOAD_DEPTH - 1).expect("serializes");
        assert_eq!(bounded, json!([[null]]));
    }

    /// Writes down what the walk tells, and stops each list after `keep` rows.
    struct Recorder {
        keep: usize,
        kept: usize,
        told: Vec<String>,
    }

    impl TopListWatch for Recorder {
        fn member_starts(&mut self, key: &str) {
            self.told.push(format!("member {key}"));
        }
        fn list_opens(&mut self, at: TopList) -> bool {
            self.told.push(format!("opens {at:?}"));
            self.kept = 0;
            true
        }
        fn row(&mut self, row: &Value) -> Result<bool, serde_json::Error> {
            self.told.push(format!("row {row}"));
            self.kept += 1;
            Ok(self.kept <= self.keep)
        }
        fn list_ends(&mut self, full: usize) {
            self.told.push(format!("ends {full}"));
        }
        fn member_ends(&mut self, value: &Value) -> Result<(), serde_json::Error> {
            self.told.push(format!("member is {value}"));
            Ok(())
        }
    }

    fn watched(value: &impl serde::Serialize, keep: usize) -> (Value, Vec<String>) {
        let watch = RefCell::new(Recorder {
            keep,
            kept: 0,
            told: Vec::new(),
        });
        let value = to_value_watched(value, &watch).expect("serializes");
        (value, watch.into_inner().told)
    }

    #[test]
    fn the_walk_hands_over_top_rows_and_counts_those_left_out() {
        #[derive(serde::Serialize)]
        struct Page {
            hits: Option<Vec<u8>>,
            shape: Shape,
        }
        let page = Page {
            hits: Some(vec![1, 2, 3]),
            shape: Shape::Group {
                members: vec![Shape::Dot],
            },
        };
        let (value, told) = watched(&page, 1);
        // The list behind `Some` is a top list; the variant's is not, nor are nested rows.
        assert_eq!(
            value,
            json!({"hits": [1], "shape": {"group": {"members": ["dot"]}}})
        );
        assert_eq!(
            told,
            [
                "member hits",
                "opens Member",
                "row 1",
                "row 2",
                "ends 3",
                "member is [1]",
                "member shape",
                r#"member is {"group":{"members":["dot"]}}"#,
            ]
        );
        let (value, told) = watched(&vec![vec![1], vec![2]], 5);
        assert_eq!(value, json!([[1], [2]]));
        assert_eq!(told, ["opens Root", "row [1]", "row [2]", "ends 2"]);
    }

    #[test]
    fn a_watched_walk_converts_like_the_plain_one() {
        let row = json!({"a": [1, {"b": [2, 3]}], "c": "d"});
        assert_eq!(
            watched(&row, usize::MAX).0,
            to_value_within(&row, 0).expect("serializes")
        );
    }
}

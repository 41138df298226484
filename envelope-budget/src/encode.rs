//! A budget-aware payload encoder: typed payload → JSON, without materializing rows of
//! top-level lists that could never be kept.
//!
//! Rows are converted one by one and sized as they come; once a list's rows alone are past the
//! budget, the rest are counted, not converted. The full length travels in
//! [`Encoded::precut`] so the trimmer names the cut with the true numbers. `{nodes,
//! edges}` lists are always converted whole: the subgraph rung needs every edge to rank nodes.

use std::cell::Cell;
use std::fmt;

use envelope_core::stage::{ResponseSizer, to_value_capped, to_value_within};
use serde::ser::{
    self, Impossible, Serialize, SerializeMap, SerializeSeq, SerializeStruct, Serializer,
};
use serde_json::{Map, Value};

use crate::cut::ROOT_LIST_KEY;
use crate::tokens::{Counts, Estimator};

/// The largest payload (JSON bytes, roughly) converted whole before sizing rows: past it, a
/// conversion that turns out too large would waste more than sizing rows costs.
const WHOLE_CAP_MAX: usize = 64 * 1024;

/// Encodes payloads for a response budget of `budget` token-normalized characters; sizes what
/// a tool builds against it, as the tool's [`ResponseSizer`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct BudgetEncoder {
    budget: u64,
    estimator: Estimator,
}

impl BudgetEncoder {
    /// An encoder for `budget` characters, sizing with `estimator`.
    pub(crate) fn new(budget: usize, estimator: Estimator) -> Self {
        BudgetEncoder {
            budget: budget as u64,
            estimator,
        }
    }

    /// The JSON size (bytes, roughly) under which a payload is converted whole: a quarter of
    /// the budget, and at most [`WHOLE_CAP_MAX`]. Such a payload nearly always fits; when it
    /// does not, the trimmer sizes its rows itself, at a cost bounded by the cap.
    fn whole_cap(&self) -> usize {
        usize::try_from(self.budget / 4).map_or(WHOLE_CAP_MAX, |cap| cap.min(WHOLE_CAP_MAX))
    }

    fn hopeless(&self, counts: &Counts) -> bool {
        self.estimator.normalized_size(counts) > self.budget
    }
}

/// What the encoder cut and measured, beside the JSON it wrote.
#[derive(Debug, Default)]
pub(crate) struct Encoded {
    /// `(list key, full length)` for each top-level list cut short; the key is
    /// [`ROOT_LIST_KEY`] for a root array.
    pub(crate) precut: Vec<(String, usize)>,
    /// The rows as sized on the way, so the trimmer need not size them again.
    pub(crate) measured: MeasuredLists,
}

impl Encoded {
    /// What was cut, without what was measured.
    #[cfg_attr(not(feature = "exact"), allow(dead_code))]
    pub(crate) fn cut_only(&self) -> Encoded {
        Encoded {
            precut: self.precut.clone(),
            measured: MeasuredLists::default(),
        }
    }
}

impl BudgetEncoder {
    /// Encodes `payload`, converting no row of a top-level list that could never be sent.
    pub(crate) fn encode(
        &self,
        payload: &dyn erased_serde::Serialize,
    ) -> Result<(Value, Encoded), serde_json::Error> {
        let mut precut = Vec::new();
        let mut measured = MeasuredLists::default();
        // A payload far within the budget is converted whole, at once: sizing rows one by one
        // pays off only when some could never be sent. Converting it stops at the cap, so a
        // large payload costs no more than the cap before taking the row path.
        if let Some(value) = to_value_capped(&payload, 0, self.whole_cap())? {
            measured.1 = Some(Whole::of_value(&value)?);
            return Ok((value, Encoded { precut, measured }));
        }
        let value = match probe(&payload) {
            Kind::Seq => {
                let (value, full, prefix, joined) = payload.serialize(Rows {
                    encoder: self,
                    row_depth: 1,
                })?;
                if let Value::Array(items) = &value
                    && items.len() < full
                {
                    precut.push((ROOT_LIST_KEY.to_owned(), full));
                } else {
                    measured.1 = Some(Whole::of_list(&joined, &prefix));
                }
                measured.0.push((ROOT_LIST_KEY.to_owned(), prefix));
                value
            }
            Kind::Map => {
                let mut fields = Vec::new();
                let value = payload.serialize(Top {
                    encoder: self,
                    precut: &mut precut,
                    measured: &mut measured,
                    fields: &mut fields,
                })?;
                if precut.is_empty() {
                    measured.1 = Some(Whole::of_object(fields));
                }
                value
            }
            Kind::Other => {
                let value = to_value_within(&payload, 0)?;
                measured.1 = Some(Whole::of_value(&value)?);
                value
            }
        };
        Ok((value, Encoded { precut, measured }))
    }
}

impl ResponseSizer for BudgetEncoder {
    fn budget_chars(&self) -> usize {
        usize::try_from(self.budget).unwrap_or(usize::MAX)
    }

    fn size_of(&self, value: &dyn erased_serde::Serialize) -> Option<usize> {
        let bytes = serde_json::to_vec(value).ok()?;
        usize::try_from(self.estimator.normalized_size(&Counts::of_bytes(&bytes))).ok()
    }
}

/// The rows of top-level lists as the encoder sized them: for each list key (the root array's
/// is [`ROOT_LIST_KEY`]), `prefix[k]` holds the counts of the first `k` converted rows joined by
/// commas, without brackets. The trimmer's ladder reads them instead of sizing the rows again.
#[derive(Debug, Default)]
pub(crate) struct MeasuredLists(
    pub(crate) Vec<(String, Vec<Counts>)>,
    pub(crate) Option<Whole>,
);

/// The whole payload's compact JSON, as written while encoding it, and its counts. Present
/// when every row was converted: the trimmer then knows at once whether the payload fits, and
/// the text mirror reuses the bytes instead of serializing the payload again.
#[derive(Debug)]
pub(crate) struct Whole {
    /// Exactly `serde_json::to_string` of the encoded value.
    pub(crate) json: String,
    pub(crate) counts: Counts,
}

impl MeasuredLists {
    /// The payload's JSON and counts, when the encoder wrote it whole.
    pub(crate) fn whole(&self) -> Option<&Whole> {
        self.1.as_ref()
    }

    /// The prefix sums of the list under `key`, if it is `len` rows long as measured.
    pub(crate) fn prefix(&self, key: &str, len: usize) -> Option<&[Counts]> {
        self.0
            .iter()
            .find(|(measured, _)| measured == key)
            .map(|(_, prefix)| prefix.as_slice())
            .filter(|prefix| prefix.len() == len + 1)
    }
}

/// What [`Rows`] produces: the array, the full row count, the rows' prefix sums, and the
/// converted rows' JSON joined by commas.
type RowsOut = (Value, usize, Vec<Counts>, Vec<u8>);

impl Whole {
    /// Any value, written out and counted.
    fn of_value(value: &Value) -> Result<Whole, serde_json::Error> {
        let json = serde_json::to_string(value)?;
        Ok(Whole {
            counts: Counts::of(&json),
            json,
        })
    }

    /// A list from its rows' joined JSON and prefix sums.
    fn of_list(joined: &[u8], prefix: &[Counts]) -> Whole {
        let mut json = Vec::with_capacity(joined.len() + 2);
        json.push(b'[');
        json.extend_from_slice(joined);
        json.push(b']');
        let mut counts = prefix.last().copied().unwrap_or_default();
        counts.punct += 2;
        Whole {
            json: utf8(json),
            counts,
        }
    }

    /// An object from its members' JSON and counts, written in the order of `serde_json`'s
    /// map: keys sorted, a repeated key's last value kept.
    fn of_object(mut fields: Vec<(String, Whole)>) -> Whole {
        // Stable: of equal keys the later stays later, and `dedup` below keeps it.
        fields.sort_by(|a, b| a.0.cmp(&b.0));
        let mut deduped: Vec<(String, Whole)> = Vec::with_capacity(fields.len());
        for field in fields {
            match deduped.last_mut() {
                Some(last) if last.0 == field.0 => *last = field,
                _ => deduped.push(field),
            }
        }
        let size: usize = deduped
            .iter()
            .map(|(key, member)| key.len() + member.json.len() + 4)
            .sum();
        let mut json = Vec::with_capacity(size + 2);
        json.push(b'{');
        let mut counts = Counts {
            punct: 2,
            ..Counts::default()
        };
        for (index, (key, member)) in deduped.iter().enumerate() {
            if index > 0 {
                json.push(b',');
            }
            // Writing a string into a `Vec` cannot fail.
            let _ = serde_json::to_writer(&mut json, key);
            json.push(b':');
            json.extend_from_slice(member.json.as_bytes());
            counts += crate::size::member_key_counts(key, index > 0) + member.counts;
        }
        json.push(b'}');
        Whole {
            json: utf8(json),
            counts,
        }
    }
}

/// Text serde_json wrote: always UTF-8, so the lossy branch is never taken.
fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// What a value serializes as, found by stopping at its first call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Seq,
    Map,
    Other,
}

fn probe<T: Serialize + ?Sized>(value: &T) -> Kind {
    let kind = Cell::new(Kind::Other);
    let _ = value.serialize(Probe { kind: &kind });
    kind.get()
}

/// Stops the probe; carries nothing, so stopping costs no allocation.
#[derive(Debug)]
struct Stop;

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("probe stop")
    }
}

impl std::error::Error for Stop {}

impl ser::Error for Stop {
    fn custom<M: fmt::Display>(_: M) -> Self {
        Stop
    }
}

struct Probe<'a> {
    kind: &'a Cell<Kind>,
}

impl<'a> Probe<'a> {
    fn stop(self, kind: Kind) -> Result<(), Stop> {
        self.kind.set(kind);
        Err(Stop)
    }
}

macro_rules! probe_other {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<(), Stop> { self.stop(Kind::Other) })*
    };
}

impl<'a> Serializer for Probe<'a> {
    type Ok = ();
    type Error = Stop;
    type SerializeSeq = Impossible<(), Stop>;
    type SerializeTuple = Impossible<(), Stop>;
    type SerializeTupleStruct = Impossible<(), Stop>;
    type SerializeTupleVariant = Impossible<(), Stop>;
    type SerializeMap = Impossible<(), Stop>;
    type SerializeStruct = Impossible<(), Stop>;
    type SerializeStructVariant = Impossible<(), Stop>;

    probe_other! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str); serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), Stop> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<(), Stop> {
        self.stop(Kind::Other)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Stop> {
        self.stop(Kind::Seq).map(|()| unreachable!())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Stop> {
        self.stop(Kind::Seq).map(|()| unreachable!())
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Stop> {
        self.stop(Kind::Seq).map(|()| unreachable!())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Stop> {
        self.stop(Kind::Other).map(|()| unreachable!())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Stop> {
        self.stop(Kind::Map).map(|()| unreachable!())
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self::SerializeStruct, Stop> {
        self.stop(Kind::Map).map(|()| unreachable!())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Stop> {
        self.stop(Kind::Other).map(|()| unreachable!())
    }
}

/// Serializes a value probed as a sequence: rows converted until hopeless, then only counted.
/// Output: the array and the full row count.
struct Rows<'a> {
    encoder: &'a BudgetEncoder,
    /// Where each row sits below the payload's root: the depth its conversion is bounded from.
    row_depth: usize,
}

struct RowsSeq<'a> {
    encoder: &'a BudgetEncoder,
    row_depth: usize,
    items: Vec<Value>,
    counts: Counts,
    prefix: Vec<Counts>,
    /// The converted rows' JSON, joined by commas.
    joined: Vec<u8>,
    full: usize,
    stopped: bool,
}

impl SerializeSeq for RowsSeq<'_> {
    type Ok = RowsOut;
    type Error = serde_json::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        self.full += 1;
        if self.stopped {
            return Ok(());
        }
        let row = to_value_within(value, self.row_depth)?;
        // Sized from its own bytes: writing a row out and counting the text in blocks is
        // faster than walking the tree node by node. The bytes are kept for the text mirror.
        let start = self.joined.len();
        let comma = !self.items.is_empty();
        if comma {
            self.joined.push(b',');
            self.counts.punct += 1;
        }
        let row_start = self.joined.len();
        serde_json::to_writer(&mut self.joined, &row)?;
        self.counts += Counts::of_bytes(&self.joined[row_start..]);
        if self.encoder.hopeless(&self.counts) {
            // This row and every later one can never be kept; stop converting them.
            self.stopped = true;
            self.joined.truncate(start);
        } else {
            self.items.push(row);
            self.prefix.push(self.counts);
        }
        Ok(())
    }

    fn end(self) -> Result<RowsOut, Self::Error> {
        Ok((
            Value::Array(self.items),
            self.full,
            self.prefix,
            self.joined,
        ))
    }
}

impl ser::SerializeTuple for RowsSeq<'_> {
    type Ok = RowsOut;
    type Error = serde_json::Error;

    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<RowsOut, Self::Error> {
        SerializeSeq::end(self)
    }
}

impl ser::SerializeTupleStruct for RowsSeq<'_> {
    type Ok = RowsOut;
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        SerializeSeq::serialize_element(self, value)
    }

    fn end(self) -> Result<RowsOut, Self::Error> {
        SerializeSeq::end(self)
    }
}

fn not_a_sequence() -> serde_json::Error {
    ser::Error::custom("the probe said sequence; the value serialized otherwise")
}

macro_rules! rows_unexpected {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<RowsOut, serde_json::Error> { Err(not_a_sequence()) })*
    };
}

impl<'a> Serializer for Rows<'a> {
    type Ok = RowsOut;
    type Error = serde_json::Error;
    type SerializeSeq = RowsSeq<'a>;
    type SerializeTuple = RowsSeq<'a>;
    type SerializeTupleStruct = RowsSeq<'a>;
    type SerializeTupleVariant = Impossible<RowsOut, serde_json::Error>;
    type SerializeMap = Impossible<RowsOut, serde_json::Error>;
    type SerializeStruct = Impossible<RowsOut, serde_json::Error>;
    type SerializeStructVariant = Impossible<RowsOut, serde_json::Error>;

    rows_unexpected! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str); serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Self::Ok, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Self::Ok, Self::Error> {
        Err(not_a_sequence())
    }

    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Ok(RowsSeq {
            encoder: self.encoder,
            row_depth: self.row_depth,
            items: Vec::with_capacity(len.unwrap_or(0).min(1024)),
            counts: Counts::default(),
            prefix: vec![Counts::default()],
            joined: Vec::new(),
            full: 0,
            stopped: false,
        })
    }

    fn serialize_tuple(self, len: usize) -> Result<Self::SerializeTuple, Self::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        self.serialize_seq(Some(len))
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(not_a_sequence())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Err(not_a_sequence())
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        Err(not_a_sequence())
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(not_a_sequence())
    }
}

/// Serializes a payload probed as a map or struct, field by field: list fields through
/// [`Rows`], everything else with [`to_value_within`].
struct Top<'a, 'p> {
    encoder: &'a BudgetEncoder,
    precut: &'p mut Vec<(String, usize)>,
    measured: &'p mut MeasuredLists,
    fields: &'p mut Vec<(String, Whole)>,
}

struct TopMap<'a, 'p> {
    encoder: &'a BudgetEncoder,
    precut: &'p mut Vec<(String, usize)>,
    measured: &'p mut MeasuredLists,
    /// Each member's JSON and counts, in the order written.
    fields: &'p mut Vec<(String, Whole)>,
    map: Map<String, Value>,
    next_key: Option<String>,
}

impl TopMap<'_, '_> {
    fn field<T: Serialize + ?Sized>(
        &mut self,
        key: String,
        value: &T,
    ) -> Result<(), serde_json::Error> {
        // Graph lists stay whole: ranking nodes by degree needs every edge.
        let graph_list = key == "nodes" || key == "edges";
        let value = if !graph_list && probe(value) == Kind::Seq {
            let (value, full, prefix, joined) = value.serialize(Rows {
                encoder: self.encoder,
                row_depth: 2,
            })?;
            if let Value::Array(items) = &value
                && items.len() < full
            {
                self.precut.push((key.clone(), full));
            }
            self.fields
                .push((key.clone(), Whole::of_list(&joined, &prefix)));
            // A map that writes a key twice keeps its last value; so does the measure.
            self.measured.0.retain(|(measured, _)| *measured != key);
            self.measured.0.push((key.clone(), prefix));
            value
        } else {
            let value = to_value_within(value, 1)?;
            self.fields.push((key.clone(), Whole::of_value(&value)?));
            value
        };
        self.map.insert(key, value);
        Ok(())
    }
}

impl SerializeStruct for TopMap<'_, '_> {
    type Ok = Value;
    type Error = serde_json::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Self::Error> {
        self.field(key.to_owned(), value)
    }

    fn end(self) -> Result<Value, Self::Error> {
        Ok(Value::Object(self.map))
    }
}

impl SerializeMap for TopMap<'_, '_> {
    type Ok = Value;
    type Error = serde_json::Error;

    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Self::Error> {
        self.next_key = Some(match serde_json::to_value(key)? {
            Value::String(key) => key,
            // serde_json writes number and boolean keys as strings; so do we.
            Value::Number(number) => number.to_string(),
            Value::Bool(flag) => flag.to_string(),
            _ => return Err(ser::Error::custom("key must be a string")),
        });
        Ok(())
    }

    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Self::Error> {
        let key = self
            .next_key
            .take()
            .ok_or_else(|| <serde_json::Error as ser::Error>::custom("value without a key"))?;
        self.field(key, value)
    }

    fn end(self) -> Result<Value, Self::Error> {
        Ok(Value::Object(self.map))
    }
}

fn not_a_map() -> serde_json::Error {
    ser::Error::custom("the probe said map; the value serialized otherwise")
}

macro_rules! top_unexpected {
    ($($method:ident($($arg:ty),*);)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<Value, serde_json::Error> { Err(not_a_map()) })*
    };
}

impl<'a, 'p> Serializer for Top<'a, 'p> {
    type Ok = Value;
    type Error = serde_json::Error;
    type SerializeSeq = Impossible<Value, serde_json::Error>;
    type SerializeTuple = Impossible<Value, serde_json::Error>;
    type SerializeTupleStruct = Impossible<Value, serde_json::Error>;
    type SerializeTupleVariant = Impossible<Value, serde_json::Error>;
    type SerializeMap = TopMap<'a, 'p>;
    type SerializeStruct = TopMap<'a, 'p>;
    type SerializeStructVariant = Impossible<Value, serde_json::Error>;

    top_unexpected! {
        serialize_bool(bool); serialize_i8(i8); serialize_i16(i16); serialize_i32(i32);
        serialize_i64(i64); serialize_u8(u8); serialize_u16(u16); serialize_u32(u32);
        serialize_u64(u64); serialize_f32(f32); serialize_f64(f64); serialize_char(char);
        serialize_str(&str); serialize_bytes(&[u8]); serialize_none(); serialize_unit();
        serialize_unit_struct(&'static str); serialize_unit_variant(&'static str, u32, &'static str);
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<Value, Self::Error> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: &T,
    ) -> Result<Value, Self::Error> {
        Err(not_a_map())
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self::SerializeSeq, Self::Error> {
        Err(not_a_map())
    }

    fn serialize_tuple(self, _: usize) -> Result<Self::SerializeTuple, Self::Error> {
        Err(not_a_map())
    }

    fn serialize_tuple_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleStruct, Self::Error> {
        Err(not_a_map())
    }

    fn serialize_tuple_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeTupleVariant, Self::Error> {
        Err(not_a_map())
    }

    fn serialize_map(self, _: Option<usize>) -> Result<Self::SerializeMap, Self::Error> {
        Ok(TopMap {
            encoder: self.encoder,
            precut: self.precut,
            measured: self.measured,
            fields: self.fields,
            map: Map::new(),
            next_key: None,
        })
    }

    fn serialize_struct(
        self,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStruct, Self::Error> {
        self.serialize_map(None)
    }

    fn serialize_struct_variant(
        self,
        _: &'static str,
        _: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self::SerializeStructVariant, Self::Error> {
        Err(not_a_map())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// What one encoding wrote, cut and measured.
    struct Out {
        value: Value,
        precut: Vec<(String, usize)>,
        measured: MeasuredLists,
    }

    fn encode(encoder: &BudgetEncoder, payload: &impl Serialize) -> Out {
        let (value, Encoded { precut, measured }) = encoder.encode(payload).expect("encodes");
        Out {
            value,
            precut,
            measured,
        }
    }

    #[derive(serde::Serialize)]
    struct Hit {
        path: String,
        line: u32,
    }

    #[derive(serde::Serialize)]
    struct Page {
        query: &'static str,
        results: Vec<Hit>,
        nodes: Vec<u32>,
        note: Option<Vec<u8>>,
    }

    fn hits(n: usize) -> Vec<Hit> {
        (0..n)
            .map(|i| Hit {
                path: format!("src/{i}.rs"),
                line: i as u32,
            })
            .collect()
    }

    #[test]
    fn small_payloads_encode_like_to_value() {
        let encoder = BudgetEncoder::new(32_000, Estimator::default());
        let page = Page {
            query: "q",
            results: hits(3),
            nodes: vec![1, 2],
            note: Some(vec![7]),
        };
        let encoded = encode(&encoder, &page);
        assert_eq!(encoded.value, serde_json::to_value(&page).expect("encodes"));
        assert!(encoded.precut.is_empty());
        let scalar = encode(&encoder, &42);
        assert_eq!(scalar.value, json!(42));
    }

    #[test]
    fn measured_rows_are_the_sizes_of_their_serialization() {
        // The trimmer trusts these prefix sums instead of sizing the rows again. A budget four
        // times the payload or less takes the row path.
        let encoder = BudgetEncoder::new(600, Estimator::default());
        let mut rows = hits(5);
        rows[2].path = "src/\"quoted\"\n漢字 ü.rs".to_owned();
        let page = Page {
            query: "q",
            results: rows,
            nodes: vec![1],
            note: None,
        };
        let encoded = encode(&encoder, &page);
        let measured = &encoded.measured;
        let items = encoded.value["results"].as_array().expect("rows");
        let prefix = measured.prefix("results", items.len()).expect("measured");
        for keep in 0..=items.len() {
            let text = serde_json::to_string(&items[..keep]).expect("serializes");
            // The prefix leaves out the brackets.
            let mut expected = Counts::of(&text);
            expected.punct -= 2;
            assert_eq!(prefix[keep], expected, "first {keep} rows");
        }
        // Graph lists are converted whole and never measured; a wrong length is not trusted.
        assert!(measured.prefix("nodes", 1).is_none());
        assert!(measured.prefix("results", items.len() + 1).is_none());
    }

    #[test]
    fn small_payloads_are_converted_whole_at_once() {
        let encoder = BudgetEncoder::new(32_000, Estimator::default());
        let page = Page {
            query: "q",
            results: hits(5),
            nodes: vec![1],
            note: None,
        };
        let encoded = encode(&encoder, &page);
        assert_eq!(
            encoded.value,
            serde_json::to_value(&page).expect("serializes")
        );
        let measured = &encoded.measured;
        let whole = measured.whole().expect("written whole");
        assert_eq!(whole.json, encoded.value.to_string());
        assert_eq!(whole.counts, Counts::of(&whole.json));
        // No rows were sized one by one: the trimmer sizes them itself if it must cut.
        assert!(measured.prefix("results", 5).is_none());
        assert!(encoded.precut.is_empty());
    }

    #[test]
    fn long_lists_stop_materializing_at_the_budget() {
        let encoder = BudgetEncoder::new(2_000, Estimator::default());
        let page = Page {
            query: "q",
            results: hits(10_000),
            nodes: (0..5_000).collect(),
            note: None,
        };
        let encoded = encode(&encoder, &page);
        let kept = encoded.value["results"].as_array().expect("rows").len();
        assert!(kept > 10 && kept < 200, "kept {kept}");
        assert_eq!(encoded.precut, vec![("results".to_owned(), 10_000)]);
        assert_eq!(
            encoded.value["nodes"].as_array().map(Vec::len),
            Some(5_000),
            "graph lists stay whole"
        );
        let root = encode(&encoder, &hits(10_000));
        assert_eq!(root.precut, vec![(ROOT_LIST_KEY.to_owned(), 10_000)]);
    }

    #[test]
    fn maps_with_non_string_keys_follow_serde_json() {
        let encoder = BudgetEncoder::new(32_000, Estimator::default());
        let map: std::collections::BTreeMap<u32, &str> = [(1, "a"), (2, "b")].into();
        let encoded = encode(&encoder, &map);
        assert_eq!(encoded.value, serde_json::to_value(&map).expect("encodes"));
    }
}

//! A budget-aware payload encoder: typed payload → JSON, without materializing rows of
//! top-level lists that could never be kept.
//!
//! Rows are converted one by one and sized as they come; once a list's rows alone are past the
//! budget, the rest are counted, not converted. The full length travels in
//! [`Encoded::precut`] so the trimmer names the cut with the true numbers. `{nodes,
//! edges}` lists are always converted whole: the subgraph rung needs every edge to rank nodes.

use std::cell::RefCell;

use envelope_core::limits::MAX_PAYLOAD_DEPTH;
use envelope_core::stage::{
    ResponseSizer, TopList, TopListWatch, to_value_capped, to_value_watched,
};
use serde_json::Value;

use crate::cut::ROOT_LIST_KEY;
use crate::nesting::small_and_within;
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
        // A payload far within the budget is converted whole, at once: sizing rows one by one
        // pays off only when some could never be sent. Converting it stops at the cap, so a
        // large payload costs no more than the cap before taking the row path.
        if let Some(value) = to_value_capped(&payload, 0, self.whole_cap())? {
            let measured = MeasuredLists(Vec::new(), Some(Whole::of_value(&value)?));
            let precut = Vec::new();
            return Ok((value, Encoded { precut, measured }));
        }
        let lists = RefCell::new(TopLists::new(self));
        let value = to_value_watched(&payload, &lists)?;
        let encoded = lists.into_inner().finish(&value)?;
        Ok((value, encoded))
    }
}

impl BudgetEncoder {
    /// Measures a payload that was JSON already, which nothing converted (a forwarded answer,
    /// a hand-built envelope): written out whole and counted when it is as small as a typed
    /// payload converted whole and nests no deeper than a payload may (deeper is the
    /// trimmer's to cut), so that the response is written once whichever way the payload
    /// came; else nothing, and the trimmer sizes it.
    pub(crate) fn measure_json(&self, value: &Value) -> Encoded {
        let whole = Whole::of_small_value(value, self.whole_cap(), MAX_PAYLOAD_DEPTH);
        Encoded {
            precut: Vec::new(),
            measured: MeasuredLists(Vec::new(), whole),
        }
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

impl Whole {
    /// Any value, written out and counted.
    fn of_value(value: &Value) -> Result<Whole, serde_json::Error> {
        let json = serde_json::to_string(value)?;
        Ok(Whole {
            counts: Counts::of(&json),
            json,
        })
    }

    /// `value` written out and counted when its JSON is at most `cap` bytes and it has no
    /// container `max_depth` levels down; at most `cap` bytes are written, and a value of more
    /// than `cap` values is not written at all.
    fn of_small_value(value: &Value, cap: usize, max_depth: usize) -> Option<Whole> {
        if !small_and_within(value, cap, max_depth) {
            return None;
        }
        let mut out = CappedWriter {
            json: Vec::new(),
            cap,
        };
        serde_json::to_writer(&mut out, value).ok()?;
        let json = utf8(out.json);
        Some(Whole {
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

/// A writer that takes at most `cap` bytes, and fails past them.
struct CappedWriter {
    json: Vec<u8>,
    cap: usize,
}

impl std::io::Write for CappedWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if self.json.len() + bytes.len() > self.cap {
            return Err(std::io::Error::other("past the cap"));
        }
        self.json.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Text serde_json wrote: always UTF-8, so the lossy branch is never taken.
fn utf8(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned())
}

/// Sizes the rows of a payload's top lists as [`to_value_watched`] converts them, and leaves
/// out every row past the one that puts a list's rows alone over the budget: those are
/// counted, not converted.
struct TopLists<'a> {
    encoder: &'a BudgetEncoder,
    precut: Vec<(String, usize)>,
    measured: MeasuredLists,
    /// What the payload turned out to be at its root.
    root: RootKind,
    /// Each root member's JSON and counts, in the order written.
    fields: Vec<(String, Whole)>,
    /// The root member being converted.
    member: Option<String>,
    /// The watched list being converted, and where it stands.
    list: Option<(TopList, ListRows)>,
    /// The list the member being converted turned out to be, as written.
    member_list: Option<Whole>,
}

/// What a payload is at its root, as far as the encoder cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RootKind {
    List,
    Object,
    Other,
}

/// A watched list's kept rows as written.
struct ListRows {
    /// The counts of the kept rows joined by commas.
    counts: Counts,
    /// `prefix[k]`: the counts of the first `k` kept rows.
    prefix: Vec<Counts>,
    /// The kept rows' JSON, joined by commas.
    joined: Vec<u8>,
    kept: usize,
}

impl<'a> TopLists<'a> {
    fn new(encoder: &'a BudgetEncoder) -> TopLists<'a> {
        TopLists {
            encoder,
            precut: Vec::new(),
            measured: MeasuredLists::default(),
            root: RootKind::Other,
            fields: Vec::new(),
            member: None,
            list: None,
            member_list: None,
        }
    }

    /// What was cut and measured, the payload having been converted to `value`.
    fn finish(mut self, value: &Value) -> Result<Encoded, serde_json::Error> {
        match self.root {
            // A root list measured itself as it ended.
            RootKind::List => {}
            RootKind::Object => {
                if self.precut.is_empty() {
                    self.measured.1 = Some(Whole::of_object(self.fields));
                }
            }
            RootKind::Other => self.measured.1 = Some(Whole::of_value(value)?),
        }
        Ok(Encoded {
            precut: self.precut,
            measured: self.measured,
        })
    }
}

impl TopListWatch for TopLists<'_> {
    fn member_starts(&mut self, key: &str) {
        self.root = RootKind::Object;
        self.member = Some(key.to_owned());
        self.member_list = None;
    }

    fn list_opens(&mut self, at: TopList) -> bool {
        // Graph lists stay whole: ranking nodes by degree needs every edge.
        if at == TopList::Member && matches!(self.member.as_deref(), Some("nodes" | "edges")) {
            return false;
        }
        if at == TopList::Root {
            self.root = RootKind::List;
        }
        let rows = ListRows {
            counts: Counts::default(),
            prefix: vec![Counts::default()],
            joined: Vec::new(),
            kept: 0,
        };
        self.list = Some((at, rows));
        true
    }

    fn row(&mut self, row: &Value) -> Result<bool, serde_json::Error> {
        let Some((_, list)) = &mut self.list else {
            return Ok(true);
        };
        // Sized from its own bytes: writing a row out and counting the text in blocks is
        // faster than walking the tree node by node. The bytes are kept for the text mirror.
        let start = list.joined.len();
        if list.kept > 0 {
            list.joined.push(b',');
            list.counts.punct += 1;
        }
        let row_start = list.joined.len();
        serde_json::to_writer(&mut list.joined, row)?;
        list.counts += Counts::of_bytes(&list.joined[row_start..]);
        if self.encoder.hopeless(&list.counts) {
            // This row and every later one can never be kept.
            list.joined.truncate(start);
            return Ok(false);
        }
        list.kept += 1;
        list.prefix.push(list.counts);
        Ok(true)
    }

    fn list_ends(&mut self, full: usize) {
        let Some((at, list)) = self.list.take() else {
            return;
        };
        let key = match at {
            TopList::Root => ROOT_LIST_KEY.to_owned(),
            TopList::Member => self.member.clone().unwrap_or_default(),
        };
        let cut = list.kept < full;
        if cut {
            self.precut.push((key.clone(), full));
        }
        let whole = Whole::of_list(&list.joined, &list.prefix);
        match at {
            // A root list cut short is not the whole payload.
            TopList::Root => self.measured.1 = (!cut).then_some(whole),
            TopList::Member => self.member_list = Some(whole),
        }
        // A map that writes a key twice keeps its last value; so does the measure.
        self.measured.0.retain(|(measured, _)| *measured != key);
        self.measured.0.push((key, list.prefix));
    }

    fn member_ends(&mut self, value: &Value) -> Result<(), serde_json::Error> {
        let whole = match self.member_list.take() {
            Some(list) => list,
            None => Whole::of_value(value)?,
        };
        self.fields
            .push((self.member.take().unwrap_or_default(), whole));
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Serialize;
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

    /// A page answering the query `q`.
    fn page(results: Vec<Hit>, nodes: Vec<u32>, note: Option<Vec<u8>>) -> Page {
        Page {
            query: "q",
            results,
            nodes,
            note,
        }
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
        let page = page(hits(3), vec![1, 2], Some(vec![7]));
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
        let page = page(rows, vec![1], None);
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
        let page = page(hits(5), vec![1], None);
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
        let page = page(hits(10_000), (0..5_000).collect(), None);
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

    #[test]
    fn json_payloads_are_measured_as_typed_ones_are() {
        let encoder = BudgetEncoder::new(32_000, Estimator::default());
        let typed = page(hits(5), vec![1, 2], Some(vec![3]));
        let json = serde_json::to_value(&typed).expect("encodes");
        let measured = encoder.measure_json(&json);
        let whole = measured.measured.whole().expect("written whole");
        let converted = encode(&encoder, &typed);
        let typed_whole = converted.measured.whole().expect("written whole");
        assert_eq!(whole.json, typed_whole.json);
        assert_eq!(whole.counts, typed_whole.counts);

        // Past the cap, or nested past what a payload may be: left to the trimmer.
        let small = BudgetEncoder::new(400, Estimator::default());
        let long = json!({ "text": "x".repeat(1_000) });
        assert!(small.measure_json(&long).measured.whole().is_none());
        let many = json!((0..1_000).collect::<Vec<u32>>());
        assert!(small.measure_json(&many).measured.whole().is_none());
        let nested = |levels: usize| (0..levels).fold(json!(1), |inner, _| json!([inner]));
        // The innermost of `MAX_DEPTH` arrays is `MAX_DEPTH - 1` down: within, as the
        // trimmer reads it; one more is not.
        assert!(
            encoder
                .measure_json(&nested(crate::MAX_DEPTH))
                .measured
                .whole()
                .is_some()
        );
        assert!(
            encoder
                .measure_json(&nested(crate::MAX_DEPTH + 1))
                .measured
                .whole()
                .is_none()
        );
    }

    #[test]
    fn the_capped_writer_takes_no_more_than_its_cap() {
        let mut out = CappedWriter {
            json: Vec::new(),
            cap: 10,
        };
        let written = serde_json::to_writer(&mut out, &json!({"text": "0123456789"}));
        assert!(written.is_err(), "past the cap the write fails");
        assert!(out.json.len() <= 10, "{} bytes kept", out.json.len());
        let mut out = CappedWriter {
            json: Vec::new(),
            cap: 10,
        };
        serde_json::to_writer(&mut out, &json!([1, 2, 3])).expect("within the cap");
        assert_eq!(out.json, b"[1,2,3]");
    }
}

//! The boundary: a tool's envelope in, the bytes an agent receives out. Shapes the response to
//! the per-call controls, trims it to its budget, reconciles `completeness` and `next_step` with
//! the rows actually sent, and stamps the token accounting of those bytes, itself included.

use envelope_core::meta_keys as keys;
use envelope_core::paging::Resume;
use envelope_core::stage::{Baseline, ToolOutput, take_data};
use envelope_core::stage::{Controls, OutputFormat, ResponseMode, normalize_next_actions};
use envelope_core::{Completeness, NextAction, TokensMethod, TruncationReason, Unit};
use std::ops::Range;

use serde_json::{Map, Value, json};

use crate::cut::{Leftovers, ListCut, ROOT_LIST_KEY};
use crate::encode::{MeasuredLists, Whole};
use crate::own_fields;
use crate::size::{member_key_counts, value_counts};
use crate::subgraph::is_graph;
use crate::tokens::{Counts, Estimator};
use crate::trim::{
    AGENT_BUDGET_CHARS, GRAPH_SUBGRAPH_BUDGET_CHARS, MAX_DEPTH, cut_depth, nested_deeper_than,
    trim_measured,
};

/// `meta` fields that only observability pipelines read, or that the listing already says (the
/// tool's name, tier, idempotency and layer); `response_mode: compact` (the default) leaves
/// them out, since every one costs the model tokens it cannot act on, and so does
/// `tokens_estimated` (counted all the same: [`Prepared::tokens_estimated`]). Nothing an agent
/// branches on is here: `request_id`, `truncated` and its markers and the index drift stay.
pub const COMPACT_DROPPED_META: &[&str] = &[
    keys::CLIENT_REQUEST_ID,
    keys::TOOL,
    keys::COMPLEXITY_TIER,
    keys::IDEMPOTENT,
    keys::LATENCY_MS,
    keys::TOKENS_METHOD,
    keys::TOKENS_SAVED,
    keys::TOKENS_SAVED_PCT,
    keys::BASELINE_METHOD,
    keys::LAYER,
    keys::SCHEMA_VERSION,
    keys::CAPABILITIES,
];

/// The top-level fields `compact_only` keeps: the control surface an agent branches on.
pub const CONTROL_SURFACE: &[&str] = &[
    "ok",
    "verdict",
    "summary_line",
    "next_step",
    "data",
    "error",
    "completeness",
    "empty_reason",
    "diagnosis",
    "meta",
];

/// The `meta` fields `compact_only` keeps.
pub const CONTROL_SURFACE_META: &[&str] = &[
    keys::REQUEST_ID,
    keys::TRUNCATED,
    keys::ENVELOPE_UNSHRINKABLE,
];

/// Where the budget comes from for one response, and how it is kept.
///
/// Built from [`BudgetPolicy::default`] (or [`BudgetPolicy::unlimited`]) with the `with_`
/// methods; the fields are public to read. It is `#[non_exhaustive]`: a field a feature adds
/// never breaks a downstream crate.
///
/// ```
/// use envelope_budget::{BudgetPolicy, TRIMMABLE_LIST_KEYS};
///
/// const ORDER: &[&str] = &["matches", "files"];
/// let policy = BudgetPolicy::default().with_agent_chars(Some(8_000)).with_list_order(ORDER);
/// assert_eq!(policy.agent_chars, Some(8_000));
/// assert_eq!(BudgetPolicy::default().list_order, TRIMMABLE_LIST_KEYS);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct BudgetPolicy {
    /// The agent budget in token-normalized characters; `None` opts out of trimming (browser
    /// callers, which are not context-limited).
    pub agent_chars: Option<usize>,
    /// The ceiling for `{nodes, edges}` payloads.
    pub graph_chars: usize,
    /// How tokens are estimated and sizes normalized.
    pub estimator: Estimator,
    /// Which top-level lists of a payload the trimmer cuts first, one at a time in this order,
    /// each to its longest prefix that fits: the lists an agent misses least. Lists it does not
    /// name are cut after them, keeping a common fraction of their rows. Default:
    /// [`TRIMMABLE_LIST_KEYS`](crate::TRIMMABLE_LIST_KEYS), the list names of code-intelligence
    /// tools.
    pub list_order: &'static [&'static str],
    /// Count every response exactly (feature `exact`): `tokens_estimated` is the exact count
    /// of the bytes sent, and a response with a payload that the exact count puts over its
    /// budget is prepared again under a lowered budget, up to
    /// [`MAX_RETRIES`](crate::exactly::MAX_RETRIES) times (a payload nested past the depth
    /// limit is not: it is cut at that depth instead). Trimming itself works on the estimate, whose counts add up row by
    /// row; see [`exactly`](crate::exactly).
    #[cfg(feature = "exact")]
    pub exact: Option<crate::ExactCounter>,
    /// Count exactly only the responses whose estimate comes within
    /// [`TIGHT_MARGIN`](crate::exactly::TIGHT_MARGIN) of their budget (feature `exact`): those
    /// are stamped and kept within the budget by the exact count, as with `exact`; the rest
    /// keep the estimate, at its cost. Ignored when `exact` is set.
    #[cfg(feature = "exact")]
    pub exact_when_tight: Option<crate::ExactCounter>,
}

impl Default for BudgetPolicy {
    fn default() -> Self {
        BudgetPolicy {
            agent_chars: Some(AGENT_BUDGET_CHARS),
            graph_chars: GRAPH_SUBGRAPH_BUDGET_CHARS,
            estimator: Estimator::default(),
            list_order: crate::TRIMMABLE_LIST_KEYS,
            #[cfg(feature = "exact")]
            exact: None,
            #[cfg(feature = "exact")]
            exact_when_tight: None,
        }
    }
}

impl BudgetPolicy {
    /// No trimming at all.
    pub fn unlimited() -> Self {
        BudgetPolicy {
            agent_chars: None,
            ..BudgetPolicy::default()
        }
    }

    /// With the agent budget `chars` (token-normalized characters); `None` opts out of
    /// trimming.
    #[must_use]
    pub fn with_agent_chars(mut self, chars: Option<usize>) -> Self {
        self.agent_chars = chars;
        self
    }

    /// With the ceiling for `{nodes, edges}` payloads.
    #[must_use]
    pub fn with_graph_chars(mut self, chars: usize) -> Self {
        self.graph_chars = chars;
        self
    }

    /// With `estimator` estimating tokens and normalizing sizes.
    #[must_use]
    pub fn with_estimator(mut self, estimator: Estimator) -> Self {
        self.estimator = estimator;
        self
    }

    /// With the lists the trimmer cuts first, in order.
    #[must_use]
    pub fn with_list_order(mut self, order: &'static [&'static str]) -> Self {
        self.list_order = order;
        self
    }

    /// Counting every response exactly with `counter`: the stamp is exact, and the budget is
    /// kept by the exact count.
    #[cfg(feature = "exact")]
    #[must_use]
    pub fn with_exact(mut self, counter: Option<crate::ExactCounter>) -> Self {
        self.exact = counter;
        self
    }

    /// Counting exactly with `counter` only the responses that come close to their budget: the
    /// budget is kept by the exact count where the estimate's error could break it.
    ///
    /// ```
    /// use envelope_budget::{BudgetPolicy, ExactCounter};
    ///
    /// let policy = BudgetPolicy::default().with_exact_when_tight(Some(ExactCounter::cl100k()));
    /// assert!(policy.exact.is_none());
    /// ```
    #[cfg(feature = "exact")]
    #[must_use]
    pub fn with_exact_when_tight(mut self, counter: Option<crate::ExactCounter>) -> Self {
        self.exact_when_tight = counter;
        self
    }

    /// The exact counting this policy asks for, if any.
    #[cfg(feature = "exact")]
    fn exact_check(&self) -> Option<crate::exactly::ExactCheck> {
        use crate::exactly::ExactCheck;
        match (self.exact, self.exact_when_tight) {
            (Some(counter), _) => Some(ExactCheck {
                counter,
                always: true,
            }),
            (None, Some(counter)) => Some(ExactCheck {
                counter,
                always: false,
            }),
            (None, None) => None,
        }
    }

    /// The payload encoder for a call of a tool whose own budget is `tool_budget`: it converts
    /// no row that could never be sent. `None` when trimming is off. A graph payload is still
    /// encoded whole (its ceiling is applied once its shape is known, by [`prepare`]).
    pub fn encoder(&self, tool_budget: Option<usize>) -> Option<crate::BudgetEncoder> {
        self.budget_for(tool_budget, &Value::Null)
            .map(|budget| crate::BudgetEncoder::new(budget, self.estimator))
    }

    /// The budget for one payload: the tool's own, else the graph ceiling for graphs, else the
    /// agent budget. `None` when trimming is off.
    pub fn budget_for(&self, tool_budget: Option<usize>, data: &Value) -> Option<usize> {
        let agent = self.agent_chars?;
        Some(match tool_budget {
            Some(budget) => budget,
            None if is_graph(data) => self.graph_chars,
            None => agent,
        })
    }
}

/// A response ready to send.
#[derive(Debug)]
pub struct Prepared {
    /// The envelope as MCP's `structuredContent` carries it.
    pub structured: Value,
    /// Its compact JSON: the bytes `tokens_estimated` counts.
    pub json: String,
    /// The estimated tokens of `json` (of the text sent, when `meta` carries no stamp of its
    /// own: an upper bound by the stamp's few tokens). `meta.tokens_estimated` carries it under
    /// `response_mode: full`; the compact modes leave it out, since a model cannot act on it,
    /// and a server still logs it.
    pub tokens_estimated: Option<u64>,
    /// The envelope in TOON, when `output_format: "toon"` asked for it and the encoder could
    /// render it; `None` means the text channel mirrors `json`.
    pub toon: Option<String>,
    /// Parts the trimmer cut, not yet freed: drop them after sending.
    pub leftovers: Leftovers,
}

impl Prepared {
    /// What the first text content carries: TOON when asked and possible, else the JSON.
    pub fn text(&self) -> &str {
        self.toon.as_deref().unwrap_or(&self.json)
    }
}

/// Shapes, trims and stamps one tool's output (an envelope converts into one) by `controls`
/// (a server passes the output's own, which the tool's entry decoded). `tool_budget` is the
/// tool's `#[tool(budget = …)]`.
pub fn prepare(
    output: impl Into<ToolOutput>,
    controls: &Controls,
    tool_budget: Option<usize>,
    policy: &BudgetPolicy,
) -> Prepared {
    let output = output.into();
    #[cfg(feature = "exact")]
    if let Some(check) = policy.exact_check() {
        return prepare_exactly(output, controls, tool_budget, policy, check);
    }
    prepare_within(output, controls, tool_budget, policy, None)
}

/// [`prepare`] with the budget kept by `check`'s exact count (see [`crate::exactly`]).
#[cfg(feature = "exact")]
fn prepare_exactly(
    output: ToolOutput,
    controls: &Controls,
    tool_budget: Option<usize>,
    policy: &BudgetPolicy,
    check: crate::exactly::ExactCheck,
) -> Prepared {
    use crate::exactly::{MAX_RETRIES, copyable, is_tight, lowered, spare_of};
    let budget = output
        .envelope
        .data()
        .and_then(|data| policy.budget_for(tool_budget, data));
    // What to prepare again from when the exact count is over. Made before knowing whether it
    // is needed: the output is consumed by the first pass. With the budget-aware encoder a
    // list payload holds little more than a budget's worth of rows; a graph is whole.
    let spare = budget
        .filter(|_| copyable(&output))
        .map(|_| spare_of(&output));
    let mut prepared = prepare_within(output, controls, tool_budget, policy, None);
    let mut estimated = estimated_size(&prepared, policy);
    if !check.always && !budget.is_some_and(|budget| is_tight(estimated, budget)) {
        return prepared;
    }
    prepared = stamped_exactly(prepared, check.counter, controls);
    let (Some(budget), Some(spare)) = (budget, spare) else {
        return prepared;
    };
    let mut target = budget;
    for _ in 0..MAX_RETRIES {
        let exact = exact_size(&prepared);
        if exact <= budget as u64 || target <= 1 {
            break;
        }
        target = lowered(target, budget, estimated, exact);
        let again = prepare_within(
            spare_of(&spare),
            controls,
            tool_budget,
            policy,
            Some(target),
        );
        estimated = estimated_size(&again, policy);
        prepared = stamped_exactly(again, check.counter, controls);
    }
    prepared
}

/// The response's size in token-normalized characters by the estimate it was stamped with.
#[cfg(feature = "exact")]
fn estimated_size(prepared: &Prepared, policy: &BudgetPolicy) -> u64 {
    let tokens = prepared
        .tokens_estimated
        .unwrap_or_else(|| policy.estimator.estimate(&prepared.json));
    crate::exactly::normalized(&prepared.json, tokens)
}

/// The response's size in token-normalized characters by its exact stamp.
#[cfg(feature = "exact")]
fn exact_size(prepared: &Prepared) -> u64 {
    let tokens = prepared.tokens_estimated.unwrap_or(u64::MAX / 4);
    crate::exactly::normalized(&prepared.json, tokens)
}

/// `prepared` stamped with `counter`'s exact count of its own JSON, that count included, and
/// its JSON and text mirror written again.
#[cfg(feature = "exact")]
fn stamped_exactly(
    prepared: Prepared,
    counter: crate::ExactCounter,
    controls: &Controls,
) -> Prepared {
    let Prepared {
        mut structured,
        leftovers,
        ..
    } = prepared;
    crate::exactly::stamp_exact(&mut structured, counter);
    let json = serde_json::to_string(&structured).unwrap_or_default();
    with_mirror(structured, json, controls, leftovers)
}

/// [`prepare`] by the estimate alone; `lowered` replaces the policy's budget for the payload
/// when given (the exact check lowers it).
fn prepare_within(
    output: ToolOutput,
    controls: &Controls,
    tool_budget: Option<usize>,
    policy: &BudgetPolicy,
    lowered: Option<usize>,
) -> Prepared {
    let ToolOutput {
        mut envelope,
        baseline,
        precut,
        measure,
        // Shaping follows `controls`: a server passes these, as the tool's entry decoded them.
        controls: _,
        resume,
    } = output;
    let data = take_data(&mut envelope);
    // Savings are observability-only: `compact` leaves them out with the rest of that group.
    let full = controls.keeps_full_meta();
    let baseline = baseline.filter(|_| full);
    // How the count was made is observability too: a model cannot act on it.
    let method = full.then(|| policy.estimator.method());
    let mut rest = match serde_json::to_value(&envelope) {
        Ok(Value::Object(rest)) => rest,
        // An envelope always serializes to an object; keep going with an empty one if not.
        _ => Map::new(),
    };
    shape(&mut rest, controls);
    let estimator = policy.estimator;
    let budget = data
        .as_ref()
        .and_then(|data| policy.budget_for(tool_budget, data))
        .map(|policed| lowered.unwrap_or(policed));
    // The envelope's own fields obey the budget too: all of it without a payload (an error);
    // beside one, half of it, checked below once the rest is sized anyway.
    if data.is_none()
        && let Some(limit) = policy.budget_for(tool_budget, &Value::Null)
    {
        // Every answer under a budget says whether it was cut, an error's too.
        if let Some(Value::Object(meta)) = rest.get_mut("meta") {
            meta.entry(keys::TRUNCATED).or_insert(json!(false));
        }
        let limit = limit.saturating_sub(STAMPS_RESERVE);
        fit_own_fields(&mut rest, limit, estimator, |rest| rest_counts(rest, false));
    }

    let measured = measure.get::<MeasuredLists>();
    // The common case: the payload was converted whole and the response fits. It is written
    // out once, and its token count spliced into those bytes.
    if let (Some(budget), Some(payload), Some(whole)) =
        (budget, &data, measured.and_then(MeasuredLists::whole))
        && precut.is_empty()
        && baseline.is_none()
        && !nested_deeper_than(payload, MAX_DEPTH)
        && let Some(json) = write_fitting(
            &mut rest,
            whole,
            budget,
            estimator,
            method,
            resume.as_ref(),
            payload.as_array().map(Vec::len),
        )
    {
        return finish(rest, data, json, controls, Leftovers::default());
    }

    let mut leftovers = Leftovers::default();
    // The counts of everything but the payload and the token count, when known without
    // writing the rest out again (see `stamped_rest_counts`).
    let mut rest_base = None;
    // The payload's JSON as the encoder wrote it, while the payload stays as encoded.
    let mut data_json = measured
        .and_then(MeasuredLists::whole)
        .filter(|_| precut.is_empty())
        .map(|whole| whole.json.as_str());
    let (data, data_counts) = match (budget, data) {
        (Some(budget), Some(payload)) => {
            // Stamps written after trimming take room: size them at their widest now.
            reserve_stamps(&mut rest, baseline.as_ref(), method.is_some());
            let mut reserved = rest_counts(&rest, true);
            // What reconciling a cut may write is own fields too: sized with them, so that
            // trimming the result again changes nothing.
            let bare_list = payload.as_array().map(Vec::len);
            let mut reserve = completeness_reserve(&rest, resume.as_ref(), bare_list);
            // Half the budget for the envelope's own fields, which leaves the payload the rest.
            if estimator.normalized_size(&(reserved + reserve)) > (budget / 2) as u64 {
                fit_own_fields(&mut rest, budget / 2, estimator, |rest| {
                    rest_counts(rest, true) + reserve
                });
                reserved = rest_counts(&rest, true);
                reserve = completeness_reserve(&rest, resume.as_ref(), bare_list);
            }
            let fixed = reserved + reserve;
            // A subgraph cut keeps ranked rows, not a prefix: no position resumes after it.
            let resumable = resume.as_ref().filter(|_| !is_graph(&payload));
            let trimmed = trim_measured(
                payload,
                fixed,
                budget,
                estimator,
                policy.list_order,
                &precut,
                measured,
            );
            if trimmed.cut_any {
                data_json = None;
            }
            let untouched = !trimmed.cut_any
                && !trimmed.unshrinkable
                && trimmed.markers.is_empty()
                && trimmed.list_cuts.is_empty();
            if untouched {
                // Nothing to mark or reconcile: the rest is as sized, but for the stamps.
                rest_base = baseline
                    .is_none()
                    .then(|| stamped_rest_counts(reserved, method));
            } else {
                merge_markers(
                    &mut rest,
                    trimmed.markers,
                    trimmed.cut_any,
                    trimmed.unshrinkable,
                );
                reconcile_completeness(&mut rest, &trimmed.list_cuts, Continue::after(resumable));
            }
            leftovers = trimmed.leftovers;
            (Some(trimmed.data), trimmed.data_counts)
        }
        (None, Some(payload)) => {
            // No budget, but nesting too deep to serialize safely is still cut.
            data_json = None;
            let trimmed = cut_depth(payload);
            if trimmed.cut_any {
                merge_markers(&mut rest, trimmed.markers, true, false);
            }
            // Without a budget no encoder should have cut anything; if one did, say so.
            let cuts: Vec<ListCut> = precut
                .iter()
                .map(|(key, full)| ListCut {
                    key: key.clone(),
                    from: *full,
                    to: list_len(&trimmed.data, key),
                })
                .collect();
            if !cuts.is_empty() {
                let markers = cuts
                    .iter()
                    .flat_map(|cut| {
                        [
                            (keys::list_cut_from(&cut.key), json!(cut.from)),
                            (keys::list_cut_to(&cut.key), json!(cut.to)),
                        ]
                    })
                    .collect();
                merge_markers(&mut rest, markers, true, false);
                reconcile_completeness(&mut rest, &cuts, Continue::after(resume.as_ref()));
            }
            leftovers = trimmed.leftovers;
            (Some(trimmed.data), trimmed.data_counts)
        }
        (_, None) => (None, Counts::default()),
    };

    stamp_tokens(
        &mut rest,
        StampBase {
            with_data: data.is_some(),
            data_counts,
            rest: rest_base,
        },
        estimator,
        method,
        baseline.as_ref(),
    );
    // The payload is most of the text; when it went out as encoded, its JSON is not written
    // a second time.
    let spliced = match (&data, data_json) {
        (Some(_), Some(data_json)) => Some(write_response(&rest, Some(data_json)).json),
        _ => None,
    };
    let mut structured = rest;
    if let Some(data) = data {
        structured.insert("data".to_owned(), data);
    }
    let structured = Value::Object(structured);
    let json = spliced.unwrap_or_else(|| serde_json::to_string(&structured).unwrap_or_default());
    with_mirror(structured, json, controls, leftovers)
}

/// The response from its own fields and payload, written out as `json`.
fn finish(
    mut rest: Map<String, Value>,
    data: Option<Value>,
    json: String,
    controls: &Controls,
    leftovers: Leftovers,
) -> Prepared {
    if let Some(data) = data {
        rest.insert("data".to_owned(), data);
    }
    with_mirror(Value::Object(rest), json, controls, leftovers)
}

/// The prepared response, with its TOON mirror when the controls ask for one.
fn with_mirror(
    structured: Value,
    json: String,
    controls: &Controls,
    leftovers: Leftovers,
) -> Prepared {
    let (mut structured, mut json) = (structured, json);
    let tokens_estimated = structured["meta"][keys::TOKENS_ESTIMATED].as_u64();
    // Counted on the way (the budget needs the count), but sent only in full.
    if !controls.keeps_full_meta()
        && let Some(Value::Object(meta)) = structured.get_mut("meta")
        // The map's order (sorted: serde_json without `preserve_order`) is unchanged by the
        // removal, so the text stays what it would serialize to; the property tests hold this.
        && meta.remove(keys::TOKENS_ESTIMATED).is_some()
    {
        crate::splice::remove_member(&mut json, &["meta", keys::TOKENS_ESTIMATED]);
    }
    // Any encoder error (say, nesting too deep) falls back to the JSON mirror.
    let toon = (controls.output_format == OutputFormat::Toon)
        .then(|| crate::toon::encode(&structured).ok())
        .flatten();
    Prepared {
        structured,
        json,
        tokens_estimated,
        toon,
        leftovers,
    }
}

/// The response's JSON with `whole` as its payload, stamped, when it fits `budget` as it is:
/// the own fields within half of it, everything within all of it, room kept for what
/// reconciling a cut would write. Written once: the token count is spliced into the bytes
/// it counts. `None` leaves `rest` for the ladder (with the stamps it overwrites anyway).
fn write_fitting(
    rest: &mut Map<String, Value>,
    whole: &Whole,
    budget: usize,
    estimator: Estimator,
    method: Option<TokensMethod>,
    resume: Option<&Resume>,
    bare_list: Option<usize>,
) -> Option<String> {
    {
        let Some(Value::Object(meta)) = rest.get_mut("meta") else {
            return None;
        };
        if let Some(method) = method {
            meta.insert(keys::TOKENS_METHOD.to_owned(), json!(method));
        }
        meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(0));
        meta.entry(keys::TRUNCATED).or_insert(json!(false));
    }
    let written = write_response(rest, Some(&whole.json));
    let (mut json, placeholder) = (written.json, written.tokens_estimated?);
    // The payload's bytes are counted already. The bytes around them count on their own:
    // JSON punctuation on both sides of each seam ends every run.
    let data = written.data.unwrap_or(0..0);
    let rest_counts = Counts::of_bytes(&json.as_bytes()[..data.start])
        + Counts::of_bytes(&json.as_bytes()[data.end..]);
    // Everything but the placeholder's one digit; then the widest count in its place.
    let base = sub_digits(rest_counts + whole.counts, 1);
    let widest = base + digits(WIDEST_TOKENS);
    let reserve = completeness_reserve(rest, resume, bare_list);
    let own = crate::size::sub(widest, whole.counts) + reserve;
    let fits = estimator.normalized_size(&own) <= (budget / 2) as u64
        && estimator.normalized_size(&(widest + reserve)) <= budget as u64;
    if !fits {
        return None;
    }
    let tokens = token_fixed_point(base, estimator, None);
    json.replace_range(placeholder, &tokens.to_string());
    if let Some(Value::Object(meta)) = rest.get_mut("meta") {
        meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(tokens));
    }
    Some(json)
}

/// A response written out, and where two of its values sit in it.
struct Written {
    json: String,
    /// The payload's bytes.
    data: Option<Range<usize>>,
    /// The value of `meta.tokens_estimated`.
    tokens_estimated: Option<Range<usize>>,
}

/// `serde_json::to_string` of `rest` with a `data` member whose JSON is `data_json` (none when
/// `None`): members in the map's key order, `data` among them. Also where the payload and the
/// value of `meta.tokens_estimated` sit in it, so the count can be spliced in.
fn write_response(rest: &Map<String, Value>, data_json: Option<&str>) -> Written {
    fn separate(out: &mut Vec<u8>, first: usize) {
        if out.len() > first {
            out.push(b',');
        }
    }
    fn member(out: &mut Vec<u8>, first: usize, key: &str) {
        separate(out, first);
        // Writing JSON into a `Vec` cannot fail for a string.
        let _ = serde_json::to_writer(&mut *out, key);
        out.push(b':');
    }
    let mut out = Vec::with_capacity(data_json.map_or(0, str::len) + 64 * rest.len() + 16);
    let mut placeholder = None;
    let mut data_range = None;
    let mut write_data = |out: &mut Vec<u8>, data: &str| {
        member(out, 1, "data");
        data_range = Some(out.len()..out.len() + data.len());
        out.extend_from_slice(data.as_bytes());
    };
    out.push(b'{');
    let mut data_json = data_json;
    for (key, value) in rest {
        if key.as_str() > "data"
            && let Some(data) = data_json.take()
        {
            write_data(&mut out, data);
        }
        member(&mut out, 1, key);
        match value {
            Value::Object(meta) if key == "meta" => {
                out.push(b'{');
                let first = out.len();
                for (key, value) in meta {
                    member(&mut out, first, key);
                    let start = out.len();
                    // Writing JSON into a `Vec` cannot fail for a `Value`: its keys are strings.
                    let _ = serde_json::to_writer(&mut out, value);
                    if key == keys::TOKENS_ESTIMATED {
                        placeholder = Some(start..out.len());
                    }
                }
                out.push(b'}');
            }
            value => {
                let _ = serde_json::to_writer(&mut out, value);
            }
        }
    }
    if let Some(data) = data_json {
        write_data(&mut out, data);
    }
    out.push(b'}');
    // Both parts are serde_json's UTF-8; the lossy conversion never changes them.
    let json = String::from_utf8(out)
        .unwrap_or_else(|error| String::from_utf8_lossy(error.as_bytes()).into_owned());
    Written {
        json,
        data: data_range,
        tokens_estimated: placeholder,
    }
}

/// The length of the list under `key` in `data` (the payload itself for the root list).
fn list_len(data: &Value, key: &str) -> usize {
    match data {
        Value::Array(items) if key == ROOT_LIST_KEY => items.len(),
        _ => data.get(key).and_then(Value::as_array).map_or(0, Vec::len),
    }
}

/// Counts of everything but `data`, as serialized, and of the `data` member's key and comma
/// when `with_data` (its value is counted apart).
fn rest_counts(rest: &Map<String, Value>, with_data: bool) -> Counts {
    // Written out and counted in blocks: for these few hundred bytes, faster than a walk. The
    // response is written out whole later anyway, so this is no deeper a recursion than that.
    let mut bytes = Vec::with_capacity(512);
    // Writing JSON into a `Vec` cannot fail for a map with string keys.
    let _ = serde_json::to_writer(&mut bytes, rest);
    let mut counts = Counts::of_bytes(&bytes);
    if with_data {
        counts += member_key_counts("data", true);
    }
    counts
}

/// Cuts the envelope's own fields (`rest`) to `limit` as measured by `size`, and says so in
/// `meta` when anything was cut.
fn fit_own_fields(
    rest: &mut Map<String, Value>,
    limit: usize,
    estimator: Estimator,
    size: impl Fn(&Map<String, Value>) -> Counts,
) {
    let fitted = own_fields::fit(rest, limit, estimator, size);
    if fitted.cut_any {
        merge_markers(rest, Default::default(), true, fitted.unshrinkable);
    }
}

/// Room for the stamps written after the own fields are fitted: `tokens_estimated` and
/// `tokens_method` at their widest, `truncated` and `envelope_unshrinkable`, with their keys.
const STAMPS_RESERVE: usize = 128;

/// The widest token count and method: [`reserve_stamps`] sizes the response with them, and
/// [`stamped_rest_counts`] takes exactly them back out.
const WIDEST_TOKENS: u64 = u64::MAX;
const WIDEST_METHOD: TokensMethod = TokensMethod::ScriptAware;

/// Writes the stamps that come after trimming at their widest, so the trimmer sizes them:
/// `tokens_estimated`, `tokens_method` (when `with_method`), `truncated`. The real values are
/// never wider.
fn reserve_stamps(rest: &mut Map<String, Value>, baseline: Option<&Baseline>, with_method: bool) {
    let Some(Value::Object(meta)) = rest.get_mut("meta") else {
        return;
    };
    meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(WIDEST_TOKENS));
    if with_method {
        meta.insert(keys::TOKENS_METHOD.to_owned(), json!(WIDEST_METHOD));
    }
    meta.entry(keys::TRUNCATED).or_insert(json!(false));
    // The savings against a baseline are stamped last, from the final count: their widest.
    if let Some(baseline) = baseline {
        meta.insert(keys::BASELINE_METHOD.to_owned(), json!(baseline.method));
        meta.insert(keys::TOKENS_SAVED.to_owned(), json!(i64::MIN));
        meta.insert(keys::TOKENS_SAVED_PCT.to_owned(), json!(f64::MIN));
    }
}

/// The counts [`stamp_tokens`] starts from, derived from those of the rest with the widest
/// stamps [`reserve_stamps`] wrote: the same bytes but for the token count, left out, and the
/// method, whose real name replaces the widest. Exact: JSON's quotes and separators keep every
/// run count inside the value it belongs to.
fn stamped_rest_counts(reserved: Counts, method: Option<TokensMethod>) -> Counts {
    match method {
        Some(method) => {
            let widest = digits(WIDEST_TOKENS) + value_counts(&json!(WIDEST_METHOD));
            crate::size::sub(reserved, widest) + value_counts(&json!(method))
        }
        None => crate::size::sub(reserved, digits(WIDEST_TOKENS)),
    }
}

/// Room for what [`reconcile_completeness`] may write if the described list is cut: the
/// completeness with `budget_limit` and the re-rendered `next_step`, at their widest (the kept
/// count has no more digits than the original). A re-sealed token is as long as the one it
/// replaces.
///
/// A payload that is a bare list of `bare_list` rows, without a `completeness`, gets one when
/// it is cut: its room is reserved too.
fn completeness_reserve(
    rest: &Map<String, Value>,
    resume: Option<&Resume>,
    bare_list: Option<usize>,
) -> Counts {
    let cut = match (rest.get("completeness"), bare_list) {
        (Some(value), _) => match serde_json::from_value::<Completeness>(value.clone()) {
            // The kept count has no more digits than the original.
            Ok(completeness) => ListCut {
                key: ROOT_LIST_KEY.to_owned(),
                from: completeness.returned(),
                to: completeness.returned(),
            },
            Err(_) => return Counts::default(),
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
    if let Some(value) = rest.get("completeness") {
        before.insert("completeness".to_owned(), value.clone());
    }
    if let Some(step) = rest.get("next_step") {
        before.insert("next_step".to_owned(), step.clone());
    }
    let mut widest = before.clone();
    reconcile_completeness(
        &mut widest,
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

/// Applies `response_mode` and `compact_only`.
fn shape(rest: &mut Map<String, Value>, controls: &Controls) {
    if controls.compact_only {
        rest.retain(|key, _| CONTROL_SURFACE.contains(&key.as_str()));
        if let Some(Value::Object(meta)) = rest.get_mut("meta") {
            meta.retain(|key, _| {
                CONTROL_SURFACE_META.contains(&key.as_str()) || key.starts_with(keys::MARKER_PREFIX)
            });
        }
    } else if controls.response_mode == ResponseMode::Compact
        && let Some(Value::Object(meta)) = rest.get_mut("meta")
    {
        meta.retain(|key, _| !COMPACT_DROPPED_META.contains(&key.as_str()));
    }
}

/// Writes the trimmer's markers into `meta`, keeping markers from an earlier trim.
fn merge_markers(
    rest: &mut Map<String, Value>,
    markers: std::collections::BTreeMap<String, Value>,
    cut_any: bool,
    unshrinkable: bool,
) {
    let Some(Value::Object(meta)) = rest.get_mut("meta") else {
        return;
    };
    let already = meta
        .get(keys::TRUNCATED)
        .and_then(Value::as_bool)
        .unwrap_or(false);
    meta.insert(keys::TRUNCATED.to_owned(), json!(already || cut_any));
    for (key, value) in markers {
        // A second trim of a list keeps the first trim's "from": the original length.
        if key.ends_with(keys::LIST_CUT_FROM_SUFFIX) && meta.contains_key(&key) {
            continue;
        }
        meta.insert(key, value);
    }
    if unshrinkable {
        meta.insert(keys::ENVELOPE_UNSHRINKABLE.to_owned(), json!(true));
    }
}

/// `next_step`'s advice after the budget cut the described rows, without a way to resume.
const BUDGET_CUT: &str =
    "the response budget cut the rest; narrow the query or lower the page size";

/// `next_step`'s advice after the budget cut the described rows of a page that resumes.
const BUDGET_CUT_RESUMABLE: &str =
    "the response budget cut the rest; follow `next-page`, or lower the page size";

/// What becomes of a page's continuation when the budget cuts the rows it follows.
enum Continue<'a> {
    /// Sealed to resume right after the last row sent; the next-page action carries the new
    /// token (and is added when the page was the last and had none).
    After(&'a Resume),
    /// Dropped, with the actions carrying it: nothing can re-seal it.
    Drop,
}

impl<'a> Continue<'a> {
    fn after(resume: Option<&'a Resume>) -> Self {
        resume.map_or(Continue::Drop, Continue::After)
    }
}

/// When the list that `completeness` describes was cut, `returned` drops to what is sent,
/// `budget_limit` joins the reasons, the continuation (which pointed past the unsent rows) is
/// re-sealed after the last row sent (or, when it cannot be, dropped with the actions carrying
/// it), and `next_step` is re-rendered with the sent numbers.
///
/// The described list is the payload itself when it is an array, else the cut top-level list
/// whose original length equals `completeness.returned`.
fn reconcile_completeness(rest: &mut Map<String, Value>, cuts: &[ListCut], next: Continue<'_>) {
    if cuts.is_empty() {
        return;
    }
    let Some(value) = rest.get("completeness") else {
        // A bare list the budget cut: `completeness` says so, never a silently shorter list.
        if let Some(cut) = cuts.iter().find(|cut| cut.key == ROOT_LIST_KEY) {
            describe_bare_cut(rest, cut);
        }
        return;
    };
    let Ok(completeness) = serde_json::from_value::<Completeness>(value.clone()) else {
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
    match (next, old) {
        (Continue::After(resume), old) => match resume.after(cut.to) {
            Ok(Some(fresh)) => {
                match &old {
                    // The next-page action takes `completeness.continuation`, which is
                    // replaced below; an action built with the old token in its arguments
                    // gets the new one.
                    Some(token) => replace_token(rest, token, &fresh),
                    // The last page had no next page; now it has one.
                    None => add_action(rest, resume.next_page()),
                }
                parts.continuation = Some(fresh);
            }
            // Nothing sent, or sealing failed: the old token would skip rows.
            Ok(None) | Err(_) => {
                if let Some(token) = old {
                    drop_actions_carrying(rest, &token);
                }
            }
        },
        (Continue::Drop, Some(token)) => drop_actions_carrying(rest, &token),
        (Continue::Drop, None) => {}
    }
    let advice = if parts.continuation.is_some() {
        BUDGET_CUT_RESUMABLE
    } else {
        BUDGET_CUT
    };
    let Ok(updated) = Completeness::try_from_parts(parts) else {
        return;
    };
    let step = updated.next_step(advice);
    if let Ok(value) = serde_json::to_value(&updated) {
        rest.insert("completeness".to_owned(), value);
    }
    if let Some(step) = step {
        rest.insert("next_step".to_owned(), Value::String(step));
    }
}

/// The `completeness` and `next_step` of a payload that is a bare list the budget cut: `to` of
/// its `from` items, cut by the budget.
fn describe_bare_cut(rest: &mut Map<String, Value>, cut: &ListCut) {
    let Ok(completeness) = Completeness::truncated_page(
        Unit::ITEM,
        cut.to,
        Some(cut.from),
        TruncationReason::BudgetLimit,
        None,
    ) else {
        return;
    };
    let step = completeness.next_step(BUDGET_CUT);
    if let Ok(value) = serde_json::to_value(&completeness) {
        rest.insert("completeness".to_owned(), value);
    }
    if let Some(step) = step {
        rest.insert("next_step".to_owned(), Value::String(step));
    }
}

/// Adds `action` (the next-page call the budget stage made possible) to the next actions.
fn add_action(rest: &mut Map<String, Value>, action: Result<NextAction, envelope_core::ToolError>) {
    let Ok(Ok(action)) = action.map(serde_json::to_value) else {
        return;
    };
    match rest.get_mut("next_actions") {
        Some(Value::Array(actions)) => actions.push(action),
        _ => {
            rest.insert("next_actions".to_owned(), Value::Array(vec![action]));
        }
    }
}

/// Puts `fresh` where the next actions pass `token` as an argument: the next-page call then
/// resumes where the budget cut the page.
fn replace_token(rest: &mut Map<String, Value>, token: &str, fresh: &str) {
    let Some(Value::Array(actions)) = rest.get_mut("next_actions") else {
        return;
    };
    for action in actions {
        if let Some(Value::Object(arguments)) = action.get_mut("arguments") {
            for value in arguments.values_mut() {
                if value == token {
                    *value = Value::String(fresh.to_owned());
                }
            }
        }
    }
}

/// Drops the next actions that pass `token` as an argument (a next-page call), then normalizes
/// the rest again. The token points past rows the budget cut, so following it would skip them.
fn drop_actions_carrying(rest: &mut Map<String, Value>, token: &str) {
    let Some(Value::Array(actions)) = rest.remove("next_actions") else {
        return;
    };
    let carries = |action: &Value| crate::cut::carries_token(action, token);
    let kept: Vec<Value> = actions
        .into_iter()
        .filter(|action| !carries(action))
        .collect();
    // Normalizing again drops actions that depended on a dropped one. Actions this crate
    // cannot read are kept as they were.
    let kept = match serde_json::from_value::<Vec<NextAction>>(Value::Array(kept.clone())) {
        Ok(actions) => {
            serde_json::to_value(normalize_next_actions(actions)).unwrap_or(Value::Array(kept))
        }
        Err(_) => Value::Array(kept),
    };
    if kept.as_array().is_some_and(|kept| !kept.is_empty()) {
        rest.insert("next_actions".to_owned(), kept);
    }
}

/// What the token count is made of, besides its own digits and the savings.
struct StampBase {
    /// Whether the response carries `data`.
    with_data: bool,
    /// The counts of the payload as sent.
    data_counts: Counts,
    /// The counts of everything else with the real `tokens_method` and no token count, when
    /// already known; `None` writes the rest out to count it.
    rest: Option<Counts>,
}

/// Stamps `tokens_estimated` (of the whole response, this field included), `tokens_method`
/// (when given: under `response_mode: full`), and the savings against a declared baseline.
fn stamp_tokens(
    rest: &mut Map<String, Value>,
    stamp: StampBase,
    estimator: Estimator,
    method: Option<TokensMethod>,
    baseline: Option<&Baseline>,
) {
    let Some(Value::Object(meta)) = rest.get_mut("meta") else {
        return;
    };
    if let Some(method) = method {
        meta.insert(keys::TOKENS_METHOD.to_owned(), json!(method));
    }
    if let Some(baseline) = baseline {
        // Placeholders of the final width are set below, once the count is known; the widest
        // ones `reserve_stamps` wrote would be counted twice.
        meta.insert(keys::BASELINE_METHOD.to_owned(), json!(baseline.method));
        meta.remove(keys::TOKENS_SAVED);
        meta.remove(keys::TOKENS_SAVED_PCT);
    }
    let base = match stamp.rest {
        Some(rest) => rest + stamp.data_counts,
        None => {
            meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(0));
            sub_digits(rest_counts(rest, stamp.with_data) + stamp.data_counts, 1)
        }
    };
    let tokens = token_fixed_point(base, estimator, baseline);
    let Some(Value::Object(meta)) = rest.get_mut("meta") else {
        return;
    };
    meta.insert(keys::TOKENS_ESTIMATED.to_owned(), json!(tokens));
    if let Some(baseline) = baseline {
        let (saved, pct) = savings(baseline.tokens, tokens);
        meta.insert(keys::TOKENS_SAVED.to_owned(), json!(saved));
        meta.insert(keys::TOKENS_SAVED_PCT.to_owned(), json!(pct));
    }
}

/// The token count of a response whose other bytes count `base`: a fixed point, since the
/// count's own digits (and the savings computed from it) are part of what it counts.
fn token_fixed_point(base: Counts, estimator: Estimator, baseline: Option<&Baseline>) -> u64 {
    let mut tokens = estimator.tokens(&(base + digits(0)));
    for _ in 0..8 {
        let with_savings = base + digits(tokens) + savings_counts(baseline, tokens);
        let next = estimator.tokens(&with_savings);
        if next == tokens {
            break;
        }
        tokens = next;
    }
    tokens
}

/// `tokens_saved` and `tokens_saved_pct` = saved / (saved + used) × 100, one decimal; negative
/// when the response cost more than the baseline.
fn savings(baseline_tokens: u64, used: u64) -> (i64, f64) {
    // Saturating: a baseline the author declared past `i64::MAX` must not overflow.
    let wide = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    let saved = wide(baseline_tokens).saturating_sub(wide(used));
    let denominator = baseline_tokens as f64;
    let pct = if denominator > 0.0 {
        (saved as f64 / denominator * 1000.0).round() / 10.0
    } else {
        0.0
    };
    (saved, pct)
}

fn savings_counts(baseline: Option<&Baseline>, tokens: u64) -> Counts {
    let Some(baseline) = baseline else {
        return Counts::default();
    };
    let (saved, pct) = savings(baseline.tokens, tokens);
    member_key_counts(keys::TOKENS_SAVED, true)
        + value_counts(&json!(saved))
        + member_key_counts(keys::TOKENS_SAVED_PCT, true)
        + value_counts(&json!(pct))
}

/// The counts of `n` written out: its digits, one run of them.
fn digits(n: u64) -> Counts {
    Counts {
        digits: u64::from(n.checked_ilog10().unwrap_or(0) + 1),
        digit_runs: 1,
        ..Counts::default()
    }
}

/// `counts` without a number of `n` digits (one run of them).
fn sub_digits(counts: Counts, n: u64) -> Counts {
    let number = Counts {
        digits: n,
        digit_runs: 1,
        ..Counts::default()
    };
    counts.saturating_sub(&number)
}

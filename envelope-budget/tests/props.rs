//! Property tests of the boundary over arbitrary JSON payloads.

use std::collections::BTreeSet;

use std::sync::LazyLock;

use envelope_budget::{
    BudgetPolicy, Estimator, Prepared, ROOT_LIST_KEY, TRUNCATION_SUFFIX, prepare,
};
use envelope_core::schema::Portable;
use envelope_core::stage::Controls;
use envelope_core::stage::ToolOutput;
use envelope_core::{Completeness, Envelope, Reply, Tool, ToolContext, ToolResult, Unit, tool};
use proptest::prelude::*;
use schemars::transform::Transform;
use serde_json::{Map, Value, json};

mod support;

use support::block_on;

/// Strings that stress char boundaries: accents, emoji, a ZWJ family, CJK, escapes.
fn text() -> impl Strategy<Value = String> {
    let pieces = prop::sample::select(vec![
        "a",
        "word ",
        "é",
        "🙂",
        "👩\u{200d}👩\u{200d}👧",
        "漢字",
        "かな",
        "\"",
        "\\",
        "\n",
        "0",
        " ",
    ]);
    (prop::collection::vec(pieces, 0..12), 0_usize..80).prop_map(|(pieces, repeat)| {
        let piece: String = pieces.concat();
        piece.repeat(1 + repeat % 40)
    })
}

fn json() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e12_f64..1.0e12).prop_map(Value::from),
        text().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 160, 40, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..40).prop_map(Value::Array),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect::<Map<String, Value>>())),
        ]
    })
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct EchoArgs {
    /// What to return.
    payload: Value,
}

/// Returns its payload; a list comes with its `completeness`, which sorts before `data`.
#[tool(tier = lite, read_only)]
fn echo(args: EchoArgs) -> ToolResult<Reply<Value>> {
    let rows = args.payload.as_array().map(Vec::len);
    let reply = Reply::new(args.payload);
    Ok(match rows {
        Some(rows) => reply.completeness(Completeness::complete(Unit::ITEM, rows)),
        None => reply,
    })
}

/// A tool's output schema as a server lists it (made [`Portable`]), compiled.
fn listed_output(tool: &dyn Tool) -> jsonschema::Validator {
    let mut schema = tool.output_schema();
    Portable.transform(&mut schema);
    jsonschema::draft202012::new(&schema.to_value()).expect("the output schema compiles")
}

static ECHO_OUTPUT: LazyLock<jsonschema::Validator> = LazyLock::new(|| listed_output(&echo {}));

/// Why `structured` fails `schema`, or `None` when it validates.
fn violations(schema: &jsonschema::Validator, structured: &Value) -> Option<String> {
    let errors: Vec<String> = schema
        .iter_errors(structured)
        .map(|error| format!("{error} at {}", error.instance_path()))
        .collect();
    (!errors.is_empty()).then(|| format!("{errors:?} in {structured}"))
}

/// One row of the typed payload: short strings a trimmer never cuts keep their constraints.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug)]
struct Row {
    /// At most 16 characters: never cut.
    #[schemars(length(min = 1, max = 16), regex(pattern = r"^[a-z]+$"))]
    name: String,
    /// Long prose the trimmer may cut: a cut one ends in `…[truncated]`, which this pattern
    /// refuses, so the listed schema must have dropped it.
    #[schemars(length(min = 1), regex(pattern = r"^[^…]*$"))]
    body: String,
    /// Written as `null` or as a string the trimmer may cut: the nullable form must be loosened
    /// too.
    #[schemars(length(min = 1), regex(pattern = r"^[^…]*$"))]
    motto: Option<String>,
    /// A non-negative count.
    count: u32,
    /// Written as `null` when absent.
    score: Option<f64>,
    /// Omitted when absent.
    #[serde(skip_serializing_if = "Option::is_none")]
    note: Option<String>,
}

/// A recursive type: the trimmer may cut it to a string past its depth limit.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug)]
struct Tree {
    label: String,
    children: Vec<Tree>,
}

/// A typed payload with lists, long strings and recursion: what the trimmer cuts.
/// A recursive enum: schemars writes its variants as `oneOf`, and a depth marker must not
/// match two of them.
#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug)]
#[serde(rename_all = "snake_case")]
enum Shape {
    Leaf(String),
    Group { members: Vec<Shape> },
}

#[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema, Clone, Debug)]
struct Report {
    /// Prose the trimmer may cut, with a pattern a cut string breaks.
    #[schemars(regex(pattern = r"^[^…]*$"))]
    summary: String,
    /// At least one row, as the author declared.
    #[schemars(length(min = 1))]
    rows: Vec<Row>,
    tags: Vec<String>,
    /// A set: long members sharing a prefix may be cut to the same text.
    labels: std::collections::BTreeSet<String>,
    tree: Tree,
    shape: Shape,
}

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ReportArgs {
    report: Report,
    baseline: u64,
}

/// Returns its report, with a declared baseline that it may well exceed.
#[tool(tier = lite, read_only)]
fn report(args: ReportArgs) -> ToolResult<Reply<Report>> {
    let rows = args.report.rows.len();
    Ok(Reply::new(args.report)
        .completeness(Completeness::complete(Unit::ITEM, rows))
        .baseline("full_file_read", args.baseline))
}

static REPORT_OUTPUT: LazyLock<jsonschema::Validator> = LazyLock::new(|| listed_output(&report {}));

fn row() -> impl Strategy<Value = Row> {
    (
        "[a-z]{1,16}",
        text().prop_filter("non-empty", |text| !text.is_empty()),
        any::<u32>(),
        prop::option::of(-1.0e6_f64..1.0e6),
        prop::option::of(text()),
        prop::option::of(text().prop_filter("non-empty", |text| !text.is_empty())),
    )
        .prop_map(|(name, body, count, score, note, motto)| Row {
            name,
            body,
            motto,
            count,
            score,
            note,
        })
}

fn tree() -> impl Strategy<Value = Tree> {
    let leaf = "[a-z]{0,6}".prop_map(|label| Tree {
        label,
        children: Vec::new(),
    });
    leaf.prop_recursive(6, 40, 4, |inner| {
        ("[a-z]{0,6}", prop::collection::vec(inner, 0..4))
            .prop_map(|(label, children)| Tree { label, children })
    })
}

/// A tree nested `depth` levels: deeper than the trimmer keeps.
fn deep_tree(depth: usize) -> Tree {
    let mut tree = Tree {
        label: "leaf".to_owned(),
        children: Vec::new(),
    };
    for _ in 0..depth {
        tree = Tree {
            label: "node".to_owned(),
            children: vec![tree],
        };
    }
    tree
}

/// A shape nested `depth` groups deep.
fn deep_shape(depth: usize) -> Shape {
    let mut shape = Shape::Leaf("leaf".to_owned());
    for _ in 0..depth {
        shape = Shape::Group {
            members: vec![shape],
        };
    }
    shape
}

fn shape() -> impl Strategy<Value = Shape> {
    let leaf = "[a-z]{0,6}".prop_map(Shape::Leaf);
    leaf.prop_recursive(6, 40, 4, |inner| {
        prop::collection::vec(inner, 0..4).prop_map(|members| Shape::Group { members })
    })
}

/// Long labels that differ only near their end: cut, they become equal.
fn labels() -> impl Strategy<Value = std::collections::BTreeSet<String>> {
    prop::collection::btree_set("[a-z]{1,4}", 0..6).prop_map(|endings| {
        let prefix = "shared prefix ".repeat(30);
        endings
            .into_iter()
            .map(|end| format!("{prefix}{end}"))
            .collect()
    })
}

fn report_payload() -> impl Strategy<Value = Report> {
    (
        text(),
        prop::collection::vec(row(), 1..60),
        prop::collection::vec(text(), 0..20),
        labels(),
        prop_oneof![tree(), (60_usize..90).prop_map(deep_tree)],
        prop_oneof![shape(), (60_usize..90).prop_map(deep_shape)],
    )
        .prop_map(|(summary, rows, tags, labels, tree, shape)| Report {
            summary,
            rows,
            tags,
            labels,
            tree,
            shape,
        })
}

/// `data` through the real `#[tool]` entry and the budget-aware encoder, then the boundary.
fn through_the_encoder(data: Value, budget: usize) -> Prepared {
    let ctx = ToolContext::new();
    let output = block_on(echo {}.call(json!({ "payload": data }), ctx));
    prepare_with(output, budget)
}

fn prepare_with(output: impl Into<ToolOutput>, budget: usize) -> Prepared {
    let policy = BudgetPolicy::default().with_agent_chars(Some(budget));
    prepare(output, &policy.for_call(None))
}

/// Under `response_mode: full`, where `meta` carries the token stamps.
fn full() -> Controls {
    Controls {
        response_mode: envelope_core::stage::ResponseMode::Full,
        ..Controls::default()
    }
}

fn size(prepared: &Prepared) -> u64 {
    Estimator::default().normalized_size(&envelope_budget::Counts::of(&prepared.json))
}

fn top_lists(data: &Value) -> Vec<(String, usize)> {
    match data {
        Value::Array(items) => vec![(ROOT_LIST_KEY.to_owned(), items.len())],
        Value::Object(map) => map
            .iter()
            .filter_map(|(key, value)| value.as_array().map(|items| (key.clone(), items.len())))
            .collect(),
        _ => Vec::new(),
    }
}

fn cut_strings(value: &Value, path: String, out: &mut BTreeSet<String>) {
    let mut stack = vec![(path, value)];
    while let Some((path, node)) = stack.pop() {
        match node {
            Value::String(text) if text.ends_with(TRUNCATION_SUFFIX) => {
                out.insert(path);
            }
            Value::Array(items) => stack.extend(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, item)| (format!("{path}/{i}"), item)),
            ),
            Value::Object(map) => stack.extend(map.iter().map(|(key, item)| {
                (
                    format!("{path}/{}", key.replace('~', "~0").replace('/', "~1")),
                    item,
                )
            })),
            _ => {}
        }
    }
}

/// The report call, as a server makes it: through the encoder, then the boundary.
fn report_response(report: &Report, baseline: u64, mode: &str, budget: usize) -> Prepared {
    let ctx = ToolContext::new();
    let arguments = json!({ "report": report, "baseline": baseline, "response_mode": mode });
    let output = block_on(report {}.call(arguments.clone(), ctx));
    let policy = BudgetPolicy::default().with_agent_chars(Some(budget));
    prepare(
        output.with_controls(Controls::lenient(arguments.as_object().expect("an object"))),
        &policy.for_call(None),
    )
}

#[test]
fn a_cut_typed_response_still_validates() {
    // A long summary cut, a tree and a shape past the depth limit, and savings below zero.
    let long = "a long body that the budget will cut ".repeat(40);
    let report = Report {
        summary: long.clone(),
        rows: vec![Row {
            name: "first".to_owned(),
            body: long.clone(),
            motto: Some(long),
            count: 1,
            score: None,
            note: None,
        }],
        tags: Vec::new(),
        labels: (0..4)
            .map(|i| format!("{}{i}", "shared prefix ".repeat(30)))
            .collect(),
        tree: deep_tree(80),
        shape: deep_shape(80),
    };
    let prepared = report_response(&report, 1, "full", 3_000);
    let meta = &prepared.structured["meta"];
    assert_eq!(meta["truncated"], true, "{meta}");
    assert!(meta.get("truncated_depth").is_some(), "{meta}");
    assert!(
        meta["truncated_string_fields"]
            .as_array()
            .is_some_and(|fields| fields.contains(&json!("/summary"))),
        "{meta}"
    );
    assert!(
        meta["tokens_saved"].as_i64().is_some_and(|saved| saved < 0),
        "{meta}"
    );
    assert_eq!(violations(&REPORT_OUTPUT, &prepared.structured), None);
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: 1_000,
        failure_persistence: Some(Box::new(
            proptest::test_runner::FileFailurePersistence::Direct("proptest-regressions/props.txt"),
        )),
        ..ProptestConfig::default()
    })]

    #[test]
    fn output_parses_and_fits_or_says_unshrinkable(data in json(), budget in 300_usize..6_000) {
        let prepared = prepare_with(Envelope::ok(data), budget);
        let parsed: Value = serde_json::from_str(&prepared.json).expect("output parses");
        // Compare as text: parsing a float back may differ in its last digit.
        prop_assert_eq!(serde_json::to_string(&prepared.structured).expect("serializes"), prepared.json.clone());
        let unshrinkable = prepared.structured["meta"]["envelope_unshrinkable"] == true;
        prop_assert!(unshrinkable || size(&prepared) <= budget as u64, "size {} > {}", size(&prepared), budget);
        let _: Envelope<Value> = serde_json::from_value(parsed).expect("still a valid envelope");
        prop_assert_eq!(violations(&ECHO_OUTPUT, &prepared.structured), None);
    }

    #[test]
    fn the_encoders_bytes_mirror_the_envelope_exactly(data in json(), budget in 300_usize..60_000) {
        let data_again = data.clone();
        let prepared = through_the_encoder(data, budget);
        // Whether the encoder's bytes were spliced in or the envelope was written anew, the
        // mirror is what serde_json writes for the structured envelope, and it is what the
        // token count counts.
        prop_assert_eq!(serde_json::to_string(&prepared.structured).expect("serializes"), prepared.json.clone());
        // Compact leaves the stamp out; the count it kept covers the bytes sent.
        prop_assert!(prepared.structured["meta"].get("tokens_estimated").is_none());
        let sent = Estimator::default().estimate(&prepared.json);
        prop_assert!(prepared.tokens_estimated.is_some_and(|counted| (sent..=sent + 8).contains(&counted)));
        let unshrinkable = prepared.structured["meta"]["envelope_unshrinkable"] == true;
        prop_assert!(unshrinkable || size(&prepared) <= budget as u64, "size {} > {}", size(&prepared), budget);
        prop_assert_eq!(violations(&ECHO_OUTPUT, &prepared.structured), None);
        // In full, the stamp is the count of the bytes sent, itself included.
        let ctx = ToolContext::new();
        let output = block_on(echo {}.call(json!({ "payload": data_again, "response_mode": "full" }), ctx));
        let policy = BudgetPolicy::default().with_agent_chars(Some(budget));
        let prepared = prepare(output.with_controls(full()), &policy.for_call(None));
        prop_assert_eq!(serde_json::to_string(&prepared.structured).expect("serializes"), prepared.json.clone());
        let stamped = prepared.structured["meta"]["tokens_estimated"].as_u64();
        prop_assert_eq!(stamped, Some(Estimator::default().estimate(&prepared.json)));
        prop_assert_eq!(violations(&ECHO_OUTPUT, &prepared.structured), None);
    }

    #[test]
    fn every_trimmed_typed_response_validates_against_its_listed_schema(
        payload in report_payload(),
        budget in 300_usize..20_000,
        baseline in 0_u64..4_000,
        full in any::<bool>(),
    ) {
        // Regression test for #11: every response, trimmed or not, with savings negative or
        // not, validates against the output schema the tool lists.
        let mode = if full { "full" } else { "compact" };
        let prepared = report_response(&payload, baseline, mode, budget);
        prop_assert_eq!(prepared.structured["ok"].clone(), Value::Bool(true), "{}", prepared.json);
        prop_assert_eq!(violations(&REPORT_OUTPUT, &prepared.structured), None);
    }

    #[test]
    fn trimming_twice_equals_trimming_once(data in json(), budget in 300_usize..6_000) {
        let once = prepare_with(Envelope::ok(data), budget);
        let again: Envelope<Value> = serde_json::from_value(once.structured.clone()).expect("valid");
        let twice = prepare_with(again, budget);
        prop_assert_eq!(&twice.structured, &once.structured);
    }

    #[test]
    fn within_budget_comes_back_unchanged(data in json()) {
        let prepared = prepare_with(Envelope::ok(data.clone()), 10_000_000);
        prop_assert_eq!(&prepared.structured["data"], &data);
        prop_assert_eq!(&prepared.structured["meta"]["truncated"], &Value::Bool(false));
    }

    #[test]
    fn every_cut_has_its_marker(data in json(), budget in 300_usize..6_000) {
        let prepared = prepare_with(Envelope::ok(data.clone()), budget);
        let meta = &prepared.structured["meta"];
        let sent = &prepared.structured["data"];
        if sent != &data {
            prop_assert_eq!(&meta["truncated"], &Value::Bool(true));
        }
        let before: std::collections::BTreeMap<String, usize> = top_lists(&data).into_iter().collect();
        for (key, len) in top_lists(sent) {
            let original = before.get(&key).copied().unwrap_or(len);
            if len < original {
                prop_assert_eq!(&meta[format!("truncated_{key}_from")], &Value::from(original));
                prop_assert_eq!(&meta[format!("truncated_{key}_to")], &Value::from(len));
            }
        }
        let mut already = BTreeSet::new();
        cut_strings(&data, String::new(), &mut already);
        let mut now = BTreeSet::new();
        cut_strings(sent, String::new(), &mut now);
        let listed: BTreeSet<String> = meta["truncated_string_fields"]
            .as_array()
            .map(|paths| paths.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        for path in now.difference(&already) {
            prop_assert!(listed.contains(path), "cut string {} has no marker", path);
            // A cut keeps a prefix of the original, ending on a char boundary.
            let kept = sent.pointer(path).and_then(Value::as_str).unwrap_or_default();
            let kept = kept.strip_suffix(TRUNCATION_SUFFIX).unwrap_or(kept);
            if let Some(original) = data.pointer(path).and_then(Value::as_str) {
                prop_assert!(original.starts_with(kept), "{} is not a prefix of the original", path);
            }
        }
    }

    #[test]
    fn completeness_agrees_with_what_is_sent(rows in prop::collection::vec(json(), 0..80), budget in 300_usize..6_000) {
        let total = rows.len();
        let envelope = Envelope::ok(Value::Array(rows)).with_completeness(Completeness::complete(Unit::ITEM, total));
        let prepared = prepare_with(envelope, budget);
        let completeness: Completeness =
            serde_json::from_value(prepared.structured["completeness"].clone()).expect("valid completeness");
        let sent = prepared.structured["data"].as_array().map_or(0, Vec::len);
        prop_assert_eq!(violations(&ECHO_OUTPUT, &prepared.structured), None);
        prop_assert_eq!(completeness.returned(), sent);
        prop_assert_eq!(completeness.total(), Some(total));
        if sent < total {
            let step = prepared.structured["next_step"].as_str().unwrap_or_default().to_owned();
            let expected = format!("showing {sent} of {total}");
            prop_assert!(step.starts_with(&expected), "{}", step);
        }
    }
}

#[cfg(feature = "exact")]
proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    // Every response counted exactly: these rows mix emoji sequences and CJK, where the
    // estimate can be further off than `exact_when_tight`'s margin.
    fn an_exact_check_fits_by_the_exact_count_and_completeness_stays_true(
        rows in prop::collection::vec(json(), 0..80),
        budget in 300_usize..6_000,
    ) {
        use envelope_budget::ExactCounter;

        let counter = ExactCounter::cl100k();
        let total = rows.len();
        let envelope = Envelope::ok(Value::Array(rows)).with_completeness(Completeness::complete(Unit::ITEM, total));
        let policy = BudgetPolicy::default()
            .with_agent_chars(Some(budget))
            .with_exact(Some(counter));
        let prepared = prepare(ToolOutput::from(envelope).with_controls(full()), &policy.for_call(None));
        prop_assert_eq!(serde_json::to_string(&prepared.structured).expect("serializes"), prepared.json.clone());
        let exact = counter.count(&prepared.json) as u64;
        let size = (prepared.json.chars().count() as u64).max(exact * 4);
        let unshrinkable = prepared.structured["meta"]["envelope_unshrinkable"] == true;
        prop_assert!(unshrinkable || size <= budget as u64, "size {} > {}", size, budget);
        prop_assert_eq!(prepared.structured["meta"]["tokens_estimated"].as_u64(), Some(exact));
        let completeness: Completeness =
            serde_json::from_value(prepared.structured["completeness"].clone()).expect("valid completeness");
        let sent = prepared.structured["data"].as_array().map_or(0, Vec::len);
        prop_assert_eq!(completeness.returned(), sent);
        prop_assert_eq!(completeness.total(), Some(total));
        prop_assert_eq!(violations(&ECHO_OUTPUT, &prepared.structured), None);
    }
}

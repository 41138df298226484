//! Wire dialects end to end: the example served in each source contract's wire, by the server
//! setting and by a call's `dialect` control. Every dialect pages by what it carries (an agent
//! copies the `next-page` call it is offered, exactly as given), shows a budget cut, lists its
//! schema, and refuses what it cannot say with `invalid_argument`.

mod common;

use envelope_core::paging::{Continuations, NEXT_PAGE};
use envelope_core::{Dialect, DialectSet};
use envelope_mcp::EnvelopeServer;
use serde_json::{Map, Value, json};
use workspace_server::{Limits, Workspace};

use common::calls::call;
use common::tree::{Tree, test_key};

/// The example over `tree`, answering in `dialect`.
fn server_in(tree: &Tree, dialect: Dialect) -> EnvelopeServer {
    server_offering(tree, dialect, DialectSet::only(dialect))
}

/// The example over `tree`, answering in `dialect`, a call free to ask for any of `offered`.
fn server_offering(tree: &Tree, dialect: Dialect, offered: DialectSet) -> EnvelopeServer {
    workspace_server::server_with(
        Workspace::open(&tree.root).expect("the fixture is a directory"),
        Continuations::new(test_key()),
        &[],
        Limits {
            dialect,
            call_dialects: offered,
            ..Limits::default()
        },
    )
}

/// The call a model would copy to get the next page, read off the answer as its dialect
/// carries it: `(tool, arguments)`.
fn next_page_call(dialect: Dialect, answer: &Value) -> Option<(String, Map<String, Value>)> {
    let envelope = envelope_dialect::view(dialect, answer);
    let action = envelope["next_actions"]
        .as_array()?
        .iter()
        .find(|action| action["id"] == NEXT_PAGE)?;
    Some((
        action["tool"].as_str()?.to_owned(),
        action["arguments"].as_object()?.clone(),
    ))
}

/// The rows of a page of `search_text`, read back through the dialect.
fn occurrences(dialect: Dialect, answer: &Value) -> Vec<Value> {
    let envelope = envelope_dialect::view(dialect, answer);
    envelope["data"]["occurrences"]
        .as_array()
        .cloned()
        .unwrap_or_else(|| panic!("no rows in the {dialect} answer:\n{answer:#}"))
}

/// Validates `answer` against `dialect`'s schema.
fn assert_valid(dialect: Dialect, answer: &Value) {
    let schema = envelope_dialect::schema(dialect, &json!(true), None);
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{dialect}: {errors:?}\n{answer:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_dialect_pages_to_the_end_by_copying_the_call_it_offers() {
    let tree = Tree::new("dialect-pages");
    let whole = call(
        &tree.server(),
        "search_text",
        json!({"query": "needle", "limit": 1_000}),
    )
    .await;
    let expected = whole["data"]["occurrences"]
        .as_array()
        .expect("rows")
        .clone();
    assert_eq!(expected.len(), 9);
    for dialect in Dialect::ALL {
        let server = server_in(&tree, dialect);
        let mut arguments = json!({"query": "needle", "limit": 2})
            .as_object()
            .cloned()
            .expect("an object");
        let mut tool = "search_text".to_owned();
        let mut rows = Vec::new();
        for page in 1..=10 {
            let answer = call(&server, &tool, Value::Object(arguments.clone())).await;
            assert_valid(dialect, &answer);
            rows.extend(occurrences(dialect, &answer));
            match next_page_call(dialect, &answer) {
                Some((next_tool, next_arguments)) => {
                    assert!(page < 10, "{dialect} pages forever");
                    (tool, arguments) = (next_tool, next_arguments);
                }
                None => break,
            }
        }
        assert_eq!(rows, expected, "{dialect}: every row once, in order");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_calls_dialect_rides_on_its_next_page_and_its_continuation_is_bound_to_it() {
    let tree = Tree::new("dialect-control");
    let server = server_offering(&tree, Dialect::Envelope, DialectSet::ALL);
    for dialect in [Dialect::Pincher, Dialect::Cos, Dialect::Tsa, Dialect::Frigg] {
        let first = call(
            &server,
            "search_text",
            json!({"query": "needle", "limit": 2, "dialect": dialect.name()}),
        )
        .await;
        assert_valid(dialect, &first);
        assert!(
            first.get("verdict").is_none() || dialect == Dialect::Tsa,
            "{first:#}"
        );
        let (tool, arguments) = next_page_call(dialect, &first).expect("a next page");
        assert_eq!(arguments["dialect"], dialect.name(), "{first:#}");
        let second = call(&server, &tool, Value::Object(arguments.clone())).await;
        assert_valid(dialect, &second);
        let (one, two) = (occurrences(dialect, &first), occurrences(dialect, &second));
        assert_ne!(one, two, "{dialect}: the next page is not the first again");

        // The same token in another dialect: refused, naming where it was issued.
        let other = if dialect == Dialect::Cos {
            Dialect::Tsa
        } else {
            Dialect::Cos
        };
        let mut elsewhere = arguments.clone();
        elsewhere.insert("dialect".into(), json!(other.name()));
        let refused = call(&server, &tool, Value::Object(elsewhere)).await;
        let refused = envelope_dialect::view(other, &refused);
        assert_eq!(refused["ok"], false, "{refused:#}");
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(
            message.contains(&format!("`{dialect}` dialect")),
            "{message}"
        );
        // And without any dialect: the server's own, not the token's.
        let mut plain = arguments.clone();
        plain.remove("dialect");
        let refused = call(&server, &tool, Value::Object(plain)).await;
        assert_eq!(refused["error"]["code"], "invalid_argument", "{refused:#}");
        assert_eq!(refused["error"]["data"]["issued_in"], dialect.name());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_dialects_and_inexpressible_controls_are_invalid_arguments_naming_every_dialect() {
    let tree = Tree::new("dialect-refusals");
    // A server that offers no other dialect refuses one, naming what it offers.
    let refused = call(
        &tree.server(),
        "search_text",
        json!({"query": "needle", "dialect": "cos"}),
    )
    .await;
    assert_eq!(refused["error"]["code"], "invalid_argument", "{refused:#}");
    assert_eq!(refused["error"]["data"]["offered"], json!(["envelope"]));
    let server = server_offering(&tree, Dialect::Envelope, DialectSet::ALL);
    let unknown = call(
        &server,
        "search_text",
        json!({"query": "needle", "dialect": "yaml"}),
    )
    .await;
    assert_eq!(unknown["error"]["category"], "validation", "{unknown:#}");
    assert_eq!(unknown["error"]["code"], "invalid_argument");
    assert_eq!(unknown["error"]["data"]["field"], "dialect");
    let named: Vec<&str> = unknown["error"]["data"]["dialects"]
        .as_array()
        .expect("the dialects")
        .iter()
        .filter_map(|dialect| dialect["name"].as_str())
        .collect();
    assert_eq!(named, ["envelope", "pincher", "cos", "tsa", "frigg"]);
    for (dialect, control, value) in [
        ("cos", "output_format", json!("toon")),
        ("pincher", "compact_only", json!(true)),
        ("tsa", "response_mode", json!("full")),
        ("frigg", "output_format", json!("toon")),
    ] {
        let refused = call(
            &server,
            "search_text",
            json!({"query": "needle", "dialect": dialect, control: value}),
        )
        .await;
        let refused = envelope_dialect::view(dialect.parse().expect("a dialect"), &refused);
        assert_eq!(refused["ok"], false, "{dialect} {control}: {refused:#}");
        let message = refused["error"]["message"].as_str().expect("a message");
        assert!(message.contains(control), "{message}");
    }
    // What a dialect can say, it is asked for without complaint.
    let toon = call(
        &server,
        "search_text",
        json!({"query": "needle", "limit": 2, "dialect": "tsa", "compact_only": true}),
    )
    .await;
    assert_eq!(toon["format"], "toon", "{toon:#}");
    assert!(
        toon["toon_content"]
            .as_str()
            .is_some_and(|toon| toon.contains("needle"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_budget_cut_is_stated_in_every_dialect() {
    let tree = Tree::new("dialect-budget");
    for dialect in Dialect::ALL {
        let server = server_in(&tree, dialect);
        // `long.txt` is one 60,000-character line: its row cannot fit the 32,000-char budget.
        let answer = call(&server, "read_file", json!({"path": "long.txt"})).await;
        assert_valid(dialect, &answer);
        let envelope = envelope_dialect::view(dialect, &answer);
        let text = answer.to_string();
        assert!(text.len() < 40_000, "{dialect}: {} chars sent", text.len());
        // Read back as the envelope it carries, the answer says it was cut, and what was.
        assert_eq!(
            envelope["meta"]["truncated"], true,
            "{dialect}:\n{envelope:#}"
        );
        assert!(
            envelope["meta"]["truncated_string_fields"]
                .as_array()
                .is_some_and(|cut| !cut.is_empty()),
            "{dialect}:\n{envelope:#}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_listing_offering_dialects_admits_an_answer_in_each() {
    let tree = Tree::new("dialect-offered");
    let server = server_offering(&tree, Dialect::Frigg, DialectSet::ALL);
    let listed = server.tools();
    for tool in listed.iter() {
        let output = Value::Object(tool.output_schema.as_deref().cloned().expect("a schema"));
        let validator = jsonschema::validator_for(&output).expect("the schema compiles");
        assert_eq!(
            output["anyOf"].as_array().map(Vec::len),
            Some(5),
            "{}",
            tool.name
        );
        if tool.name != "search_text" {
            continue;
        }
        for dialect in Dialect::ALL {
            let answer = call(
                &server,
                "search_text",
                json!({"query": "needle", "limit": 2, "dialect": dialect.name()}),
            )
            .await;
            let errors: Vec<String> = validator
                .iter_errors(&answer)
                .map(|e| e.to_string())
                .collect();
            assert!(errors.is_empty(), "{dialect}: {errors:?}\n{answer:#}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_listing_follows_the_servers_dialect() {
    let tree = Tree::new("dialect-listing");
    for dialect in Dialect::ALL {
        let server = server_in(&tree, dialect);
        let listed = server.tools();
        let search = listed
            .iter()
            .find(|tool| tool.name == "search_text")
            .expect("search_text is listed");
        let output = Value::Object(
            search
                .output_schema
                .as_deref()
                .cloned()
                .expect("an output schema"),
        );
        let validator = jsonschema::validator_for(&output).expect("the schema compiles");
        let answer = call(
            &server,
            "search_text",
            json!({"query": "needle", "limit": 2}),
        )
        .await;
        let errors: Vec<String> = validator
            .iter_errors(&answer)
            .map(|e| e.to_string())
            .collect();
        assert!(errors.is_empty(), "{dialect}: {errors:?}\n{answer:#}");
        if dialect != Dialect::Envelope {
            // The envelope's own output schema does not describe another wire.
            let envelope = call(
                &tree.server(),
                "search_text",
                json!({"query": "needle", "limit": 2}),
            )
            .await;
            assert!(
                !validator.is_valid(&envelope) || dialect == Dialect::Frigg,
                "{dialect}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_ref_read_off_any_dialect_opens_in_it() {
    let tree = Tree::new("dialect-target");
    for dialect in Dialect::ALL {
        let server = server_in(&tree, dialect);
        let page = call(
            &server,
            "search_text",
            json!({"query": "needle", "limit": 2}),
        )
        .await;
        let envelope = envelope_dialect::view(dialect, &page);
        let target = envelope["data"]["target_ref"]
            .as_str()
            .unwrap_or_else(|| panic!("{dialect}: no target ref in\n{page:#}"));
        let hit = &envelope["data"]["occurrences"][0];
        let read = call(
            &server,
            "read_file",
            json!({"path": hit["path"], "line": hit["line"], "target_ref": target}),
        )
        .await;
        assert_valid(dialect, &read);
        let read = envelope_dialect::view(dialect, &read);
        assert_eq!(read["ok"], true, "{dialect}: {read:#}");
        let content = read["data"]["content"].as_str().unwrap_or_default();
        assert!(content.contains("needle"), "{dialect}: {read:#}");
    }
}

/// A request in Frigg's own vocabulary it cannot honour (its legacy `resume_from` beside a
/// continuation) is Frigg's `MIXED_CONTINUATION_FORMS`, in Frigg's recovery grammar: never
/// ignored with an `unknown_arg` warning while the page resumes from the token.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_start_beside_a_continuation_is_mixed_forms_in_every_dialect() {
    let tree = Tree::new("dialect-mixed");
    for dialect in Dialect::ALL {
        let server = server_in(&tree, dialect);
        let first = call(
            &server,
            "search_text",
            json!({"query": "needle", "limit": 1}),
        )
        .await;
        let (tool, mut arguments) =
            next_page_call(dialect, &first).unwrap_or_else(|| panic!("{dialect}: a next page"));
        arguments.insert("resume_from".to_owned(), json!(0));
        let refused = call(&server, &tool, Value::Object(arguments)).await;
        assert_valid(dialect, &refused);
        if dialect == Dialect::Frigg {
            assert_eq!(
                refused["error_code"], "MIXED_CONTINUATION_FORMS",
                "{refused:#}"
            );
            assert_eq!(refused["retryable"], false);
        }
        let envelope = envelope_dialect::view(dialect, &refused);
        assert_eq!(envelope["ok"], false, "{dialect}: {refused:#}");
        // cos's error is exactly `{category, retryable, message}`: no code to carry.
        if dialect == Dialect::Cos {
            let message = envelope["error"]["message"].as_str().unwrap_or_default();
            assert!(message.contains("resume_from"), "{message}");
        } else {
            assert_eq!(
                envelope["error"]["code"], "MIXED_CONTINUATION_FORMS",
                "{dialect}: {envelope:#}"
            );
        }
    }
}

/// The example's `change_impact` prose names the importers it lists; when the budget cuts that
/// list, the `next_step` is led by what was sent, in the envelope and every dialect that
/// carries it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_naming_a_cut_list_says_what_was_sent() {
    let tree = Tree::new("dialect-prose");
    // 900 files importing one: their names cannot all fit the budget.
    for i in 0..900 {
        tree.write(
            &format!("app/importer_with_a_long_name_{i:04}.py"),
            "import util\n",
        );
    }
    for dialect in [Dialect::Envelope, Dialect::Cos, Dialect::Tsa] {
        let server = server_in(&tree, dialect);
        let answer = call(&server, "change_impact", json!({"path": "app/util.py"})).await;
        let envelope = envelope_dialect::view(dialect, &answer);
        let listed = envelope["data"]["direct"].as_array().map_or(0, Vec::len);
        let step = envelope["next_step"].as_str().unwrap_or_default();
        // The fixture's own importers of `app/util.py` join the 900.
        let all = envelope["meta"]["truncated_direct_from"]
            .as_u64()
            .unwrap_or(0);
        assert!(
            all > 900 && (listed as u64) < all,
            "{dialect}: {envelope:#}"
        );
        assert!(
            step.starts_with(&format!("showing {listed} of {all} `direct`")),
            "{dialect}: {step}"
        );
        assert!(listed > 0, "{dialect}: {envelope:#}");
    }
}

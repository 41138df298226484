//! The kits' shared cases (`clients/cases/*.json`): every promise the Rust and Python kits
//! make, written once as data, held here for the Rust kit (the Python kit's
//! `tests/test_shared_cases.py` runs the same files). Each case runs through the function the
//! kit itself decides with, never a copy of its rule.

use std::path::PathBuf;
use std::time::Duration;

use envelope_client::read::{decode, envelope_value};
use envelope_client::{
    ClientError, MAX_CONTINUATION_CHARS, NEVER_RETRIED, NEXT_PAGE_PLACES, NotRetried,
    RetryDecision, RetryPolicy, STALE_REF_CODES, TOKEN_PLACES, WalkGuard, check_action, next_call,
};
use envelope_core::paging::{MAX_JOINED_REFS, TARGET_REF_FIELD, TARGET_REF_JOIN};
use envelope_core::{Completeness, Envelope, NOT_RUN_CODES, NextAction, ToolError};
use rmcp::model::{CallToolResult, Tool};
use serde_json::{Map, Value, json};

/// The case file `name`, parsed.
fn cases(name: &str) -> Value {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../clients/cases")
        .join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|error| panic!("{}: {error}", path.display()))
}

/// Each case of `file`, with its promise (the message of any assertion that fails).
fn each(file: &Value) -> impl Iterator<Item = (&str, &Value)> {
    file["cases"]
        .as_array()
        .expect("a case file lists `cases`")
        .iter()
        .map(|case| {
            (
                case["promise"]
                    .as_str()
                    .expect("each case states its promise"),
                case,
            )
        })
}

/// A failed envelope around `error`, decoded as the kit decodes one.
fn failure(error: &Value) -> ToolError {
    let wire = json!({
        "ok": false, "verdict": "ERROR", "error": error,
        "meta": {"request_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "schema_version": 3},
    });
    let envelope: Envelope<Value> = decode(&wire).expect("a failed envelope");
    envelope.error().cloned().expect("an error")
}

fn strings(value: &Value) -> Vec<&str> {
    value
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .collect()
}

#[test]
fn the_lists_both_kits_decide_by() {
    let file = cases("codes.json");
    assert_eq!(strings(&file["stale_ref_codes"]), STALE_REF_CODES);
    assert_eq!(strings(&file["nothing_ran_codes"]), NOT_RUN_CODES);
    let never: Vec<&str> = NEVER_RETRIED.iter().map(|c| c.as_str()).collect();
    assert_eq!(strings(&file["never_retried_categories"]), never);
    let target_ref = &file["target_ref"];
    assert_eq!(target_ref["field"], TARGET_REF_FIELD);
    assert_eq!(target_ref["join"], TARGET_REF_JOIN.to_string());
    assert_eq!(target_ref["max_joined"], MAX_JOINED_REFS);
    for (promise, case) in each(&file) {
        let code = case["code"].as_str().expect("a code");
        let stale = STALE_REF_CODES.contains(&code);
        assert_eq!(json!(stale), case["expect"]["stale_ref"], "{promise}");
    }
}

#[test]
fn a_result_is_read_as_the_cases_say() {
    for (promise, case) in each(&cases("read.json")) {
        let result: CallToolResult =
            serde_json::from_value(case["result"].clone()).expect("an MCP tool result");
        let expect = &case["expect"];
        let read = envelope_value(&result)
            .map_err(|error| ("not_an_envelope", error.to_string()))
            .and_then(|value| {
                decode::<Value>(&value).map_err(|error| ("schema_error", error.to_string()))
            });
        // A contradicting `isError` is a read error in Rust (`IsErrorDisagrees`), a schema
        // error in the contract's words: the case names which field.
        let read = read.map_err(|(kind, text)| match kind {
            "not_an_envelope" if text.contains("isError") => ("schema_error", text),
            _ => (kind, text),
        });
        match (expect["read"].as_str(), read) {
            (Some("envelope"), Ok(envelope)) => {
                assert_eq!(json!(envelope.is_ok()), expect["ok"], "{promise}");
                if let Some(category) = expect.get("category") {
                    let error = envelope.error().expect(promise);
                    assert_eq!(json!(error.category().as_str()), *category, "{promise}");
                    assert_eq!(json!(error.retryable()), expect["retryable"], "{promise}");
                }
            }
            (Some(kind), Err((found, text))) if kind == found => {
                if let Some(name) = expect["names"].as_str() {
                    assert!(text.contains(name), "{promise}: `{text}` names no `{name}`");
                }
            }
            (kind, read) => panic!("{promise}: expected {kind:?}, read {read:?}"),
        }
    }
}

#[test]
fn a_failed_call_is_retried_as_the_cases_say() {
    let file = cases("retry.json");
    let defaults = &file["default_policy"];
    let policy = RetryPolicy::default();
    let millis = |value: &Value| Duration::from_millis(value.as_u64().expect("milliseconds"));
    assert_eq!(
        json!(policy.max_attempts),
        defaults["max_attempts"],
        "max_attempts"
    );
    assert_eq!(policy.base_delay, millis(&defaults["base_delay_ms"]));
    assert_eq!(policy.max_delay, millis(&defaults["max_delay_ms"]));
    assert_eq!(policy.deadline, millis(&defaults["deadline_ms"]));
    assert_eq!(defaults["jitter"], "full");
    assert!(policy.jitter);
    let steady = RetryPolicy {
        jitter: false,
        ..policy
    };
    for (promise, case) in each(&file) {
        let error = failure(&case["error"]);
        let idempotent = case["idempotent"].as_bool().expect("idempotent");
        let attempt = u32::try_from(case["attempt"].as_u64().expect("attempt")).expect("small");
        let remaining = millis(&case["remaining_ms"]);
        let decided = steady.decide(&error, idempotent, attempt, remaining);
        let expect = &case["expect"];
        let wanted = match expect["decision"].as_str() {
            Some("retry") => RetryDecision::Retry(millis(&expect["wait_ms"])),
            Some("return") => RetryDecision::Return(match expect["why"].as_str() {
                Some("not_retryable") => NotRetried::NotRetryable,
                Some("unsafe") => NotRetried::Unsafe,
                Some("exhausted") => NotRetried::Exhausted,
                other => panic!("{promise}: no reason {other:?}"),
            }),
            Some("retry_after_past_deadline") => RetryDecision::RetryAfterPastDeadline(
                error.retry_after().expect("the error asks a wait"),
            ),
            Some("deadline") => RetryDecision::PastDeadline,
            other => panic!("{promise}: no decision {other:?}"),
        };
        assert_eq!(decided, wanted, "{promise}");
    }
}

#[test]
fn the_next_page_places_are_the_shared_table() {
    let places = &cases("next_page.json")["places"];
    let listed: Vec<Value> = NEXT_PAGE_PLACES
        .iter()
        .map(|place| {
            json!({"pointer": place.pointer, "id": place.id, "carries": place.carries,
                   "tool": place.tool, "arguments": place.arguments})
        })
        .collect();
    assert_eq!(places["actions"], json!(listed));
    assert_eq!(places["tokens"], json!(TOKEN_PLACES));
}

#[test]
fn the_next_page_is_found_where_the_cases_say() {
    for (promise, case) in each(&cases("next_page.json")) {
        let tool = case["tool"].as_str().expect("a tool");
        let arguments: Map<String, Value> =
            case["arguments"].as_object().cloned().expect("arguments");
        let next = next_call(tool, &arguments, &case["page"])
            .map(|action| json!({"tool": action.tool, "arguments": action.arguments}));
        assert_eq!(next.unwrap_or(Value::Null), case["expect"], "{promise}");
    }
}

#[test]
fn an_action_is_followed_only_as_the_cases_say() {
    let file = cases("follow.json");
    let tools: Vec<Tool> = serde_json::from_value(file["tools"].clone()).expect("listed tools");
    for (promise, case) in each(&file) {
        let action: NextAction = serde_json::from_value(case["action"].clone()).expect(promise);
        let listed = tools.iter().find(|tool| tool.name == action.tool);
        let checked = check_action(listed, &action);
        let expect = &case["expect"];
        match (expect["follow"].as_str(), checked) {
            (Some("sent"), Ok(())) => {}
            (Some(kind @ ("not_listed" | "arguments")), Err(error)) => {
                let found = match &error {
                    ClientError::NotListed { .. } => "not_listed",
                    ClientError::ActionArguments { .. } => "arguments",
                    other => panic!("{promise}: {other:?}"),
                };
                assert_eq!(found, kind, "{promise}: {error}");
                let name = expect["names"]
                    .as_str()
                    .expect("the refusal names something");
                assert!(error.to_string().contains(name), "{promise}: {error}");
            }
            (kind, checked) => panic!("{promise}: expected {kind:?}, checked {checked:?}"),
        }
    }
}

#[test]
fn a_walk_is_checked_as_the_cases_say() {
    let file = cases("walk.json");
    assert_eq!(file["max_continuation_chars"], MAX_CONTINUATION_CHARS);
    for (promise, case) in each(&file) {
        let steps = case["steps"].as_array().expect("steps");
        let mut walk = WalkGuard::new("search");
        let mut stopped: Option<(usize, ClientError)> = None;
        for (index, step) in steps.iter().enumerate() {
            let checked = if let Some(sent) = step.get("send") {
                let tool = sent["tool"].as_str().expect("a tool");
                let arguments = match sent["continuation_chars"].as_u64() {
                    Some(chars) => {
                        let token = "x".repeat(usize::try_from(chars).expect("small"));
                        json!({"continuation": token})
                            .as_object()
                            .cloned()
                            .expect("an object")
                    }
                    None => sent["arguments"].as_object().cloned().expect("arguments"),
                };
                walk.sending(tool, &arguments)
            } else {
                let completeness: Option<Completeness> =
                    serde_json::from_value(step["receive"].clone()).expect(promise);
                walk.received(completeness.as_ref())
            };
            if let Err(error) = checked {
                stopped = Some((index, error));
                break;
            }
        }
        let expect = &case["expect"];
        match (expect["error"].as_str(), stopped) {
            (None, None) => {}
            (Some(kind), Some((step, error))) => {
                let found = match error {
                    ClientError::CursorRepeated { .. } => "cursor_repeated",
                    ClientError::ContinuationTooLong { .. } => "continuation_too_long",
                    ClientError::TotalChanged { .. } => "total_changed",
                    ClientError::PageWentBack { .. } => "went_back",
                    ref other => panic!("{promise}: {other:?}"),
                };
                assert_eq!(
                    (found, json!(step)),
                    (kind, expect["step"].clone()),
                    "{promise}"
                );
            }
            (kind, stopped) => panic!("{promise}: expected {kind:?}, stopped {stopped:?}"),
        }
    }
}

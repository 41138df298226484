//! The wire names of the envelope's fields: the one table they are spelled in.
//!
//! The envelope's types name their fields by their Rust names, which serde writes as they are;
//! the stages that read or write an envelope as JSON (the budget stage, the transports, the
//! checker) name them through these constants, so a misspelt key is a compile error instead of a
//! silent extra member. A test serializes every type with every field set and compares its keys
//! with these lists, and a workspace check refuses these names as string literals anywhere else.
//!
//! ```
//! use envelope_core::{Envelope, fields};
//!
//! let wire = serde_json::to_value(Envelope::ok(serde_json::json!([1, 2])))?;
//! assert_eq!(wire[fields::envelope::OK], true);
//! assert!(wire[fields::envelope::META][fields::meta::REQUEST_ID].is_string());
//! # Ok::<(), serde_json::Error>(())
//! ```

/// The envelope's top-level fields.
pub mod envelope {
    /// `ok`: whether the call worked.
    pub const OK: &str = "ok";
    /// `verdict`: the verdict alphabet.
    pub const VERDICT: &str = "verdict";
    /// `summary_line`: one-line triage.
    pub const SUMMARY_LINE: &str = "summary_line";
    /// `next_step`: one concrete next action, in prose.
    pub const NEXT_STEP: &str = "next_step";
    /// `data`: the payload.
    pub const DATA: &str = "data";
    /// `error`: the failure.
    pub const ERROR: &str = "error";
    /// `completeness`: how complete the payload's collection is.
    pub const COMPLETENESS: &str = "completeness";
    /// `empty_reason`: why the result is empty.
    pub const EMPTY_REASON: &str = "empty_reason";
    /// `diagnosis`: prose about an empty or surprising result.
    pub const DIAGNOSIS: &str = "diagnosis";
    /// `next_actions`: executable follow-up calls.
    pub const NEXT_ACTIONS: &str = "next_actions";
    /// `warnings`: things to flag.
    pub const WARNINGS: &str = "warnings";
    /// `diagnostics`: what went wrong, specifically.
    pub const DIAGNOSTICS: &str = "diagnostics";
    /// `meta`: library-stamped facts.
    pub const META: &str = "meta";

    /// Every top-level field, in the contract's order.
    pub const ALL: [&str; 13] = [
        OK,
        VERDICT,
        SUMMARY_LINE,
        NEXT_STEP,
        DATA,
        ERROR,
        COMPLETENESS,
        EMPTY_REASON,
        DIAGNOSIS,
        NEXT_ACTIONS,
        WARNINGS,
        DIAGNOSTICS,
        META,
    ];
}

/// The fields of `completeness`.
pub mod completeness {
    /// `unit`: what is counted.
    pub const UNIT: &str = "unit";
    /// `returned`: how many are in this response.
    pub const RETURNED: &str = "returned";
    /// `offset`: where this page starts.
    pub const OFFSET: &str = "offset";
    /// `total`: how many there are, when known.
    pub const TOTAL: &str = "total";
    /// `complete`: whether everything is here.
    pub const COMPLETE: &str = "complete";
    /// `truncated`: whether a limit cut the collection.
    pub const TRUNCATED: &str = "truncated";
    /// `truncation_reasons`: which limits cut it.
    pub const TRUNCATION_REASONS: &str = "truncation_reasons";
    /// `incomplete_reasons`: why it is incomplete otherwise.
    pub const INCOMPLETE_REASONS: &str = "incomplete_reasons";
    /// `shortened`: the row fields a compact form showed in part.
    pub const SHORTENED: &str = "shortened";
    /// `continuation`: the sealed token of the next page, as a source contract writes it here;
    /// an envelope reads it but writes it only in its `next-page` action's arguments.
    pub const CONTINUATION: &str = "continuation";

    /// Every field an envelope writes, in wire order.
    pub const ALL: [&str; 9] = [
        UNIT,
        RETURNED,
        OFFSET,
        TOTAL,
        COMPLETE,
        TRUNCATED,
        TRUNCATION_REASONS,
        INCOMPLETE_REASONS,
        SHORTENED,
    ];
}

/// The fields of one of `next_actions`.
pub mod next_action {
    /// `id`: unique within the list.
    pub const ID: &str = "id";
    /// `role`: what the action is for.
    pub const ROLE: &str = "role";
    /// `order`: the stage it runs in.
    pub const ORDER: &str = "order";
    /// `dependencies`: groups of earlier actions that must run first.
    pub const DEPENDENCIES: &str = "dependencies";
    /// `tool`: the tool to call.
    pub const TOOL: &str = "tool";
    /// `arguments`: what to call it with.
    pub const ARGUMENTS: &str = "arguments";
    /// `reason`: why, in one sentence.
    pub const REASON: &str = "reason";

    /// Every field, in wire order.
    pub const ALL: [&str; 7] = [ID, ROLE, ORDER, DEPENDENCIES, TOOL, ARGUMENTS, REASON];
}

/// The fields of `error`.
pub mod error {
    /// `category`: the error category.
    pub const CATEGORY: &str = "category";
    /// `message`: what went wrong.
    pub const MESSAGE: &str = "message";
    /// `retryable`: whether a retry can help.
    pub const RETRYABLE: &str = "retryable";
    /// `code`: the tool's own code for the failure.
    pub const CODE: &str = "code";
    /// `hint`: how to fix the call.
    pub const HINT: &str = "hint";
    /// `retry_after_ms`: how long to wait before a retry.
    pub const RETRY_AFTER_MS: &str = "retry_after_ms";
    /// `data`: structured detail.
    pub const DATA: &str = "data";

    /// Every field, in wire order.
    pub const ALL: [&str; 7] = [
        CATEGORY,
        CODE,
        MESSAGE,
        RETRYABLE,
        HINT,
        RETRY_AFTER_MS,
        DATA,
    ];
}

/// The `code`s of the errors and notices the library writes: each spelled here once, and
/// named through these constants wherever it is written or read.
///
/// Two case conventions stand on the wire, and stay (a rename would break every agent that
/// branches on a code): the paging and target-ref codes and the module gate's are upper
/// case, as the paging contract they come from spells them (`STALE_CONTINUATION`,
/// `MODULE_DISABLED`); every other code is lower snake case (`invalid_argument`,
/// `unknown_arg`). A dialect's own codes (the ones another contract's wire spells otherwise)
/// live with the dialect.
pub mod code {
    /// The module that gates the tool is switched off.
    pub const MODULE_DISABLED: &str = "MODULE_DISABLED";
    /// The arguments are no JSON object.
    pub const ARGUMENTS_NOT_OBJECT: &str = "arguments_not_object";
    /// An argument the tool does not declare: a refusal under `strict_args`, else a warning.
    pub const UNKNOWN_ARG: &str = "unknown_arg";
    /// The arguments as a whole do not decode.
    pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
    /// One argument does not decode, or a control's value is not one the call may ask for;
    /// `data.field` names it.
    pub const INVALID_ARGUMENT: &str = "invalid_argument";
    /// A per-call control named twice in one call (or, on the REST gateway, given in two
    /// places with two values).
    pub const INVALID_CONTROL: &str = "invalid_control";
    /// A warning: `continuation` given to a tool that does not page.
    pub const CONTINUATION_IGNORED: &str = "continuation_ignored";
    /// The caller's token lacks a scope the tool declares.
    pub const INSUFFICIENT_SCOPE: &str = "insufficient_scope";
    /// The tool needs server state that was not configured.
    pub const NOT_CONFIGURED: &str = "not_configured";
    /// The call ran past the server's call deadline.
    pub const DEADLINE_EXCEEDED: &str = "deadline_exceeded";
    /// A continuation edited in place, or sealed by a key this server does not accept.
    pub const INVALID_CONTINUATION: &str = "INVALID_CONTINUATION";
    /// A continuation presented with another tool, caller, request or scope.
    pub const CONTINUATION_SCOPE_MISMATCH: &str = "CONTINUATION_SCOPE_MISMATCH";
    /// A continuation whose snapshot moved or whose expiry passed.
    pub const STALE_CONTINUATION: &str = "STALE_CONTINUATION";
    /// A continuation passed with a legacy `offset` or `resume_from`.
    pub const MIXED_CONTINUATION_FORMS: &str = "MIXED_CONTINUATION_FORMS";
    /// A page size of zero, or over the tool's maximum.
    pub const INVALID_LIMIT: &str = "INVALID_LIMIT";
    /// A target ref edited in place, or sealed by a key this server does not accept.
    pub const INVALID_TARGET_REF: &str = "INVALID_TARGET_REF";
    /// A target ref presented to another tool family, by another caller or in another scope.
    pub const TARGET_SCOPE_MISMATCH: &str = "TARGET_SCOPE_MISMATCH";
    /// A target ref whose target changed since it was issued, or which expired.
    pub const STALE_TARGET_SNAPSHOT: &str = "STALE_TARGET_SNAPSHOT";
    /// A fresh target ref whose target no longer exists.
    pub const TARGET_NOT_FOUND: &str = "TARGET_NOT_FOUND";
    /// A target ref passed with plain location arguments.
    pub const CONFLICTING_TARGET_INPUT: &str = "CONFLICTING_TARGET_INPUT";
    /// A fresh target ref asked for a target it does not hold.
    pub const TARGET_NOT_IN_REF: &str = "TARGET_NOT_IN_REF";
    /// The REST gateway: a body that is no JSON.
    pub const MALFORMED_JSON: &str = "malformed_json";
    /// No tool (the caller is shown) has the name.
    pub const UNKNOWN_TOOL: &str = "unknown_tool";
    /// The REST gateway: a method the path does not take.
    pub const METHOD_NOT_ALLOWED: &str = "method_not_allowed";
    /// The REST gateway: a body over the size limit.
    pub const REQUEST_TOO_LARGE: &str = "request_too_large";
    /// A `Host` or `Origin` this server does not answer to.
    pub const HOST_NOT_ALLOWED: &str = "host_not_allowed";
    /// A `Host` against RFC 9112 (or, over HTTP/2, naming another server than `:authority`).
    pub const INVALID_HOST: &str = "invalid_host";
    /// The REST gateway: a body that did not arrive in time.
    pub const REQUEST_TIMEOUT: &str = "request_timeout";
    /// The REST gateway: every call slot is taken.
    pub const OVERLOADED: &str = "overloaded";
    /// The REST gateway: a body not sent as JSON.
    pub const UNSUPPORTED_MEDIA_TYPE: &str = "unsupported_media_type";
    /// No access token, or one not accepted.
    pub const UNAUTHENTICATED: &str = "unauthenticated";
    /// An `Authorization` header that is no bearer token.
    pub const INVALID_AUTHORIZATION: &str = "invalid_authorization";
    /// A token the issuer could not be asked about in time.
    pub const TOKEN_UNVERIFIABLE: &str = "token_unverifiable";
    /// The client cannot ask its user for input.
    pub const ELICITATION_UNAVAILABLE: &str = "elicitation_unavailable";
    /// The client does not offer sampling.
    pub const SAMPLING_UNAVAILABLE: &str = "sampling_unavailable";
    /// The client does not tell its roots.
    pub const ROOTS_UNAVAILABLE: &str = "roots_unavailable";
    /// The client's answer did not match what was asked.
    pub const CLIENT_RESPONSE_INVALID: &str = "client_response_invalid";
    /// The request to the client failed.
    pub const CLIENT_REQUEST_FAILED: &str = "client_request_failed";
}

/// The wire names of `meta`'s fields and of the trimmer's markers (also `meta_keys`).
pub mod meta {

    /// `request_id`.
    pub const REQUEST_ID: &str = "request_id";
    /// `client_request_id`.
    pub const CLIENT_REQUEST_ID: &str = "client_request_id";
    /// `tool`.
    pub const TOOL: &str = "tool";
    /// `complexity_tier`.
    pub const COMPLEXITY_TIER: &str = "complexity_tier";
    /// `idempotent`.
    pub const IDEMPOTENT: &str = "idempotent";
    /// `latency_ms`.
    pub const LATENCY_MS: &str = "latency_ms";
    /// `tokens_estimated`.
    pub const TOKENS_ESTIMATED: &str = "tokens_estimated";
    /// `tokens_method`.
    pub const TOKENS_METHOD: &str = "tokens_method";
    /// `tokens_saved`.
    pub const TOKENS_SAVED: &str = "tokens_saved";
    /// `tokens_saved_pct`.
    pub const TOKENS_SAVED_PCT: &str = "tokens_saved_pct";
    /// `baseline_method`.
    pub const BASELINE_METHOD: &str = "baseline_method";
    /// `truncated`.
    pub const TRUNCATED: &str = "truncated";
    /// `envelope_unshrinkable`.
    pub const ENVELOPE_UNSHRINKABLE: &str = "envelope_unshrinkable";
    /// `layer`.
    pub const LAYER: &str = "layer";
    /// `schema_version`.
    pub const SCHEMA_VERSION: &str = "schema_version";
    /// `capabilities`.
    pub const CAPABILITIES: &str = "capabilities";
    /// `schema_version_at_index`.
    pub const SCHEMA_VERSION_AT_INDEX: &str = "schema_version_at_index";
    /// `binary_drift_warning`.
    pub const BINARY_DRIFT_WARNING: &str = "binary_drift_warning";
    /// `attachments`: the media attached beside the envelope, each a
    /// [`AttachmentNote`](crate::AttachmentNote).
    pub const ATTACHMENTS: &str = "attachments";

    /// Every named field, in wire order.
    pub const FIELDS: [&str; 19] = [
        REQUEST_ID,
        CLIENT_REQUEST_ID,
        TOOL,
        COMPLEXITY_TIER,
        IDEMPOTENT,
        LATENCY_MS,
        TOKENS_ESTIMATED,
        TOKENS_METHOD,
        TOKENS_SAVED,
        TOKENS_SAVED_PCT,
        BASELINE_METHOD,
        TRUNCATED,
        ENVELOPE_UNSHRINKABLE,
        LAYER,
        SCHEMA_VERSION,
        CAPABILITIES,
        SCHEMA_VERSION_AT_INDEX,
        BINARY_DRIFT_WARNING,
        ATTACHMENTS,
    ];

    /// The prefix of every trimmer marker.
    pub const MARKER_PREFIX: &str = "truncated_";
    /// `truncated_string_fields`: JSON pointers of the strings cut.
    pub const TRUNCATED_STRING_FIELDS: &str = "truncated_string_fields";
    /// `truncated_depth`: `{limit, cut}` of containers cut past the depth limit.
    pub const TRUNCATED_DEPTH: &str = "truncated_depth";
    /// `truncated_nested_lists`: arrays inside rows, capped.
    pub const TRUNCATED_NESTED_LISTS: &str = "truncated_nested_lists";
    /// `truncated_nested_buckets`: arrays inside object fields of rows, capped.
    pub const TRUNCATED_NESTED_BUCKETS: &str = "truncated_nested_buckets";
    /// `truncated_subgraph`: a graph payload cut to its best-connected part.
    pub const TRUNCATED_SUBGRAPH: &str = "truncated_subgraph";

    /// The suffix of a cut list's "from" marker.
    pub const LIST_CUT_FROM_SUFFIX: &str = "_from";
    /// The suffix of a cut list's "to" marker.
    pub const LIST_CUT_TO_SUFFIX: &str = "_to";

    /// `truncated_<list>_from`: a cut list's length before the cut.
    pub fn list_cut_from(list: &str) -> String {
        format!("{MARKER_PREFIX}{list}{LIST_CUT_FROM_SUFFIX}")
    }

    /// `truncated_<list>_to`: a cut list's length after the cut.
    pub fn list_cut_to(list: &str) -> String {
        format!("{MARKER_PREFIX}{list}{LIST_CUT_TO_SUFFIX}")
    }

    /// `truncated_<field>`: the buckets of a top-level object of arrays, capped.
    pub fn buckets(field: &str) -> String {
        format!("{MARKER_PREFIX}{field}")
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::time::Duration;

    use serde::Serialize;
    use serde_json::{Value, json};

    use crate::{
        Completeness, CompletenessParts, DependencyMode, EmptyReason, Envelope, IncompleteReason,
        NextAction, Notice, Role, ToolError, TruncationReason, Unit,
    };

    /// The keys `value` serializes with.
    fn keys(value: &impl Serialize) -> BTreeSet<String> {
        match serde_json::to_value(value).expect("serializes") {
            Value::Object(object) => object.into_iter().map(|(key, _)| key).collect(),
            other => panic!("not an object: {other}"),
        }
    }

    fn table(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|name| (*name).to_owned()).collect()
    }

    fn action(id: &str, order: u16) -> NextAction {
        NextAction::new(id, Role::Retry, order, "search", json!({"q": 1}), "more")
            .expect("object arguments")
    }

    #[test]
    fn every_envelope_field_is_in_the_table() {
        let page = Completeness::truncated_page(
            Unit::FILE,
            2,
            Some(9),
            TruncationReason::PageLimit,
            Some("token".to_owned()),
        )
        .expect("a valid page");
        let ok = Envelope::ok(json!([1, 2]))
            .with_summary_line("two")
            .with_next_step("page on")
            .with_completeness(page)
            .with_empty_reason(EmptyReason::NotIndexed, "none")
            .with_next_actions([action("a", 1)])
            .with_warning(Notice::warning("w", "warned"))
            .with_diagnostic(Notice::warning("d", "diagnosed"));
        let failed = Envelope::<Value>::err(ToolError::validation("bad"));
        let written: BTreeSet<String> = keys(&ok).union(&keys(&failed)).cloned().collect();
        assert_eq!(written, table(&super::envelope::ALL));
    }

    #[test]
    fn every_completeness_field_is_in_the_table() {
        let parts = CompletenessParts {
            unit: Unit::FILE,
            returned: 2,
            offset: 4,
            total: Some(9),
            complete: false,
            truncated: true,
            truncation_reasons: vec![TruncationReason::PageLimit],
            incomplete_reasons: vec![IncompleteReason::WalkFailure],
            shortened: vec!["text".to_owned()],
            continuation: Some("token".to_owned()),
        };
        let completeness = Completeness::try_from_parts(parts).expect("a valid completeness");
        assert_eq!(keys(&completeness), table(&super::completeness::ALL));
    }

    #[test]
    fn every_next_action_and_error_field_is_in_the_table() {
        let action = action("b", 2).after(DependencyMode::All, ["a"]);
        assert_eq!(keys(&action), table(&super::next_action::ALL));
        let error = ToolError::transient("busy")
            .with_code("busy")
            .with_hint("wait")
            .with_retry_after(Duration::from_millis(5))
            .with_data(json!({"n": 1}));
        assert_eq!(keys(&error), table(&super::error::ALL));
    }
}

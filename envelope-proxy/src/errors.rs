//! How an upstream's failure becomes the envelope's error: one table, [`UPSTREAM_ERRORS`], the
//! code, category and retry signal of each way a call to the upstream can fail. `retryable` is
//! true only where the failure says a retry can help (no answer in time, the upstream gone and
//! being restarted); a failure the upstream states in words (`isError`) is never guessed
//! retryable.

use std::time::Duration;

use envelope_core::{Category, ClientError, ClientFeature, ToolError};
use rmcp::ErrorData;

/// The upstream did not answer within the call's timeout.
pub const UPSTREAM_TIMEOUT: &str = "upstream_timeout";
/// The upstream is not running (it exited, its connection closed, it could not be started);
/// the proxy starts it again.
pub const UPSTREAM_UNAVAILABLE: &str = "upstream_unavailable";
/// The upstream's answer is larger than the most the proxy reads from it.
pub const UPSTREAM_ANSWER_TOO_LARGE: &str = "upstream_answer_too_large";
/// The upstream sent something no client can read: not JSON, not UTF-8, not JSON-RPC.
pub const UPSTREAM_MALFORMED: &str = "upstream_malformed";
/// The upstream refused the arguments (JSON-RPC `-32602`).
pub const UPSTREAM_INVALID_PARAMS: &str = "upstream_invalid_params";
/// The upstream does not know the tool (JSON-RPC `-32601`, or `-32602` naming the tool).
pub const UPSTREAM_UNKNOWN_TOOL: &str = "upstream_unknown_tool";
/// Any other JSON-RPC error the upstream answered.
pub const UPSTREAM_RPC_ERROR: &str = "upstream_rpc_error";
/// The tool ran and said it failed (`isError: true`).
pub const UPSTREAM_TOOL_ERROR: &str = "upstream_tool_error";
/// The result store (Redis) could not be reached.
pub const RESULT_STORE_UNAVAILABLE: &str = "result_store_unavailable";
/// The upstream asked, before answering, for input the proxy does not pass on.
pub const UPSTREAM_INPUT_UNRELAYED: &str = "upstream_input_unrelayed";

/// Each way a call to the upstream fails: its code, its category, whether a retry may help,
/// and when it happens. `retryable` is the category's default unless the row says otherwise.
pub const UPSTREAM_ERRORS: [(&str, Category, bool, &str); 10] = [
    (
        UPSTREAM_TIMEOUT,
        Category::Transient,
        true,
        "no answer within the call timeout; the call to the upstream is cancelled",
    ),
    (
        UPSTREAM_UNAVAILABLE,
        Category::Unavailable,
        true,
        "the upstream exited, closed its connection or could not be started; it is started again, with backoff, and `retry_after_ms` says when",
    ),
    (
        UPSTREAM_ANSWER_TOO_LARGE,
        Category::Validation,
        false,
        "the answer is longer than the most read from the upstream (`max_message_bytes`); it was dropped as it streamed by: narrow the request",
    ),
    (
        UPSTREAM_MALFORMED,
        Category::Unavailable,
        false,
        "the upstream sent a message that is not UTF-8, not JSON or not JSON-RPC",
    ),
    (
        UPSTREAM_INVALID_PARAMS,
        Category::Validation,
        false,
        "JSON-RPC -32602 for the call's arguments",
    ),
    (
        UPSTREAM_UNKNOWN_TOOL,
        Category::NotFound,
        false,
        "JSON-RPC -32601, or -32602 for a tool the upstream no longer has",
    ),
    (
        UPSTREAM_RPC_ERROR,
        Category::Unavailable,
        false,
        "any other JSON-RPC error, its code in `data.rpc_code`; -32021 (a client capability missing) is the envelope's own `elicitation_unavailable`, `sampling_unavailable` or `roots_unavailable` instead, the capabilities in `data.required_capabilities`, which a client on 2026-07-28 gets as that JSON-RPC error",
    ),
    (
        UPSTREAM_TOOL_ERROR,
        Category::Validation,
        false,
        "`isError: true`: `not_found` when the text says a thing does not exist (ENOENT, \"not found\", \"no such\"), `permission` when it says access was denied (EACCES, \"denied\", \"not allowed\", \"outside allowed\"), else `validation`; never retryable",
    ),
    (
        RESULT_STORE_UNAVAILABLE,
        Category::Unavailable,
        true,
        "a page of an answer kept in Redis was asked for while Redis could not be reached, and this proxy keeps none of that call's answers itself; retry the page later. (An answer Redis cannot take when it is kept is kept in the proxy's own memory instead, and paged from there.)",
    ),
    (
        UPSTREAM_INPUT_UNRELAYED,
        Category::Unavailable,
        false,
        "an upstream on 2026-07-28 answered `InputRequiredResult` asking for what the proxy does not know how to pass on to the client, or asked again past the most rounds a call takes; a client that cannot answer gets the envelope's own `elicitation_unavailable`, `sampling_unavailable` or `roots_unavailable`",
    ),
];

/// The longest upstream text an error message carries; the rest is cut with an ellipsis.
const MAX_MESSAGE_CHARS: usize = 2_000;

/// The error of `code`, with `message`, as [`UPSTREAM_ERRORS`] says.
pub(crate) fn upstream_error(code: &'static str, message: impl Into<String>) -> ToolError {
    let (category, retryable) = UPSTREAM_ERRORS
        .iter()
        .find(|(known, ..)| *known == code)
        .map_or(
            (Category::Internal, false),
            |(_, category, retryable, _)| (*category, *retryable),
        );
    ToolError::new(category, bounded(&message.into()))
        .with_code(code)
        .with_retryable(retryable)
}

/// The upstream is down; the next start is in `wait`.
pub(crate) fn unavailable(why: &str, wait: Duration) -> ToolError {
    upstream_error(
        UPSTREAM_UNAVAILABLE,
        format!("the upstream is not running: {why}"),
    )
    .with_retry_after(wait)
}

/// A JSON-RPC error the upstream answered a call of `tool` with.
pub(crate) fn rpc_error(tool: &str, error: &ErrorData) -> ToolError {
    let code = error.code.0;
    let message = error.message.as_ref();
    if let Some(missing) = missing_capability(error) {
        return missing;
    }
    let mentions_tool = message.contains(tool) && message.to_ascii_lowercase().contains("tool");
    let kind = match code {
        -32601 => UPSTREAM_UNKNOWN_TOOL,
        -32602 if mentions_tool && message.to_ascii_lowercase().contains("unknown") => {
            UPSTREAM_UNKNOWN_TOOL
        }
        -32602 => UPSTREAM_INVALID_PARAMS,
        _ => UPSTREAM_RPC_ERROR,
    };
    upstream_error(kind, format!("the upstream refused the call: {message}"))
        .with_data(serde_json::json!({ "rpc_code": code }))
}

/// The upstream's `-32021`, a client capability missing (MCP 2026-07-28), as the client
/// feature's own error: the caller's capabilities are what the proxy declared for it, so the
/// capability is the caller's to offer. `None` for another error, or one naming no capability
/// a tool can ask of a client.
fn missing_capability(error: &ErrorData) -> Option<ToolError> {
    if error.code != rmcp::model::ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY {
        return None;
    }
    let required = error
        .data
        .as_ref()?
        .get("requiredCapabilities")?
        .as_object()?;
    // MCP names each capability as envelope names the feature.
    let feature = [
        ClientFeature::Sampling,
        ClientFeature::Elicitation,
        ClientFeature::Roots,
    ]
    .into_iter()
    .find(|feature| required.contains_key(&feature.to_string()))?;
    Some(
        ToolError::from(ClientError::Unavailable(feature)).with_data(serde_json::json!({
            "rpc_code": error.code.0,
            envelope_mcp::REQUIRED_CAPABILITIES: required,
        })),
    )
}

/// The error a tool's own failure (`isError: true`, saying `text`) is reported as: its
/// category read from the words, as [`UPSTREAM_ERRORS`] documents; never retryable.
pub(crate) fn tool_error(text: &str) -> ToolError {
    let lower = text.to_ascii_lowercase();
    let says = |words: &[&str]| words.iter().any(|word| lower.contains(word));
    let category = if says(&["enoent", "not found", "no such", "does not exist"]) {
        Category::NotFound
    } else if says(&[
        "eacces",
        "eperm",
        "denied",
        "not allowed",
        "outside allowed",
        "forbidden",
        "unauthorized",
    ]) {
        Category::Permission
    } else {
        Category::Validation
    };
    let message = if text.trim().is_empty() {
        "the upstream tool failed and said nothing".to_owned()
    } else {
        text.to_owned()
    };
    ToolError::new(category, bounded(&message))
        .with_code(UPSTREAM_TOOL_ERROR)
        .with_retryable(false)
}

/// `text` at most [`MAX_MESSAGE_CHARS`] characters long.
fn bounded(text: &str) -> String {
    match text.char_indices().nth(MAX_MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_code_is_in_the_table_once() {
        let codes: std::collections::BTreeSet<_> =
            UPSTREAM_ERRORS.iter().map(|(code, ..)| *code).collect();
        assert_eq!(codes.len(), UPSTREAM_ERRORS.len());
        for (code, category, retryable, _) in UPSTREAM_ERRORS {
            let error = upstream_error(code, "x");
            assert_eq!(
                (error.category(), error.retryable()),
                (category, retryable),
                "{code}"
            );
        }
    }

    #[test]
    fn a_tool_error_is_categorized_by_its_words_and_never_retryable() {
        let cases = [
            (
                "ENOENT: no such file or directory, open '/x'",
                Category::NotFound,
            ),
            (
                "Access denied - path outside allowed directories",
                Category::Permission,
            ),
            (
                "Invalid arguments: path must be a string",
                Category::Validation,
            ),
            ("connection reset by peer", Category::Validation),
        ];
        for (text, category) in cases {
            let error = tool_error(text);
            assert_eq!(error.category(), category, "{text}");
            assert!(!error.retryable(), "{text}");
            assert_eq!(error.code(), Some(UPSTREAM_TOOL_ERROR));
        }
    }

    #[test]
    fn a_long_message_is_cut() {
        let error = tool_error(&"x".repeat(10_000));
        assert_eq!(error.message().chars().count(), MAX_MESSAGE_CHARS + 1);
    }
}

//! The errors that say the tool body did nothing, so that a client may retry even a call that
//! is not idempotent.

use crate::fields::code;
use crate::tool_error::ToolError;

/// The error codes the library emits only for a call whose tool body did nothing: it was
/// refused before the body ran, or, for the paging codes, by the [`Pager`](crate::paging::Pager)
/// as it opened, before the page was read. Whatever the tool's annotations, a call refused
/// with one of these changed nothing, so a client may send it again (once what the error
/// names is fixed) without doing anything twice.
///
/// - `MODULE_DISABLED`: the generated module gate, before the arguments are read;
/// - `arguments_not_object`, `unknown_arg` (under `strict_args`), `invalid_arguments`,
///   [`INVALID_ARGUMENT`](crate::paging::INVALID_ARGUMENT) and `invalid_control`: decoding the
///   arguments and the per-call controls (an unknown or unoffered `dialect` among them, a
///   control named twice), and a token passed under an argument the tool does not declare;
/// - [`INSUFFICIENT_SCOPE`](crate::INSUFFICIENT_SCOPE): the transport's scope check, before the
///   tool is called;
/// - the paging codes ([`CONTINUATION_CODES`](crate::paging::CONTINUATION_CODES)): the pager
///   refusing the paging arguments when the tool opens it, which a paged tool does first.
///
/// A tool that writes one of these codes itself makes the same promise. A server says it of
/// any other error with `error.data.ran: false` ([`NOT_RUN_FIELD`]); both are read by
/// [`ToolError::did_not_run`].
pub const NOT_RUN_CODES: [&str; 12] = [
    code::MODULE_DISABLED,
    code::ARGUMENTS_NOT_OBJECT,
    code::UNKNOWN_ARG,
    code::INVALID_ARGUMENTS,
    code::INVALID_ARGUMENT,
    code::INVALID_CONTROL,
    code::INSUFFICIENT_SCOPE,
    code::INVALID_CONTINUATION,
    code::CONTINUATION_SCOPE_MISMATCH,
    code::STALE_CONTINUATION,
    code::MIXED_CONTINUATION_FORMS,
    code::INVALID_LIMIT,
];

/// The member of an error's `data` by which a server says whether the tool body ran:
/// `{"ran": false}` promises that it did nothing.
pub const NOT_RUN_FIELD: &str = "ran";

impl ToolError {
    /// Whether the error says the tool body did nothing: its code is one of
    /// [`NOT_RUN_CODES`], or its `data` says `"ran": false`. An error that says `"ran": true`
    /// ran, whatever its code.
    pub fn did_not_run(&self) -> bool {
        match self
            .data()
            .and_then(|data| data.get(NOT_RUN_FIELD))
            .and_then(serde_json::Value::as_bool)
        {
            Some(ran) => !ran,
            None => self
                .code()
                .is_some_and(|code| NOT_RUN_CODES.contains(&code)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paging::CONTINUATION_CODES;

    #[test]
    fn every_paging_code_is_a_not_run_code() {
        for (code, _, _) in CONTINUATION_CODES {
            assert!(NOT_RUN_CODES.contains(&code), "{code}");
        }
    }

    #[test]
    fn the_library_refusals_before_the_body_say_so() {
        let gate = ToolError::module_disabled("search");
        assert!(gate.did_not_run(), "{gate:?}");
        let scope = crate::insufficient_scope("t", &["a"], &["a"]);
        assert!(scope.did_not_run(), "{scope:?}");
        let dialect =
            crate::Dialect::unknown(&serde_json::json!("nope"), crate::dialect::DIALECT_CONTROL);
        assert!(dialect.did_not_run(), "{dialect:?}");
    }

    #[test]
    fn data_ran_decides_over_the_code() {
        let plain = ToolError::transient("timed out");
        assert!(!plain.did_not_run());
        let said = ToolError::transient("queue full").with_data(serde_json::json!({"ran": false}));
        assert!(said.did_not_run());
        let ran = ToolError::validation("bad")
            .with_code("unknown_arg")
            .with_data(serde_json::json!({"ran": true}));
        assert!(!ran.did_not_run());
    }
}

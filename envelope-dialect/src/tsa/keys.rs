//! The dialect's own top-level keys, as tree-sitter-analyzer spells them, and the two sets built
//! from them: the keys the dialect owns (which a payload member may not silently take over) and
//! the control surface `compact_only` reduces to.

/// `success`: whether the tool ran end-to-end (the envelope's `ok`).
pub(super) const SUCCESS: &str = "success";
/// `verdict`: one of the eight canonical verdicts.
pub(super) const VERDICT: &str = "verdict";
/// `summary_line`: the one-line triage signal, mirrored from `agent_summary`.
pub(super) const SUMMARY_LINE: &str = "summary_line";
/// `next_step`: one concrete recommended next action.
pub(super) const NEXT_STEP: &str = "next_step";
/// `agent_summary`: the triage block `{summary_line, verdict, next_step}`.
pub(super) const AGENT_SUMMARY: &str = "agent_summary";
/// `error`: the failure's human-readable message (present iff `success` is false).
pub(super) const ERROR: &str = "error";
/// `error_type`: the failure's machine-stable kind.
pub(super) const ERROR_TYPE: &str = "error_type";
/// `hint`: the recovery hint of a failure.
pub(super) const HINT: &str = "hint";
/// `retryable`: whether the same call may succeed as it is (an open key this dialect adds on
/// failures, since the contract has no place for it and an agent must not lose it).
pub(super) const RETRYABLE: &str = "retryable";
/// `retry_after_ms`: how long to wait before retrying (open key, failures only).
pub(super) const RETRY_AFTER_MS: &str = "retry_after_ms";
/// `warnings`: `"<code>: <message>"` strings.
pub(super) const WARNINGS: &str = "warnings";
/// `truncated`: true iff anything was omitted.
pub(super) const TRUNCATED: &str = "truncated";
/// `listed_cap`: the cap that was applied to the listed rows.
pub(super) const LISTED_CAP: &str = "listed_cap";
/// `next_actions`: the envelope's followable actions, unchanged (an open key).
pub(super) const NEXT_ACTIONS: &str = "next_actions";
/// `data`: the payload whole, when it is not an object or cannot be flattened.
pub(super) const DATA: &str = "data";
/// `format`: `"toon"` when the payload lives in `toon_content`.
pub(super) const FORMAT: &str = "format";
/// `toon_content`: the whole response, TOON-encoded.
pub(super) const TOON_CONTENT: &str = "toon_content";
/// `output_format`: the echo of the format the call asked for.
pub(super) const OUTPUT_FORMAT: &str = "output_format";
/// `file_path`: the echo of the call's subject file (a payload member of that name).
pub(super) const FILE_PATH: &str = "file_path";
/// `pr_url`: the echo of the PR a review call targeted (a payload member of that name).
pub(super) const PR_URL: &str = "pr_url";
/// `pr_number`: the echo of that PR's number (a payload member of that name).
pub(super) const PR_NUMBER: &str = "pr_number";
/// `deprecation`: a legacy-name shim's migration warning (a payload member of that name).
pub(super) const DEPRECATION: &str = "deprecation";

/// The `format` value of a TOON response.
pub(super) const TOON: &str = "toon";

/// The suffix of the exact pre-cap total: `<unit>_count`.
pub(super) const COUNT_SUFFIX: &str = "_count";
/// The suffix of the listed count: `<unit plural>_listed`.
pub(super) const LISTED_SUFFIX: &str = "_listed";
/// The suffix of the rows earlier pages listed: `<unit plural>_offset` (a key this dialect
/// adds, since the contract's counts describe one response and a page of a paged result is
/// otherwise indistinguishable from a cut).
pub(super) const OFFSET_SUFFIX: &str = "_offset";

/// The keys this dialect owns. A payload member of one of these names is flattened to the top
/// level only when the response writes that key with the same value anyway; otherwise the
/// payload keeps whole under `data`, so that no member is lost and no member passes for a
/// contract field (a payload's own `error` on a success, its own `next_actions`…).
///
/// `file_path`, `pr_url`, `pr_number` and `deprecation` are not here: the contract fills them
/// from what the tool answered, which in an envelope is the payload, so a payload member of
/// one of those names is exactly where the contract puts it.
pub(super) const OWNED: [&str; 18] = [
    SUCCESS,
    VERDICT,
    SUMMARY_LINE,
    NEXT_STEP,
    AGENT_SUMMARY,
    ERROR,
    ERROR_TYPE,
    HINT,
    RETRYABLE,
    RETRY_AFTER_MS,
    WARNINGS,
    TRUNCATED,
    LISTED_CAP,
    NEXT_ACTIONS,
    DATA,
    FORMAT,
    TOON_CONTENT,
    OUTPUT_FORMAT,
];

/// The contract's `TOON_CONTROL_SURFACE`: the only keys a `compact_only` response keeps.
pub(super) const CONTROL_SURFACE: [&str; 13] = [
    SUCCESS,
    FORMAT,
    TOON_CONTENT,
    VERDICT,
    ERROR,
    ERROR_TYPE,
    OUTPUT_FORMAT,
    SUMMARY_LINE,
    HINT,
    FILE_PATH,
    PR_URL,
    PR_NUMBER,
    DEPRECATION,
];

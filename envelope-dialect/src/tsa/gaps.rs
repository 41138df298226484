//! The two gap tables: what tree-sitter-analyzer's contract has that an envelope cannot say,
//! and what an envelope has that this dialect cannot carry. Each `why` is one sentence a
//! reader of the generated docs understands on its own.

use crate::Gap;

/// What the source contract has that an envelope cannot express.
pub(crate) const UNEXPRESSED: &[Gap] = &[
    Gap {
        field: "agent_summary members beyond summary_line, verdict and next_step (risk, edit_strategy, verification_command, guardrails, …)",
        why: "An envelope's triage fields are only its summary line, verdict and next step, so a tool's own triage members travel as payload members at the top level, never inside agent_summary.",
    },
    Gap {
        field: "listed_cap of a per-file, child or ancestor cap, and of a last page",
        why: "An envelope records why rows were left out but not the size of the cap, so listed_cap is written when every reason caps the listed count itself (the page size, the response budget, a top-K or merge cap), which the cut list's length equals; a cap on something else, or the page size earlier pages used, is not guessed.",
    },
    Gap {
        field: "per-tool names of the counts (total_matches, total_dead_functions_transitive, dead_functions_listed, …)",
        why: "The counts are named after the envelope's completeness unit (`<unit>_count`, `<unit plural>_listed`), so a tool that names its total otherwise has to carry that name in its own payload.",
    },
    Gap {
        field: "file_path, pr_url, pr_number",
        why: "An envelope does not echo the call's arguments, so these control-surface keys appear only when the tool's payload has a member of that name.",
    },
    Gap {
        field: "deprecation",
        why: "An envelope server has no legacy tool-name shims, so no response carries a migration warning here unless the tool's payload has a `deprecation` member.",
    },
    Gap {
        field: "output_format: toon as the default",
        why: "An envelope answers in JSON unless the call asks for TOON, so a call without output_format gets the JSON form, not toon_content.",
    },
    Gap {
        field: "summary_line on every success",
        why: "A summary line is optional in an envelope, so a success whose tool wrote none has no summary_line and no agent_summary.",
    },
    Gap {
        field: "verdict graded from impact (none/low/medium/high → SAFE/CAUTION/REVIEW/UNSAFE)",
        why: "An envelope carries the verdict its tool chose, and how a tool grades impact is the tool's own logic, so risk_level or impact appear only as payload members.",
    },
    Gap {
        field: "a follow-up the tool did not name",
        why: "An envelope's next step is the tool's (or, on a cut or a missing target, the honest one the counts and the verdict give), so a verdict's own follow-up, such as a verification command on SAFE, is in agent_summary only when the tool names it; the verdict's obligation is documented, not invented into next_step.",
    },
    Gap {
        field: "listed_cap of a response-budget cut",
        why: "When the response budget ended the page, listed_cap is the count the budget let through, which the listed count equals, not the limit argument the call sent; next_step then says the budget cut the rest.",
    },
];

/// What an envelope has that this dialect cannot carry, and the rule that drops it.
pub(crate) const DROPPED: &[Gap] = &[
    Gap {
        field: "error code TARGET_NOT_IN_REF",
        why: "The contract has no target refs, so the code is written as it is in `error_type` (`retryable: false`), its hint saying to pass the ref of the row's own page; it is never written as the contract's NOT_FOUND, since nothing is missing.",
    },
    Gap {
        field: "error.category, when error.code is present",
        why: "error_type holds the more specific code, and retryable still says what the category decides for an agent: whether the same call may succeed as it is.",
    },
    Gap {
        field: "error.data",
        why: "The contract's failure is a message, a type and a hint, so the per-code details are left out and the hint is what says how to recover.",
    },
    Gap {
        field: "severity and data of warnings and diagnostics",
        why: "The contract's warnings are plain `<code>: <message>` strings, so each notice keeps its code and message and the verdict says how serious the answer is.",
    },
    Gap {
        field: "diagnostics as a list of their own",
        why: "The contract has one list of flagged conditions, so diagnostics are lines of warnings, after the envelope's own warnings.",
    },
    Gap {
        field: "empty_reason, diagnosis, completeness.incomplete_reasons, completeness.shortened and meta.binary_drift_warning as structured fields",
        why: "The contract has no field for them, so each becomes a line of warnings whose code (before the colon) is the envelope's value: `no_match: …`, `walk_failure: …`, `shortened: text — …`.",
    },
    Gap {
        field: "completeness.truncation_reasons",
        why: "The contract has only the truncated flag, so the reasons only decide whether listed_cap can be written, and next_step says how to get the rest.",
    },
    Gap {
        field: "completeness.complete",
        why: "The contract has no such flag: truncated false, with no incompleteness line in warnings, is what says no rows exist beyond the listed ones and those of earlier pages.",
    },
    Gap {
        field: "completeness.continuation",
        why: "A continuation is written once, in the arguments of the next-page action in next_actions, which is the call an agent makes to page.",
    },
    Gap {
        field: "meta.request_id, client_request_id, tool, complexity_tier, idempotent, latency_ms, layer, schema_version, capabilities, schema_version_at_index",
        why: "The contract has no metadata block, and these are observability fields an agent does not branch on.",
    },
    Gap {
        field: "meta.tokens_estimated, tokens_method, tokens_saved, tokens_saved_pct, baseline_method",
        why: "The contract has no token accounting, and those counts describe the envelope's bytes, not this response's.",
    },
    Gap {
        field: "meta.attachments",
        why: "Attachments travel as MCP content blocks beside the response, and the contract has no place for a note about them.",
    },
    Gap {
        field: "next_actions, warnings, agent_summary and the payload at the top level under compact_only",
        why: "compact_only keeps only the contract's control surface at the top level, so everything else is read from toon_content, which holds the whole response.",
    },
    Gap {
        field: "the control surface of a response too deep to TOON-encode",
        why: "A response nested deeper than TOON can encode keeps its JSON form whole, with no format marker and no reduction to the control surface: a response without its payload anywhere would be worse than one with more keys.",
    },
    Gap {
        field: "truncated for row fields shown in part",
        why: "truncated counts rows left out and the budget's cuts; row fields a compact form shows in part are said in warnings (a `shortened:` line naming them), so that truncated keeps agreeing with the listed and total counts.",
    },
];

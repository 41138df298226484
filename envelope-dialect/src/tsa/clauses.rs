//! The clauses of tree-sitter-analyzer's agent envelope an answer can be checked against, and
//! what holds each.

use crate::clause::{Clause, file, gap, held};

pub(crate) const CLAUSES: &[Clause] = &[
    held(
        "The three worked examples are valid responses.",
        file::TSA,
        "the_seeds_three_examples_validate_against_the_schema",
    ),
    held(
        "`success` always; `error` iff `success` is false; the verdict `ERROR` means exactly that.",
        file::TSA,
        "the_schema_is_draft_2020_12_and_refuses_what_the_contract_forbids",
    ),
    held(
        "The verdict is exactly one of the eight canonical strings.",
        file::TSA,
        "the_verdict_alphabet_is_exactly_the_seeds_table",
    ),
    held(
        "Each verdict is written as itself.",
        file::TSA,
        "every_verdict_renders_as_itself_row_by_row",
    ),
    held(
        "A missing verdict is back-filled with INFO; drift values canonicalize.",
        file::TSA,
        "a_missing_verdict_is_back_filled_and_drift_canonicalized",
    ),
    held(
        "NOT_FOUND: the tool ran fine, the target does not exist: an empty result (`success: true`), not a failure.",
        file::TSA,
        "a_missing_target_is_not_found_and_a_success",
    ),
    held(
        "The truncation contract's four parts: flag, exact pre-cap total, listed count and cap, next_step with the real numbers.",
        file::TSA,
        "the_four_part_truncation_table_row_by_row",
    ),
    held(
        "`truncated` is `true` iff anything was omitted: never assume `len(list) == total`.",
        file::TSA,
        "a_later_page_says_how_many_rows_earlier_pages_listed",
    ),
    held(
        "A budget cut carries all four parts, `listed_cap` included.",
        file::TSA,
        "a_budget_cut_says_it_was_cut_and_by_how_much",
    ),
    held(
        "`listed_cap` is the cap that was applied to the listed count.",
        file::TSA,
        "listed_cap_is_written_when_every_cap_bounds_the_listed_count",
    ),
    gap(
        "`listed_cap` of a per-file cap, and of a last page.",
        "listed_cap of a per-file, child or ancestor cap, and of a last page",
    ),
    held(
        "The pre-cap total is exact: an unknown one is absent, never zero.",
        file::TSA,
        "an_unknown_total_is_absent_never_zero_and_next_step_is_derived_when_missing",
    ),
    held(
        "`agent_summary` is `{summary_line, verdict, next_step}`, `summary_line` mirrored to the top level.",
        file::TSA,
        "example_2_renders_agent_summary_with_the_seeds_values",
    ),
    held(
        "`compact_only` keeps exactly the control surface.",
        file::TSA,
        "the_control_surface_is_exactly_the_seeds_table",
    ),
    held(
        "The reduction to the control surface is idempotent.",
        file::TSA,
        "the_reduction_is_idempotent",
    ),
    held(
        "An error envelope carries `error`, `error_type` and `hint`.",
        file::TSA,
        "a_failure_writes_error_error_type_and_hint",
    ),
    held(
        "WARN-grade conditions travel in `warnings`.",
        file::TSA,
        "warnings_are_code_colon_message_lines_for_everything_flagged",
    ),
    gap(
        "The verdict graded from impact none/low/medium/high.",
        "verdict graded from impact (none/low/medium/high → SAFE/CAUTION/REVIEW/UNSAFE)",
    ),
    gap(
        "`summary_line` on every success.",
        "summary_line on every success",
    ),
    held(
        "`next_step` on truncation MUST state the real shown/total numbers, never a stale template count.",
        file::TSA,
        "a_tools_own_next_step_is_led_by_the_real_numbers_when_it_does_not_state_them",
    ),
    held(
        "`next_step` says how to get the rest: raise the limit, or narrow the query.",
        file::TSA,
        "a_derived_next_step_says_how_to_get_the_rest_when_no_page_follows",
    ),
    held(
        "A list the response budget cut is honest about it: the real numbers in `next_step`.",
        file::TSA,
        "a_list_the_budget_cut_without_a_completeness_gets_its_real_numbers_in_next_step",
    ),
    held(
        "Control-surface keys the call has no value for are simply absent.",
        file::TSA,
        "a_null_payload_member_is_absent_from_the_control_surface",
    ),
    held(
        "`format: \"toon\"` tells the client the payload is in `toon_content`, where everything stripped from the top level is recoverable; scalar metadata stays alongside.",
        file::TSA,
        "the_toon_form_keeps_paging_beside_toon_content_and_compact_only_inside_it",
    ),
    held(
        "`output_format` echoes the requested format.",
        file::TSA,
        "compact_only_implies_the_toon_form_and_echoes_the_format_asked_for",
    ),
    held(
        "ERROR: do not consume other payload fields as valid results.",
        file::TSA,
        "a_failure_carries_no_payload_members",
    ),
    held(
        "NOT_FOUND: check the spelling or qualify the name before retrying.",
        file::TSA,
        "a_missing_target_without_a_hint_is_told_what_not_found_obliges",
    ),
    held(
        "`agent_summary` is summary_line + verdict + next_step: its verdict is the answer's.",
        file::TSA,
        "agent_summarys_verdict_is_the_answers_for_every_verdict",
    ),
    held(
        "`error`, `error_type`, `hint`, `summary_line` and `next_step` are strings.",
        file::TSA,
        "the_schema_refuses_the_contracts_strings_of_another_type",
    ),
    gap(
        "Inside `agent_summary`, `next_step` carries the recommended follow-up for the verdict (the verification command on SAFE).",
        "a follow-up the tool did not name",
    ),
    gap(
        "Every top-level key of a `compact_only` response is a member of the control surface.",
        "the control surface of a response too deep to TOON-encode",
    ),
    gap(
        "`truncated` is true iff anything was omitted, row fields shown in part included.",
        "truncated for row fields shown in part",
    ),
    gap(
        "`listed_cap` is driven by the tool's limit argument.",
        "listed_cap of a response-budget cut",
    ),
];

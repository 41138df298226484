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
];

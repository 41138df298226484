//! The clauses of Frigg's result and recovery contracts an answer can be checked against, and
//! what holds each.

use crate::clause::{Clause, file, gap, held};

pub(crate) const CLAUSES: &[Clause] = &[
    held(
        "The executable next action example is a valid action.",
        file::FRIGG,
        "the_seeds_example_action_validates",
    ),
    held(
        "Roles are retry, broaden_scope, resolve_target, verify_exact, proof_read, inspect, diagnose.",
        file::FRIGG,
        "the_role_alphabet_is_the_seeds",
    ),
    held(
        "Dependency groups use `all` or `any` over earlier action ids.",
        file::FRIGG,
        "dependency_groups_are_all_or_any",
    ),
    held(
        "Responses contain at most eight normalized actions.",
        file::FRIGG,
        "at_most_eight_actions",
    ),
    held(
        "Every bounded collection carries `completeness` with the table's fields.",
        file::FRIGG,
        "completeness_fields_follow_the_seeds_table",
    ),
    held(
        "`total`: missing means unknown, never a lower bound; a complete result may leave it out.",
        file::SEED_EXAMPLES,
        "friggs_examples_validate",
    ),
    held(
        "`truncated` with an exact total, and untruncated but non-exhaustive, both hold.",
        file::FRIGG,
        "truncated_with_total_and_untruncated_but_incomplete_both_hold",
    ),
    held(
        "`truncation_reasons` is the closed list of six.",
        file::FRIGG,
        "truncation_reasons_are_the_seeds_six",
    ),
    held(
        "A budget cut is stated, and read back as the envelope's own reason.",
        file::FRIGG,
        "a_budget_cut_is_stated",
    ),
    held(
        "Completeness is never contradictory (complete and truncated, truncated without a reason).",
        file::FRIGG,
        "the_schema_refuses_contradictory_completeness",
    ),
    held(
        "Replay the original request unchanged and set only the returned continuation.",
        file::FRIGG,
        "the_next_page_is_the_original_request_plus_only_the_continuation",
    ),
    held(
        "Continuation errors and their recovery, row by row.",
        file::FRIGG,
        "continuation_errors_follow_the_seeds_table",
    ),
    held(
        "Target errors, row by row.",
        file::FRIGG,
        "target_errors_follow_the_seeds_table",
    ),
    held(
        "Copy `target_ref` unchanged.",
        file::FRIGG,
        "a_target_ref_is_copied_unchanged",
    ),
    held(
        "Zero-hit reasons, row by row.",
        file::FRIGG,
        "zero_hit_reasons_map_row_by_row",
    ),
    held(
        "`response_mode: compact` omits notes; `full` adds runtime and diagnostic detail.",
        file::FRIGG,
        "full_adds_notes_and_runtime_compact_leaves_them_out",
    ),
    held(
        "Recovery fields: `error_code`, `message`, `correction_hint`, `related_tools`, `next_actions`.",
        file::FRIGG,
        "recovery_keeps_the_override_and_its_actions",
    ),
    gap(
        "Result handles and `read_match`.",
        "result_handle, match_id, handle_scope, handle_expires",
    ),
    gap(
        "`presentation_mode`.",
        "presentation_mode (text, json, citation)",
    ),
    gap(
        "Continuations bound to the session.",
        "continuation bound to the session",
    ),
];

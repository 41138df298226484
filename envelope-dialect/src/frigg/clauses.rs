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
    held(
        "Dependency groups name earlier actions of the same response.",
        file::FRIGG,
        "dependencies_name_only_earlier_actions_of_the_response",
    ),
    held(
        "Store only `completeness.continuation`: every resumable page carries its token there.",
        file::FRIGG,
        "a_token_no_action_carries_is_still_the_completeness_continuation",
    ),
    held(
        "`unit` is one of the table's units.",
        file::FRIGG,
        "the_seeds_units_are_known_units",
    ),
    held(
        "`incomplete_reasons` names why coverage cannot be exhaustive, in the seed's words.",
        file::FRIGG,
        "incomplete_reasons_cover_the_seeds",
    ),
    held(
        "Compact keeps the index and freshness diagnostics.",
        file::FRIGG,
        "notices_and_freshness_are_diagnostics",
    ),
    held(
        "Trust is a field of its own: a verdict other than the default is kept.",
        file::FRIGG,
        "a_non_default_verdict_is_kept",
    ),
    held(
        "Invalid parameters, missing resources and access denial are non-retryable without correction.",
        file::FRIGG,
        "categories_without_a_code_name_the_failure_with_their_defaults",
    ),
    gap(
        "Set only `continuation` on the replayed request.",
        "a tool's renamed continuation argument",
    ),
    gap(
        "`unit` is occurrence, file, symbol, … or impact section.",
        "the unit item and units a tool names",
    ),
    gap(
        "A validation, not-found or permission failure is not retryable.",
        "retryable as a tool sets it",
    ),
    gap(
        "`zero_hit_reason` explains a search that found nothing.",
        "zero_hit_reason beside rows",
    ),
    gap(
        "`full` adds ranking, selection and diagnostic detail.",
        "full mode's ranking and selection detail",
    ),
    gap(
        "`response_mode` is not accepted by workspace and file tools.",
        "response_mode on every tool",
    ),
    gap(
        "The continuation table's three codes are all a paging failure can answer.",
        "INVALID_CONTINUATION and INVALID_LIMIT",
    ),
    gap(
        "Copy `target_ref` objects (`result_match`, `stable_symbol`) unchanged.",
        "target_ref (result_match and stable_symbol objects)",
    ),
    gap(
        "Target errors `TARGET_REPOSITORY_MISMATCH` and `TARGET_ANCHOR_INSUFFICIENT`.",
        "TARGET_REPOSITORY_MISMATCH",
    ),
    gap(
        "`TARGET_ANCHOR_INSUFFICIENT`: pass a stronger anchor.",
        "TARGET_ANCHOR_INSUFFICIENT",
    ),
    gap(
        "Handle errors `STALE_HANDLE`, `MIXED_HANDLE`, `STALE_PROOF_ANCHOR`.",
        "STALE_HANDLE, MIXED_HANDLE, STALE_PROOF_ANCHOR",
    ),
    gap("Proof reads with `read_match`.", "read_match"),
    gap(
        "Prefer `next_actions` to `suggested_next`.",
        "suggested_next",
    ),
    gap("`resume_from` resumes a legacy page.", "resume_from"),
    gap(
        "Zero-hit reasons `indexed_search_complete`, `precise_graph_unavailable`, `index_not_ready`.",
        "zero_hit_reason: indexed_search_complete, precise_graph_unavailable, index_not_ready",
    ),
    gap("The applied scope is reported.", "applied scope"),
    gap(
        "`search_text.total_matches` keeps its compatibility meaning.",
        "search_text.total_matches",
    ),
    gap(
        "Transport errors carry `data.error_code` and `data.retryable`.",
        "transport errors' data.error_code and data.retryable",
    ),
];

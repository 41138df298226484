//! The clauses of pincher's `_meta` contract an answer can be checked against, and what holds
//! each.

use crate::clause::{Clause, file, gap, held};

pub(crate) const CLAUSES: &[Clause] = &[
    held(
        "Every response is `{result, _meta}`: the payload under `result`, everything else in `_meta`.",
        file::SEED_EXAMPLES,
        "pinchers_anatomy_validates",
    ),
    held(
        "The anatomy's worked example is a valid response.",
        file::PINCHER,
        "the_anatomy_example_validates_against_the_schema",
    ),
    held(
        "Missing fields mean \"not applicable\", never 0, false or empty: only the fields an answer has are written.",
        file::PINCHER,
        "every_field_written_is_a_field_of_the_anatomy",
    ),
    held(
        "Field names are frozen: `next_steps`, `empty_reason`, `capabilities`, `request_id`, ….",
        file::PINCHER,
        "the_frozen_field_names_are_written",
    ),
    held(
        "`request_id` is a ULID; `schema_version` and `schema_version_at_index` are integers.",
        file::PINCHER,
        "request_id_is_a_ulid_and_schema_versions_are_integers",
    ),
    held(
        "`next_steps[]` entries are `{tool, args, why}`; the agent passes `args` through unchanged.",
        file::PINCHER,
        "next_steps_keep_the_actions_order_and_arguments",
    ),
    held(
        "The host loop schedules `next_steps` and pages through a result with them.",
        file::PINCHER,
        "the_host_loop_pages_through_a_result_by_its_next_steps",
    ),
    held(
        "The host loop's `return resp[\"result\"]` runs on every answer, errors included.",
        file::PINCHER,
        "the_host_loop_returns_from_a_failed_call_too",
    ),
    held(
        "`empty_reason: no_project_indexed` sends the host loop to `index`.",
        file::PINCHER,
        "the_host_loop_indexes_when_no_project_is_indexed",
    ),
    held(
        "A `binary_drift_warning` is surfaced by the host loop.",
        file::PINCHER,
        "the_host_loop_surfaces_a_drift",
    ),
    held(
        "`empty_reason` is the stable enum of the table, row by row.",
        file::PINCHER,
        "every_empty_reason_maps_row_by_row",
    ),
    gap(
        "`empty_reason` values `same_file_only`, `cross_file_unavailable`.",
        "empty_reason: same_file_only, cross_file_unavailable",
    ),
    held(
        "Consumers default-branch on an `empty_reason` they do not know: new values travel unchanged.",
        file::PINCHER,
        "an_unknown_empty_reason_travels_unchanged",
    ),
    held(
        "`warnings_v2` and `diagnosis_v2` entries keep the frozen `{code, severity, message, data}` shape.",
        file::PINCHER,
        "warnings_v2_and_diagnosis_v2_keep_the_frozen_shape",
    ),
    held(
        "`unknown_arg` is a `diagnosis_v2` entry whose `data.accepted` lists the valid keys.",
        file::PINCHER,
        "warnings_and_diagnostics_become_the_v2_lists_in_order",
    ),
    held(
        "A failed call's error is the first `diagnosis_v2` entry, severity `error`.",
        file::PINCHER,
        "a_failed_call_has_a_null_result_and_its_error_heads_diagnosis_v2",
    ),
    held(
        "`tokens_used` is the response payload in tokens.",
        file::PINCHER,
        "tokens_used_counts_the_result_with_the_servers_estimator",
    ),
    held(
        "`tokens_saved` is the baseline's tokens minus `tokens_used`.",
        file::PINCHER,
        "savings_are_left_out_when_the_baseline_cannot_be_recovered",
    ),
    held(
        "A cut collection is flagged (a `truncated` entry of `warnings_v2`), never silently shorter.",
        file::PINCHER,
        "a_truncated_page_says_how_much_was_cut_and_how_to_page",
    ),
    held(
        "A budget cut carries the trimmer's markers.",
        file::PINCHER,
        "a_budget_cut_is_flagged_with_the_trimmers_markers",
    ),
    gap(
        "The always-on `capabilities` tags (`schema_v38`, `hook_check`, …).",
        "capabilities: schema_v38, hook_check, supervised, operator_tools_on_mcp, session_persistence, binary_drift_warning, tokens_used_envelope, tokens_saved_pct, sse, metrics_prometheus, mcp_logging, mcp_prompts",
    ),
    gap(
        "`request_id` echoed from a client's `X-Request-ID`.",
        "_meta.request_id echoed from any `X-Request-ID`",
    ),
    gap(
        "`project_id`, `project_name`, `session_id`.",
        "_meta.project_id, _meta.project_name",
    ),
    held(
        "Legacy `warnings: [string]` ships alongside `warnings_v2`; consumers can read either.",
        file::PINCHER,
        "the_anatomys_equivalent_envelope_renders_its_fields_and_values",
    ),
    held(
        "`binary_drift_warning` is `{stored_version, running_version, remediation}`, non-null only when the stored data is newer than the binary.",
        file::PINCHER,
        "a_drift_always_says_what_to_do_about_it",
    ),
    gap(
        "`baseline_method` is one of `full_file_read`, `grep_recursive`, `walk_directory`, `read_all_changed`.",
        "baseline_method values beyond pincher's four",
    ),
    gap(
        "`stale_index`: the project is indexed, but `schema_version_at_index` is below the server's `schema_version`.",
        "_meta.schema_version (without a drift)",
    ),
    held(
        "`complexity_tier` is `lite | standard | heavy`; `latency_ms` is whole milliseconds; each `next_steps` entry has `tool`, `args` and `why`.",
        file::PINCHER,
        "tier_latency_and_steps_keep_the_anatomys_types",
    ),
];

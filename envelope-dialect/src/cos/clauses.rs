//! The clauses of the `cos_*` error envelope an answer can be checked against, and what holds
//! each.

use crate::clause::{Clause, file, gap, held};

pub(crate) const CLAUSES: &[Clause] = &[
    held(
        "A success is `{ok: true, data}` with the diagnostics block `data.meta`.",
        file::COS,
        "the_contract_success_examples_validate_and_render_alike",
    ),
    held(
        "A failure is `{ok: false, error: {category, retryable, message}}`.",
        file::COS,
        "the_contract_error_examples_validate_and_render_alike",
    ),
    held(
        "The error is exactly category, retryable and message.",
        file::COS,
        "an_error_is_exactly_category_retryable_and_message",
    ),
    held(
        "The seven categories with their `retryable` defaults, row by row.",
        file::COS,
        "the_category_table_row_by_row",
    ),
    held(
        "`retryable=` passed explicitly overrides the default.",
        file::COS,
        "a_retryable_override_is_rendered_as_given",
    ),
    held(
        "`internal` hides internals from the caller.",
        file::COS,
        "an_internal_error_stays_masked",
    ),
    held(
        "Assertions drill through the envelope, as the Testing section writes them.",
        file::COS,
        "the_testing_section_literally",
    ),
    held(
        "`data` is whatever the tool produced: a dict, a list, a scalar, or even null.",
        file::SEED_EXAMPLES,
        "cos_shapes_validate",
    ),
    held(
        "`truncated` is `false` for no-op trims, with no marker.",
        file::COS,
        "nothing_cut_means_truncated_false_and_no_markers",
    ),
    held(
        "`truncated` is `true` iff the body was shrunk to the budget, with `truncated_<key>_from/_to`.",
        file::COS,
        "a_budget_cut_list_is_marked_with_its_from_and_to",
    ),
    held(
        "`truncated_string_fields` names the long scalars cut; short ones are never cut.",
        file::COS,
        "long_strings_are_cut_and_named_short_scalars_never",
    ),
    gap(
        "`truncated_string_fields` holds field names.",
        "data.meta.truncated_string_fields as field names",
    ),
    held(
        "`truncated_edges_by_type` records each bucket's `{from, to}`.",
        file::COS,
        "edges_by_type_buckets_are_marked_per_kind",
    ),
    held(
        "A `{nodes, edges}` body is cut coherently and says `truncated_subgraph`.",
        file::COS,
        "a_graph_payload_is_cut_coherently_and_says_so",
    ),
    held(
        "`envelope_unshrinkable` when every ladder ran and the payload is still over.",
        file::COS,
        "an_unshrinkable_answer_says_so",
    ),
    held(
        "The web opt-out never trims and never sets `envelope_unshrinkable`.",
        file::COS,
        "the_browser_opt_out_never_trims_nor_calls_itself_unshrinkable",
    ),
    held(
        "The budget tiers and the trimmable keys are the contract's.",
        file::COS,
        "the_budget_tiers_and_trimmable_keys_are_the_contracts",
    ),
    held(
        "`tokens_estimated` counts the serialized response; callers cannot set it.",
        file::COS,
        "tokens_estimated_counts_the_whole_response_itself_included",
    ),
    held(
        "`layer` is what the caller supplies.",
        file::COS,
        "a_declared_layer_is_stamped_and_an_undeclared_one_absent",
    ),
    held(
        "Tools may add keys to `data.meta` but cannot spoof the library's.",
        file::COS,
        "a_payloads_own_meta_is_kept_but_cannot_spoof_the_librarys",
    ),
    gap("A machine code beside the category.", "error.code"),
    gap(
        "The `module_disabled` message names `cos module enable <id>`.",
        "module_disabled message naming `cos module enable <id>`",
    ),
    held(
        "`truncated_edges_by_type` is a dict `{kind: {from, to}}`.",
        file::COS,
        "edges_by_type_buckets_are_marked_per_kind",
    ),
    gap(
        "`internal`'s message is the exception line (`OperationalError: …`); only the traceback stays in the log.",
        "an internal failure's exception line",
    ),
    gap(
        "A list, a scalar or null is sent in `data` as it is.",
        "a bare list, scalar or null payload",
    ),
    gap(
        "Tokens are estimated at ~4 ASCII characters or 1 non-ASCII character each.",
        "tokens_estimated by the character rule",
    ),
    gap(
        "The ladder cuts the named lists first, then `edges_by_type` buckets, then strings.",
        "the trimming ladder's order and reach",
    ),
    gap(
        "`truncated_<key>_from` is the list's original count.",
        "truncated_<key>_from of a page the budget ended",
    ),
    gap(
        "With the budget opted out, the trimmer is skipped entirely.",
        "the depth limit with the budget opted out",
    ),
    gap(
        "A coherent subgraph cut never zeroes out the edges.",
        "edges keyed other than source/target or from/to",
    ),
];

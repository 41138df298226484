//! The gap tables: what Frigg's contract has that an envelope cannot express, and what an
//! envelope has that this dialect does not write.

use crate::Gap;

/// What the source contract has that an envelope cannot express.
pub(crate) const UNEXPRESSED: &[Gap] = &[
    Gap {
        field: "result_handle, match_id, handle_scope, handle_expires",
        why: "The envelope keeps no session-scoped result handles: a follow-up names its target \
              with a sealed, stateless `target_ref` that any replica holding the key opens, so \
              there is no handle pair to hand out, scope to a session or expire with it.",
    },
    Gap {
        field: "read_match",
        why: "Proof reads of a handle pair belong to Frigg's toolset, not to a response \
              contract; a server built on the envelope reads a result again through its own \
              tool with the page's `target_ref`.",
    },
    Gap {
        field: "STALE_HANDLE, MIXED_HANDLE, STALE_PROOF_ANCHOR",
        why: "Without session handles these refusals cannot happen; a target that moved since \
              its `target_ref` was issued is refused as STALE_TARGET_SNAPSHOT instead, and a row \
              paired with another page's ref (a mixed pair) as TARGET_NOT_IN_REF.",
    },
    Gap {
        field: "target_ref (result_match and stable_symbol objects)",
        why: "The envelope's target ref is one opaque sealed string per page, not an object of \
              result_handle, match_id and target_scope or of repository_id, stable_symbol_id \
              and snapshot_token; rows keep their own location and the string is copied as it is.",
    },
    Gap {
        field: "TARGET_REPOSITORY_MISMATCH",
        why: "A target ref is bound to a tool family, a caller and a scope rather than checked \
              against a repository assertion, so a ref used in another repository is refused as \
              TARGET_SCOPE_MISMATCH.",
    },
    Gap {
        field: "TARGET_ANCHOR_INSUFFICIENT",
        why: "The follow-up passes the row's own exact location beside the ref, so there is no \
              partial anchor to refuse; a ref that does not cover the target named is refused \
              as TARGET_NOT_IN_REF.",
    },
    Gap {
        field: "presentation_mode (text, json, citation)",
        why: "It shapes a read tool's MCP content blocks, while the envelope's per-call controls \
              never change how a payload is presented; a read tool offering such a choice \
              declares it as its own argument.",
    },
    Gap {
        field: "suggested_next",
        why: "The envelope carries only the canonical next actions, which this dialect writes \
              whole; the deprecated, lossy projection of them is not derived.",
    },
    Gap {
        field: "resume_from",
        why: "The envelope pages only with the sealed `continuation`: a legacy `resume_from` is \
              never written, and one sent together with a continuation is refused as \
              MIXED_CONTINUATION_FORMS.",
    },
    Gap {
        field: "continuation bound to the session",
        why: "An envelope continuation is bound to the caller (the authenticated principal), \
              never to a transport session, so it survives a reconnect or a restart and opens \
              on any replica holding the key.",
    },
    Gap {
        field: "zero_hit_reason: indexed_search_complete, precise_graph_unavailable, index_not_ready",
        why: "The envelope's empty reasons do not draw these lines: a complete search without \
              hits is `no_match` (written query_miss), an index not built yet is `not_indexed` \
              (written no_index_coverage) and a missing backend is `capability_unavailable` \
              (written tool_unavailable).",
    },
    Gap {
        field: "applied scope",
        why: "The envelope has no field for the scope a call was narrowed to; a tool that \
              reports it puts it in its payload, whose members this dialect writes at the top \
              level.",
    },
    Gap {
        field: "search_text.total_matches",
        why: "It is one Frigg tool's compatibility count, not a contract field: \
              `completeness.total` is the authoritative count, and a tool wanting the raw \
              figure puts it in its own payload.",
    },
    Gap {
        field: "transport errors' data.error_code and data.retryable",
        why: "JSON-RPC errors (an unknown tool, a malformed request) are written by the \
              transport before any envelope exists; every failure an envelope describes is a \
              tool result, written here in the flattened recovery grammar with the error's \
              structured detail under `data`.",
    },
    Gap {
        field: "a tool's renamed continuation argument",
        why: "A tool may name its continuation argument otherwise (`cursor`, say), and then a replay that sets only `continuation` is refused as an unknown argument's page; its next-page action in next_actions carries the token under the tool's own name, and is what to follow.",
    },
    Gap {
        field: "the unit item and units a tool names",
        why: "An envelope's unit is open: a bare list the budget cut counts `item`s, and a tool may name a unit of its own (snake case, one row each), which Frigg's table does not list.",
    },
    Gap {
        field: "retryable as a tool sets it",
        why: "Each category has Frigg's retryable default, but a tool that knows better may say a failure of any category is retryable (a permission granted since, a file being written), and its word is kept.",
    },
    Gap {
        field: "zero_hit_reason beside rows",
        why: "An envelope may give an empty reason for a collection it still returned rows of (the rows its filters let through were none of what was asked), and the reason is kept rather than dropped for the rows.",
    },
    Gap {
        field: "full mode's ranking and selection detail",
        why: "An envelope has no ranking or selection fields; `full` adds the prose (notes) and meta's observability (runtime), which is all the envelope has beyond compact.",
    },
    Gap {
        field: "response_mode on every tool",
        why: "The envelope's controls are the same on every tool, so `response_mode` is accepted by workspace and file tools too (where `full` adds only notes and runtime), never refused.",
    },
    Gap {
        field: "INVALID_CONTINUATION and INVALID_LIMIT",
        why: "Besides the continuation table's three codes, a token that is not one (a truncated copy) and a limit the tool refuses are their own codes, each with its correction_hint; a client without a row for them reads the hint.",
    },
];

/// What an envelope has that this dialect cannot carry, and the rule that drops it.
pub(crate) const DROPPED: &[Gap] = &[
    Gap {
        field: "error code TARGET_NOT_IN_REF",
        why: "The contract's target table has no code for a ref asked for a row it does not hold (its handle pairs make MIXED_HANDLE of that), so the envelope's own code is written in `error_code`, not retryable, with the table's recovery as `correction_hint`.",
    },
    Gap {
        field: "ok",
        why: "A Frigg reader tells a failure by the presence of `error_code` (and MCP's \
              `isError`), so the flag itself is not written.",
    },
    Gap {
        field: "verdict (INFO on success, ERROR on failure)",
        why: "These are what a Frigg reader infers from the absence or presence of \
              `error_code`; every other verdict is written as a `verdict` entry of \
              `diagnostics` whose message is what it obliges the agent to do.",
    },
    Gap {
        field: "error.category (when the error has a code)",
        why: "Frigg names a failure by a single `error_code`: the error's code when it has one, \
              else its category in upper snake case (`NOT_FOUND`), with `retryable` carrying \
              what the category decides.",
    },
    Gap {
        field: "a lower-case error code (invalid_argument, or a tool's own)",
        why: "Frigg's error codes are upper snake case, so a lower-case code is written upper-case (`INVALID_ARGUMENT`); the envelope's own codes read back lower-case, a tool's own code reads back as written.",
    },
    Gap {
        field: "the truncation reason budget_limit",
        why: "Frigg's truncation reasons are a closed list of six, so a page the response budget ended is `page_limit`, the bound on the page, and the `response_budget` entry of `diagnostics` says the budget did it, with the envelope's own reasons.",
    },
    Gap {
        field: "error.retry_after_ms",
        why: "Frigg's recovery grammar says whether a retry can help (`retryable`) but has no \
              field for how long to wait, so the wait is left out.",
    },
    Gap {
        field: "summary_line, next_step (compact)",
        why: "They are prose notes, which Frigg's compact mode omits since completeness, \
              zero_hit_reason and next_actions say the same in fields; `response_mode: full` \
              writes them under `notes`.",
    },
    Gap {
        field: "diagnosis beside a failure (compact)",
        why: "Beside a failure, `message` holds the error's message, so an empty result's \
              diagnosis there is written only under full mode's `notes` (alone, it is the \
              `message`).",
    },
    Gap {
        field: "meta observability (request_id, client_request_id, tool, complexity_tier, \
                idempotent, latency_ms, tokens_*, baseline_method, layer, schema_version, \
                capabilities) in compact",
        why: "Frigg's compact mode omits metadata; `response_mode: full` writes these under \
              `runtime`, with tokens_estimated counted over this dialect's own bytes and the \
              savings recomputed from it.",
    },
    Gap {
        field: "meta.truncated: false",
        why: "An answer the budget did not cut has no `response_budget` entry in \
              `diagnostics`: its absence says nothing was cut.",
    },
    Gap {
        field: "warnings as a list of its own",
        why: "Frigg has one diagnostics list, so the envelope's warnings (first) and \
              diagnostics are merged into `diagnostics`, each entry keeping its code and \
              severity.",
    },
    Gap {
        field: "data: null",
        why: "A null payload carries nothing and Frigg has no success flag to keep it for, so \
              it is left out.",
    },
];

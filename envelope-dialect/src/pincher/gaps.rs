//! The gap tables: what pincher's contract has that an envelope cannot express, and what an
//! envelope has that pincher's `_meta` cannot carry. `docs/` is generated from them, so each
//! `why` is one sentence a reader understands without the contract in hand.

use crate::Gap;

/// What the source contract has that an envelope cannot express.
pub(crate) const UNEXPRESSED: &[Gap] = &[
    Gap {
        field: "_meta.project_id, _meta.project_name",
        why: "An envelope names no project: a server answers for the scope its tool arguments give, so there is no project identity to write.",
    },
    Gap {
        field: "_meta.session_id",
        why: "An envelope binds no transport session (continuations bind the caller instead), so there is no session id to report.",
    },
    Gap {
        field: "_meta.schema_version (without a drift)",
        why: "An envelope states the index schema the running binary understands only inside a drift warning (`running_version`), so `schema_version` is written only then.",
    },
    Gap {
        field: "_meta.request_id echoed from any `X-Request-ID`",
        why: "The envelope's HTTP layer echoes `X-Request-ID` and a ULID one becomes `request_id`, but any other client id is kept beside a fresh ULID rather than used as `request_id`, which is always a ULID.",
    },
    Gap {
        field: "empty_reason: same_file_only, cross_file_unavailable",
        why: "The envelope's empty reasons have no cross-file resolution values; the nearest, `capability_unavailable`, travels under its own name.",
    },
    Gap {
        field: "capabilities: schema_v38, hook_check, supervised, operator_tools_on_mcp, session_persistence, binary_drift_warning, tokens_used_envelope, tokens_saved_pct, sse, metrics_prometheus, mcp_logging, mcp_prompts",
        why: "These always-on tags promise pincher's own commands, transports and endpoints, which an envelope server does not have and so cannot truthfully advertise; its own tags travel instead.",
    },
    Gap {
        field: "capabilities: closure_tables, traces_otlp, http_auth, router",
        why: "These conditional tags name pincher's configuration switches and companion services, which an envelope server does not have.",
    },
    Gap {
        field: "baseline_method values beyond pincher's four",
        why: "pincher's four baselines are its own tools' (reading whole files, grepping, walking a directory, reading every changed file); an envelope tool names the baseline it saves against, and that name passes as it is rather than being forced onto one of pincher's.",
    },
];

/// What an envelope has that this dialect cannot carry, and the rule that drops it.
pub(crate) const DROPPED: &[Gap] = &[
    Gap {
        field: "error code TARGET_NOT_IN_REF",
        why: "The contract has no target refs, so the code is written as it is in the `error` entry heading `diagnosis_v2`, with `result: null`; pincher's own codes are open, and no drift or remediation is implied.",
    },
    Gap {
        field: "verdict INFO, SAFE",
        why: "Neither obliges anything beyond reading `result`, so no `warnings_v2` entry is written for them (CAUTION, REVIEW and WARN become a `verdict` warning, UNSAFE a `verdict` error).",
    },
    Gap {
        field: "verdict ERROR",
        why: "A failed call is said by its null `result` and the `error` entry heading `diagnosis_v2`, so the verdict itself is not repeated.",
    },
    Gap {
        field: "verdict NOT_FOUND (with an empty reason)",
        why: "`empty_reason` already says the result is empty and why, so the verdict is not repeated; without an empty reason it becomes an info `verdict` entry in `warnings_v2`.",
    },
    Gap {
        field: "summary_line, next_step (on a plain answer)",
        why: "pincher has no prose triage fields, so they travel only inside a `verdict` or `truncated` entry's data or message and are dropped otherwise, the executable `next_steps` carrying the follow-ups.",
    },
    Gap {
        field: "completeness (of a whole collection)",
        why: "A complete, uncut collection needs no warning and `result` holds every row, so its counts are dropped; a cut or incomplete one travels whole in a `truncated` or `incomplete` entry's data.",
    },
    Gap {
        field: "next_actions[].id, role, order, dependencies",
        why: "A `next_steps` entry has only `tool`, `args` and `why`, so these are dropped; the steps keep the envelope's order, which already runs every action after the ones it depends on.",
    },
    Gap {
        field: "meta.schema_version",
        why: "It versions the envelope's wire, while pincher's `schema_version` is the index schema compared with `schema_version_at_index`, so writing it there would fake a drift or a stale index.",
    },
    Gap {
        field: "meta.tokens_estimated, meta.tokens_method",
        why: "pincher counts `tokens_used` over `result` alone (with the server's estimator) and does not say how, so the envelope's whole-response count serves only to recover the baseline for `tokens_saved`.",
    },
    Gap {
        field: "meta.tool, meta.idempotent",
        why: "`_meta` has no field for them (the caller knows the tool it called, and pincher declares idempotency in its API description, not per call).",
    },
    Gap {
        field: "meta.client_request_id",
        why: "`_meta` has only the ULID `request_id`; the client's own id is echoed by the HTTP layer's `X-Request-ID` header instead.",
    },
    Gap {
        field: "meta.layer",
        why: "`_meta` has no field naming which declared layer answered.",
    },
    Gap {
        field: "meta.attachments",
        why: "`_meta` has no field describing media, so the notes are dropped while the media blocks themselves still travel beside the response.",
    },
];

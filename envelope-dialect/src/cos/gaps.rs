//! The gap tables between the `cos_*` contract and the envelope, turned into the dialect's
//! documentation: each `why` is one sentence a reader understands without the contract at hand.

use crate::Gap;

/// What the source contract has that an envelope cannot express.
pub(crate) const UNEXPRESSED: &[Gap] = &[
    Gap {
        field: "data.meta per-tool keys (resolved_from, source_resolved_from, target_resolved_from, default_kinds_picked, node_kind, semantic_scope, fixable_categories, informational_categories)",
        why: "An envelope's meta is stamped by the library alone and has no per-tool keys, so a tool that needs them puts them in its payload's own `meta` object, which this dialect merges into `data.meta` beside the library's keys.",
    },
    Gap {
        field: "data.meta.layer values (memory, docs, tasks, metrics, routing, graph, health, learning, audit)",
        why: "An envelope's layer is whatever name a tool declares, so the contract's nine layer names are examples the envelope does not enforce.",
    },
    Gap {
        field: "data.meta.truncated_string_fields as field names",
        why: "The envelope records each cut string by its JSON pointer into the payload (a nested string has no plain field name), so the list holds pointers such as `/description` rather than names such as `description`.",
    },
    Gap {
        field: "module_disabled message naming `cos module enable <id>`",
        why: "An envelope's module is switched on in the server's configuration, not by a command, so its module_disabled message names the module and the way to enable it travels in the error's hint, which this contract has no place for.",
    },
    Gap {
        field: "internal-error log record with a PRAGMA database_list snapshot",
        why: "The envelope's server log records an internal error's tool, request id, process id, thread, message and backtrace, but it knows no database connection whose attached files it could list.",
    },
    Gap {
        field: "ENVELOPE_ERROR_RESPONSES (HTTP 400/404/500/503 with this error body)",
        why: "When the envelope's tools are served as plain HTTP, errors are RFC 9457 problem documents with a status per category, not this contract's error body, so typed clients generated from that mirror do not apply.",
    },
    Gap {
        field: "cos_graph_doctor issues and healthy, EvidenceBundle",
        why: "These are the payload contracts of particular cos_* tools, which an envelope carries as any payload but does not define.",
    },
    Gap {
        field: "an internal failure's exception line",
        why: "An envelope server masks every internal failure's message down to its request id, since an exception line can carry paths, queries or secrets; the line itself is in the server's log under that id.",
    },
    Gap {
        field: "tokens_estimated by the character rule",
        why: "The response budget counts tokens with the server's estimator (calibrated to a real tokenizer, or an exact count), which is what the budget holds, rather than by four characters a token; `tokens_estimated` is that count.",
    },
    Gap {
        field: "the trimming ladder's order and reach",
        why: "The envelope's budget stage has one ladder for every payload: it shortens lists nested in rows before the top-level lists, caps any object of lists as the contract caps `edges_by_type`, and cuts any top-level list, each cut named by its own `truncated_*` marker.",
    },
    Gap {
        field: "truncated_<key>_from of a page the budget ended",
        why: "When the budget ended a page (the tool stopped early to fit), the list's length before a cut is not known, so `_from` is the rows the rest of the known total holds, an upper bound on what the page would have held.",
    },
    Gap {
        field: "the depth limit with the budget opted out",
        why: "A payload nested deeper than the encoder's depth limit is cut there even with the budget opted out (`truncated_depth` says where), since no client can parse it whole.",
    },
    Gap {
        field: "edges keyed other than source/target or from/to",
        why: "A coherent subgraph cut reads an edge's ends from `source`/`target` or `from`/`to`; edges that name their ends otherwise cannot be kept with their nodes, and are cut with the nodes they cannot be tied to.",
    },
];

/// What an envelope has that this dialect cannot carry, and the rule that drops it.
pub(crate) const DROPPED: &[Gap] = &[
    Gap {
        field: "error.code TARGET_NOT_IN_REF",
        why: "Dropped with every code: a ref asked for a row it does not hold is a `validation` failure, not retryable, whose message says the ref holds no target there and that nothing changed, so an agent passes the right page's ref rather than searching again.",
    },
    Gap {
        field: "error.code",
        why: "The contract's error is exactly category, retryable and message, so a machine code such as STALE_CONTINUATION is dropped and an agent branches on the category and reads the message.",
    },
    Gap {
        field: "error.hint",
        why: "The contract's error has no field for what to change before calling again, so the hint is dropped.",
    },
    Gap {
        field: "error.retry_after_ms",
        why: "The contract's error says only whether a retry can help, not when, so the wait is dropped and `retryable` stays.",
    },
    Gap {
        field: "error.data",
        why: "The contract's error has no per-code data, so it is dropped.",
    },
    Gap {
        field: "next_actions, warnings, diagnostics, summary_line, next_step and meta of a failed call",
        why: "A failure is exactly `ok` and `error` with no `data`, so it has no `data.meta` to carry recovery actions, notices or stamps, and all of them are dropped.",
    },
    Gap {
        field: "verdict INFO and ERROR",
        why: "`ok` already says a plain success or a failure, so only a verdict that says more (SAFE, CAUTION, REVIEW, UNSAFE, WARN, NOT_FOUND) is carried, as `data.meta.verdict`.",
    },
    Gap {
        field: "meta.request_id, meta.client_request_id",
        why: "The diagnostics block has no correlation ids, so they are dropped from the body, while the server's tracing spans of the call keep them.",
    },
    Gap {
        field: "meta.tool, meta.complexity_tier, meta.idempotent",
        why: "The caller knows which tool it called and the tool listing declares its tier and idempotency, so the block does not repeat them.",
    },
    Gap {
        field: "meta.latency_ms, meta.tokens_method, meta.tokens_saved, meta.tokens_saved_pct, meta.baseline_method",
        why: "They are observability figures an agent cannot act on and the contract counts only `tokens_estimated`, so they are dropped.",
    },
    Gap {
        field: "meta.schema_version, meta.capabilities",
        why: "They describe the envelope's own contract version and features, which mean nothing to a client of this contract, so they are dropped.",
    },
    Gap {
        field: "meta.schema_version_at_index",
        why: "The index's schema version on its own asks nothing of an agent, so it is dropped, while a drift that does is carried as `data.meta.binary_drift_warning`.",
    },
    Gap {
        field: "a payload's own meta members named like the library's keys",
        why: "The contract lets callers add keys to `data.meta` but never set the library's (tokens_estimated, truncated, every truncated_* marker, envelope_unshrinkable and the carried envelope fields), so a payload's own member of such a name is dropped, and its own `layer` stands only when the tool declares none.",
    },
    Gap {
        field: "a bare list, scalar or null payload",
        why: "Only an object can hold `data.meta`, so a list is sent as `data.results` and a scalar or null as `data.value` beside `data.meta`, and the trimmer's markers of the root list then read `truncated_results_from` and `truncated_results_to`.",
    },
];

//! Generation of `docs/PROXY.md`: what `envelope-proxy` does to an upstream's answers, its
//! configuration (the example the crate parses in its tests), its limits and its error table,
//! from the constants the proxy runs on.

use std::fmt::Write as _;

use envelope_core::TruncationReason;
use envelope_core::paging::{NEXT_PAGE, STALE_CONTINUATION};
use envelope_proxy::{
    ANSWER_NOT_KEPT_WHOLE, ANSWERS_PER_CALL, BASELINE_METHOD, DEFAULT_CALL_TIMEOUT,
    DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_STORE_BYTES, DEFAULT_STORED_ANSWER_BYTES, DEFAULT_TIER,
    EXAMPLE_CONFIG, FIRST_BACKOFF, MAX_BACKOFF, MAX_ROW_CHARS, UPSTREAM_ERRORS,
};

/// `docs/PROXY.md`, under `header` (the generated-file note).
pub(crate) fn markdown(header: &str) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push_str("\n\n# envelope-proxy: agent-grade answers from any MCP server\n\n");
    out.push_str(
        "`envelope-proxy` fronts one MCP server nobody here wrote — a command spoken to over \
         stdio, or a streamable-HTTP URL — and serves its tools over stdio or streamable HTTP \
         (with the plain HTTP API beside it), every answer an envelope.\n\n\
         ```sh\n\
         envelope-proxy -- npx -y @modelcontextprotocol/server-filesystem /srv/docs\n\
         envelope-proxy --upstream-url http://127.0.0.1:9000/mcp --http 127.0.0.1:8765\n\
         envelope-proxy --config proxy.toml --list\n\
         envelope-proxy --call read_text_file --arguments '{\"path\":\"/srv/docs/a.md\"}' -- \
         npx -y @modelcontextprotocol/server-filesystem /srv/docs\n\
         ```\n\n",
    );
    out.push_str("## What a client sees\n\n");
    let _ = write!(
        out,
        "- **The listing.** Each upstream tool keeps its name, its description, its input \
         schema and its `annotations` exactly as the upstream declares them; the tier \
         (`{default_tier}` unless configured) and the scopes come from the configuration. The \
         per-call controls are accepted besides the tool's own arguments and taken off before \
         the call is forwarded; each tool also lists `continuation`, its paging argument. An \
         upstream argument named like a control (`continuation`, `dialect`, \
         `response_mode`, …) keeps its name and its meaning, and is forwarded; the control is \
         renamed for that tool, `{prefix}` and its name (`{prefix}dialect`), listed under the \
         new name with a description that says which control it is, and read from it. Every \
         action the tool's answers offer writes the control under the new name (a \
         `{NEXT_PAGE}` action's token is `{prefix}continuation`), so an action followed as \
         given is valid against the listed schema. Tools the upstream adds or drops while it runs \
         (`notifications/tools/list_changed`) are listed again. A tool the proxy cannot serve \
         (a name MCP does not allow, an input schema that is not an object schema) is left \
         out, with a warning in the log, and the rest are served.\n\
         - **`data`.** The upstream's `structuredContent` when it sends one; else its text, \
         parsed as JSON where the whole text is a JSON object or array; else the text. Images, \
         audio, embedded resources and resource links are attachments, sent as MCP content \
         blocks after the envelope's text and noted in `meta.attachments`.\n\
         - **`tokens_saved`.** Counted against the upstream's raw answer (its `content` and \
         `structuredContent` as sent): `meta.baseline_method` is `{BASELINE_METHOD}`.\n\
         - **Paging.** An answer too big for the budget is cut by rows: a text by lines, each \
         row a line with its ending (a line longer than {MAX_ROW_CHARS} characters in pieces), \
         so the rows of every page joined with nothing between them are the upstream's text \
         byte for byte; a JSON list by its items; an object of one member, by that member's \
         rows. For a tool the upstream declares read-only, the `{NEXT_PAGE}` action carries a \
         sealed continuation bound to the call, the caller and a digest of the answer: \
         following it calls the upstream again, and if the answer changed meanwhile the page \
         is refused `{STALE_CONTINUATION}` with a `rerun` action (the first page of the answer \
         as it is now). A tool that is not declared read-only is never called twice: its whole \
         answer is kept in the result store under the call (the caller, the tool, the \
         arguments) and its pages are served from there; a page of an answer the store no \
         longer keeps is refused `{STALE_CONTINUATION}` with a `rerun` that says it runs the \
         tool again. An answer larger than the store's bound on one answer is kept up to the \
         bound: its last page says `{store_limit}` and `{ANSWER_NOT_KEPT_WHOLE}`, with the \
         rows the answer had, and offers no continuation past it. Replicas behind one address \
         keep the answers in one Redis instead (`[store] redis_url`) and share the paging key \
         (`--continuation-key-file`): a page one replica issued, another serves. Redis bounds \
         the answers together with its own `maxmemory` and eviction policy; a page of an \
         answer it evicted is stale, with the `rerun`.\n\
         - **Progress.** When the client asks for a call's progress, the upstream's reports \
         for it are relayed as they come, every one before the answer.\n\
         - **What the upstream asks of a client.** The proxy declares sampling and form \
         elicitation to the upstream, and relays each `sampling/createMessage` (whole: \
         text, images, audio, its system prompt and model preferences) and \
         `elicitation/create` (a form, read against its schema; a URL, whole, and only to a \
         client that declared URL elicitation; an upstream asks for one on 2026-07-28, where \
         each call carries its caller's capabilities) to the client of the call in flight, \
         its answer back as given; the upstream's log messages during a call go to that call's client, \
         at the level it set. A request names no call over stdio, so this holds while one \
         call is in flight: with none or several, the upstream's request is refused with a \
         JSON-RPC error that says so (never guessed at, which could show one caller's prompt \
         to another), as it is when the client did not declare the capability; a log message \
         then goes to the proxy's own log.\n\
         - **The 2026-07-28 revision.** A client may speak it to the proxy whatever the \
         upstream speaks: results are marked `resultType`, and a subscription \
         (`subscriptions/listen`) is told of the tools', prompts' and resources' changes. \
         With `[upstream] revision = \"2026-07-28\"` the proxy speaks it to the upstream too \
         (`server/discover`, and a subscription to the upstream's list changes), and each call \
         carries its caller's own capabilities, of those the proxy relays, as the caller \
         declared them (form or URL elicitation, a sampling that may use tools), but for \
         `roots.listChanged`, which the proxy does not pass upstream. Such an upstream \
         asks for a client's input by answering `InputRequiredResult`: the proxy asks the \
         client of the call every elicitation, sampling and roots request at once (as requests \
         of its own to a client on an older revision; as one `InputRequiredResult` of its own, \
         under the upstream's own keys, to one on 2026-07-28) and calls again with the answers and the \
         upstream's `requestState`, at most {max_rounds} times. An upstream's refusal of a \
         caller without a capability it needs (JSON-RPC `-32021`) is that client feature's own \
         error (`sampling_unavailable`, `elicitation_unavailable`, `roots_unavailable`): a \
         client on 2026-07-28 gets it as the same JSON-RPC error, as the envelope server answers \
         any call that failed for a capability its client did not declare; one on an older \
         revision gets the call's envelope. Over that revision, each call asks the upstream for \
         the log messages its client wants (`logLevel` in the request's `_meta`), and those \
         reach that client; a watched resource is watched upstream by a subscription stream \
         of its own, kept while a client watches it.\n\
         - **Cancellation.** A call its client cancels, or one the proxy stops waiting for \
         (its timeout, an answer it could not read, the call's deadline), is cancelled \
         upstream (`notifications/cancelled`).\n\
         - **Forwarded as they are**: the upstream's prompts, resources, resource templates, \
         completion and log level, declared as the upstream declared them. \
         Its `notifications/prompts/list_changed` and `notifications/resources/list_changed` \
         are told on to every client session (however many arrive before they are told, one \
         each). A client watches a resource by `resources/subscribe`, or, on 2026-07-28, by a \
         subscription stream naming it (`subscriptions/listen`); the upstream is asked to \
         tell of it, and each update it announces (`notifications/resources/updated`) is told \
         to the clients that watch that resource, and to no other; the upstream is \
         unsubscribed when the last of them stops.\n\
         - **Failures.** Typed by the table below; `retryable` only where the failure says a \
         retry can help.\n\n",
        default_tier = DEFAULT_TIER.as_str(),
        store_limit = TruncationReason::StoreLimit.as_str(),
        max_rounds = envelope_proxy::MAX_INPUT_ROUNDS,
        prefix = envelope_core::stage::RENAMED_CONTROL_PREFIX,
    );
    out.push_str(
        "## Errors\n\n| `error.code` | category | retryable | when |\n|---|---|---|---|\n",
    );
    for (code, category, retryable, when) in UPSTREAM_ERRORS {
        let _ = writeln!(
            out,
            "| `{code}` | `{}` | {} | {when} |",
            category.as_str(),
            if retryable { "yes" } else { "no" }
        );
    }
    out.push_str("\n## Limits\n\n");
    let _ = writeln!(
        out,
        "- The largest message read from the upstream: {} bytes (`max_message_bytes`). A longer \
         one is dropped as it streams by, never held whole, and the call answers \
         `upstream_answer_too_large`.",
        DEFAULT_MAX_MESSAGE_BYTES
    );
    let _ = writeln!(
        out,
        "- One call to the upstream: {} s (`call_timeout_seconds`), then `upstream_timeout`.",
        DEFAULT_CALL_TIMEOUT.as_secs()
    );
    let _ = writeln!(
        out,
        "- The result store (in this process's memory): {} bytes of answers in all, the \
         oldest evicted first (`[store] max_bytes`); {} bytes of one answer \
         (`max_answer_bytes`); the newest {} answers of one call.",
        DEFAULT_STORE_BYTES, DEFAULT_STORED_ANSWER_BYTES, ANSWERS_PER_CALL
    );
    let _ = writeln!(
        out,
        "- A dead upstream is started again at the next call; one that keeps dying young waits \
         {} ms before its first restart, twice as long each time after, at most {} s. The new \
         process is told what the clients asked of the old one: it is subscribed to every \
         resource a client still watches, and set to the log level a client last set, all \
         at once, each request within the call timeout: one the new process leaves unanswered \
         is logged and holds up no other.",
        FIRST_BACKOFF.as_millis(),
        MAX_BACKOFF.as_secs()
    );
    let _ = write!(
        out,
        "\n## Access\n\n\
         The caller's credentials are never forwarded upstream: over HTTP the proxy is an \
         OAuth resource server of its own, and the upstream gets only what the configuration \
         reads for it from files or the environment (`env_from`). A value written into the \
         configuration is refused. A page is its caller's alone: a continuation is sealed to \
         the authenticated principal (without authentication, it is a bearer capability for \
         that one request), and the answers the store keeps are keyed by it. Another caller's \
         token, replayed verbatim, is refused `{mismatch}` before anything is read, with a \
         `rerun` action: that request's first page, the caller's own.\n\n",
        mismatch = envelope_core::paging::CONTINUATION_SCOPE_MISMATCH,
    );
    out.push_str("## Configuration\n\n`--config proxy.toml`, every key shown:\n\n```toml\n");
    out.push_str(EXAMPLE_CONFIG);
    out.push_str("```\n");
    out
}

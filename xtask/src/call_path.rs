//! Generation of `docs/CALL_PATH.md`: the path of one `tools/call`, hop by hop, each named by
//! its file and function. `cargo xtask docs` (and its `--check`) and the tests keep it true: a
//! hop whose function disappears from its file fails them, and so does a path of more than
//! [`MAX_HOPS`] hops or a crossing up the crate stack.

use std::fmt::Write as _;

use crate::codegen::workspace_root;

/// The most hops a call may take.
const MAX_HOPS: usize = 8;

/// The crates a call passes through, lowest first: a crossing may only go down this list.
const STACK: &[&str] = &[
    "envelope-core",
    "envelope-budget",
    "envelope-dialect",
    "envelope-check",
    "envelope-mcp",
    "envelope-proxy",
];

/// One hop: the function a call passes through, where it is, and what it does there.
struct Hop {
    /// The crate's directory.
    krate: &'static str,
    /// The file, from the crate's directory.
    file: &'static str,
    /// The function, as `Type::method` or `function`.
    function: &'static str,
    /// What the call does there.
    does: &'static str,
}

/// The path of one `tools/call` over MCP (stdio or streamable HTTP alike), in order.
const HOPS: &[Hop] = &[
    Hop {
        krate: "envelope-mcp",
        file: "src/server/mcp.rs",
        function: "EnvelopeServer::call_tool",
        does: "rmcp hands over the request: the tool is chosen once from the tools served now \
               (a `#[tool]` or one learned at run time; the call reads that table to its \
               answer, whatever changes meanwhile; an unknown name goes to the composed rmcp \
               handler, or is JSON-RPC `invalid_params` without one), and \
               `answer_call` makes the headers, the authenticated caller, progress token, \
               cancellation, log level and the client (its peer, or a round of asks on MCP 2026-07-28) the call's extras",
    },
    Hop {
        krate: "envelope-mcp",
        file: "src/server/door.rs",
        function: "EnvelopeServer::door",
        does: "the call decided once, into one `Call` every later stage reads: the call's \
               `CallBudget` (`BudgetPolicy::for_call`); the tool's context, with its sizer and \
               the caller the HTTP layer's resource server let in; the per-call controls split \
               from the arguments by the tool's declared argument names, read once per change of \
               the served tools \
               (`split_controls`: `dialect: \"tsa\"` decoded and checked against the dialects \
               offered and what TSA can write, as envelope-dialect's `EXPRESSIBLE` says; the paged tool declares `continuation`, so the \
               token stays its argument as well as the control); the answer's dialect; then the \
               refusals in one order: a control named twice, a caller without the tool's scopes \
               (`insufficient_scope`; on `/mcp` the HTTP layer answers such a call `403` for \
               the client to step up, before rmcp sees it), the tool's module switched off, \
               controls that cannot be read or written in the answer's dialect",
    },
    Hop {
        krate: "envelope-core",
        file: "src/runtime/invocation.rs",
        function: "Invocation::decode",
        does: "the entry `#[tool]` generates, run by `EnvelopeServer::pass` under the call \
               deadline: the controls the door decided are in the context (a tool called \
               outside a server splits its own, through the same `split_controls`); unknown \
               arguments warned or refused, the arguments decoded, under panic capture; the \
               `Pager` opens the continuation against the call's binding (its dialect included)",
    },
    Hop {
        krate: "envelope-core",
        file: "src/runtime/invocation.rs",
        function: "Invocation::finish_tool",
        does: "the body's outcome becomes the envelope around its typed payload (not yet \
               encoded), `meta` stamped; a panic or an internal error is masked and logged once",
    },
    Hop {
        krate: "envelope-mcp",
        file: "src/server/call.rs",
        function: "EnvelopeServer::answer",
        does: "shaped by the controls the door decided: next actions the served tools cannot \
               run, or that suggest a tool the caller is not shown, dropped; the capability \
               tags stamped when the controls keep them; the output goes to the budget stage \
               (whole `meta`, no control-surface or TOON shaping, when the answer is in another \
               contract's wire), then the dialect stage",
    },
    Hop {
        krate: "envelope-budget",
        file: "src/prepare.rs",
        function: "prepare_as",
        does: "the budget stage, entered once (`prepare_as`, since the answer is in another \
               contract's wire; `prepare` in the envelope's own): the call's `dialect` control carried onto \
               every next action it suggests and onto the next page it may mint \
               (`Controls::carried`, the one way a dialect reaches an action), so following \
               one answers in TSA again; the payload encoded where it is trimmed, \
               through core's `ToolOutput::encode_payload_measuring` (the runtime's panic \
               capture around its `Serialize`), rows that could never be sent left \
               unconverted, a payload that was JSON already (a forwarded answer) measured \
               whole when small; then \
               (`prepare_within`) shaped by the controls the output carries, trimmed to the \
               budget, `completeness` and `next_step` reconciled with the rows kept (on the \
               typed envelope), the token count stamped into the bytes it counts; each pass \
               written in TSA's wire through the dialect stage and measured there, prepared \
               again under a lowered budget while those bytes are over",
    },
    Hop {
        krate: "envelope-dialect",
        file: "src/lib.rs",
        function: "apply",
        does: "in the envelope's own dialect, nothing; in another (pincher, cos, TSA, Frigg), \
               the budgeted envelope written through that dialect's `Contract` (its serde \
               types: that contract's names and placement), shaped by the controls the call \
               asked for, its token counts made of the bytes it sends, and whether the call \
               worked read from the dialect's own success field",
    },
    Hop {
        krate: "envelope-mcp",
        file: "src/server/mcp.rs",
        function: "EnvelopeServer::result",
        does: "the MCP result: the envelope as `structuredContent`, its mirror as text, \
               `isError` from the dialect's own success field (the typed `ok` in the \
               envelope's wire), and `_meta` (on 2026-07-28, a call that failed for want of a \
               capability its client did not declare is that revision's JSON-RPC `-32021` \
               instead, decided in `answer_call` before this hop)",
    },
];

/// Where a call crosses from one crate into another, caller first: each goes down the stack.
const CROSSINGS: &[(&str, &str)] = &[
    ("envelope-mcp", "envelope-core"),
    ("envelope-mcp", "envelope-budget"),
    ("envelope-mcp", "envelope-dialect"),
    ("envelope-dialect", "envelope-budget"),
    ("envelope-dialect", "envelope-core"),
    ("envelope-budget", "envelope-core"),
];

/// What stands in for the tool (hops 3 and 4) when the tool is one of an upstream server's,
/// fronted by envelope-proxy, in order.
const PROXY_HOPS: &[Hop] = &[
    Hop {
        krate: "envelope-proxy",
        file: "src/proxy.rs",
        function: "Proxy::start",
        does: "once, before any call: the upstream started (or reached) and listed; each of its \
               tools served through envelope-mcp's `EnvelopeServer` as a `Fronted`, core's \
               `Tool` trait (the one door: `set_tools`, again on each \
               `notifications/tools/list_changed`), its annotations as the upstream declares \
               them, its tier and scopes from the configuration",
    },
    Hop {
        krate: "envelope-proxy",
        file: "src/fronted.rs",
        function: "Fronted::call",
        does: "what the door chose runs here, through `#[tool]`'s own entry \
               (`Invocation::arguments`): the arguments come with the controls already taken \
               off, unknown ones warned of and left out (refused where the upstream's schema \
               closes its properties); `continuation`, which the tool declares, is read from \
               the controls the door decided and taken off before the upstream sees it",
    },
    Hop {
        krate: "envelope-proxy",
        file: "src/upstream.rs",
        function: "Upstream::call_for",
        does: "the upstream's `tools/call` for this call, under its timeout (on 2026-07-28 with \
               the caller's capabilities and log level in its `_meta`; its progress routed to \
               the caller, and a cancellation told upstream), its output read in bounded lines \
               with envelope-check's framing (a message over `max_message_bytes` dropped as it \
               streams by); a failure typed by the error table, a dead upstream started again \
               with backoff",
    },
    Hop {
        krate: "envelope-proxy",
        file: "src/answer.rs",
        function: "Answer::read",
        does: "the upstream's result read: `data` from `structuredContent`, else JSON text, \
               else text; media as attachments; the raw answer kept for the baseline and the \
               snapshot",
    },
    Hop {
        krate: "envelope-proxy",
        file: "src/fronted.rs",
        function: "answer",
        does: "the envelope around the upstream's data, with envelope-budget's estimate of the \
               raw answer as its baseline; a read-only tool's continuation opened against the \
               call's binding and a digest of the answer (stale when it changed: a `rerun` \
               action); any other tool's page taken from the result store, the upstream not \
               called; an answer too big for the budget handed over as rows from the page's \
               start with a `Resume`, so that the budget stage (hop 6) cuts them and seals the \
               `next-page` token after the last row sent; `Invocation::finish_output` adds what \
               the entry warned of and stamps `meta`",
    },
];

/// Where the proxy's path crosses crates, caller first.
const PROXY_CROSSINGS: &[(&str, &str)] = &[
    ("envelope-proxy", "envelope-mcp"),
    ("envelope-proxy", "envelope-check"),
    ("envelope-proxy", "envelope-budget"),
    ("envelope-proxy", "envelope-core"),
];

/// `docs/CALL_PATH.md`, under `header` (the generated-file note).
pub(crate) fn markdown(header: &str) -> String {
    let mut out = String::new();
    out.push_str(header);
    out.push_str("\n\n# The path of one call\n\n");
    out.push_str(
        "What one `tools/call` passes through, from the transport to the bytes sent, followed \
         for a call that carries a `dialect` (`tsa`) and a `continuation`. Each \
         crate is entered from above only: the server calls into the runtime (the tool), into \
         the budget stage and into the dialect stage, and those into core's types (the \
         dialect stage into the budget stage's TOON and token estimate too); nothing in core calls \
         budget code but a tool's own sizing (`ToolContext::response_size`), through the sizer \
         the server installed.\n\n",
    );
    for (at, hop) in HOPS.iter().enumerate() {
        let _ = writeln!(
            out,
            "{}. **`{}`** in `{}/{}`: {}.",
            at + 1,
            hop.function,
            hop.krate,
            hop.file,
            hop.does
        );
    }
    out.push_str("\nCrossings between crates, caller first:\n\n");
    for (from, to) in CROSSINGS {
        let _ = writeln!(out, "- `{from}` → `{to}`");
    }
    out.push_str(
        "\n## Through envelope-proxy\n\nWhen the tool is an upstream server's, fronted by \
         `envelope-proxy`, the proxy's own crate starts the server and is entered once, from \
         above; a call takes the path above, with these in place of the tool (hops 3 and \
         4):\n\n",
    );
    for hop in PROXY_HOPS {
        let _ = writeln!(
            out,
            "- **`{}`** in `{}/{}`: {}.",
            hop.function, hop.krate, hop.file, hop.does
        );
    }
    out.push_str("\nIts crossings, caller first:\n\n");
    for (from, to) in PROXY_CROSSINGS {
        let _ = writeln!(out, "- `{from}` → `{to}`");
    }
    out
}

/// Whether `text` defines the function `name` (the last segment of a hop's function).
fn defines(text: &str, name: &str) -> bool {
    let function = name.rsplit("::").next().unwrap_or(name);
    text.match_indices(&format!("fn {function}"))
        .any(|(at, found)| {
            text[at + found.len()..]
                .chars()
                .next()
                .is_some_and(|next| next == '(' || next == '<')
        })
}

/// What is wrong with the path as written: hops whose function is gone, too many hops,
/// crossings up the stack.
pub(crate) fn problems() -> Vec<String> {
    let root = workspace_root();
    let mut problems = Vec::new();
    if HOPS.len() > MAX_HOPS {
        problems.push(format!("{} hops, more than {MAX_HOPS}", HOPS.len()));
    }
    for hop in HOPS.iter().chain(PROXY_HOPS) {
        let path = root.join(hop.krate).join(hop.file);
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        if !defines(&text, hop.function) {
            problems.push(format!(
                "`{}` is not defined in {}/{}",
                hop.function, hop.krate, hop.file
            ));
        }
    }
    let rank = |krate: &str| STACK.iter().position(|known| *known == krate);
    for (from, to) in CROSSINGS.iter().chain(PROXY_CROSSINGS) {
        match (rank(from), rank(to)) {
            (Some(from_rank), Some(to_rank)) if to_rank < from_rank => {}
            _ => problems.push(format!("`{from}` → `{to}` does not go down the stack")),
        }
    }
    let mut crossed: Vec<(&str, &str)> = HOPS
        .windows(2)
        .map(|pair| (pair[0].krate, pair[1].krate))
        .filter(|(from, to)| from != to && rank(to) < rank(from))
        .collect();
    crossed.sort_unstable();
    crossed.dedup();
    for crossing in crossed {
        if !CROSSINGS.contains(&crossing) {
            problems.push(format!(
                "the hops cross {crossing:?}, which CROSSINGS leaves out"
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_hop_names_a_function_in_its_file_and_the_path_goes_down() {
        let problems = problems();
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }

    #[test]
    fn a_function_is_found_only_where_it_is_defined() {
        let text = "impl S {\n    pub(crate) fn call_with<T>(x: T) {}\n    fn run(&self) {}\n}\n";
        assert!(defines(text, "S::call_with"));
        assert!(defines(text, "run"));
        assert!(!defines(text, "call"));
        assert!(!defines(text, "S::result"));
    }
}

//! One call, or the listing, printed: what a server's command line does instead of serving.

use std::process::ExitCode;

use envelope_core::Arguments;

use crate::EnvelopeServer;

/// Calls `tool` once with `arguments` and prints its answer (pretty JSON) to stdout: 0 when it
/// says the call worked (by the dialect's own success field), 2 when it does not or no tool
/// has that name (said on stderr, as the program `program`, with the tools there are).
pub async fn call_once(
    server: &EnvelopeServer,
    program: &str,
    tool: &str,
    arguments: Arguments,
) -> ExitCode {
    let Some(prepared) = server.call(tool, arguments).await else {
        let tools = server.tools();
        let available: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
        eprintln!(
            "{program}: unknown tool `{tool}`; available: {}",
            available.join(", ")
        );
        return ExitCode::from(2);
    };
    match serde_json::to_string_pretty(&prepared.structured) {
        Ok(text) => print_out(&text),
        Err(error) => {
            eprintln!("{program}: cannot print the envelope: {error}");
            return ExitCode::FAILURE;
        }
    }
    // The dialect's own success field, as MCP's `isError` reads it: `ok` in the envelope and
    // cos, `success` in tsa, no error in pincher's `diagnosis_v2` or Frigg's `error_code`.
    if prepared.ok {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(2)
    }
}

/// Prints `server`'s tool listing (pretty JSON) to stdout: 0, or 1 when it cannot be written.
pub fn print_listing(server: &EnvelopeServer, program: &str) -> ExitCode {
    match serde_json::to_string_pretty(&*server.tools()) {
        Ok(text) => {
            print_out(&text);
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("{program}: cannot print the listing: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Prints `text` and a newline to stdout. A reader that went away (`| head`) is not an error
/// worth a panic: what it did not read is dropped.
pub fn print_out(text: &str) {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{text}").and_then(|()| out.flush());
}

/// Reads a call's arguments from the command line: a JSON object (a control named twice in it
/// is refused, as over MCP).
pub fn parse_arguments(text: &str) -> Result<Arguments, String> {
    Arguments::from_json(text).map_err(|error| format!("the JSON arguments do not parse: {error}"))
}

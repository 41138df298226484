//! Getting started with envelope-client: connect over stdio or streamable HTTP, call, page,
//! follow what the answer offers.
//!
//! Against the example server of this repository over stdio (from the repository's root, after
//! `cargo build --workspace --all-features --tests --bins --examples`):
//!
//! ```text
//! target/debug/examples/getting_started -- target/debug/examples/workspace_server --root .
//! ```
//!
//! or over streamable HTTP, against a server already listening
//! (`target/debug/examples/workspace_server --root . --http 127.0.0.1:8080`):
//!
//! ```text
//! target/debug/examples/getting_started http://127.0.0.1:8080/mcp
//! ```
//!
//! The tool names (`search_text`) are the example server's; any envelope server's work the same.

use std::process::ExitCode;

use envelope_client::{Client, PageLimits, PagesEnd};
use rmcp::ServiceExt as _;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    match run(&argv).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("getting_started: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Connects as `argv` says (`-- COMMAND ARGS…` for stdio, a URL for HTTP) and walks the kit.
async fn run(argv: &[String]) -> Result<(), Box<dyn std::error::Error>> {
    let client = match argv {
        [dashes, command, args @ ..] if dashes == "--" => {
            let mut child = tokio::process::Command::new(command);
            child.args(args);
            Client::new(().serve(TokioChildProcess::new(child)?).await?).await?
        }
        [url] => {
            // rmcp's HTTP client is built on rustls without a crypto provider of its own.
            let _ = rustls::crypto::ring::default_provider().install_default();
            let transport = StreamableHttpClientTransport::from_uri(url.as_str());
            Client::new(().serve(transport).await?).await?
        }
        _ => return Err("usage: getting_started (-- COMMAND ARGS… | URL)".into()),
    };

    // One call, retried as the envelope allows. A failed call is an envelope too.
    let page = client
        .call::<Value>("search_text", json!({"query": "Envelope", "limit": 5}))
        .await?;
    if let Some(error) = page.error() {
        println!("failed ({}): {}", error.category(), error.message());
        return Ok(());
    }
    println!(
        "{}",
        page.next_step()
            .or(page.summary_line())
            .unwrap_or("one page")
    );

    // Pages, each the previous one's `next-page` action followed as given, up to 50 rows.
    let mut pages = client.pages::<Value>(
        "search_text",
        json!({"query": "Envelope", "limit": 25}),
        PageLimits::rows(50),
    );
    let mut rows = 0;
    while let Some(page) = pages.next().await {
        let page = page?;
        rows += page
            .completeness()
            .map_or(0, |completeness| completeness.returned());
    }
    println!("{rows} rows in {} pages", pages.pages());
    // Where paging stopped, and the call that goes on from there.
    if pages.end() == Some(PagesEnd::MaxRows)
        && let Some(resume) = pages.resume()
    {
        let next: envelope_core::Envelope<Value> = client
            .call(&resume.tool, Value::Object(resume.arguments.clone()))
            .await?;
        let more = next
            .completeness()
            .map_or(0, |completeness| completeness.returned());
        println!("the next page holds {more} rows");
    }
    Ok(())
}

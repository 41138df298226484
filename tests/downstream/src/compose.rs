//! The notes tools beside what an rmcp server already has, both ways round, with nothing but
//! `envelope-core` and `envelope-mcp` in the manifest (rmcp comes through `envelope_mcp::rmcp`):
//!
//! - [`with_prompts`]: the envelope server serves the notes tools and hands prompts to an rmcp
//!   handler written with `#[prompt_router]`, capabilities merged;
//! - [`Host`]: an rmcp server written with `#[tool_router]`, whose router mounts the notes tools
//!   too, so one listing holds both.

use envelope_core::schemars::JsonSchema;
use envelope_core::serde::Deserialize;
use envelope_mcp::EnvelopeServer;
// rmcp's macros name `rmcp::…`: the re-export under that name is all they need.
use envelope_mcp::rmcp;
use rmcp::handler::server::router::prompt::PromptRouter;
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{PromptMessage, Role, ServerCapabilities, ServerConfig};
use rmcp::{ServerHandler, prompt, prompt_handler, prompt_router, tool, tool_handler, tool_router};

/// The arguments of the `summarize` prompt: strings, as MCP's prompt arguments are.
#[derive(Deserialize, JsonSchema)]
#[serde(crate = "envelope_core::serde")]
#[schemars(crate = "envelope_core::schemars")]
pub struct SummarizeArgs {
    /// What the summary is about.
    pub topic: String,
}

/// Prompts, as an rmcp server has them.
#[derive(Clone)]
pub struct Prompts {
    prompt_router: PromptRouter<Prompts>,
}

#[prompt_router]
impl Prompts {
    /// Prompts of their own, routed by rmcp.
    pub fn new() -> Self {
        Prompts {
            prompt_router: Self::prompt_router(),
        }
    }

    /// Asks for a summary of the latest notes.
    #[prompt(name = "summarize")]
    async fn summarize(&self, Parameters(args): Parameters<SummarizeArgs>) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Summarize the notes about {}.", args.topic),
        )]
    }
}

impl Default for Prompts {
    fn default() -> Self {
        Self::new()
    }
}

#[prompt_handler(router = self.prompt_router)]
impl ServerHandler for Prompts {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_prompts().build())
    }
}

/// The notes server, handing prompts to [`Prompts`].
pub fn with_prompts(notes: Vec<String>, key: [u8; 32]) -> EnvelopeServer {
    crate::server(notes, key).with_handler(Prompts::new())
}

/// An rmcp server written with `#[tool_router]`, mounting the notes tools in its router.
#[derive(Clone)]
pub struct Host {
    tool_router: ToolRouter<Host>,
}

#[tool_router]
impl Host {
    /// The host's own tool, and the notes tools, in one router.
    pub fn new(notes: &EnvelopeServer) -> Self {
        Host {
            tool_router: Self::tool_router() + notes.tool_router(),
        }
    }

    /// Answers `pong`, as rmcp tools answer: text, no envelope.
    #[tool]
    fn ping(&self) -> String {
        "pong".to_owned()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Host {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
    }
}

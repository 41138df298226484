//! The suite's fixture prompts, written with rmcp's own `#[prompt_router]` and `#[prompt]`
//! through envelope-mcp's re-export: envelope serves tools; prompts stay rmcp's, on the handler
//! the envelope server delegates to.

use schemars::JsonSchema;
use serde::Deserialize;

use crate::fixtures::PNG_BASE64;
use crate::handler::Fixtures;
// rmcp's macros write `rmcp::…` paths: the re-export has to be in scope here.
use crate::rmcp;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{ContentBlock, ImageContent, PromptMessage, Role};
use rmcp::{prompt, prompt_router};

/// The arguments of `test_prompt_with_arguments`.
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct TwoArguments {
    /// First test argument.
    arg1: String,
    /// Second test argument.
    arg2: String,
}

/// The arguments of `test_prompt_with_embedded_resource`.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResourceArgument {
    /// The URI of the resource to embed.
    resource_uri: String,
}

#[prompt_router(vis = "pub(crate)")]
impl Fixtures {
    /// A simple prompt with no arguments.
    #[prompt(name = "test_simple_prompt")]
    async fn simple(&self) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            "This is a simple prompt for testing.",
        )]
    }

    /// A prompt that says back its two arguments.
    #[prompt(name = "test_prompt_with_arguments")]
    async fn with_arguments(
        &self,
        Parameters(TwoArguments { arg1, arg2 }): Parameters<TwoArguments>,
    ) -> Vec<PromptMessage> {
        vec![PromptMessage::new_text(
            Role::User,
            format!("Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"),
        )]
    }

    /// A prompt that embeds the resource it is given.
    #[prompt(name = "test_prompt_with_embedded_resource")]
    async fn with_embedded_resource(
        &self,
        Parameters(ResourceArgument { resource_uri }): Parameters<ResourceArgument>,
    ) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new_resource(
                Role::User,
                resource_uri,
                Some("text/plain".to_owned()),
                Some("Embedded resource content for testing.".to_owned()),
                None,
                None,
                None,
            ),
            PromptMessage::new_text(Role::User, "Please process the embedded resource above."),
        ]
    }

    /// A prompt that shows an image.
    #[prompt(name = "test_prompt_with_image")]
    async fn with_image(&self) -> Vec<PromptMessage> {
        vec![
            PromptMessage::new(
                Role::User,
                ContentBlock::Image(ImageContent::new(PNG_BASE64, "image/png")),
            ),
            PromptMessage::new_text(Role::User, "Please analyze the image above."),
        ]
    }
}

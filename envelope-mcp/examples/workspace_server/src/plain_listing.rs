//! The example's tools as a plain rmcp server lists them: the baseline the lean listing is
//! measured against (`cargo xtask token-costs`).
//!
//! Each tool is listed as rmcp's own `#[tool]` macro lists a function with the same name, doc
//! comment and argument type: its name, its description, and the input schema rmcp generates for
//! the arguments (`schema_for_input`, or rmcp's empty-input schema for a tool without
//! arguments). Nothing of envelope's is in it: no shaping controls, no portable rewriting.

use std::any::Any;

use envelope_core::Tool;
use rmcp::handler::server::common::{schema_for_empty_input, schema_for_input};
use rmcp::handler::server::wrapper::Parameters;
use schemars::JsonSchema;

use crate::tools::{
    ChangeImpactArgs, GraphExportArgs, ListFilesArgs, ReadFileArgs, SearchTextArgs, change_impact,
    graph_export, list_files, read_file, search_text, workspace_stats,
};

/// The six tools as a plain rmcp server lists them, in the example's order.
pub fn plain_listing() -> Result<Vec<rmcp::model::Tool>, String> {
    Ok(vec![
        with_arguments::<SearchTextArgs>(&search_text {})?,
        with_arguments::<ReadFileArgs>(&read_file {})?,
        with_arguments::<ListFilesArgs>(&list_files {})?,
        without_arguments(&workspace_stats {}),
        with_arguments::<GraphExportArgs>(&graph_export {})?,
        with_arguments::<ChangeImpactArgs>(&change_impact {})?,
    ])
}

fn with_arguments<A: JsonSchema + Any>(tool: &dyn Tool) -> Result<rmcp::model::Tool, String> {
    let spec = tool.spec();
    let schema = schema_for_input::<Parameters<A>>()
        .map_err(|error| format!("rmcp cannot list `{}`: {error}", spec.name))?;
    Ok(rmcp::model::Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        schema,
    ))
}

fn without_arguments(tool: &dyn Tool) -> rmcp::model::Tool {
    let spec = tool.spec();
    rmcp::model::Tool::new(
        spec.name.clone(),
        spec.description.clone(),
        schema_for_empty_input(),
    )
}

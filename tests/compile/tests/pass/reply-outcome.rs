use envelope_core::{Reply, Tool, ToolResult, Verdict, tool};

#[derive(serde::Serialize)]
struct Files {
    names: Vec<String>,
}

/// List the files, with a verdict and a summary.
#[tool(tier = lite, read_only)]
fn list() -> ToolResult<Reply<Files>> {
    let files = Files {
        names: vec!["a.rs".to_owned()],
    };
    Ok(Reply::new(files)
        .verdict(Verdict::Safe)
        .summary_line("1 file"))
}

fn main() {
    let _ = <list as Tool>::spec(&list {});
}

mod reexport {
    pub use envelope_core;
}

use reexport::envelope_core::ToolResult;

/// Say hello through a re-export.
#[reexport::envelope_core::tool(crate = reexport::envelope_core, tier = lite, read_only)]
fn hello() -> ToolResult<&'static str> {
    Ok("hello")
}

fn main() {
    let _ = <hello as reexport::envelope_core::Tool>::spec(&hello {});
    let _ = reexport::envelope_core::toolset![hello];
}

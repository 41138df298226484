use envelope_core::{ToolResult, tool};

struct Server;

impl Server {
    /// Say hello.
    #[tool(tier = lite)]
    fn hello(&self) -> ToolResult<&'static str> {
        Ok("hello")
    }
}

fn main() {}

//! The tools, one file each. Every tool reads the [`Workspace`](crate::Workspace) as server
//! state; `search_text` and `list_files` page with `envelope_core::paging`.

mod graph;
mod impact;
mod list;
mod read;
mod search;
mod stats;

pub use graph::{Edge, Graph, GraphExportArgs, Node, graph_export};
pub use impact::{ChangeImpactArgs, Impact, change_impact};
pub use list::{FileList, ListFilesArgs, list_files};
pub use read::{FileContent, ReadFileArgs, read_file};
pub use search::{Occurrence, SearchHits, SearchTextArgs, search_text};
pub use stats::{Skipped, Stats, Tally, workspace_stats};

pub(crate) use graph::export_graph;
pub(crate) use search::{DEFAULT_CONTEXT_LINES, FILE_TARGETS, MAX_CONTEXT_LINES, decode_search};

/// The largest page `search_text` or `list_files` builds: a bigger `limit` is refused. Rows
/// past the page are counted, never built, so a match-everything search holds one page in
/// memory, not every match (which once took 264 MB to send 30 KB).
pub(crate) const MAX_PAGE_LIMIT: usize = 1_000;

//! The tools, one file each. Every tool reads the [`Workspace`](crate::Workspace) as server
//! state; `search_text` and `list_files` page with `envelope_core::paging`, up to the bound in
//! `page`. A tool that uses another's items imports them from that tool's file, never through
//! this one, so that imports between the tools go one way.

mod graph;
mod impact;
mod list;
mod page;
mod read;
mod search;
mod stats;

pub use graph::{Edge, Graph, GraphExportArgs, Node, graph_export};
pub use impact::{ChangeImpactArgs, Impact, change_impact};
pub use list::{FileList, ListFilesArgs, list_files};
pub use read::{FileContent, ReadFileArgs, read_file};
pub use search::{Occurrence, SearchHits, SearchTextArgs, search_text};
pub use stats::{Skipped, Stats, Tally, workspace_stats};

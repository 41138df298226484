//! What the paging tools share: the largest page one call builds.

/// The largest page `search_text` or `list_files` builds: a bigger `limit` is refused. Rows
/// past the page are counted, never built, so a match-everything search holds one page in
/// memory, not every match (which once took 264 MB to send 30 KB).
pub(crate) const MAX_PAGE_LIMIT: usize = 1_000;

//! Paging and follow-ups, stateless: sealed continuation tokens, the [`Pager`] that pages a
//! tool with them, and target refs ([`TargetBinding`]) that let a follow-up tool act on one
//! result of a page as it was.
//!
//! A continuation tells a tool where the next page starts. Nothing is cached on the server, and
//! a model copies the token character by character, so it carries only what the server cannot
//! recompute: the position, an expiry, which key sealed it, and HMAC-SHA256 tags under a server
//! key. What the page is bound to — the tool, the caller, the request, the scope, the snapshot
//! of the data — is recomputed from the call that sends the token back, and the tags say
//! whether it matches. A token therefore survives a restart and opens on any replica that holds
//! the key, and an agent can neither forge nor edit one.
//!
//! Invariant: nothing here panics on any input, and a rejection names only its code, never the
//! check that failed. The only I/O is the operating system's random source.
//!
//! There is no server-side handle registry: an in-memory table of result handles held per
//! process would not survive a restart or reach another replica behind a load balancer. A
//! target ref carries what it points at, sealed, so any replica holding the key resolves it.

// A facade: what is defined below the `Pager` (`paging_core`) and the `Pager` itself (`pager`),
// so the modules beneath can name the one without the other.
pub use crate::pager::{FULL_ROWS, PageCount, PagedArgs, Pager, Paging};
pub use crate::paging_core::{Binding, DEFAULT_CONTINUATION_FIELD, DEFAULT_LIMIT_FIELD, Snapshot};
pub use crate::paging_core::{
    CONFLICTING_TARGET_INPUT, INVALID_TARGET_REF, MAX_JOINED_REF_CHARS, MAX_JOINED_REFS,
    MAX_TARGET_BYTES, MAX_TARGET_REF_CHARS, MAX_TARGETS_PER_REF, OpenedTarget,
    STALE_TARGET_SNAPSHOT, TARGET_CODES, TARGET_NOT_FOUND, TARGET_NOT_IN_REF,
    TARGET_REF_CHARS_PER_TARGET, TARGET_REF_JOIN, TARGET_REF_LAYOUT, TARGET_REF_MIN_CHARS,
    TARGET_SCOPE_MISMATCH, TargetBinding, conflicting_target_input, target_not_found,
};
pub use crate::paging_core::{
    CONTINUATION_CODES, CONTINUATION_SCOPE_MISMATCH, INVALID_CONTINUATION, INVALID_LIMIT,
    MIXED_CONTINUATION_FORMS, STALE_CONTINUATION,
};
pub use crate::paging_core::{ContinuationKey, KeyError, KeyRing};
pub use crate::paging_core::{Continuations, DEFAULT_TTL};
pub use crate::paging_core::{INVALID_ARGUMENT, Sealed, TARGET_REF_FIELD};
pub use crate::paging_core::{MAX_TOKEN_CHARS, MAX_TOKEN_LEN, TOKEN_CHARS, TOKEN_LAYOUT};
pub use crate::paging_core::{NEXT_PAGE, Resume};
pub use crate::paging_core::{Page, PageArgs};

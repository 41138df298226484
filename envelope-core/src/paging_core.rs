//! What paging is built on, below the [`Pager`](crate::paging::Pager): pages read from a call,
//! sealed continuation tokens and their keys, what a token is bound to, the [`Resume`] the
//! budget stage re-seals with, and target refs. Public as [`crate::paging`].

mod binding;
mod codes;
mod continuations;
#[cfg(test)]
mod fixtures;
mod keys;
mod page;
mod pasted;
mod resume;
mod seal;
mod target;
mod token;

pub(crate) use binding::LEGACY_START_FIELDS;
pub use binding::{Binding, DEFAULT_CONTINUATION_FIELD, DEFAULT_LIMIT_FIELD, Snapshot};
pub use codes::{
    CONTINUATION_CODES, CONTINUATION_SCOPE_MISMATCH, INVALID_CONTINUATION, INVALID_LIMIT,
    MIXED_CONTINUATION_FORMS, NEXT_PAGE, STALE_CONTINUATION,
};
pub use continuations::{Continuations, DEFAULT_TTL};
pub use keys::{ContinuationKey, KeyError, KeyRing};
pub(crate) use page::mixed_forms;
pub use page::{Page, PageArgs};
pub(crate) use pasted::misplaced;
pub use pasted::{INVALID_ARGUMENT, Sealed, TARGET_REF_FIELD};
pub use resume::Resume;
pub(crate) use resume::carry;
pub use target::{
    CONFLICTING_TARGET_INPUT, INVALID_TARGET_REF, MAX_JOINED_REF_CHARS, MAX_JOINED_REFS,
    MAX_TARGET_BYTES, MAX_TARGET_REF_CHARS, MAX_TARGETS_PER_REF, OpenedTarget,
    STALE_TARGET_SNAPSHOT, TARGET_CODES, TARGET_NOT_FOUND, TARGET_NOT_IN_REF,
    TARGET_REF_CHARS_PER_TARGET, TARGET_REF_JOIN, TARGET_REF_LAYOUT, TARGET_REF_MIN_CHARS,
    TARGET_SCOPE_MISMATCH, TargetBinding, conflicting_target_input, target_not_found,
};
pub use token::{MAX_TOKEN_CHARS, MAX_TOKEN_LEN, TOKEN_CHARS, TOKEN_LAYOUT};

//! One page of a call: the [`PageArgs`] a tool read from it, and the [`Page`] that
//! [`Continuations::page`] makes of them.

use std::ops::Range;

use super::binding::Binding;
use super::codes::{INVALID_LIMIT, MIXED_CONTINUATION_FORMS};
use super::continuations::{Continuations, Reject};
use crate::tool_error::ToolError;

/// How a call says where its page starts and how large it is, as the tool read its arguments.
///
/// ```
/// use envelope_core::paging::PageArgs;
///
/// // Default page size 50; the agent asked for 20 and passed no token.
/// let args = PageArgs::new(50).with_limit(Some(20)).with_continuation(None);
/// # let _ = args;
/// ```
#[derive(Debug, Clone, Copy)]
pub struct PageArgs<'a> {
    default_limit: usize,
    limit: Option<usize>,
    continuation: Option<&'a str>,
    offset: Option<usize>,
    resume_from: Option<usize>,
}

impl<'a> PageArgs<'a> {
    /// No token, no offset, and `default_limit` rows per page unless the call sets a limit.
    pub fn new(default_limit: usize) -> Self {
        PageArgs {
            default_limit,
            limit: None,
            continuation: None,
            offset: None,
            resume_from: None,
        }
    }

    /// The page size the call asked for; `Some(0)` is refused.
    #[must_use]
    pub fn with_limit(mut self, limit: Option<usize>) -> Self {
        self.limit = limit;
        self
    }

    /// The continuation token the call passed.
    #[must_use]
    pub fn with_continuation(mut self, token: Option<&'a str>) -> Self {
        self.continuation = token;
        self
    }

    /// A legacy `offset` the call passed.
    #[must_use]
    pub fn with_offset(mut self, offset: Option<usize>) -> Self {
        self.offset = offset;
        self
    }

    /// A legacy `resume_from` the call passed.
    #[must_use]
    pub fn with_resume_from(mut self, resume_from: Option<usize>) -> Self {
        self.resume_from = resume_from;
        self
    }
}

/// One page of a collection: the rows `start..start + size`, as far as they exist.
///
/// Invariant: `size` is at least 1, so paging always advances.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Page {
    /// Rows already returned by earlier pages.
    pub start: usize,
    /// The most rows this page may hold.
    pub size: usize,
}

impl Page {
    /// The indices of this page's rows in a collection of `total` rows; empty past the end.
    ///
    /// ```
    /// use envelope_core::paging::Page;
    ///
    /// assert_eq!(Page { start: 20, size: 10 }.range(25), 20..25);
    /// assert_eq!(Page { start: 30, size: 10 }.range(25), 25..25);
    /// ```
    pub fn range(&self, total: usize) -> Range<usize> {
        let start = self.start.min(total);
        start..self.start.saturating_add(self.size).min(total)
    }
}

impl Continuations {
    /// Where this call's page starts and how many rows it may hold.
    ///
    /// Refuses a page size of zero ([`INVALID_LIMIT`]) and more than one way of saying where
    /// to start ([`MIXED_CONTINUATION_FORMS`]) before looking at the token. A legacy `offset`
    /// or `resume_from` alone is accepted as the start.
    pub fn page(&self, binding: &Binding<'_>, args: PageArgs<'_>) -> Result<Page, ToolError> {
        let size = args.limit.unwrap_or(args.default_limit);
        if size == 0 {
            let limit = binding.limit_field;
            return Err(
                ToolError::validation(format!("`{limit}` must be at least 1"))
                    .with_code(INVALID_LIMIT)
                    .with_hint(format!("omit `{limit}` to get the default page size")),
            );
        }
        let forms = [
            args.continuation.is_some(),
            args.offset.is_some(),
            args.resume_from.is_some(),
        ];
        if forms.into_iter().filter(|given| *given).count() > 1 {
            return Err(mixed_forms(binding.continuation_field));
        }
        let start = match (args.continuation, args.offset.or(args.resume_from)) {
            (Some(token), _) => {
                let position = self.open(token, binding)?;
                // A position this server sealed always fits; anything else is not ours.
                usize::try_from(position).map_err(|_| Reject::Length.into_error(binding))?
            }
            (None, Some(offset)) => offset,
            (None, None) => 0,
        };
        Ok(Page { start, size })
    }
}

/// The refusal of a continuation in `field` passed with `offset` or `resume_from` (or those two
/// together): `MIXED_CONTINUATION_FORMS`. Also what a call gets that sends a legacy start beside
/// a continuation to a tool that declares no legacy start at all: the start would otherwise be
/// dropped as an unknown argument, and the caller would page from where it did not ask.
pub(crate) fn mixed_forms(field: &str) -> ToolError {
    ToolError::validation(format!(
        "`{field}` cannot be combined with `offset` or `resume_from`, nor those two with each other"
    ))
    .with_code(MIXED_CONTINUATION_FORMS)
    .with_hint(format!(
        "pass only `{field}` to continue paging, or only `offset` to start elsewhere"
    ))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::paging_core::INVALID_ARGUMENT;
    use crate::paging_core::fixtures::{args, binding, key};

    #[test]
    fn page_starts_at_zero_with_the_default_size() {
        let c = Continuations::new(key(1));
        let request = args();
        let page = c.page(&binding(&request), PageArgs::new(25)).expect("page");
        assert_eq!(page, Page { start: 0, size: 25 });
    }

    #[test]
    fn page_resumes_from_a_token_with_a_new_size() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c
            .next(&binding(&request), 0, 10, 35)
            .expect("seal")
            .expect("more rows");
        let page = c
            .page(
                &binding(&request),
                PageArgs::new(25)
                    .with_limit(Some(40))
                    .with_continuation(Some(&token)),
            )
            .expect("page");
        assert_eq!(
            page,
            Page {
                start: 10,
                size: 40
            }
        );
        assert_eq!(page.range(35), 10..35);
    }

    #[test]
    fn zero_limit_is_refused() {
        let c = Continuations::new(key(1));
        let request = args();
        let error = c
            .page(&binding(&request), PageArgs::new(25).with_limit(Some(0)))
            .expect_err("zero");
        assert_eq!(error.code(), Some(INVALID_LIMIT));
        assert_eq!(error.category(), crate::Category::Validation);
        let error = c
            .page(&binding(&request), PageArgs::new(0))
            .expect_err("zero default");
        assert_eq!(error.code(), Some(INVALID_LIMIT));
    }

    #[test]
    fn legacy_offset_alone_is_the_start() {
        let c = Continuations::new(key(1));
        let request = args();
        for args in [
            PageArgs::new(25).with_offset(Some(30)),
            PageArgs::new(25).with_resume_from(Some(30)),
        ] {
            let page = c.page(&binding(&request), args).expect("page");
            assert_eq!(
                page,
                Page {
                    start: 30,
                    size: 25
                }
            );
        }
    }

    #[test]
    fn offset_with_a_token_is_mixed() {
        let c = Continuations::new(key(1));
        let request = args();
        let token = c.seal(&binding(&request), 10).expect("seal");
        for args in [
            PageArgs::new(25)
                .with_continuation(Some(&token))
                .with_offset(Some(0)),
            PageArgs::new(25)
                .with_continuation(Some("garbage"))
                .with_resume_from(Some(3)),
            PageArgs::new(25)
                .with_offset(Some(1))
                .with_resume_from(Some(3)),
        ] {
            let error = c.page(&binding(&request), args).expect_err("mixed");
            assert_eq!(error.code(), Some(MIXED_CONTINUATION_FORMS), "{args:?}");
            assert!(!error.retryable());
        }
    }

    #[test]
    fn page_passes_token_errors_through() {
        let c = Continuations::new(key(1));
        let request = args();
        let error = c
            .page(
                &binding(&request),
                PageArgs::new(25).with_continuation(Some("nope")),
            )
            .expect_err("invalid");
        assert_eq!(error.code(), Some(INVALID_ARGUMENT));
    }

    #[test]
    fn paging_through_yields_every_row_once() {
        let c = Continuations::new(key(1));
        let rows: Vec<usize> = (0..103).collect();
        let mut seen = Vec::new();
        let mut token: Option<String> = None;
        let mut calls = 0;
        loop {
            calls += 1;
            assert!(calls < 100, "paging must terminate");
            let limit = 7 + calls % 5; // The agent changes the page size as it goes.
            let request = json!({"query": "needle", "path": "src", "limit": limit});
            let b = binding(&request);
            let page = c
                .page(
                    &b,
                    PageArgs::new(10)
                        .with_limit(Some(limit))
                        .with_continuation(token.as_deref()),
                )
                .expect("page");
            let sent = &rows[page.range(rows.len())];
            seen.extend_from_slice(sent);
            token = c
                .next(&b, page.start, sent.len(), rows.len())
                .expect("seal");
            if token.is_none() {
                break;
            }
        }
        assert_eq!(seen, rows);
    }

    #[test]
    fn page_range_never_panics() {
        assert_eq!(
            Page {
                start: usize::MAX,
                size: usize::MAX
            }
            .range(3),
            3..3
        );
        assert_eq!(
            Page {
                start: 0,
                size: usize::MAX
            }
            .range(3),
            0..3
        );
    }
}
